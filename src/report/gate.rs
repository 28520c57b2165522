//! `stampede gate`: one invocation of a lab against a reference invocation of the same
//! history, cell by cell, with the lab's paired analysis (`analysis::paired`), and a verdict a
//! CI job can act on: a regression only when it is decided beyond the threshold.
//!
//! Rounds are paired by their index (round i of one invocation with round i of the other).
//! The two invocations ran at different times, so a pair shares no machine condition as a
//! lab's interleaved rounds do; the pairs are still independent, so the t interval of the log
//! ratios stays valid, only as wide as both invocations' noise together.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::comparison::Metric;
use super::history::{cell_key, InvocationLabel};
use super::svg::{escape, significant};
use stampede_stats::paired::{compare_paired, PairedComparison, MIN_PAIRS};
use stampede_stats::verdict::Direction;
use stampede_store::{RunStatus, StoredRun};

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No regression beyond the threshold: the interval rules it out.
    Pass,
    /// A regression beyond the threshold: the whole interval lies past it.
    Regression,
    /// Neither: why, and what would decide it.
    Undecided(String),
}

pub struct GateCell {
    pub cell: String,
    pub reference_median: Option<f64>,
    pub latest_median: Option<f64>,
    pub comparison: Option<PairedComparison>,
    pub outcome: Outcome,
}

pub struct Gate {
    pub history: String,
    pub latest: InvocationLabel,
    pub reference: InvocationLabel,
    /// 0.02 for 2%.
    pub threshold: f64,
    pub metric: Metric,
    pub cells: Vec<GateCell>,
    /// Cells only one of the two measured.
    pub unmatched: Vec<String>,
    /// Targets whose server is another in the latest invocation (their cells are unmatched).
    pub server_changes: Vec<String>,
}

impl Gate {
    /// Regression if any cell regressed, else undecided if any cell is (or a target's server
    /// changed, whose cells cannot be gated), else pass.
    pub fn outcome(&self) -> Outcome {
        if self.regressions() > 0 {
            return Outcome::Regression;
        }
        if !self.server_changes.is_empty() {
            return Outcome::Undecided(format!(
                "{} target(s) ran on another server than the reference's, whose cells start new series",
                self.server_changes.len()
            ));
        }
        let undecided = self
            .cells
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Undecided(_)))
            .count();
        if undecided > 0 || self.cells.is_empty() {
            let why = if self.cells.is_empty() {
                "no cell was measured by both invocations".to_string()
            } else {
                format!("{undecided} of {} cells undecided", self.cells.len())
            };
            return Outcome::Undecided(why);
        }
        Outcome::Pass
    }

    pub fn regressions(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.outcome == Outcome::Regression)
            .count()
    }

    /// The one line a CI log shows.
    pub fn summary(&self) -> String {
        let threshold = percent(self.threshold);
        match self.outcome() {
            Outcome::Pass => format!(
                "pass: no regression beyond {threshold} in {} cells ({})",
                self.cells.len(),
                self.metric.name()
            ),
            Outcome::Regression => format!(
                "regression beyond {threshold} decided in {} of {} cells ({})",
                self.regressions(),
                self.cells.len(),
                self.metric.name()
            ),
            Outcome::Undecided(why) => {
                format!("undecided at {threshold}: {why}; more runs decide it")
            }
        }
    }
}

/// The cells both invocations measured, each decided against `threshold`.
pub fn decide(
    latest: &[StoredRun],
    reference: &[StoredRun],
    metric: &Metric,
    threshold: f64,
) -> (Vec<GateCell>, Vec<String>) {
    let (latest, reference) = (by_cell(latest, metric), by_cell(reference, metric));
    let mut unmatched: Vec<String> = latest
        .keys()
        .filter(|k| !reference.contains_key(*k))
        .chain(reference.keys().filter(|k| !latest.contains_key(*k)))
        .cloned()
        .collect();
    unmatched.sort();
    let cells = latest
        .iter()
        .filter_map(|(cell, rounds)| {
            let before = reference.get(cell)?;
            let pairs: Vec<(f64, f64)> = rounds
                .iter()
                .filter_map(|(round, value)| Some((*before.get(round)?, *value)))
                .collect();
            let comparison = compare_paired(&pairs, metric.direction());
            let outcome = outcome(comparison.as_ref(), metric.direction(), threshold);
            let median = |values: &BTreeMap<u32, f64>| {
                stampede_stats::median(&values.values().copied().collect::<Vec<_>>())
            };
            Some(GateCell {
                cell: cell.clone(),
                reference_median: median(before),
                latest_median: median(rounds),
                comparison,
                outcome,
            })
        })
        .collect();
    (cells, unmatched)
}

/// Per cell key, the completed runs' values by round.
fn by_cell(runs: &[StoredRun], metric: &Metric) -> BTreeMap<String, BTreeMap<u32, f64>> {
    let mut cells: BTreeMap<String, BTreeMap<u32, f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if let Some(value) = metric.of(run) {
            cells
                .entry(cell_key(run))
                .or_default()
                .insert(run.repetition, value);
        }
    }
    cells
}

fn outcome(comparison: Option<&PairedComparison>, direction: Direction, threshold: f64) -> Outcome {
    let Some((pairs, Some((low, high)))) = comparison.map(|c| (c.pairs, c.interval)) else {
        return Outcome::Undecided(format!("fewer than {MIN_PAIRS} rounds measured by both"));
    };
    if pairs < MIN_PAIRS {
        return Outcome::Undecided(format!(
            "{pairs} rounds measured by both, {MIN_PAIRS} needed"
        ));
    }
    let (regressed, cleared) = match direction {
        Direction::HigherIsBetter => (high < 1.0 - threshold, low >= 1.0 - threshold),
        Direction::LowerIsBetter => (low > 1.0 + threshold, high <= 1.0 + threshold),
    };
    if regressed {
        Outcome::Regression
    } else if cleared {
        Outcome::Pass
    } else {
        Outcome::Undecided(format!(
            "the interval [{low:.3}, {high:.3}] reaches past {}",
            percent(threshold)
        ))
    }
}

/// "2%", "2.5%", "0%": the threshold as the user wrote it (to 0.001 of a percent).
fn percent(fraction: f64) -> String {
    let text = format!("{:.3}", fraction * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

fn verdict_word(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "pass".into(),
        Outcome::Regression => "**regression**".into(),
        Outcome::Undecided(why) => format!("undecided: {why}"),
    }
}

/// For a CI job's summary (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab's and others' Markdown).
pub fn to_markdown(gate: &Gate) -> String {
    let mut out = format!(
        "## stampede gate: {} against {}\n\nHistory \"{}\", {}, threshold {}: **{}**\n\n",
        gate.latest.described(),
        gate.reference.described(),
        gate.history,
        gate.metric.name(),
        percent(gate.threshold),
        gate.summary()
    );
    if let Some(sentence) = super::control::sentence(&gate.metric) {
        out += &format!("{sentence}\n\n");
    }
    out += "| cell | reference | latest | ratio | 95% interval | rounds | verdict |\n";
    out += "|---|---:|---:|---:|---|---:|---|\n";
    for cell in &gate.cells {
        let number = |v: Option<f64>| v.map_or("–".into(), significant);
        let (ratio, interval, rounds) = match &cell.comparison {
            Some(c) => (
                format!("{:.3}×", c.ratio),
                c.interval
                    .map_or("–".into(), |(l, h)| format!("[{l:.3}, {h:.3}]")),
                c.pairs.to_string(),
            ),
            None => ("–".into(), "–".into(), "0".into()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {ratio} | {interval} | {rounds} | {} |",
            cell.cell,
            number(cell.reference_median),
            number(cell.latest_median),
            verdict_word(&cell.outcome)
        );
    }
    if !gate.unmatched.is_empty() {
        let _ = writeln!(
            out,
            "\nMeasured by one of the two only (not gated): {}",
            gate.unmatched.join(", ")
        );
    }
    for change in &gate.server_changes {
        let _ = writeln!(out, "\nNot gated: {change}.");
    }
    out
}

/// JUnit XML: a test case per cell; a regression is a failure, an undecided cell skipped.
pub fn to_junit(gate: &Gate) -> String {
    let failures = gate.regressions();
    let skipped = gate
        .cells
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Undecided(_)))
        .count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"stampede gate {}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n",
        escape(&gate.history),
        gate.cells.len()
    );
    for cell in &gate.cells {
        let ratio = cell.comparison.as_ref().map_or(String::new(), |c| {
            let interval = c
                .interval
                .map_or(String::new(), |(l, h)| format!(" [{l:.3}, {h:.3}]"));
            format!("{} {:.3}×{interval}", gate.metric.name(), c.ratio)
        });
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\">",
            escape(&gate.history),
            escape(&cell.cell)
        );
        match &cell.outcome {
            Outcome::Pass => {}
            Outcome::Regression => {
                let _ = write!(
                    out,
                    "<failure message=\"regression beyond {}: {}\"/>",
                    percent(gate.threshold),
                    escape(&ratio)
                );
            }
            Outcome::Undecided(why) => {
                let _ = write!(out, "<skipped message=\"undecided: {}\"/>", escape(why));
            }
        }
        out += "</testcase>\n";
    }
    out + "</testsuite>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(ratios: &[f64]) -> Option<PairedComparison> {
        let pairs: Vec<(f64, f64)> = ratios.iter().map(|r| (100.0, 100.0 * r)).collect();
        compare_paired(&pairs, Direction::HigherIsBetter)
    }

    #[test]
    fn a_regression_is_decided_only_when_the_whole_interval_lies_past_the_threshold() {
        let higher = Direction::HigherIsBetter;
        let clear_drop = comparison(&[0.50, 0.51, 0.49, 0.50]);
        assert_eq!(
            outcome(clear_drop.as_ref(), higher, 0.02),
            Outcome::Regression
        );
        let same = comparison(&[1.001, 0.999, 1.0, 1.002]);
        assert_eq!(outcome(same.as_ref(), higher, 0.02), Outcome::Pass);
        let noisy = comparison(&[0.90, 1.08, 0.97]);
        assert!(matches!(
            outcome(noisy.as_ref(), higher, 0.02),
            Outcome::Undecided(_)
        ));
        let two = comparison(&[0.5, 0.5]);
        assert!(
            matches!(outcome(two.as_ref(), higher, 0.02), Outcome::Undecided(w) if w.contains("3 needed"))
        );
        // Latency: higher is worse.
        let pairs = [(10.0, 20.0), (10.0, 21.0), (10.0, 19.5)];
        let slower = compare_paired(&pairs, Direction::LowerIsBetter);
        assert_eq!(
            outcome(slower.as_ref(), Direction::LowerIsBetter, 0.02),
            Outcome::Regression
        );
        assert_eq!(percent(0.02), "2%");
        assert_eq!(percent(0.025), "2.5%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.1), "10%");
    }
}
