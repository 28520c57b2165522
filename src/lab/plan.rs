//! Expanding a spec into cells (target × workload variant × scale × clients) and the order of
//! their runs: repetition r of every cell before repetition r+1, cells shuffled with a recorded
//! seed, targets alternating, so drift in the machine does not pose as a version difference.

use std::time::Duration;

use super::spec::{LabSpec, Scale};
use crate::script::prng::PgPrng;

/// One combination measured `runs` times.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Stable across invocations of the same spec: `target/workload/script/scale/clients`.
    pub key: String,
    pub target: usize,
    pub workload: usize,
    pub script: String,
    pub scale: Scale,
    pub clients: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedRun {
    pub cell: usize,
    /// 0-based repetition.
    pub repetition: u32,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub runs: Vec<PlannedRun>,
    pub seed: u64,
}

impl Plan {
    pub fn new(spec: &LabSpec, seed: u64) -> Plan {
        let cells = expand(spec);
        let runs = order(spec, &cells, seed);
        Plan { cells, runs, seed }
    }

    /// Wall time of the measuring alone (warmup + duration per run).
    pub fn measuring_time(&self, spec: &LabSpec) -> Duration {
        (spec.warmup + spec.duration) * self.runs.len() as u32
    }
}

fn expand(spec: &LabSpec) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (w, workload) in spec.workloads.iter().enumerate() {
        for script in &workload.scripts {
            for scale in &workload.scales {
                for clients in &workload.clients {
                    for (t, target) in spec.targets.iter().enumerate() {
                        cells.push(Cell {
                            key: format!(
                                "{}/{}/{}/{scale}/{clients}",
                                target.name, workload.name, script
                            ),
                            target: t,
                            workload: w,
                            script: script.clone(),
                            scale: *scale,
                            clients: *clients,
                        });
                    }
                }
            }
        }
    }
    cells
}

/// Cells that differ only in their target form a group; groups are shuffled per repetition,
/// and within a group the targets run forward on even repetitions and backward on odd ones.
fn order(spec: &LabSpec, cells: &[Cell], seed: u64) -> Vec<PlannedRun> {
    let targets = spec.targets.len();
    // `expand` puts targets innermost, so each run of `targets` cells is one group.
    let groups: Vec<Vec<usize>> = (0..cells.len() / targets)
        .map(|g| (g * targets..(g + 1) * targets).collect())
        .collect();
    let mut random = PgPrng::seeded(seed);
    let mut runs = Vec::new();
    for repetition in 0..spec.runs {
        let mut shuffled = groups.clone();
        shuffle(&mut shuffled, &mut random);
        for group in shuffled {
            let members: Box<dyn Iterator<Item = usize>> = if repetition.is_multiple_of(2) {
                Box::new(group.into_iter())
            } else {
                Box::new(group.into_iter().rev())
            };
            runs.extend(members.map(|cell| PlannedRun { cell, repetition }));
        }
    }
    runs
}

/// Fisher–Yates with stampede's PRNG, so a seed gives the same order everywhere.
fn shuffle<T>(items: &mut [T], random: &mut PgPrng) {
    for i in (1..items.len()).rev() {
        let j = random.int_in_range(0, i as i64) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::spec::parse;
    use std::path::Path;

    fn spec(runs: u32) -> LabSpec {
        let text = format!(
            "name = \"t\"\nruns = {runs}\nduration = \"1s\"\n\
             [[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\", \"tpcb-like\"]\nclients = [1, 2]\n"
        );
        parse(Path::new("t.toml"), &text).unwrap()
    }

    #[test]
    fn every_cell_runs_once_per_repetition_and_repetitions_do_not_overlap() {
        let plan = Plan::new(&spec(3), 7);
        assert_eq!(plan.cells.len(), 8);
        assert_eq!(plan.runs.len(), 24);
        for (r, chunk) in plan.runs.chunks(8).enumerate() {
            let mut cells: Vec<usize> = chunk.iter().map(|run| run.cell).collect();
            cells.sort();
            assert_eq!(cells, (0..8).collect::<Vec<_>>());
            assert!(chunk.iter().all(|run| run.repetition == r as u32));
        }
    }

    #[test]
    fn targets_alternate_and_the_seed_decides_the_order() {
        let spec = spec(2);
        let plan = Plan::new(&spec, 7);
        let targets: Vec<usize> = plan
            .runs
            .iter()
            .map(|r| plan.cells[r.cell].target)
            .collect();
        // Each group runs its two targets back to back, a-b in repetition 0, b-a in 1.
        assert!(targets[..8].chunks(2).all(|pair| pair == [0, 1]));
        assert!(targets[8..].chunks(2).all(|pair| pair == [1, 0]));
        let again = Plan::new(&spec, 7);
        assert_eq!(plan.runs, again.runs);
        let other = Plan::new(&spec, 8);
        assert_ne!(plan.runs, other.runs);
    }
}
