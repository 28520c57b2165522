//! A run's throughput second by second, with the seconds in which checkpoints completed, so
//! that throughput "waves" and their cause show in one chart.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::comparison::{cell_of, CellKey};
use stampede_store::{RunStatus, StoredRun};

#[derive(Debug, Clone, Serialize)]
pub struct RunSeries {
    pub target: String,
    pub cell: CellKey,
    pub run_id: i64,
    pub repetition: u32,
    /// (second of the measured window, transactions per second).
    pub tps: Vec<(u64, f64)>,
    pub checkpoints: Vec<CheckpointMark>,
}

/// A second in which the checkpointer finished checkpoints or wrote buffers.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointMark {
    pub second: u64,
    /// Checkpoints completed in that second.
    pub completed: f64,
    pub buffers_written: f64,
}

/// Joins the checkpointer's per-second counters into marks: seconds with either counter moving.
pub fn checkpoint_marks(completed: &[(u64, f64)], buffers: &[(u64, f64)]) -> Vec<CheckpointMark> {
    let mut seconds: Vec<u64> = completed
        .iter()
        .chain(buffers)
        .filter(|(_, value)| *value > 0.0)
        .map(|(second, _)| *second)
        .collect();
    seconds.sort_unstable();
    seconds.dedup();
    let at = |series: &[(u64, f64)], second: u64| {
        series
            .iter()
            .find(|(s, _)| *s == second)
            .map_or(0.0, |(_, v)| *v)
    };
    seconds
        .into_iter()
        .map(|second| CheckpointMark {
            second,
            completed: at(completed, second),
            buffers_written: at(buffers, second),
        })
        .collect()
}

/// The runs a report charts when the user names none: in the base's cell with the most
/// checkpoints completed per run (where waves show), then the most clients, each
/// target's run with the median throughput. `checkpoints` holds a count per run id.
pub fn default_runs<'r>(
    runs: &'r [StoredRun],
    base: &str,
    checkpoints: &HashMap<i64, f64>,
) -> Vec<&'r StoredRun> {
    let completed = |r: &&StoredRun| r.status == RunStatus::Completed && r.tps.is_some();
    // Per base cell: the checkpoints of its runs, over how many runs.
    let mut base_cells: BTreeMap<CellKey, (f64, f64)> = BTreeMap::new();
    for run in runs.iter().filter(completed).filter(|r| r.target == base) {
        let cell = base_cells.entry(cell_of(run)).or_default();
        cell.0 += checkpoints.get(&run.id).copied().unwrap_or(0.0);
        cell.1 += 1.0;
    }
    let per_run = |(checkpoints, runs): &(f64, f64)| checkpoints / runs;
    // The first cell in order among the best, so the choice is stable.
    let Some(cell) = base_cells
        .iter()
        .rev()
        .max_by(|(a, a_counts), (b, b_counts)| {
            per_run(a_counts)
                .total_cmp(&per_run(b_counts))
                .then(a.clients.cmp(&b.clients))
        })
        .map(|(cell, _)| cell.clone())
    else {
        return Vec::new();
    };
    let mut targets: Vec<&str> = Vec::new();
    for run in runs.iter().filter(completed) {
        if !targets.contains(&run.target.as_str()) {
            targets.push(&run.target);
        }
    }
    targets
        .into_iter()
        .filter_map(|target| {
            let in_cell: Vec<&StoredRun> = runs
                .iter()
                .filter(completed)
                .filter(|r| r.target == target && cell_of(r) == cell)
                .collect();
            median_run(&in_cell)
        })
        .collect()
}

/// The run whose throughput is the median (the lower middle one for an even count).
fn median_run<'r>(runs: &[&'r StoredRun]) -> Option<&'r StoredRun> {
    let mut sorted = runs.to_vec();
    sorted.sort_by(|a, b| a.tps.unwrap_or(0.0).total_cmp(&b.tps.unwrap_or(0.0)));
    sorted.get((sorted.len().max(1) - 1) / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_join_both_counters_by_second() {
        let marks = checkpoint_marks(&[(3, 1.0), (4, 0.0)], &[(2, 50.0), (3, 10.0)]);
        let seconds: Vec<u64> = marks.iter().map(|m| m.second).collect();
        assert_eq!(seconds, [2, 3]);
        assert_eq!(marks[1].completed, 1.0);
        assert_eq!(marks[1].buffers_written, 10.0);
        assert_eq!(marks[0].completed, 0.0);
    }
}
