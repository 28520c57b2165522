//! The lab report as one self-contained HTML file: table of contents, warnings first, inline
//! SVG charts, the same numbers as the JSON. No scripts, no network.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::lab_report::{cell_text, optional, CellSummary, LabReport};
use super::svg::{self, escape, RatioBar, Spread};
use super::why::WhyPanel;

const STYLE: &str = "body{font-family:sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}\
th{background:#f3f3f3}td.text{text-align:left}.warning{background:#fff4d6;border-left:4px solid #e0a000;padding:6px 10px;margin:4px 0}\
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\
code{font-size:12px}";

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
    for panel in &report.why {
        sections.push((
            format!("why-{}", panel.target),
            format!("Why: {} vs {}", panel.target, report.base),
            why_section(panel, &report.base),
        ));
    }
    let mut body = format!("<h1>{}</h1>", escape(&title));
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

/// One chart per (workload, script, scale): the metric against clients, a line per target.
fn scaling_charts(report: &LabReport) -> String {
    let mut groups: BTreeMap<(String, String, String), Vec<&CellSummary>> = BTreeMap::new();
    for s in &report.summaries {
        let key = (
            s.cell.workload.clone(),
            s.cell.script.clone(),
            s.cell.scale.clone(),
        );
        groups.entry(key).or_default().push(s);
    }
    let targets: Vec<&str> = {
        let mut all: Vec<&str> = report.summaries.iter().map(|s| s.target.as_str()).collect();
        all.dedup();
        all.sort_unstable();
        all.dedup();
        all
    };
    let mut out = String::from(r#"<p class="legend">"#);
    for (i, target) in targets.iter().enumerate() {
        let _ = write!(
            out,
            r#"<span><i style="background:{}"></i>{}</span>"#,
            svg::color(i),
            escape(target)
        );
    }
    out += "</p>";
    for ((workload, script, scale), summaries) in groups {
        let mut clients: Vec<i64> = summaries.iter().map(|s| s.cell.clients).collect();
        clients.sort_unstable();
        clients.dedup();
        let series: Vec<(String, Vec<Option<Spread>>)> = targets
            .iter()
            .map(|target| {
                let points = clients
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
                    .collect();
                (target.to_string(), points)
            })
            .collect();
        let labels: Vec<String> = clients.iter().map(|c| format!("{c} clients")).collect();
        let _ = write!(
            out,
            "<h3>{} {} scale {}</h3>{}",
            escape(&workload),
            escape(&script),
            escape(&scale),
            svg::line_chart(&report.metric, &labels, &series)
        );
    }
    out
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
    let rows: Vec<Vec<(String, bool)>> = comparison
        .cells
        .iter()
        .map(|c| {
            vec![
                (cell_text(&c.cell), true),
                (format!("{}/{}", c.base_runs, c.other_runs), false),
                (format!("{:.1}", c.base_median), false),
                (format!("{:.1}", c.other_median), false),
                (format!("{:.3}", c.ratio), false),
                (
                    format!("{}–{}", optional(c.ci_low, 3), optional(c.ci_high, 3)),
                    false,
                ),
                (format!("{:.3}", c.p_value), false),
                (c.verdict.clone(), true),
            ]
        })
        .collect();
    svg::ratio_bars(&bars)
        + &table(
            &[
                "cell", "runs", "base", "other", "ratio", "95% CI", "p", "verdict",
            ],
            &rows,
        )
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
                (format!("{:.4}", s.mean_ms), false),
                (percent(s.mean_change_pct), false),
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
            "mean ms",
            "Δ mean",
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
            ]
        })
        .collect();
    table(
        &[
            "target",
            "cell",
            "CPU µs",
            "context switches",
            "KB read",
            "KB written",
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
        let _ = write!(
            out,
            "<h3>Plan differs: <code>{}</code></h3><p>{}</p><pre>{}</pre><p>{}</p><pre>{}</pre>",
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
        let list: Vec<String> = waits
            .iter()
            .map(|(state, sessions)| format!("{} {sessions:.2}", escape(state)))
            .collect();
        let _ = write!(
            out,
            "<p>Top waits of {} (average sessions): {}</p>",
            escape(target),
            list.join(", ")
        );
    }
    out
}
