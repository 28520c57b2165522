//! A study's claims checked against a lab's stored runs: for each claim, the cells its selector
//! names, the ratio of the claim's metric (target / base) paired by round with its 95%
//! interval, and the verdict — reproduced, contradicted or undecided (`analysis::claim`).
//!
//! A claim over several cells (a workload's scripts, a group) is judged on the group's ratio
//! (`comparison::group_rounds`).

use serde::Serialize;

use super::comparison::{compare_targets, group_rounds, CellKey, Metric};
use stampede_stats::claim::{ClaimVerdict, Expectation};
use stampede_stats::paired::compare_paired;
use stampede_store::StoredRun;

/// Which cells a claim is about: a workload, and any of its script, group, scale and clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellSelector {
    pub workload: String,
    pub script: Option<String>,
    /// The workload's group for relative-throughput tables (sysbench's point, range, write).
    pub group: Option<String>,
    pub scale: Option<String>,
    pub clients: Option<i64>,
}

impl CellSelector {
    pub fn matches(&self, cell: &CellKey) -> bool {
        cell.workload == self.workload
            && self.script.as_ref().is_none_or(|s| *s == cell.script)
            && self.group.as_ref().is_none_or(|g| *g == cell.family)
            && self.scale.as_ref().is_none_or(|s| *s == cell.scale)
            && self.clients.is_none_or(|c| c == cell.clients)
    }

    /// "pgbench tpcb-like scale 10 at 4 clients", naming only what is selected.
    pub fn describe(&self) -> String {
        let mut text = self.workload.clone();
        if let Some(script) = &self.script {
            text.push_str(&format!(" {script}"));
        }
        if let Some(group) = &self.group {
            text.push_str(&format!(" group {group}"));
        }
        if let Some(scale) = &self.scale {
            text.push_str(&format!(" scale {scale}"));
        }
        if let Some(clients) = self.clients {
            text.push_str(&format!(" at {clients} clients"));
        }
        text
    }
}

/// A claim as the spec states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The sentence, as its author wrote it.
    pub says: String,
    /// Author, date, link: free text.
    pub source: Option<String>,
    pub base: String,
    pub target: String,
    pub cells: CellSelector,
    pub metric: Metric,
    /// The expectation as written ("20% slower ±5%").
    pub expect: String,
    pub expectation: Expectation,
}

/// A claim's verdict with its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimResult {
    pub says: String,
    pub source: Option<String>,
    pub base: String,
    pub target: String,
    pub cells: CellSelector,
    pub metric: String,
    pub expect: String,
    /// The expectation as a region of the ratio ("ratio ≥ 1.800").
    pub region: String,
    /// Cells the selector matched in the stored runs.
    pub matched_cells: usize,
    /// Rounds in which every matched cell ran on both targets.
    pub rounds: usize,
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: &'static str,
    /// Undecided: the rounds in all that the measured noise says would decide it.
    pub rounds_to_decide: Option<usize>,
    /// Why there is no interval, when there is none.
    pub note: Option<String>,
}

impl ClaimResult {
    /// "1.62 [1.41–1.86]".
    pub fn ratio_text(&self) -> String {
        super::comparison::ratio_text(self.ratio, self.ci_low, self.ci_high)
    }

    /// The verdict and what would change it: "undecided: about 12 rounds would decide it".
    pub fn verdict_text(&self) -> String {
        match (&self.note, self.rounds_to_decide) {
            (Some(note), _) => format!("{}: {note}", self.verdict),
            (None, Some(rounds)) => format!(
                "{}: about {rounds} rounds at this noise would decide it",
                self.verdict
            ),
            (None, None) if self.verdict == "undecided" => {
                format!("{}: the ratio sits on the claim's boundary", self.verdict)
            }
            _ => self.verdict.to_string(),
        }
    }
}

/// Every claim judged from `runs` (completed runs only count).
pub fn check(claims: &[Claim], runs: &[StoredRun]) -> Vec<ClaimResult> {
    claims.iter().map(|claim| judge(claim, runs)).collect()
}

fn judge(claim: &Claim, runs: &[StoredRun]) -> ClaimResult {
    let group = group_rounds(runs, &claim.base, &claim.target, &claim.metric, |cell| {
        claim.cells.matches(cell)
    });
    let (cells, pairs) = (group.cells, group.pairs);
    let mut result = ClaimResult {
        says: claim.says.clone(),
        source: claim.source.clone(),
        base: claim.base.clone(),
        target: claim.target.clone(),
        cells: claim.cells.clone(),
        metric: claim.metric.name().to_string(),
        expect: claim.expect.clone(),
        region: claim.expectation.describe(),
        matched_cells: cells,
        rounds: pairs.len(),
        ratio: None,
        ci_low: None,
        ci_high: None,
        verdict: ClaimVerdict::Undecided.name(),
        rounds_to_decide: None,
        note: None,
    };
    if pairs.is_empty() && cells == 1 {
        return judged_unpaired(claim, runs, result);
    }
    let comparison = compare_paired(&pairs, claim.metric.direction());
    let Some(comparison) = comparison else {
        result.note = Some(if cells == 0 {
            "no cell both targets completed matches the claim".into()
        } else {
            "no round in which every matched cell ran on both targets".into()
        });
        return result;
    };
    result.ratio = Some(comparison.ratio);
    let Some(interval) = comparison.interval else {
        result.note = Some("one round: an interval needs two".into());
        return result;
    };
    (result.ci_low, result.ci_high) = (Some(interval.0), Some(interval.1));
    let verdict = claim.expectation.judge(interval);
    result.verdict = verdict.name();
    if verdict == ClaimVerdict::Undecided {
        result.rounds_to_decide = comparison
            .log_ratio_sd
            .and_then(|sd| claim.expectation.rounds_to_decide(comparison.ratio, sd));
    }
    result
}

/// One cell whose runs do not pair by round (a target added later, runs lost): benchstat's
/// analysis as `compare` gives it, the medians' ratio with its bootstrap interval.
fn judged_unpaired(claim: &Claim, runs: &[StoredRun], mut result: ClaimResult) -> ClaimResult {
    let row = compare_targets(runs, &claim.base, &claim.target, &claim.metric)
        .into_iter()
        .find(|row| claim.cells.matches(&row.cell));
    let Some(row) = row else {
        return result;
    };
    result.ratio = Some(row.ratio);
    let (Some(low), Some(high)) = (row.ci_low, row.ci_high) else {
        result.note = Some("one run a side: an interval needs two".into());
        return result;
    };
    (result.ci_low, result.ci_high) = (Some(low), Some(high));
    result.verdict = claim.expectation.judge((low, high)).name();
    result.note = Some(format!(
        "runs do not pair by round ({}/{}): the medians' ratio with its bootstrap interval",
        row.base_runs, row.other_runs
    ));
    result
}

/// The columns of the claims table.
pub const HEADER: [&str; 8] = [
    "claim",
    "source",
    "cells",
    "metric",
    "expected",
    "measured (95% interval)",
    "rounds",
    "verdict",
];

/// A claim's row under `HEADER`.
pub fn cells(r: &ClaimResult) -> Vec<String> {
    vec![
        r.says.clone(),
        r.source.clone().unwrap_or_else(|| "-".into()),
        format!(
            "{} vs {}: {} ({} matched)",
            r.target,
            r.base,
            r.cells.describe(),
            r.matched_cells
        ),
        r.metric.clone(),
        format!("{} ({})", r.expect, r.region),
        r.ratio_text(),
        r.rounds.to_string(),
        r.verdict_text(),
    ]
}

/// The claims as a Markdown section.
pub fn markdown(results: &[ClaimResult]) -> String {
    let mut out = format!(
        "## Claims\n\n| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in results {
        let row: Vec<String> = cells(r).iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out.push('\n');
    out
}

/// The claims for the terminal: one block per claim.
pub fn text(results: &[ClaimResult]) -> String {
    let mut out = String::new();
    for r in results {
        out.push_str(&format!(
            "claim \"{}\"{}\n  {} vs {} on {} ({} cells), {}: expected {} ({}), measured {} over {} rounds → {}\n",
            r.says,
            r.source.as_ref().map_or(String::new(), |s| format!(" ({s})")),
            r.target,
            r.base,
            r.cells.describe(),
            r.matched_cells,
            r.metric,
            r.expect,
            r.region,
            r.ratio_text(),
            r.rounds,
            r.verdict_text()
        ));
    }
    out
}

/// Each claim of a spec judged in every invocation of its history, oldest first: one line per
/// claim, its verdict and interval per invocation.
pub fn history_text(
    history: &str,
    claims: &[Claim],
    invocations: &[(String, Vec<StoredRun>)],
) -> String {
    if claims.is_empty() {
        return String::new();
    }
    let mut out =
        format!("Claims of \"{history}\" (as its latest spec states them), per invocation:\n");
    for claim in claims {
        let verdicts: Vec<String> = invocations
            .iter()
            .map(|(name, runs)| {
                let result = judge(claim, runs);
                format!("\"{name}\" {} {}", result.verdict, result.ratio_text())
            })
            .collect();
        out += &format!(
            "  \"{}\" ({} vs {}, {}, {}): {}\n",
            claim.says,
            claim.target,
            claim.base,
            claim.metric.name(),
            claim.expect,
            verdicts.join(" · ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_stats::verdict::Direction;

    fn run(target: &str, clients: i64, repetition: u32, tps: f64) -> StoredRun {
        StoredRun {
            target: target.into(),
            repetition,
            tps: Some(tps),
            shard: None,
            machine: None,
            ..crate::report::machines::tests::run(clients, 0, "host", "model", "kernel")
        }
    }

    fn claim(expect: &str, clients: Option<i64>) -> Claim {
        Claim {
            says: "b is twice as fast".into(),
            source: None,
            base: "a".into(),
            target: "b".into(),
            cells: CellSelector {
                workload: "pgbench".into(),
                script: None,
                group: None,
                scale: None,
                clients,
            },
            metric: Metric::Tps,
            expect: expect.into(),
            expectation: Expectation::parse(expect, Direction::HigherIsBetter).unwrap(),
        }
    }

    #[test]
    fn a_group_is_judged_on_the_rounds_geometric_means_of_its_cells() {
        // Cell 1 doubles in every round, cell 2 grows by 1.9×, 2× and 2.1×.
        let mut runs = Vec::new();
        for (round, second) in [1.9, 2.0, 2.1].into_iter().enumerate() {
            let round = round as u32;
            runs.extend([
                run("a", 1, round, 100.0),
                run("b", 1, round, 200.0),
                run("a", 2, round, 100.0),
                run("b", 2, round, 100.0 * second),
            ]);
        }
        let result = &check(&[claim("2x ±20%", None)], &runs)[0];
        assert_eq!((result.matched_cells, result.rounds), (2, 3));
        // Per round √(2 · r2); their geometric mean.
        let logs: Vec<f64> = [1.9f64, 2.0, 2.1]
            .iter()
            .map(|r| (2.0 * r).sqrt().ln())
            .collect();
        let expected = (logs.iter().sum::<f64>() / 3.0).exp();
        assert!(
            (result.ratio.unwrap() - expected).abs() < 1e-12,
            "{result:?}"
        );
        assert_eq!(result.verdict, "reproduced", "{result:?}");
    }

    #[test]
    fn runs_that_do_not_pair_are_judged_as_benchstat_does() {
        // Rounds 0–2 on a, 3–5 on b: no round holds both.
        let mut runs: Vec<StoredRun> = (0..3).map(|r| run("a", 1, r, 100.0 + r as f64)).collect();
        runs.extend((3..6).map(|r| run("b", 1, r, 300.0 + r as f64)));
        let result = &check(&[claim(">= 2x", Some(1))], &runs)[0];
        assert_eq!(result.rounds, 0);
        assert_eq!(result.verdict, "reproduced", "{result:?}");
        assert!(
            result
                .verdict_text()
                .starts_with("reproduced: runs do not pair by round (3/3)"),
            "{}",
            result.verdict_text()
        );
        // No cell at all: said so.
        let none = &check(&[claim(">= 2x", Some(8))], &runs)[0];
        assert_eq!(
            none.verdict_text(),
            "undecided: no cell both targets completed matches the claim"
        );
    }
}
