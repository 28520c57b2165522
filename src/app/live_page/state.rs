//! What the live page shows, read from the results database: the plan as a grid of rounds,
//! the runs in progress with their seconds, each shard's progress, and the lab's report so far
//! (ratios, verdicts, claims). Everything comes from the database, so a lab's own page and
//! `stampede serve` on a fleet's shared results show the same.

use std::collections::HashMap;
use std::time::Duration;

use stampede_base::error::Failure;
use stampede_store::{CellRow, LabState, LiveRun, LiveSecond, RunStatus, Store, StoredRun};

/// A live row not written for this long is a run its lab no longer measures (killed).
pub const UNFINISHED_AFTER_S: f64 = 60.0;

/// One round of one cell on one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Square {
    Planned,
    Running,
    Completed,
    Failed,
    Interrupted,
    /// Measured in part by a lab that was killed: never used in a verdict.
    Unfinished,
    /// Not run: an auto lab decided the cell earlier, or the lab ended without it.
    Skipped,
}

impl Square {
    pub fn name(self) -> &'static str {
        match self {
            Square::Planned => "planned",
            Square::Running => "running",
            Square::Completed => "completed",
            Square::Failed => "failed",
            Square::Interrupted => "interrupted",
            Square::Unfinished => "unfinished",
            Square::Skipped => "skipped",
        }
    }
}

/// A grid row: one cell of the plan (workload, script, scale, clients) on every target.
#[derive(Debug, Clone, PartialEq)]
pub struct GridRow {
    pub label: String,
    /// Per target (in `PageState::targets`' order), per round: the square and its tps.
    pub rounds: Vec<Vec<(Square, Option<f64>)>>,
}

/// A run being measured, with its seconds so far.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentRun {
    pub run: LiveRun,
    pub cell: String,
    pub clients: i64,
    pub seconds: Vec<LiveSecond>,
}

/// A shard's runs: finished, failed, and the one it measures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShardProgress {
    pub index: u32,
    pub finished: usize,
    pub failed: usize,
    pub running: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PageState {
    pub lab: LabState,
    pub targets: Vec<String>,
    pub grid: Vec<GridRow>,
    pub counts: HashMap<Square, usize>,
    pub eta: Option<Duration>,
    pub current: Vec<CurrentRun>,
    pub shards: Vec<ShardProgress>,
}

impl PageState {
    /// The lab's state now (`now` in Unix seconds), its runs already read.
    pub fn read(
        store: &mut Store,
        lab: i64,
        runs: &[StoredRun],
        now: f64,
    ) -> Result<PageState, Failure> {
        let state = store.lab_state(lab)?;
        let cells = store.lab_cells(lab)?;
        let live = store.live_runs(lab)?;
        let running: Vec<&LiveRun> = live
            .iter()
            .filter(|l| !state.ended && now - l.updated_unix_s < UNFINISHED_AFTER_S)
            .collect();
        let mut current = Vec::new();
        for run in &running {
            let cell = cells.iter().find(|c| c.key == run.cell_key);
            current.push(CurrentRun {
                run: (*run).clone(),
                cell: cell.map_or(run.cell_key.clone(), cell_label),
                clients: cell.map_or(0, |c| c.clients),
                seconds: store.live_series(run.id)?,
            });
        }
        let targets = target_order(&cells);
        let grid = grid(&cells, &targets, runs, &live, &running, &state);
        let counts = count(&grid);
        let eta = eta(&state, &counts, now);
        let shards = shard_progress(&state, runs, &current);
        Ok(PageState {
            lab: state,
            targets,
            grid,
            counts,
            eta,
            current,
            shards,
        })
    }

    pub fn count(&self, square: Square) -> usize {
        self.counts.get(&square).copied().unwrap_or(0)
    }
}

/// "select-only scale 10 × 4 clients" (and the workload when it is not the script's own name).
fn cell_label(cell: &CellRow) -> String {
    let size = crate::report::comparison::size_text(&cell.scale, cell.clients);
    if cell.script == cell.workload {
        format!("{} {size}", cell.script)
    } else {
        format!("{} {} {size}", cell.workload, cell.script)
    }
}

fn target_order(cells: &[CellRow]) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for cell in cells {
        if !targets.contains(&cell.target) {
            targets.push(cell.target.clone());
        }
    }
    targets
}

/// Rows in the plan's order of cells; a square per round from the runs and live rows.
fn grid(
    cells: &[CellRow],
    targets: &[String],
    runs: &[StoredRun],
    live: &[LiveRun],
    running: &[&LiveRun],
    state: &LabState,
) -> Vec<GridRow> {
    let planned = state.planned_rounds.unwrap_or(1).max(1) as usize;
    let mut rows: Vec<GridRow> = Vec::new();
    for cell in cells {
        let label = cell_label(cell);
        let column = targets.iter().position(|t| *t == cell.target).unwrap_or(0);
        let row = match rows.iter_mut().position(|r| r.label == label) {
            Some(index) => &mut rows[index],
            None => {
                rows.push(GridRow {
                    label,
                    rounds: vec![Vec::new(); targets.len()],
                });
                rows.last_mut().expect("just pushed")
            }
        };
        row.rounds[column] = (0..planned as u32)
            .map(|round| square(cell, round, runs, live, running, state))
            .collect();
    }
    rows
}

fn square(
    cell: &CellRow,
    round: u32,
    runs: &[StoredRun],
    live: &[LiveRun],
    running: &[&LiveRun],
    state: &LabState,
) -> (Square, Option<f64>) {
    let stored = runs.iter().rev().find(|r| {
        r.repetition == round
            && r.target == cell.target
            && r.workload == cell.workload
            && r.script == cell.script
            && r.scale == cell.scale
            && r.clients == cell.clients
    });
    if let Some(run) = stored {
        let square = match run.status {
            RunStatus::Completed => Square::Completed,
            RunStatus::Failed => Square::Failed,
            RunStatus::Interrupted => Square::Interrupted,
        };
        return (square, run.tps);
    }
    let in_progress = live
        .iter()
        .find(|l| l.cell_key == cell.key && l.repetition == round);
    if let Some(row) = in_progress {
        let tps = (row.totals.seconds > 0)
            .then(|| row.totals.transactions as f64 / row.totals.seconds as f64);
        let square = if running.iter().any(|r| r.id == row.id) {
            Square::Running
        } else {
            Square::Unfinished
        };
        return (square, tps);
    }
    let decided_earlier = cell.rounds.is_some_and(|rounds| round >= rounds);
    if decided_earlier || state.ended {
        (Square::Skipped, None)
    } else {
        (Square::Planned, None)
    }
}

fn count(grid: &[GridRow]) -> HashMap<Square, usize> {
    let mut counts = HashMap::new();
    for (square, _) in grid.iter().flat_map(|r| r.rounds.iter().flatten()) {
        *counts.entry(*square).or_insert(0) += 1;
    }
    counts
}

/// Time left: the lab's pace so far (its wall time per finished run, over its shards) times
/// the runs still planned. An auto lab's planned rounds are its cap, so this is at most.
fn eta(state: &LabState, counts: &HashMap<Square, usize>, now: f64) -> Option<Duration> {
    let finished: usize = [Square::Completed, Square::Failed, Square::Interrupted]
        .iter()
        .filter_map(|s| counts.get(s))
        .sum();
    let left: usize = [Square::Planned, Square::Running, Square::Unfinished]
        .iter()
        .filter_map(|s| counts.get(s))
        .sum();
    if state.ended || finished == 0 || left == 0 {
        return None;
    }
    let per_run = (now - state.created_unix_s).max(0.0) / finished as f64;
    Some(Duration::from_secs_f64(per_run * left as f64))
}

/// Per shard of a sharded lab: its finished and failed runs and what it measures now.
fn shard_progress(
    state: &LabState,
    runs: &[StoredRun],
    current: &[CurrentRun],
) -> Vec<ShardProgress> {
    let Some(shards) = state.shards else {
        return Vec::new();
    };
    (0..shards as u32)
        .map(|index| {
            let own: Vec<&StoredRun> = runs.iter().filter(|r| r.shard == Some(index)).collect();
            ShardProgress {
                index,
                finished: own.len(),
                failed: own.iter().filter(|r| r.status == RunStatus::Failed).count(),
                running: current
                    .iter()
                    .find(|c| c.run.shard == Some(index))
                    .map(|c| {
                        format!(
                            "{} · {} · round {} · second {}",
                            c.run.target,
                            c.cell,
                            c.run.repetition + 1,
                            c.run.totals.seconds
                        )
                    }),
            }
        })
        .collect()
}
