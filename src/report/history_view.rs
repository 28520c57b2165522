//! `stampede history` on the terminal and as one HTML file: per history and cell, the series
//! and its changes with their size, interval and the invocations either side.

use std::fmt::Write;

use super::comparison::Metric;
use super::history::{utc_minute, CellHistory, Change, History};
use super::html::STYLE;
use super::svg::{self, escape, significant, HistoryMark};
use stampede_stats::verdict::Direction;

/// The heading line of a history.
fn heading(history: &History) -> String {
    let span = match (history.invocations.first(), history.invocations.last()) {
        (Some(first), Some(last)) => format!(
            "{} – {} UTC",
            utc_minute(first.created_unix_s),
            utc_minute(last.created_unix_s)
        ),
        _ => String::new(),
    };
    format!(
        "History \"{}\" on {}: {} invocation{}, {span}",
        history.name,
        history.machine,
        history.invocations.len(),
        if history.invocations.len() == 1 {
            ""
        } else {
            "s"
        }
    )
}

/// What a change is, in the metric's direction.
fn change_word(change: &Change, metric: &Metric) -> &'static str {
    match (change.ratio < 1.0, metric.direction()) {
        (true, Direction::HigherIsBetter) | (false, Direction::LowerIsBetter) => "regression",
        _ => "improvement",
    }
}

/// One change as a sentence: where, how much, and the invocations either side.
pub fn change_sentence(
    history: &History,
    cell: &CellHistory,
    change: &Change,
    metric: &Metric,
) -> String {
    let invocation = |point: usize| &history.invocations[cell.points[point].invocation];
    let (before, after) = (invocation(change.at - 1), invocation(change.at));
    // A kernel upgrade between the two is a suspect a reader should see.
    let kernel = match (&before.kernel, &after.kernel) {
        (Some(old), Some(new)) if old != new => format!("; kernel {old} → {new}"),
        _ => String::new(),
    };
    format!(
        "{} at {}: {:.3}× [{:.3}, {:.3}] ({}, p = {:.1e}), after {}{kernel}",
        change_word(change, metric),
        after.described(),
        change.ratio,
        change.interval.0,
        change.interval.1,
        metric.name(),
        change.p_value,
        before.described()
    )
}

pub fn to_text(histories: &[History], metric: &Metric) -> String {
    let mut out = String::new();
    for history in histories {
        let _ = writeln!(out, "{}", heading(history));
        for note in &history.notes {
            let _ = writeln!(out, "  {note}");
        }
        for cell in &history.cells {
            let latest = cell.points.last().map_or(String::new(), |p| {
                format!(", latest {} {}", significant(p.value), metric.name())
            });
            let changes = if cell.changes.is_empty() {
                "; no change".to_string()
            } else {
                format!(
                    "; {} change{}",
                    cell.changes.len(),
                    if cell.changes.len() == 1 { "" } else { "s" }
                )
            };
            let _ = writeln!(
                out,
                "  {}: {} point{}{latest}{changes}",
                cell.cell,
                cell.points.len(),
                if cell.points.len() == 1 { "" } else { "s" }
            );
            for change in &cell.changes {
                let _ = writeln!(
                    out,
                    "    {}",
                    change_sentence(history, cell, change, metric)
                );
            }
        }
    }
    out
}

pub fn to_html(histories: &[History], metric: &Metric) -> String {
    let title = match histories {
        [one] => format!("History \"{}\"", one.name),
        _ => format!("{} histories", histories.len()),
    };
    let mut body = format!("<h1>{}</h1>", escape(&title));
    body += "<p>Each point is an invocation's median; its bar, the 95% interval of its own runs. \
             Grey lines are the plateaus between changes, red dashed lines the changes \
             (PELT, each change a decided step between its neighbours).</p>";
    for history in histories {
        let _ = write!(body, "<h2>{}</h2>", escape(&heading(history)));
        for note in &history.notes {
            let _ = write!(body, "<p>{}</p>", escape(note));
        }
        for cell in &history.cells {
            let _ = write!(body, "<h3>{}</h3>", escape(&cell.cell));
            for change in &cell.changes {
                let _ = write!(
                    body,
                    r#"<p class="headline">{}</p>"#,
                    escape(&change_sentence(history, cell, change, metric))
                );
            }
            let marks: Vec<HistoryMark> = cell
                .points
                .iter()
                .map(|p| HistoryMark {
                    value: p.value,
                    interval: p.interval,
                    label: history.invocations[p.invocation].name.clone(),
                })
                .collect();
            let changes: Vec<(usize, String)> = cell
                .changes
                .iter()
                .map(|c| (c.at, format!("{:.3}×", c.ratio)))
                .collect();
            body += &svg::history_chart(&metric.name(), &marks, &changes);
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        escape(&title)
    )
}
