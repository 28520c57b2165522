//! The answer before the evidence: one sentence per target and workload saying what was
//! decided, which `compare` prints and every report opens with.

use std::collections::BTreeMap;

use super::comparison::CellComparison;

/// Decided cells named one by one; beyond this many, the rest are counted.
const NAMED_CELLS: usize = 3;

/// One sentence per workload: e.g. "b against a on pgbench: tps 1.20× on select-only scale 1 ×
/// 1 clients (±1.5%, 5 rounds); no detectable difference on 2 other cells; 1 cell undecided
/// (need ≥ 3 runs)."
pub fn sentences(target: &str, base: &str, metric: &str, cells: &[CellComparison]) -> Vec<String> {
    let mut by_workload: BTreeMap<&str, Vec<&CellComparison>> = BTreeMap::new();
    for cell in cells {
        by_workload
            .entry(cell.cell.workload.as_str())
            .or_default()
            .push(cell);
    }
    by_workload
        .into_iter()
        .map(|(workload, cells)| sentence(target, base, metric, workload, &cells))
        .collect()
}

fn sentence(
    target: &str,
    base: &str,
    metric: &str,
    workload: &str,
    cells: &[&CellComparison],
) -> String {
    let mut decided: Vec<&CellComparison> =
        cells.iter().copied().filter(|c| c.is_decided()).collect();
    // The largest changes first, either way.
    decided.sort_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()).reverse());
    let same = cells
        .iter()
        .filter(|c| c.verdict == "no detectable difference")
        .count();
    let undecided: Vec<&CellComparison> = cells
        .iter()
        .copied()
        .filter(|c| !c.is_decided() && c.verdict != "no detectable difference")
        .collect();
    let mut parts: Vec<String> = decided
        .iter()
        .take(NAMED_CELLS)
        .map(|c| {
            format!(
                "{metric} {:.2}× on {}{}",
                c.ratio,
                c.cell_text(),
                evidence(c)
            )
        })
        .collect();
    if decided.len() > NAMED_CELLS {
        let rest = &decided[NAMED_CELLS..];
        let faster = rest.iter().filter(|c| c.verdict == "faster").count();
        parts.push(format!(
            "{} more decided {} ({faster} faster, {} slower)",
            rest.len(),
            plural(rest.len(), "cell"),
            rest.len() - faster
        ));
    }
    if same > 0 {
        let other = if decided.is_empty() { "" } else { "other " };
        let the = if same == cells.len() && same > 1 {
            "all "
        } else {
            ""
        };
        parts.push(format!(
            "no detectable difference on {the}{same} {other}{}",
            plural(same, "cell")
        ));
    }
    if !undecided.is_empty() {
        parts.push(format!(
            "{} {} undecided ({})",
            undecided.len(),
            plural(undecided.len(), "cell"),
            why_undecided(&undecided)
        ));
    }
    if decided.is_empty() && same == 0 && undecided.is_empty() {
        parts.push("no cell to compare".into());
    }
    format!(
        "{target} against {base} on {workload}: {}.",
        parts.join("; ")
    )
}

/// " (±1.5%, 5 rounds)" for a paired cell, " (±4.0%, 5/5 runs)" for an unpaired one.
fn evidence(cell: &CellComparison) -> String {
    let precision = cell
        .precision
        .map(|p| format!("±{:.1}%, ", p * 100.0))
        .unwrap_or_default();
    match cell.pairs {
        Some(pairs) => format!(" ({precision}{pairs} {})", plural(pairs, "round")),
        None => format!(" ({precision}{}/{} runs)", cell.base_runs, cell.other_runs),
    }
}

/// "2 at the cap, 1 need ≥ 3 runs": each reason with its count.
fn why_undecided(cells: &[&CellComparison]) -> String {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for cell in cells {
        let reason = match (cell.stopped.as_deref(), cell.runs_needed) {
            (_, Some(n)) => format!("need ≥ {n} runs"),
            (Some("cap"), None) => "at the cap".into(),
            (Some("budget"), None) => "stopped by the budget".into(),
            _ => "the interval is too wide".into(),
        };
        *reasons.entry(reason).or_default() += 1;
    }
    reasons
        .iter()
        .map(|(reason, n)| {
            if cells.len() == 1 {
                reason.clone()
            } else {
                format!("{n} {reason}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.into()
    } else {
        format!("{word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::comparison::CellKey;

    fn cell(clients: i64, ratio: f64, verdict: &str) -> CellComparison {
        CellComparison {
            cell: CellKey {
                workload: "pgbench".into(),
                family: "read".into(),
                script: "select-only".into(),
                scale: "1".into(),
                clients,
            },
            base_runs: 5,
            other_runs: 5,
            base_median: 100.0,
            other_median: 100.0 * ratio,
            ratio,
            ci_low: None,
            ci_high: None,
            p_value: 0.5,
            verdict: verdict.into(),
            runs_needed: None,
            pairs: Some(5),
            precision: Some(0.015),
            log_ratio_sd: None,
            stopped: None,
            rounds: None,
            round_ratios: Vec::new(),
            outlier_rounds: Vec::new(),
            rounds_to_decide: None,
        }
    }

    #[test]
    fn the_sentence_names_the_decided_cells_and_counts_the_rest() {
        let mut capped = cell(4, 1.01, "inconclusive");
        capped.stopped = Some("cap".into());
        let mut short = cell(8, 1.0, "need ≥ 3 runs");
        short.runs_needed = Some(3);
        let cells = [
            cell(1, 1.2, "faster"),
            cell(2, 1.0, "no detectable difference"),
            capped,
            short,
        ];
        assert_eq!(
            sentences("b", "a", "tps", &cells),
            ["b against a on pgbench: tps 1.20× on select-only scale 1 × 1 clients (±1.5%, 5 rounds); no detectable difference on 1 other cell; 2 cells undecided (1 at the cap, 1 need ≥ 3 runs)."]
        );
        let same = [
            cell(1, 1.0, "no detectable difference"),
            cell(2, 1.0, "no detectable difference"),
        ];
        assert_eq!(
            sentences("b", "a", "tps", &same),
            ["b against a on pgbench: no detectable difference on all 2 cells."]
        );
    }
}
