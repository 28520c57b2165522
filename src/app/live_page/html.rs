//! The live page's HTML: the shell (the report's style, a few lines of script that take the
//! server's sections as they change) and each section, rendered on the server so that the
//! first paint holds everything and the script only swaps sections in. No CDN, no library:
//! the charts are SVG drawn here and by the report's own chart code.

use std::fmt::Write;

use super::state::{CurrentRun, PageState, Square};
use crate::report::lab_report::LabReport;
use crate::report::svg::{self, escape, Line, Spread};
use stampede_base::duration::human;
use stampede_stats::paired::compare_paired;
use stampede_stats::verdict::Direction;

/// The sections in the order the page shows them: (element id, heading).
pub const SECTIONS: [(&str, &str); 5] = [
    ("summary", ""),
    ("grid", "Plan"),
    ("current", "Run in progress"),
    ("ratios", "Ratios so far"),
    ("claims", "Claims"),
];

const PAGE_STYLE: &str =
    ".sq{display:inline-block;width:11px;height:11px;margin:1px;border:1px solid #999;\
vertical-align:middle}.sq.completed{background:#3a8f3a}.sq.running{background:#e0a000}\
.sq.failed{background:#c0392b}.sq.interrupted,.sq.unfinished{background:#8e44ad}\
.sq.skipped{background:#ddd;border-color:#ddd}.sq.planned{background:#fff}\
td.sqs{text-align:left;white-space:nowrap}#summary p{margin:.3em 0}";

/// Swaps in each section the server sends; at the lab's end the page becomes the report.
/// The token, when the page was opened with one, goes with the event stream's request.
const SCRIPT: &str = r#"<script>
(() => {
  const token = new URLSearchParams(location.search).get("token");
  const events = new EventSource("events" + (token ? "?token=" + encodeURIComponent(token) : ""));
  let updates = 0;
  events.onmessage = (message) => {
    const state = JSON.parse(message.data);
    if (state.report) {
      events.close();
      document.open();
      document.write(state.report);
      document.close();
      return;
    }
    for (const [id, html] of Object.entries(state.sections)) {
      const element = document.getElementById(id);
      if (element) element.innerHTML = html;
    }
    updates += 1;
    document.body.dataset.updates = updates;
    document.body.dataset.version = state.version;
  };
})();
</script>"#;

/// The whole page with the sections as they are now.
pub fn page(lab: &str, sections: &[(String, String)]) -> String {
    let mut body = format!("<h1>Lab \"{}\" — live</h1>", escape(lab));
    for ((id, heading), (_, html)) in SECTIONS.iter().zip(sections) {
        if !heading.is_empty() {
            let _ = write!(body, "<h2>{heading}</h2>");
        }
        let _ = write!(body, "<div id=\"{id}\">{html}</div>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} — live</title>\
         <style>{}{PAGE_STYLE}</style></head><body>{body}{SCRIPT}</body></html>\n",
        escape(lab),
        crate::report::html::STYLE
    )
}

/// Every section's HTML, in `SECTIONS`' order.
pub fn sections(state: &PageState, report: Option<&LabReport>) -> Vec<(String, String)> {
    let html = [
        summary(state),
        grid(state),
        current(&state.current),
        report.map_or_else(|| "<p>No run has completed yet.</p>".into(), ratios),
        report.map_or_else(
            || "<p>Claims are judged as rounds complete.</p>".into(),
            claims,
        ),
    ];
    SECTIONS
        .iter()
        .zip(html)
        .map(|((id, _), html)| (id.to_string(), html))
        .collect()
}

fn summary(state: &PageState) -> String {
    let finished = state.count(Square::Completed);
    let total: usize = state.counts.values().sum();
    let mut line = format!(
        "<p data-finished=\"{finished}\" data-total=\"{total}\"><b>{finished} of {total}</b> runs completed",
    );
    for (square, word) in [
        (Square::Running, "running"),
        (Square::Failed, "failed"),
        (Square::Interrupted, "interrupted"),
        (
            Square::Unfinished,
            "unfinished (its lab was stopped; never in a verdict)",
        ),
        (Square::Skipped, "skipped"),
    ] {
        let n = state.count(square);
        if n > 0 {
            let _ = write!(line, " · {n} {word}");
        }
    }
    match (&state.eta, state.lab.ended) {
        (_, true) => line += " · the lab has ended",
        (Some(eta), false) => {
            let _ = write!(line, " · about {} left", human(*eta));
        }
        (None, false) => {}
    }
    line += "</p>";
    for shard in &state.shards {
        let _ = write!(
            line,
            "<p class=\"shard\" data-shard=\"{}\" data-finished=\"{}\">shard {}: {} run(s) finished{}{}</p>",
            shard.index,
            shard.finished,
            shard.index,
            shard.finished,
            if shard.failed > 0 {
                format!(", {} failed", shard.failed)
            } else {
                String::new()
            },
            shard
                .running
                .as_ref()
                .map_or(String::new(), |r| format!("; measuring {}", escape(r))),
        );
    }
    line
}

/// A row per cell, a column per target, a square per round.
fn grid(state: &PageState) -> String {
    let mut out = String::from("<table><tr><th>cell</th>");
    for target in &state.targets {
        let _ = write!(out, "<th>{}</th>", escape(target));
    }
    out += "</tr>";
    for row in &state.grid {
        let _ = write!(out, "<tr><td class=\"text\">{}</td>", escape(&row.label));
        for (target, rounds) in state.targets.iter().zip(&row.rounds) {
            out += "<td class=\"sqs\">";
            for (round, (square, tps)) in rounds.iter().enumerate() {
                let tps = tps.map_or(String::new(), |t| format!(": {t:.0} tps"));
                let _ = write!(
                    out,
                    "<span class=\"sq {0}\" data-status=\"{0}\" title=\"{1} round {2}: {0}{tps}\"></span>",
                    square.name(),
                    escape(target),
                    round + 1
                );
            }
            out += "</td>";
        }
        out += "</tr>";
    }
    out + "</table><p class=\"legend\">\
        <span><i class=\"sq completed\"></i>completed</span><span><i class=\"sq running\"></i>running</span>\
        <span><i class=\"sq failed\"></i>failed</span><span><i class=\"sq unfinished\"></i>interrupted or unfinished</span>\
        <span><i class=\"sq skipped\"></i>skipped</span><span><i class=\"sq planned\"></i>planned</span></p>"
}

fn current(runs: &[CurrentRun]) -> String {
    if runs.is_empty() {
        return "<p>No run is being measured now (between runs, or the lab is not running).</p>"
            .into();
    }
    runs.iter().map(current_run).collect()
}

/// The run's tps and p50/p99 per second, its clients, failures, lag and pods' shares.
fn current_run(run: &CurrentRun) -> String {
    let seconds = &run.seconds;
    // About ten labelled seconds, however long the run.
    let every = seconds.len().div_ceil(10).max(1);
    let labels: Vec<String> = seconds
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i % every == 0 {
                format!("{} s", s.second + 1)
            } else {
                String::new()
            }
        })
        .collect();
    let point = |value: Option<f64>| {
        value.map(|v| Spread {
            median: v,
            min: v,
            max: v,
        })
    };
    let tps = Line {
        name: "tps".into(),
        color: 0,
        dash: None,
        points: seconds.iter().map(|s| point(Some(s.tps))).collect(),
        marked: Vec::new(),
    };
    let percentiles: Vec<Line> = [("p50 ms", 1, None), ("p99 ms", 3, Some("4 3"))]
        .into_iter()
        .map(|(name, color, dash)| Line {
            name: name.into(),
            color,
            dash,
            points: seconds
                .iter()
                .map(|s| point(if name == "p50 ms" { s.p50_ms } else { s.p99_ms }))
                .collect(),
            marked: Vec::new(),
        })
        .collect();
    let totals = &run.run.totals;
    let lag: Vec<f64> = seconds.iter().filter_map(|s| s.lag_ms).collect();
    let mut facts = format!(
        "{} clients · {} transactions in {} s · {} failed",
        run.clients, totals.transactions, totals.seconds, totals.failures
    );
    if !lag.is_empty() {
        let mean = lag.iter().sum::<f64>() / lag.len() as f64;
        let _ = write!(facts, " · schedule lag {mean:.2} ms on average");
    }
    let pods = pod_shares(&totals.pods);
    let shard = run
        .run
        .shard
        .map_or(String::new(), |s| format!(" (shard {s})"));
    format!(
        "<h3 data-seconds=\"{}\">{} — {}, round {}{shard}</h3><p>{facts}</p>{pods}\
         <p>Committed transactions per second:</p>{}<p>Latency per second: p50 (solid) and p99 \
         (dashed), ms:</p>{}",
        seconds.len(),
        escape(&run.run.target),
        escape(&run.cell),
        run.run.repetition + 1,
        svg::line_chart("tps", &labels, &[tps]),
        svg::line_chart("ms", &labels, &percentiles),
    )
}

/// "pod 0: 51% · pod 1: 49%" of a spread run's transactions.
fn pod_shares(pods: &[u64]) -> String {
    let total: u64 = pods.iter().sum();
    if pods.is_empty() || total == 0 {
        return String::new();
    }
    let shares: Vec<String> = pods
        .iter()
        .enumerate()
        .map(|(pod, n)| format!("pod {pod}: {:.0}%", *n as f64 * 100.0 / total as f64))
        .collect();
    format!("<p class=\"pods\">{}</p>", shares.join(" · "))
}

/// Per target against the base: each cell's ratio, interval and verdict, and how the interval
/// narrowed round by round.
fn ratios(report: &LabReport) -> String {
    let mut out = String::new();
    for line in &report.headline {
        let _ = write!(out, "<p class=\"headline\">{}</p>", escape(line));
    }
    for comparison in &report.comparisons {
        let _ = write!(
            out,
            "<h3>{} against {}</h3><table><tr><th>cell</th><th>runs</th><th>ratio</th>\
             <th>95% interval</th><th>verdict</th></tr>",
            escape(&comparison.target),
            escape(&report.base)
        );
        let mut charts = String::new();
        for cell in &comparison.cells {
            let interval = match (cell.ci_low, cell.ci_high) {
                (Some(low), Some(high)) => format!("{low:.3} – {high:.3}"),
                _ => "-".into(),
            };
            let _ = write!(
                out,
                "<tr><td class=\"text\">{}</td><td>{}</td><td>{:.3}</td><td>{interval}</td>\
                 <td class=\"text verdict\">{}</td></tr>",
                escape(&cell.cell_text()),
                escape(&cell.runs_text()),
                cell.ratio,
                escape(&cell.verdict)
            );
            let ratios: Vec<f64> = cell.round_ratios.iter().map(|(_, r)| *r).collect();
            if ratios.len() >= 2 {
                let _ = write!(
                    charts,
                    "<h4>{} — the interval round by round</h4>{}",
                    escape(&cell.cell_text()),
                    narrowing(&ratios)
                );
            }
        }
        out += "</table>";
        out += &charts;
    }
    if out.is_empty() {
        out =
            "<p>Ratios come once a cell has completed a round on the base and another target.</p>"
                .into();
    }
    out
}

/// The paired interval after each round (from the second on), as a line with its spread.
fn narrowing(ratios: &[f64]) -> String {
    let labels: Vec<String> = (1..=ratios.len()).map(|k| format!("round {k}")).collect();
    let points = (1..=ratios.len())
        .map(|k| {
            let pairs: Vec<(f64, f64)> = ratios[..k].iter().map(|r| (1.0, *r)).collect();
            let paired = compare_paired(&pairs, Direction::HigherIsBetter)?;
            let (min, max) = paired.interval.unwrap_or((paired.ratio, paired.ratio));
            Some(Spread {
                median: paired.ratio,
                min,
                max,
            })
        })
        .collect();
    let line = Line {
        name: "ratio with its 95% interval".into(),
        color: 0,
        dash: None,
        points,
        marked: Vec::new(),
    };
    svg::line_chart("ratio", &labels, &[line])
}

fn claims(report: &LabReport) -> String {
    if report.claims.is_empty() {
        return "<p>The spec makes no claims.</p>".into();
    }
    let mut out = String::from("<table><tr>");
    for head in crate::report::claims::HEADER {
        let _ = write!(out, "<th>{}</th>", escape(head));
    }
    out += "</tr>";
    for claim in &report.claims {
        out += "<tr>";
        for cell in crate::report::claims::cells(claim) {
            let _ = write!(out, "<td class=\"text\">{}</td>", escape(&cell));
        }
        out += "</tr>";
    }
    out + "</table>"
}
