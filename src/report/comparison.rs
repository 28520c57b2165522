//! Target against base, cell by cell, from a lab's stored runs: the model that `compare` prints
//! and `report` renders. Computes from stored numbers only.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::verdict::{self, Comparison, Direction, Verdict};
use crate::store::{RunStatus, StoredRun};

/// What a cell is, apart from its target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellKey {
    pub workload: String,
    /// The workload's group for relative-throughput tables.
    pub family: String,
    pub script: String,
    pub scale: String,
    pub clients: i64,
}

/// A number a workload reports for each run beyond tps and latency (TPROC-C's NOPM), and which
/// way is better: the families declare theirs, the commands hand them to `Metric::parse`.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkloadMetric {
    /// As stored (`run_metrics.name`) and as `--metric` takes it.
    pub name: &'static str,
    pub direction: Direction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Tps,
    P99,
    /// One a workload declares (TPROC-C's nopm); runs of other workloads have none.
    Workload(&'static WorkloadMetric),
}

impl Metric {
    /// `tps`, `p99` or one of the metrics the workloads declare.
    pub fn parse(name: &str, declared: &[&'static WorkloadMetric]) -> Result<Metric, String> {
        match name {
            "tps" => Ok(Metric::Tps),
            "p99" => Ok(Metric::P99),
            other => match declared.iter().find(|metric| metric.name == other) {
                Some(metric) => Ok(Metric::Workload(metric)),
                None => {
                    let mut names = vec!["tps", "p99"];
                    names.extend(declared.iter().map(|metric| metric.name));
                    let last = names.pop().expect("tps and p99 at least");
                    Err(format!(
                        "unknown metric \"{other}\"; use {} or {last}",
                        names.join(", ")
                    ))
                }
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::P99 => "p99",
            Metric::Workload(metric) => metric.name,
        }
    }

    fn direction(self) -> Direction {
        match self {
            Metric::Tps => Direction::HigherIsBetter,
            Metric::P99 => Direction::LowerIsBetter,
            Metric::Workload(metric) => metric.direction,
        }
    }

    pub fn of(self, run: &StoredRun) -> Option<f64> {
        match self {
            Metric::Tps => run.tps,
            Metric::P99 => run.p99_ms,
            Metric::Workload(metric) => run.workload_metric(metric.name),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CellComparison {
    pub cell: CellKey,
    pub base_runs: usize,
    pub other_runs: usize,
    pub base_median: f64,
    pub other_median: f64,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: f64,
    pub verdict: String,
    /// Set when the runs are too few for any verdict: runs needed per side.
    pub runs_needed: Option<usize>,
}

/// Every cell both targets completed, in cell order.
pub fn compare_targets(
    runs: &[StoredRun],
    base: &str,
    other: &str,
    metric: Metric,
) -> Vec<CellComparison> {
    let base_cells = by_cell(runs, base, metric);
    let other_cells = by_cell(runs, other, metric);
    base_cells
        .iter()
        .filter_map(|(cell, base_values)| {
            let other_values = other_cells.get(cell)?;
            let c = verdict::compare(base_values, other_values, metric.direction())?;
            Some(row(cell, base_values.len(), other_values.len(), &c))
        })
        .collect()
}

fn row(cell: &CellKey, base_runs: usize, other_runs: usize, c: &Comparison) -> CellComparison {
    CellComparison {
        cell: cell.clone(),
        base_runs,
        other_runs,
        base_median: c.base_median,
        other_median: c.other_median,
        ratio: c.ratio,
        ci_low: c.interval.map(|i| i.0),
        ci_high: c.interval.map(|i| i.1),
        p_value: c.p_value,
        verdict: verdict_text(&c.verdict),
        runs_needed: match c.verdict {
            Verdict::NeedRuns(n) => Some(n),
            _ => None,
        },
    }
}

pub fn verdict_text(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Better => "faster".into(),
        Verdict::Worse => "slower".into(),
        Verdict::NoDifference => "no detectable difference".into(),
        Verdict::Inconclusive => "inconclusive".into(),
        Verdict::NeedRuns(n) => format!("need ≥ {n} runs"),
    }
}

/// The target's completed runs' values per cell.
pub fn by_cell(runs: &[StoredRun], target: &str, metric: Metric) -> BTreeMap<CellKey, Vec<f64>> {
    let mut cells: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|r| r.target == target && r.status == RunStatus::Completed)
    {
        if let Some(value) = metric.of(run) {
            cells.entry(cell_of(run)).or_default().push(value);
        }
    }
    cells
}

pub fn cell_of(run: &StoredRun) -> CellKey {
    CellKey {
        workload: run.workload.clone(),
        family: run.family.clone(),
        script: run.script.clone(),
        scale: run.scale.clone(),
        clients: run.clients,
    }
}

/// Targets in the order they first ran.
pub fn targets(runs: &[StoredRun]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for run in runs {
        if !seen.contains(&run.target) {
            seen.push(run.target.clone());
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOPM: WorkloadMetric = WorkloadMetric {
        name: "nopm",
        direction: Direction::HigherIsBetter,
    };
    const LATENCY: WorkloadMetric = WorkloadMetric {
        name: "wait",
        direction: Direction::LowerIsBetter,
    };

    #[test]
    fn declared_metrics_are_parsed_with_their_direction() {
        let declared = [&NOPM, &LATENCY];
        let nopm = Metric::parse("nopm", &declared).unwrap();
        assert_eq!(nopm.name(), "nopm");
        assert_eq!(nopm.direction(), Direction::HigherIsBetter);
        let wait = Metric::parse("wait", &declared).unwrap();
        assert_eq!(wait.direction(), Direction::LowerIsBetter);
        assert_eq!(
            Metric::parse("p99", &declared).unwrap().direction(),
            Direction::LowerIsBetter
        );
        assert_eq!(
            Metric::parse("qps", &declared).unwrap_err(),
            "unknown metric \"qps\"; use tps, p99, nopm or wait"
        );
    }
}
