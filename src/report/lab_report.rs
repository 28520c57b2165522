//! The lab report: every target against the base with verdicts, pg_stat_statements per
//! statement with the change against the base (mean and stddev time), and the machine's work per
//! transaction. One model, rendered as Markdown, CSV or JSON; every number of one is in the
//! others.

use std::collections::BTreeMap;

use serde::Serialize;

use super::comparison::{self, cell_of, CellComparison, CellKey, Metric};
use super::why::{self, WhyInputs, WhyPanel};
use crate::analysis::{median, range};
use crate::store::{CounterRow, StatementRow, StoredRun};

#[derive(Debug, Serialize)]
pub struct LabReport {
    pub lab: String,
    pub base: String,
    pub metric: String,
    pub method: &'static str,
    pub warnings: Vec<String>,
    /// Every target's cells: the metric's median and spread over completed runs.
    pub summaries: Vec<CellSummary>,
    pub comparisons: Vec<TargetComparison>,
    pub statements: Vec<StatementChange>,
    pub efficiency: Vec<Efficiency>,
    /// Per target against the base: settings, plans and waits that differ.
    pub why: Vec<WhyPanel>,
}

#[derive(Debug, Serialize)]
pub struct CellSummary {
    pub target: String,
    pub cell: CellKey,
    pub runs: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Serialize)]
pub struct TargetComparison {
    pub target: String,
    pub cells: Vec<CellComparison>,
}

/// A statement's median (over the cell's runs) mean and stddev time on a target, and the
/// change against the base's for the same statement and cell.
#[derive(Debug, Serialize)]
pub struct StatementChange {
    pub target: String,
    pub cell: CellKey,
    pub query: String,
    pub mean_ms: f64,
    pub stddev_ms: f64,
    pub mean_change_pct: Option<f64>,
    pub stddev_change_pct: Option<f64>,
}

/// The machine's work per transaction (medians over the cell's runs).
#[derive(Debug, Serialize)]
pub struct Efficiency {
    pub target: String,
    pub cell: CellKey,
    pub cpu_us_per_txn: Option<f64>,
    pub context_switches_per_txn: Option<f64>,
    pub read_kb_per_txn: Option<f64>,
    pub write_kb_per_txn: Option<f64>,
}

pub const METHOD: &str = "medians over runs; ratio = other / base with a 95% percentile-bootstrap interval (10,000 resamples); verdict needs the Mann-Whitney U test (two-sided, α = 0.05) and the interval to agree";

pub struct Inputs<'a> {
    pub lab: &'a str,
    pub base: &'a str,
    pub metric: Metric,
    pub runs: &'a [StoredRun],
    pub statements: &'a [(StoredRun, StatementRow)],
    pub counters: &'a [(StoredRun, CounterRow)],
    pub why: WhyInputs<'a>,
}

pub fn build(inputs: &Inputs<'_>) -> LabReport {
    let targets = comparison::targets(inputs.runs);
    let names: Vec<&str> = targets.iter().map(String::as_str).collect();
    let why: Vec<WhyPanel> = targets
        .iter()
        .filter(|t| *t != inputs.base)
        .map(|t| why::panel(&inputs.why, inputs.base, t))
        .collect();
    let mut warnings = comparison::warnings(inputs.runs, &names, inputs.metric);
    for panel in why.iter().filter(|p| !p.other_settings.is_empty()) {
        warnings.insert(
            0,
            format!(
                "\"{}\" and \"{}\" differ in {} setting(s) nobody configured (defaults of another version or build): see \"Why\"",
                panel.target,
                inputs.base,
                panel.other_settings.len()
            ),
        );
    }
    LabReport {
        lab: inputs.lab.to_string(),
        base: inputs.base.to_string(),
        metric: inputs.metric.name().to_string(),
        method: METHOD,
        warnings,
        summaries: summaries(inputs.runs, inputs.metric),
        comparisons: targets
            .iter()
            .filter(|t| *t != inputs.base)
            .map(|t| TargetComparison {
                target: t.clone(),
                cells: comparison::compare_targets(inputs.runs, inputs.base, t, inputs.metric),
            })
            .collect(),
        statements: statement_changes(inputs.statements, inputs.base),
        efficiency: efficiency(inputs.counters),
        why,
    }
}

fn summaries(runs: &[StoredRun], metric: Metric) -> Vec<CellSummary> {
    let mut values: BTreeMap<(String, CellKey), Vec<f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == "completed") {
        if let Some(value) = metric.of(run) {
            values
                .entry((run.target.clone(), cell_of(run)))
                .or_default()
                .push(value);
        }
    }
    values
        .into_iter()
        .filter_map(|((target, cell), v)| {
            let (min, max) = range(&v)?;
            Some(CellSummary {
                target,
                cell,
                runs: v.len(),
                median: median(&v)?,
                min,
                max,
            })
        })
        .collect()
}

fn statement_changes(rows: &[(StoredRun, StatementRow)], base: &str) -> Vec<StatementChange> {
    type Key = (String, CellKey, String);
    let mut per_run: BTreeMap<Key, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (run, statement) in rows {
        let entry = per_run
            .entry((run.target.clone(), cell_of(run), statement.query.clone()))
            .or_default();
        entry.0.push(statement.mean_ms);
        entry.1.push(statement.stddev_ms);
    }
    let medians: BTreeMap<Key, (f64, f64)> = per_run
        .into_iter()
        .filter_map(|(key, (means, stddevs))| Some((key, (median(&means)?, median(&stddevs)?))))
        .collect();
    let change = |value: f64, base: f64| (base > 0.0).then(|| (value / base - 1.0) * 100.0);
    medians
        .iter()
        .map(|((target, cell, query), (mean, stddev))| {
            let base_values = medians.get(&(base.to_string(), cell.clone(), query.clone()));
            StatementChange {
                target: target.clone(),
                cell: cell.clone(),
                query: query.clone(),
                mean_ms: *mean,
                stddev_ms: *stddev,
                mean_change_pct: base_values.and_then(|b| change(*mean, b.0)),
                stddev_change_pct: base_values.and_then(|b| change(*stddev, b.1)),
            }
        })
        .collect()
}

fn efficiency(rows: &[(StoredRun, CounterRow)]) -> Vec<Efficiency> {
    // (target, cell) → repetition → counter name → per-transaction value.
    type Runs<'r> = BTreeMap<u32, BTreeMap<&'r str, f64>>;
    let mut per_cell: BTreeMap<(String, CellKey), Runs<'_>> = BTreeMap::new();
    for (run, counter) in rows.iter().filter(|(_, c)| c.source == "os") {
        per_cell
            .entry((run.target.clone(), cell_of(run)))
            .or_default()
            .entry(run.repetition)
            .or_default()
            .insert(counter.name.as_str(), counter.value);
    }
    per_cell
        .into_iter()
        .map(|((target, cell), runs)| {
            // The median over runs of a per-run quantity.
            let over_runs = |of: &dyn Fn(&BTreeMap<&str, f64>) -> Option<f64>| {
                median(&runs.values().filter_map(of).collect::<Vec<_>>())
            };
            Efficiency {
                target,
                cell,
                cpu_us_per_txn: over_runs(&|c| {
                    Some((c.get("cpu_user_s")? + c.get("cpu_system_s")?) * 1e6)
                }),
                context_switches_per_txn: over_runs(&|c| c.get("context_switches").copied()),
                read_kb_per_txn: over_runs(&|c| c.get("disk_read_kb").copied()),
                write_kb_per_txn: over_runs(&|c| c.get("disk_write_kb").copied()),
            }
        })
        .collect()
}

pub(super) fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

pub(super) fn cell_text(cell: &CellKey) -> String {
    format!(
        "{} {} scale {} × {} clients",
        cell.workload, cell.script, cell.scale, cell.clients
    )
}

/// A Markdown document that fits a pull-request comment.
pub fn to_markdown(report: &LabReport) -> String {
    let mut out = format!(
        "# Lab \"{}\": against {} ({})\n\n",
        report.lab, report.base, report.metric
    );
    for warning in &report.warnings {
        out += &format!("> **Warning:** {warning}\n");
    }
    if !report.warnings.is_empty() {
        out += "\n";
    }
    out += &format!("Method: {}.\n\n", report.method);
    for target in &report.comparisons {
        out += &format!("## {} vs {}\n\n", target.target, report.base);
        out += "| cell | runs | base | other | ratio | 95% CI | p | verdict |\n|---|---|---|---|---|---|---|---|\n";
        for c in &target.cells {
            out += &format!(
                "| {} | {}/{} | {:.1} | {:.1} | {:.3} | {}–{} | {:.3} | {} |\n",
                cell_text(&c.cell),
                c.base_runs,
                c.other_runs,
                c.base_median,
                c.other_median,
                c.ratio,
                optional(c.ci_low, 3),
                optional(c.ci_high, 3),
                c.p_value,
                c.verdict
            );
        }
        out += "\n";
    }
    if !report.statements.is_empty() {
        out += "## Statements (pg_stat_statements)\n\n| target | cell | statement | mean ms | Δ mean vs base | stddev ms | Δ stddev vs base |\n|---|---|---|---|---|---|---|\n";
        for s in &report.statements {
            out += &format!(
                "| {} | {} | `{}` | {:.4} | {} | {:.4} | {} |\n",
                s.target,
                cell_text(&s.cell),
                s.query.replace('|', "\\|").replace('\n', " "),
                s.mean_ms,
                optional(s.mean_change_pct, 1) + if s.mean_change_pct.is_some() { "%" } else { "" },
                s.stddev_ms,
                optional(s.stddev_change_pct, 1)
                    + if s.stddev_change_pct.is_some() {
                        "%"
                    } else {
                        ""
                    },
            );
        }
        out += "\n";
    }
    if !report.efficiency.is_empty() {
        out += "## Work per transaction (whole machine)\n\n| target | cell | CPU µs | context switches | KB read | KB written |\n|---|---|---|---|---|---|\n";
        for e in &report.efficiency {
            out += &format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                e.target,
                cell_text(&e.cell),
                optional(e.cpu_us_per_txn, 1),
                optional(e.context_switches_per_txn, 2),
                optional(e.read_kb_per_txn, 3),
                optional(e.write_kb_per_txn, 3)
            );
        }
    }
    for panel in &report.why {
        out += &why_markdown(panel, &report.base);
    }
    out
}

fn why_markdown(panel: &WhyPanel, base: &str) -> String {
    let mut out = format!(
        "\n## Why: {} vs {base}\n\nVersions: {} / {}\n\n",
        panel.target, panel.base_version, panel.version
    );
    for (title, diffs) in panel.setting_groups() {
        if diffs.is_empty() {
            continue;
        }
        out += &format!(
            "{title}:\n\n| setting | {base} | {} |\n|---|---|---|\n",
            panel.target
        );
        for d in diffs {
            out += &format!(
                "| {} | {} | {} |\n",
                d.name,
                d.base.as_deref().unwrap_or("-"),
                d.other.as_deref().unwrap_or("-")
            );
        }
        out += "\n";
    }
    for plan in &panel.plan_differences {
        out += &format!(
            "Plan differs for `{}`:\n\n```\n-- {base}\n{}\n-- {}\n{}\n```\n\n",
            plan.query.replace('\n', " "),
            plan.base_plan,
            panel.target,
            plan.plan
        );
    }
    for (target, waits) in [
        (base, &panel.base_waits),
        (panel.target.as_str(), &panel.waits),
    ] {
        let list: Vec<String> = waits
            .iter()
            .map(|(state, sessions)| format!("{state} {sessions:.2}"))
            .collect();
        out += &format!(
            "Top waits of {target} (average sessions): {}\n\n",
            list.join(", ")
        );
    }
    out
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Long format, one number per row (`section,target,workload,script,scale,clients,item,measure,value`),
/// so that one file holds every table and pivots in any spreadsheet.
pub fn to_csv(report: &LabReport) -> String {
    let mut out = String::from("section,target,workload,script,scale,clients,item,measure,value\n");
    let mut push =
        |section: &str, target: &str, cell: &CellKey, item: &str, measure: &str, value: String| {
            out += &[
                section,
                &csv_field(target),
                &csv_field(&cell.workload),
                &csv_field(&cell.script),
                &csv_field(&cell.scale),
                &cell.clients.to_string(),
                &csv_field(item),
                measure,
                &csv_field(&value),
            ]
            .join(",");
            out.push('\n');
        };
    let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for target in &report.comparisons {
        for c in &target.cells {
            let measures = [
                ("base_runs", c.base_runs.to_string()),
                ("other_runs", c.other_runs.to_string()),
                ("base_median", c.base_median.to_string()),
                ("other_median", c.other_median.to_string()),
                ("ratio", c.ratio.to_string()),
                ("ci_low", number(c.ci_low)),
                ("ci_high", number(c.ci_high)),
                ("p_value", c.p_value.to_string()),
                ("verdict", c.verdict.clone()),
            ];
            for (measure, value) in measures {
                push(
                    "comparison",
                    &target.target,
                    &c.cell,
                    &report.metric,
                    measure,
                    value,
                );
            }
        }
    }
    for st in &report.statements {
        let measures = [
            ("mean_ms", st.mean_ms.to_string()),
            ("stddev_ms", st.stddev_ms.to_string()),
            ("mean_change_pct", number(st.mean_change_pct)),
            ("stddev_change_pct", number(st.stddev_change_pct)),
        ];
        for (measure, value) in measures {
            push("statement", &st.target, &st.cell, &st.query, measure, value);
        }
    }
    for e in &report.efficiency {
        let measures = [
            ("cpu_us_per_txn", e.cpu_us_per_txn),
            ("context_switches_per_txn", e.context_switches_per_txn),
            ("read_kb_per_txn", e.read_kb_per_txn),
            ("write_kb_per_txn", e.write_kb_per_txn),
        ];
        for (measure, value) in measures {
            push("efficiency", &e.target, &e.cell, "", measure, number(value));
        }
    }
    out
}

pub fn to_json(report: &LabReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}
