//! The lab report as text: Markdown that fits a pull-request comment, CSV in long format (one
//! number per row), and JSON of the whole model.

use super::comparison::CellKey;
use super::lab_report::{cell_text, optional, LabReport};
use super::noise_view;
use super::why::WhyPanel;

/// A Markdown document that fits a pull-request comment.
pub fn to_markdown(report: &LabReport) -> String {
    let mut out = format!(
        "# Lab \"{}\": against {} ({})\n\n",
        report.lab, report.base, report.metric
    );
    for sentence in &report.headline {
        out += &format!("**{sentence}**\n\n");
    }
    for warning in &report.warnings {
        out += &format!("> **Warning:** {warning}\n");
    }
    if !report.warnings.is_empty() {
        out += "\n";
    }
    if !report.claims.is_empty() {
        out += &super::claims::markdown(&report.claims);
    }
    out += &format!("Method: {}.\n\n", report.method);
    for target in &report.comparisons {
        out += &format!("## {} vs {}\n\n", target.target, report.base);
        let stops = target.cells.iter().any(|c| c.stopped.is_some());
        out += if stops {
            "| cell | runs | base | other | ratio | median ratio | 95% CI | ± | p | stopped | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
        } else {
            "| cell | runs | base | other | ratio | median ratio | 95% CI | ± | p | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n"
        };
        for c in &target.cells {
            let stopped = if stops {
                format!(" {} |", c.stop_text().unwrap_or_else(|| "-".into()))
            } else {
                String::new()
            };
            out += &format!(
                "| {} | {} | {:.1} | {:.1} | {:.3} | {} | {}–{} | {} | {:.3} |{stopped} {} |\n",
                cell_text(&c.cell),
                c.runs_text(),
                c.base_median,
                c.other_median,
                c.ratio,
                optional(c.median_round_ratio(), 3),
                optional(c.ci_low, 3),
                optional(c.ci_high, 3),
                c.precision_text(),
                c.p_value,
                c.verdict
            );
        }
        out += "\n";
        for note in &target.notes {
            out += &format!("{note}\n\n");
        }
    }
    out += &super::machines::markdown(&report.machines);
    out += &families_markdown(report);
    out += &super::steps::markdown(&report.steps, &report.metric, &report.base);
    out += &latency_markdown(report);
    out += &super::query_times::markdown(&super::query_times::query_times(report));
    out += &series_markdown(report);
    out += &noise_view::markdown(&report.noise);
    if !report.statements.is_empty() {
        out += "## Statements (pg_stat_statements)\n\nMean time per call paired by round against the base: geometric mean of the rounds' ratios, 95% interval, verdict.\n\n| target | cell | statement | calls/run | mean ms | Δ mean vs base | ratio [95% CI] | stddev ms | Δ stddev vs base |\n|---|---|---|---|---|---|---|---|---|\n";
        for s in &report.statements {
            out += &format!(
                "| {} | {} | `{}` | {:.0} | {:.4} | {} | {} | {:.4} | {} |\n",
                s.target,
                cell_text(&s.cell),
                s.query.replace('|', "\\|").replace('\n', " "),
                s.calls_per_run,
                s.mean_ms,
                optional(s.mean_change_pct, 1) + if s.mean_change_pct.is_some() { "%" } else { "" },
                s.against_base(&report.base),
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
        out += "## Work per transaction (whole machine)\n\n| target | cell | CPU µs | context switches | KB read | KB written | driver CPU % of client cores |\n|---|---|---|---|---|---|---|\n";
        for e in &report.efficiency {
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                e.target,
                cell_text(&e.cell),
                optional(e.cpu_us_per_txn, 1),
                optional(e.context_switches_per_txn, 2),
                optional(e.read_kb_per_txn, 3),
                optional(e.write_kb_per_txn, 3),
                optional(e.client_cpu_share.map(|s| s * 100.0), 1)
            );
        }
    }
    out += &super::every_metric::markdown(&report.every_metric);
    for panel in &report.why {
        out += &why_markdown(panel, &report.base);
    }
    out
}

fn families_markdown(report: &LabReport) -> String {
    if report.families.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Relative {} by workload family (ratio to {})\n\nThe group's ratio: per round the geometric mean of its cells' ratios, then their geometric mean over the rounds with its 95% t interval.\n\n| target | workload | family | cells | min | median | max | mean | group (95% interval) | rounds | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        report.metric, report.base
    );
    for f in &report.families {
        out += &format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {} |\n",
            f.target,
            f.workload,
            f.family,
            f.cells,
            f.min,
            f.median,
            f.max,
            f.mean,
            f.group_text(),
            f.rounds,
            f.verdict.as_deref().unwrap_or("-")
        );
    }
    out + "\n"
}

fn latency_markdown(report: &LabReport) -> String {
    if report.latency.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Latency percentiles (medians over runs)\n\n| target | cell | runs | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|---|\n",
    );
    for l in &report.latency {
        out += &format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} |\n",
            l.target,
            cell_text(&l.cell),
            l.runs,
            l.p50_ms,
            l.p95_ms,
            l.p99_ms
        );
    }
    out + "\n"
}

/// Per charted run, its checkpoints: the per-second numbers are in the CSV, JSON and HTML.
fn series_markdown(report: &LabReport) -> String {
    if report.series.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Runs second by second\n\n");
    for series in &report.series {
        let seconds: Vec<String> = series
            .checkpoints
            .iter()
            .filter(|m| m.completed > 0.0)
            .map(|m| m.second.to_string())
            .collect();
        out += &format!(
            "- {} {}, run {}: {} seconds; checkpoints completed at second(s): {}\n",
            series.target,
            cell_text(&series.cell),
            series.run_id,
            series.tps.len(),
            if seconds.is_empty() {
                "none".to_string()
            } else {
                seconds.join(", ")
            }
        );
    }
    out + "\n"
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
        if let Some(nodes) = plan.changed_nodes() {
            out += &format!(
                "Plan nodes changed ({base} → {}): {nodes}\n\n",
                panel.target
            );
        }
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
        let mut list: Vec<String> = waits
            .iter()
            .map(|(state, sessions)| format!("{state} {sessions:.2}"))
            .collect();
        if list.is_empty() {
            list.push(crate::report::why::NO_WAIT_SAMPLES.into());
        }
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
    let no_cell = CellKey {
        workload: String::new(),
        family: String::new(),
        script: String::new(),
        scale: String::new(),
        clients: 0,
    };
    let mut push =
        |section: &str, target: &str, cell: &CellKey, item: &str, measure: &str, value: String| {
            let clients = if cell.workload.is_empty() {
                String::new()
            } else {
                cell.clients.to_string()
            };
            out += &[
                section,
                &csv_field(target),
                &csv_field(&cell.workload),
                &csv_field(&cell.script),
                &csv_field(&cell.scale),
                &clients,
                &csv_field(item),
                measure,
                &csv_field(&value),
            ]
            .join(",");
            out.push('\n');
        };
    let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for change in &report.every_metric {
        let compared = &change.compared;
        let measures = [
            ("ratio", number(Some(compared.ratio))),
            ("ci_low", number(compared.ci_low)),
            ("ci_high", number(compared.ci_high)),
            ("pairs", compared.pairs.to_string()),
            ("verdict", compared.verdict.clone()),
        ];
        for (measure, value) in measures {
            push(
                "against_base",
                &change.target,
                &change.cell,
                &change.metric,
                measure,
                value,
            );
        }
    }
    for claim in &report.claims {
        let measures = [
            ("ratio", number(claim.ratio)),
            ("ci_low", number(claim.ci_low)),
            ("ci_high", number(claim.ci_high)),
            ("rounds", claim.rounds.to_string()),
            ("verdict", claim.verdict.to_string()),
        ];
        for (measure, value) in measures {
            push(
                "claim",
                &claim.target,
                &no_cell,
                &claim.says,
                measure,
                value,
            );
        }
    }
    for s in &report.summaries {
        let measures = [
            ("runs", s.runs.to_string()),
            ("median", s.median.to_string()),
            ("min", s.min.to_string()),
            ("max", s.max.to_string()),
        ];
        for (measure, value) in measures {
            push(
                "summary",
                &s.target,
                &s.cell,
                &report.metric,
                measure,
                value,
            );
        }
    }
    for target in &report.comparisons {
        for c in &target.cells {
            let measures = [
                ("base_runs", c.base_runs.to_string()),
                ("other_runs", c.other_runs.to_string()),
                ("base_median", c.base_median.to_string()),
                ("other_median", c.other_median.to_string()),
                ("pairs", c.pairs.map_or(String::new(), |n| n.to_string())),
                ("ratio", c.ratio.to_string()),
                ("ci_low", number(c.ci_low)),
                ("ci_high", number(c.ci_high)),
                ("precision", number(c.precision)),
                ("log_ratio_sd", number(c.log_ratio_sd)),
                ("p_value", c.p_value.to_string()),
                ("verdict", c.verdict.clone()),
                ("stopped", c.stopped.clone().unwrap_or_default()),
                ("rounds", c.rounds.map_or(String::new(), |n| n.to_string())),
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
    for table in &report.steps {
        for row in &table.rows {
            for (step, cell) in table.steps.iter().zip(&row.cells) {
                let Some(cell) = cell else { continue };
                let key = CellKey {
                    workload: table.workload.clone(),
                    script: step.clone(),
                    scale: table.scale.clone(),
                    clients: table.clients,
                    ..no_cell.clone()
                };
                for (measure, value) in [("cv", cell.cv), ("stall_s", cell.stall_s)] {
                    push(
                        "steps",
                        &row.target,
                        &key,
                        "per_second",
                        measure,
                        number(value),
                    );
                }
            }
        }
    }
    for f in &report.families {
        let cell = CellKey {
            workload: f.workload.clone(),
            ..no_cell.clone()
        };
        let measures = [
            ("cells", f.cells.to_string()),
            ("min", f.min.to_string()),
            ("median", f.median.to_string()),
            ("max", f.max.to_string()),
            ("mean", f.mean.to_string()),
            ("ratio", number(f.ratio)),
            ("ci_low", number(f.ci_low)),
            ("ci_high", number(f.ci_high)),
            ("rounds", f.rounds.to_string()),
            ("verdict", f.verdict.clone().unwrap_or_default()),
        ];
        for (measure, value) in measures {
            push("family", &f.target, &cell, &f.family, measure, value);
        }
    }
    for l in &report.latency {
        let measures = [
            ("runs", l.runs as f64),
            ("p50_ms", l.p50_ms),
            ("p95_ms", l.p95_ms),
            ("p99_ms", l.p99_ms),
        ];
        for (measure, value) in measures {
            push(
                "latency",
                &l.target,
                &l.cell,
                "",
                measure,
                value.to_string(),
            );
        }
    }
    for series in &report.series {
        for (second, tps) in &series.tps {
            let item = format!("run {} second {second}", series.run_id);
            push(
                "series",
                &series.target,
                &series.cell,
                &item,
                "tps",
                tps.to_string(),
            );
        }
        for mark in &series.checkpoints {
            let item = format!("run {} second {}", series.run_id, mark.second);
            for (measure, value) in [
                ("checkpoints_completed", mark.completed),
                ("buffers_written", mark.buffers_written),
            ] {
                push(
                    "checkpoint",
                    &series.target,
                    &series.cell,
                    &item,
                    measure,
                    value.to_string(),
                );
            }
        }
    }
    for (section, target, cell, item, measure, value) in noise_view::csv_rows(&report.noise) {
        push(section, &target, &cell, &item, &measure, value);
    }
    for st in &report.statements {
        let measures = [
            ("mean_ms", st.mean_ms.to_string()),
            ("stddev_ms", st.stddev_ms.to_string()),
            ("mean_change_pct", number(st.mean_change_pct)),
            ("stddev_change_pct", number(st.stddev_change_pct)),
            ("calls_per_run", st.calls_per_run.to_string()),
            ("mean_ratio", number(st.ratio)),
            ("mean_ratio_ci_low", number(st.ci_low)),
            ("mean_ratio_ci_high", number(st.ci_high)),
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
            ("client_cpu_share", e.client_cpu_share),
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
