//! The Noise section in each format: Markdown, CSV rows and HTML (with a drift chart per
//! cell). JSON is the model itself.

use std::fmt::Write;

use super::comparison::CellKey;
use super::lab_report::{cell_text, optional};
use super::noise::{ExcludedRun, FlaggedRun, Noise};
use super::svg::{self, escape, Line, Spread};

const INTRO: &str = "How much the runs vary, and how much of it the pairing of rounds leaves: \
the paired ratio's spread is what the verdicts' intervals are made of. Flagged runs stay in the \
analysis unless excluded with --exclude-run.";

pub fn markdown(noise: &Noise) -> String {
    if noise.cells.is_empty() && noise.flagged.is_empty() && noise.excluded.is_empty() {
        return String::new();
    }
    let mut out = format!("## Noise\n\n{INTRO}\n\n");
    if !noise.cells.is_empty() {
        out += &format!(
            "| {} |\n|---|---|---|---|---|---|---|\n",
            CELL_HEADER.join(" | ")
        );
        for row in cell_rows(noise) {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out += "\n";
    }
    for run in &noise.flagged {
        let _ = writeln!(out, "- **Flagged:** {}", flagged_text(run));
    }
    for run in &noise.excluded {
        let _ = writeln!(out, "- **Excluded:** {}", excluded_text(run));
    }
    if !noise.flagged.is_empty() || !noise.excluded.is_empty() {
        out += "\n";
    }
    out
}

/// (section, target, cell, item, measure, value) rows: one number (or cause) per row.
pub fn csv_rows(noise: &Noise) -> Vec<(&'static str, String, CellKey, String, String, String)> {
    let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let mut rows = Vec::new();
    for c in &noise.cells {
        for (measure, value) in [
            ("paired_ratio_sd_pct", c.paired_ratio_sd_pct),
            ("base_cv_pct", c.base_cv_pct),
            ("other_cv_pct", c.other_cv_pct),
            ("other_processes_cpu_pct", c.other_processes_cpu_pct),
        ] {
            rows.push((
                "noise",
                c.target.clone(),
                c.cell.clone(),
                String::new(),
                measure.to_string(),
                number(value),
            ));
        }
    }
    for chart in &noise.drift {
        for line in &chart.lines {
            for (round, value) in chart.rounds.iter().zip(&line.values) {
                rows.push((
                    "drift",
                    line.target.clone(),
                    chart.cell.clone(),
                    format!("round {}", round + 1),
                    "value".into(),
                    number(*value),
                ));
            }
        }
    }
    for run in &noise.flagged {
        let item = format!("run {}", run.run_id);
        rows.push((
            "flagged",
            run.target.clone(),
            run.cell.clone(),
            item.clone(),
            "deviation_pct".into(),
            run.deviation_pct.to_string(),
        ));
        for cause in &run.causes {
            rows.push((
                "flagged",
                run.target.clone(),
                run.cell.clone(),
                item.clone(),
                "cause".into(),
                cause.clone(),
            ));
        }
    }
    for run in &noise.excluded {
        rows.push((
            "excluded",
            run.target.clone(),
            run.cell.clone(),
            format!("run {}", run.run_id),
            "round".into(),
            (run.round + 1).to_string(),
        ));
    }
    rows
}

/// The section's body: the spreads, a drift chart per cell, the flagged and excluded runs.
pub fn html(
    noise: &Noise,
    metric: &str,
    table: impl Fn(&[&str], &[Vec<(String, bool)>]) -> String,
) -> String {
    let mut out = format!("<p>{}</p>", escape(INTRO));
    if !noise.cells.is_empty() {
        let rows: Vec<Vec<(String, bool)>> = cell_rows(noise)
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .enumerate()
                    .map(|(column, text)| (text, column < 2))
                    .collect()
            })
            .collect();
        out += &table(&CELL_HEADER, &rows);
    }
    if !noise.flagged.is_empty() {
        out += r#"<h3>Flagged runs</h3><ul class="flagged">"#;
        for run in &noise.flagged {
            let _ = write!(out, "<li>{}</li>", escape(&flagged_text(run)));
        }
        out += "</ul>";
    }
    if !noise.excluded.is_empty() {
        out += "<h3>Excluded runs</h3><ul>";
        for run in &noise.excluded {
            let _ = write!(
                out,
                "<li>{}: left out with --exclude-run</li>",
                escape(&excluded_text(run))
            );
        }
        out += "</ul>";
    }
    for chart in &noise.drift {
        let labels: Vec<String> = chart.rounds.iter().map(|r| (r + 1).to_string()).collect();
        let lines: Vec<Line> = chart
            .lines
            .iter()
            .enumerate()
            .map(|(color, line)| Line {
                name: line.target.clone(),
                color,
                dash: None,
                marked: flagged_points(noise, &chart.cell, &chart.rounds, &line.target),
                points: line
                    .values
                    .iter()
                    .map(|v| {
                        v.map(|value| Spread {
                            median: value,
                            min: value,
                            max: value,
                        })
                    })
                    .collect(),
            })
            .collect();
        let legend: Vec<String> = chart.lines.iter().map(|l| escape(&l.target)).collect();
        let _ = write!(
            out,
            r#"<h3 class="drift">Drift: {} — {metric} per round, in the lab's order ({})</h3>{}"#,
            escape(&cell_text(&chart.cell)),
            legend.join(", "),
            svg::line_chart(metric, &labels, &lines)
        );
    }
    out
}

/// The drift chart's points of `target`'s flagged runs in `cell`: (index of the round, what
/// the ring's tooltip says).
fn flagged_points(
    noise: &Noise,
    cell: &CellKey,
    rounds: &[u32],
    target: &str,
) -> Vec<(usize, String)> {
    noise
        .flagged
        .iter()
        .filter(|run| run.target == target && run.cell == *cell)
        .filter_map(|run| {
            let index = rounds.iter().position(|r| *r == run.round)?;
            Some((index, format!("flagged: {}", flagged_text(run))))
        })
        .collect()
}

const CELL_HEADER: [&str; 7] = [
    "target",
    "cell",
    "pairs",
    "paired ratio sd",
    "base runs CV",
    "other runs CV",
    "other processes' CPU",
];

/// Per target's cell: the columns of `CELL_HEADER`.
fn cell_rows(noise: &Noise) -> Vec<[String; 7]> {
    noise
        .cells
        .iter()
        .map(|c| {
            [
                c.target.clone(),
                cell_text(&c.cell),
                c.pairs.map_or("-".into(), |n| n.to_string()),
                percent(c.paired_ratio_sd_pct),
                percent(c.base_cv_pct),
                percent(c.other_cv_pct),
                percent(c.other_processes_cpu_pct),
            ]
        })
        .collect()
}

/// "run 17 (\"b\" pgbench select-only scale 1 × 1 clients, round 3)".
fn excluded_text(run: &ExcludedRun) -> String {
    format!(
        "run {} (\"{}\" {}, round {})",
        run.run_id,
        run.target,
        cell_text(&run.cell),
        run.round + 1
    )
}

/// "run 17, \"b\" pgbench select-only scale 1 × 1 clients, round 3: 812.0 (−31.2% from its
/// cell's median): a stall: 2 second(s) without a transaction (second 3, 4)".
fn flagged_text(run: &FlaggedRun) -> String {
    format!(
        "run {}, \"{}\" {}, round {}: {:.1} ({:+.1}% from its cell's median): {}",
        run.run_id,
        run.target,
        cell_text(&run.cell),
        run.round + 1,
        run.value,
        run.deviation_pct,
        run.causes.join("; ")
    )
}

fn percent(value: Option<f64>) -> String {
    let text = optional(value, 1);
    if value.is_some() {
        text + "%"
    } else {
        text
    }
}
