//! The lab report as one self-contained HTML file: table of contents, warnings first, inline
//! SVG charts, the same numbers as the JSON. No scripts, no network.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::comparison::CellKey;
use super::lab_report::{cell_text, optional, CellSummary, LabReport, LatencySummary};
use super::noise_view;
use super::series::RunSeries;
use super::svg::{self, escape, Line, Mark, RatioBar, Spread, ValueBar};
use super::why::WhyPanel;

pub const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}\
th{background:#f3f3f3}td.text{text-align:left}.warning{background:#fff4d6;border-left:4px solid #e0a000;padding:6px 10px;margin:4px 0}\
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\
code{font-size:12px}.headline{font-size:17px;font-weight:bold;margin:.4em 0}";

fn table(header: &[&str], rows: &[Vec<(String, bool)>]) -> String {
    let mut out = String::from("<table><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out += "</tr>";
    for row in rows {
        out += "<tr>";
        for (cell, is_text) in row {
            let class = if *is_text { r#" class="text""# } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out += "</tr>";
    }
    out + "</table>"
}

pub fn to_html(report: &LabReport) -> String {
    let title = format!("Lab \"{}\" against {}", report.lab, report.base);
    let mut sections: Vec<(String, String, String)> = Vec::new();
    if !report.claims.is_empty() {
        let rows: Vec<Vec<(String, bool)>> = report
            .claims
            .iter()
            .map(|claim| {
                super::claims::cells(claim)
                    .into_iter()
                    .map(|cell| (cell, true))
                    .collect()
            })
            .collect();
        sections.push((
            "claims".into(),
            "Claims".into(),
            table(&super::claims::HEADER, &rows),
        ));
    }
    sections.push((
        "scaling".into(),
        format!("{} vs clients", report.metric),
        scaling_charts(report),
    ));
    for target in &report.comparisons {
        sections.push((
            format!("vs-{}", target.target),
            format!("{} vs {}", target.target, report.base),
            comparison_section(report, &target.target),
        ));
    }
    if !report.machines.is_empty() {
        let rows: Vec<Vec<(String, bool)>> = report
            .machines
            .iter()
            .map(|row| {
                let cells = super::machines::cells(row);
                let last = cells.len() - 1;
                cells
                    .into_iter()
                    .enumerate()
                    .map(|(i, cell)| (cell, i != last))
                    .collect()
            })
            .collect();
        sections.push((
            "machines".into(),
            "Machines".into(),
            table(&super::machines::HEADER, &rows),
        ));
    }
    if !report.families.is_empty() {
        sections.push((
            "families".into(),
            format!("Relative {} by workload family", report.metric),
            families(report),
        ));
    }
    for (i, steps) in report.steps.iter().enumerate() {
        sections.push((
            format!("steps-{i}"),
            format!(
                "{} per step: scale {}, {} clients",
                steps.workload, steps.scale, steps.clients
            ),
            step_table(steps, report),
        ));
    }
    if !report.latency.is_empty() {
        sections.push((
            "latency".into(),
            "Latency percentiles vs clients".into(),
            latency(report),
        ));
    }
    let query_tables = super::query_times::query_times(report);
    if !query_tables.is_empty() {
        sections.push((
            "queries".into(),
            "Query times by target".into(),
            query_times(&query_tables),
        ));
    }
    if !report.series.is_empty() {
        sections.push((
            "series".into(),
            "Throughput per second, with checkpoints".into(),
            report.series.iter().map(series_chart).collect(),
        ));
    }
    if !report.noise.drift.is_empty() {
        sections.push((
            "noise".into(),
            "Noise".into(),
            noise_view::html(&report.noise, &report.metric, table),
        ));
    }
    if !report.statements.is_empty() {
        sections.push(("statements".into(), "Statements".into(), statements(report)));
    }
    if !report.efficiency.is_empty() {
        sections.push((
            "efficiency".into(),
            "Work per transaction".into(),
            efficiency(report),
        ));
    }
    if !report.every_metric.is_empty() {
        let rows: Vec<Vec<(String, bool)>> = report
            .every_metric
            .iter()
            .map(|change| {
                let cells = super::every_metric::cells(change);
                cells
                    .into_iter()
                    .enumerate()
                    .map(|(i, cell)| (cell, i < 3 || i == 5))
                    .collect()
            })
            .collect();
        sections.push((
            "every-number".into(),
            "Every number against the base".into(),
            table(&super::every_metric::HEADER, &rows),
        ));
    }
    for panel in &report.why {
        sections.push((
            format!("why-{}", panel.target),
            format!("Why: {} vs {}", panel.target, report.base),
            why_section(panel, &report.base),
        ));
    }
    let mut body = format!("<h1>{}</h1>", escape(&title));
    for sentence in &report.headline {
        let _ = write!(body, r#"<p class="headline">{}</p>"#, escape(sentence));
    }
    for warning in &report.warnings {
        let _ = write!(
            body,
            r#"<div class="warning">Warning: {}</div>"#,
            escape(warning)
        );
    }
    let _ = write!(
        body,
        "<p>Method: {}.</p><h2>Contents</h2><ul>",
        escape(report.method)
    );
    for (id, heading, _) in &sections {
        let _ = write!(
            body,
            r##"<li><a href="#{id}">{}</a></li>"##,
            escape(heading)
        );
    }
    body += "</ul>";
    for (id, heading, content) in &sections {
        let _ = write!(body, r#"<h2 id="{id}">{}</h2>{content}"#, escape(heading));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        escape(&title)
    )
}

/// The lab's targets, in name order, for legends and colors.
fn target_names(report: &LabReport) -> Vec<&str> {
    let mut all: Vec<&str> = report.summaries.iter().map(|s| s.target.as_str()).collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn legend(targets: &[&str], extra: &str) -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    for (i, target) in targets.iter().enumerate() {
        let _ = write!(
            out,
            r#"<span><i style="background:{}"></i>{}</span>"#,
            svg::color(i),
            escape(target)
        );
    }
    out + extra + "</p>"
}

/// (workload, script, scale): what one chart of a metric against clients is about.
type Dataset = (String, String, String);

/// Items of each dataset, with the dataset's client counts in order.
type ByDataset<'a, T> = BTreeMap<Dataset, (Vec<i64>, Vec<&'a T>)>;

/// Cells grouped per (workload, script, scale), the client counts of each group in order.
fn by_dataset<T>(items: &[T], cell: impl Fn(&T) -> &CellKey) -> ByDataset<'_, T> {
    let mut groups: ByDataset<'_, T> = BTreeMap::new();
    for item in items {
        let c = cell(item);
        let group = groups
            .entry((c.workload.clone(), c.script.clone(), c.scale.clone()))
            .or_default();
        group.0.push(c.clients);
        group.1.push(item);
    }
    for (clients, _) in groups.values_mut() {
        clients.sort_unstable();
        clients.dedup();
    }
    groups
}

fn client_labels(clients: &[i64]) -> Vec<String> {
    clients.iter().map(|c| format!("{c} clients")).collect()
}

/// One chart per (workload, script, scale): the metric against clients, a line per target.
fn scaling_charts(report: &LabReport) -> String {
    let targets = target_names(report);
    let mut out = legend(&targets, "");
    for ((workload, script, scale), (clients, summaries)) in
        by_dataset(&report.summaries, |s| &s.cell)
    {
        let title = format!(
            "<h3>{} {} scale {}</h3>",
            escape(&workload),
            escape(&script),
            escape(&scale)
        );
        // One client count is one point per target: bars say it, a line chart of dots does not.
        if clients.len() == 1 {
            let bars = bars_per_target(&targets, &summaries, |target, s: &CellSummary| {
                vec![(format!("{target}, {} clients", s.cell.clients), s.median)]
            });
            let _ = write!(
                out,
                "{title}{}",
                svg::value_bars(&format!("{} (median of the runs)", report.metric), &bars)
            );
            continue;
        }
        let lines: Vec<Line> = targets
            .iter()
            .enumerate()
            .map(|(color, target)| Line {
                name: target.to_string(),
                color,
                dash: None,
                marked: Vec::new(),
                points: clients
                    .iter()
                    .map(|c| {
                        summaries
                            .iter()
                            .find(|s| s.target == *target && s.cell.clients == *c)
                            .map(|s| Spread {
                                median: s.median,
                                min: s.min,
                                max: s.max,
                            })
                    })
                    .collect(),
            })
            .collect();
        let _ = write!(
            out,
            "{title}{}",
            svg::line_chart(&report.metric, &client_labels(&clients), &lines)
        );
    }
    out
}

/// Bars for a dataset measured at one client count: each target's (label, value)s in its
/// colour, in the legend's order.
fn bars_per_target<S: HasTarget>(
    targets: &[&str],
    summaries: &[&S],
    values: impl Fn(&str, &S) -> Vec<(String, f64)>,
) -> Vec<ValueBar> {
    targets
        .iter()
        .enumerate()
        .flat_map(|(color, target)| {
            summaries
                .iter()
                .find(|s| s.target() == *target)
                .map(|s| values(target, s))
                .unwrap_or_default()
                .into_iter()
                .map(move |(label, value)| ValueBar {
                    label,
                    value,
                    color,
                })
        })
        .collect()
}

/// A summary of one target's cell.
trait HasTarget {
    fn target(&self) -> &str;
}

impl HasTarget for CellSummary {
    fn target(&self) -> &str {
        &self.target
    }
}

impl HasTarget for LatencySummary {
    fn target(&self) -> &str {
        &self.target
    }
}

const PERCENTILE_DASHES: [(&str, Option<&str>); 3] =
    [("p50", None), ("p95", Some("6 3")), ("p99", Some("2 2"))];

/// Per (workload, script, scale): p50 / p95 / p99 against clients, a color per target and a
/// dash per percentile; then the table.
/// Each query's time per target as bars, a group per query, and the table beside them.
fn query_times(tables: &[super::query_times::QueryTimes]) -> String {
    let mut out = String::new();
    for table in tables {
        let names: Vec<&str> = table.targets.iter().map(String::as_str).collect();
        let bars: Vec<ValueBar> = table
            .rows
            .iter()
            .flat_map(|(query, times)| {
                times.iter().enumerate().filter_map(move |(i, time)| {
                    time.map(|value| ValueBar {
                        label: format!("{query} {}", table.targets[i]),
                        value,
                        color: i,
                    })
                })
            })
            .collect();
        let _ = write!(
            out,
            "<h3>TPROC-H, {}</h3>{}{}",
            escape(&table.dataset),
            legend(&names, ""),
            svg::value_bars("median query time, ms", &bars)
        );
    }
    out
}

fn latency(report: &LabReport) -> String {
    let targets = target_names(report);
    let mut out = legend(&targets, "<span>solid p50, dashed p95, dotted p99</span>");
    for ((workload, script, scale), (clients, summaries)) in
        by_dataset(&report.latency, |s| &s.cell)
    {
        if clients.len() == 1 {
            let bars: Vec<ValueBar> = targets
                .iter()
                .enumerate()
                .filter_map(|(color, target)| {
                    let s = summaries.iter().find(|s| s.target == *target)?;
                    Some(
                        [("p50", s.p50_ms), ("p95", s.p95_ms), ("p99", s.p99_ms)].map(
                            |(name, value)| ValueBar {
                                label: format!("{target} {name}"),
                                value,
                                color,
                            },
                        ),
                    )
                })
                .flatten()
                .collect();
            let _ = write!(
                out,
                "<h3>{} {} scale {}, {} clients</h3>{}",
                escape(&workload),
                escape(&script),
                escape(&scale),
                clients[0],
                svg::value_bars("latency ms (median of the runs)", &bars)
            );
            continue;
        }
        let mut lines = Vec::new();
        for (color, target) in targets.iter().enumerate() {
            for (index, (percentile, dash)) in PERCENTILE_DASHES.iter().enumerate() {
                let points = clients
                    .iter()
                    .map(|c| {
                        summaries
                            .iter()
                            .find(|s| s.target == *target && s.cell.clients == *c)
                            .map(|s| {
                                let value = [s.p50_ms, s.p95_ms, s.p99_ms][index];
                                Spread {
                                    median: value,
                                    min: value,
                                    max: value,
                                }
                            })
                    })
                    .collect();
                lines.push(Line {
                    name: format!("{target} {percentile}"),
                    color,
                    dash: *dash,
                    points,
                    marked: Vec::new(),
                });
            }
        }
        let _ = write!(
            out,
            "<h3>{} {} scale {}</h3>{}",
            escape(&workload),
            escape(&script),
            escape(&scale),
            svg::line_chart("latency ms", &client_labels(&clients), &lines)
        );
    }
    let rows: Vec<Vec<(String, bool)>> = report
        .latency
        .iter()
        .map(|l| {
            vec![
                (l.target.clone(), true),
                (cell_text(&l.cell), true),
                (l.runs.to_string(), false),
                (format!("{:.3}", l.p50_ms), false),
                (format!("{:.3}", l.p95_ms), false),
                (format!("{:.3}", l.p99_ms), false),
            ]
        })
        .collect();
    out + &table(
        &["target", "cell", "runs", "p50 ms", "p95 ms", "p99 ms"],
        &rows,
    )
}

fn families(report: &LabReport) -> String {
    let rows: Vec<Vec<(String, bool)>> = report
        .families
        .iter()
        .map(|f| {
            vec![
                (f.target.clone(), true),
                (f.workload.clone(), true),
                (f.family.clone(), true),
                (f.cells.to_string(), false),
                (format!("{:.3}", f.min), false),
                (format!("{:.3}", f.median), false),
                (format!("{:.3}", f.max), false),
                (format!("{:.3}", f.mean), false),
                (f.group_text(), false),
                (f.rounds.to_string(), false),
                (f.verdict.clone().unwrap_or_else(|| "-".into()), true),
            ]
        })
        .collect();
    format!(
        "<p>Ratios to {} over each family's cells; the group's ratio is the geometric mean over rounds of each round's geometric mean of the cells' ratios, with its 95% t interval.</p>",
        escape(&report.base)
    ) + &table(
        &[
            "target",
            "workload",
            "family",
            "cells",
            "min",
            "median",
            "max",
            "mean",
            "group (95% interval)",
            "rounds",
            "verdict",
        ],
        &rows,
    )
}

/// A row per target, a column per step: the base's metric, the others' ratios to it.
fn step_table(steps: &super::steps::StepTable, report: &LabReport) -> String {
    let rows: Vec<Vec<(String, bool)>> = steps
        .rows
        .iter()
        .map(|row| {
            std::iter::once((row.target.clone(), true))
                .chain(
                    row.cells
                        .iter()
                        .map(|c| (super::steps::cell_text(c.as_ref()), false)),
                )
                .collect()
        })
        .collect();
    let header: Vec<&str> = std::iter::once("target")
        .chain(steps.steps.iter().map(String::as_str))
        .collect();
    format!(
        "<p>The base ({}) shows its {}; every other target its ratio to the base with the paired 95% interval and verdict. Then the per-second throughput's coefficient of variation and longest stall, medians over the runs.</p>",
        escape(&report.base),
        escape(&report.metric)
    ) + &table(&header, &rows)
}

fn series_chart(series: &RunSeries) -> String {
    let finished: Vec<Mark> = series
        .checkpoints
        .iter()
        .filter(|m| m.completed > 0.0)
        .map(|m| Mark {
            second: m.second,
            label: format!(
                "second {}: {} checkpoint(s) completed, {} buffers written",
                m.second, m.completed, m.buffers_written
            ),
        })
        .collect();
    let writes: Vec<(u64, f64)> = series
        .checkpoints
        .iter()
        .map(|m| (m.second, m.buffers_written))
        .collect();
    let completed = series
        .checkpoints
        .iter()
        .fold(0.0, |sum, mark| sum + mark.completed);
    let buffers = writes.iter().fold(0.0, |sum, (_, b)| sum + b);
    format!(
        "<h3>{} — {}, run {} (round {})</h3><p>{completed} checkpoint(s) completed (dashed lines, at the end of their second), {buffers} buffers written by the checkpointer (pale bars, per second).</p>{}",
        escape(&series.target),
        escape(&cell_text(&series.cell)),
        series.run_id,
        // Rounds count from 1 everywhere the user reads them (the lab's progress, the plan).
        series.repetition + 1,
        svg::time_series("tps", &series.tps, &finished, &writes)
    )
}

fn comparison_section(report: &LabReport, target: &str) -> String {
    let Some(comparison) = report.comparisons.iter().find(|c| c.target == target) else {
        return String::new();
    };
    let bars: Vec<RatioBar> = comparison
        .cells
        .iter()
        .map(|c| RatioBar {
            label: cell_text(&c.cell),
            ratio: c.ratio,
            interval: c.ci_low.zip(c.ci_high),
        })
        .collect();
    let stops = comparison.cells.iter().any(|c| c.stopped.is_some());
    let rows: Vec<Vec<(String, bool)>> = comparison
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![
                (cell_text(&c.cell), true),
                (c.runs_text(), false),
                (format!("{:.1}", c.base_median), false),
                (format!("{:.1}", c.other_median), false),
                (format!("{:.3}", c.ratio), false),
                (optional(c.median_round_ratio(), 3), false),
                (
                    format!("{}–{}", optional(c.ci_low, 3), optional(c.ci_high, 3)),
                    false,
                ),
                (c.precision_text(), false),
                (format!("{:.3}", c.p_value), false),
            ];
            if stops {
                row.push((c.stop_text().unwrap_or_else(|| "-".into()), true));
            }
            row.push((c.verdict.clone(), true));
            row
        })
        .collect();
    let mut header = vec![
        "cell",
        "runs",
        "base",
        "other",
        "ratio",
        "median ratio",
        "95% CI",
        "±",
        "p",
    ];
    if stops {
        header.push("stopped");
    }
    header.push("verdict");
    let notes: String = comparison
        .notes
        .iter()
        .map(|note| format!("<p>{}</p>", escape(note)))
        .collect();
    svg::ratio_bars(&bars) + &table(&header, &rows) + &notes
}

fn statements(report: &LabReport) -> String {
    let percent = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:+.1}%"));
    let rows: Vec<Vec<(String, bool)>> = report
        .statements
        .iter()
        .map(|s| {
            vec![
                (s.target.clone(), true),
                (cell_text(&s.cell), true),
                (s.query.clone(), true),
                (format!("{:.0}", s.calls_per_run), false),
                (format!("{:.4}", s.mean_ms), false),
                (percent(s.mean_change_pct), false),
                (s.against_base(&report.base), true),
                (format!("{:.4}", s.stddev_ms), false),
                (percent(s.stddev_change_pct), false),
            ]
        })
        .collect();
    table(
        &[
            "target",
            "cell",
            "statement",
            "calls/run",
            "mean ms",
            "Δ mean",
            "ratio [95% CI]",
            "stddev ms",
            "Δ stddev",
        ],
        &rows,
    )
}

fn efficiency(report: &LabReport) -> String {
    let rows: Vec<Vec<(String, bool)>> = report
        .efficiency
        .iter()
        .map(|e| {
            vec![
                (e.target.clone(), true),
                (cell_text(&e.cell), true),
                (optional(e.cpu_us_per_txn, 1), false),
                (optional(e.context_switches_per_txn, 2), false),
                (optional(e.read_kb_per_txn, 3), false),
                (optional(e.write_kb_per_txn, 3), false),
                (optional(e.client_cpu_share.map(|s| s * 100.0), 1), false),
            ]
        })
        .collect();
    let targets = target_names(report);
    let bars: Vec<ValueBar> = report
        .efficiency
        .iter()
        .filter_map(|e| {
            Some(ValueBar {
                label: format!("{} {}", e.target, cell_text(&e.cell)),
                value: e.cpu_us_per_txn?,
                color: targets.iter().position(|t| *t == e.target).unwrap_or(0),
            })
        })
        .collect();
    let chart = if bars.is_empty() {
        String::new()
    } else {
        svg::value_bars("CPU µs per transaction (whole machine)", &bars)
    };
    chart
        + &table(
            &[
                "target",
                "cell",
                "CPU µs",
                "context switches",
                "KB read",
                "KB written",
                "driver CPU % of client cores",
            ],
            &rows,
        )
}

fn why_section(panel: &WhyPanel, base: &str) -> String {
    let mut out = format!(
        "<p>Versions: {} / {}</p>",
        escape(&panel.base_version),
        escape(&panel.version)
    );
    for (title, diffs) in panel.setting_groups() {
        if diffs.is_empty() {
            continue;
        }
        let rows: Vec<Vec<(String, bool)>> = diffs
            .iter()
            .map(|d| {
                vec![
                    (d.name.clone(), true),
                    (d.base.clone().unwrap_or("-".into()), true),
                    (d.other.clone().unwrap_or("-".into()), true),
                ]
            })
            .collect();
        let _ = write!(
            out,
            "<h3>{title}</h3>{}",
            table(&["setting", base, &panel.target], &rows)
        );
    }
    for plan in &panel.plan_differences {
        let nodes = plan.changed_nodes().map_or(String::new(), |nodes| {
            format!(
                "<p>Plan nodes changed ({} → {}): {}</p>",
                escape(base),
                escape(&panel.target),
                escape(&nodes)
            )
        });
        let _ = write!(
            out,
            "<h3>Plan differs: <code>{}</code></h3>{nodes}<p>{}</p><pre>{}</pre><p>{}</p><pre>{}</pre>",
            escape(&plan.query),
            escape(base),
            escape(&plan.base_plan),
            escape(&panel.target),
            escape(&plan.plan)
        );
    }
    for (target, waits) in [
        (base, &panel.base_waits),
        (panel.target.as_str(), &panel.waits),
    ] {
        let mut list: Vec<String> = waits
            .iter()
            .map(|(state, sessions)| format!("{} {sessions:.2}", escape(state)))
            .collect();
        if list.is_empty() {
            list.push(crate::report::why::NO_WAIT_SAMPLES.into());
        }
        let _ = write!(
            out,
            "<p>Top waits of {} (average sessions): {}</p>",
            escape(target),
            list.join(", ")
        );
    }
    out
}
