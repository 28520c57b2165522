//! Expanding a spec into cells (target × workload variant × scale × clients) and the order of
//! their runs: repetition r of every cell before repetition r+1, cells shuffled with a recorded
//! seed, targets alternating, so drift in the machine does not pose as a version difference.
//! A workload whose variants are steps of one sequence (sysbench's microbench suite: reads,
//! writes, postwrite, reads again on the same data) keeps its steps in the spec's order and
//! shuffles as one unit.

use std::time::Duration;

use super::spec::{LabSpec, Scale};
use stampede_script::prng::PgPrng;

/// One combination measured `runs` times.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Stable across invocations of the same spec: `target/workload/script/scale/clients`.
    pub key: String,
    pub target: usize,
    pub workload: usize,
    /// As reports name it: the variant, followed by `@protocol` when the spec measures one
    /// workload under two protocols.
    pub script: String,
    /// The workload's variant, as its family reads it.
    pub variant: String,
    pub scale: Scale,
    pub clients: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedRun {
    pub cell: usize,
    /// 0-based repetition: the round.
    pub repetition: u32,
    /// The unit the run belongs to (`Plan::units`): the cells that run together in a round.
    pub unit: usize,
    /// For a step of a sequence: where it belongs (None for independent runs).
    pub step: Option<Step>,
}

/// A run's place in its sequence: the steps of one target share one data copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Position in `Plan::runs` of the sequence's first step, which gets a fresh copy; the
    /// steps of a sequence are resumed together, since a step depends on the ones before it.
    pub first: usize,
    /// The cell of the step before this one on the same copy.
    pub after: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub runs: Vec<PlannedRun>,
    /// Per unit, its groups; per group, its cells (one per target, in the spec's order). An auto
    /// lab decides a group from its targets' runs and stops a unit when all its groups stop.
    pub units: Vec<Vec<Vec<usize>>>,
    pub seed: u64,
}

impl Plan {
    /// `sequential[w]`: whether workload w's variants are steps of one sequence.
    pub fn new(spec: &LabSpec, seed: u64, sequential: &[bool]) -> Plan {
        let cells = expand(spec);
        let units = units(spec, &cells, sequential);
        let runs = order(spec, &cells, &units, seed, sequential);
        Plan {
            cells,
            runs,
            units,
            seed,
        }
    }

    /// Wall time of the measuring alone: each run's `run_time` (the spec's warmup + duration,
    /// unless its workload decides its own length).
    /// Rounds each cell is planned (an auto lab's cap).
    pub fn rounds(&self) -> u32 {
        self.runs
            .iter()
            .map(|r| r.repetition + 1)
            .max()
            .unwrap_or(0)
    }

    pub fn measuring_time(&self, run_time: &dyn Fn(&Cell) -> Duration) -> Duration {
        self.runs
            .iter()
            .map(|run| run_time(&self.cells[run.cell]))
            .sum()
    }
}

fn expand(spec: &LabSpec) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (w, workload) in spec.workloads.iter().enumerate() {
        for script in &workload.scripts {
            for scale in &workload.scales {
                for clients in &workload.clients {
                    for (t, target) in spec.targets.iter().enumerate() {
                        let label = workload.script_label(script);
                        cells.push(Cell {
                            key: format!(
                                "{}/{}/{label}/{scale}/{clients}",
                                target.name, workload.name
                            ),
                            target: t,
                            workload: w,
                            script: label,
                            variant: script.clone(),
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

/// Cells that differ only in their target form a group; a unit is one group, or for a
/// sequential workload the groups of all its steps at one scale and client count, in step
/// order. Units are shuffled per repetition; within a group the targets run forward on even
/// repetitions and backward on odd ones.
fn order(
    spec: &LabSpec,
    cells: &[Cell],
    units: &[Vec<Vec<usize>>],
    seed: u64,
    sequential: &[bool],
) -> Vec<PlannedRun> {
    let mut random = PgPrng::seeded(seed);
    let mut runs = Vec::new();
    for repetition in 0..spec.runs {
        let mut shuffled: Vec<usize> = (0..units.len()).collect();
        shuffle(&mut shuffled, &mut random);
        for unit_index in shuffled {
            let unit = units[unit_index].clone();
            let ordered = sequential[cells[unit[0][0]].workload];
            // Per target: (position of its first step, cell of its latest step).
            let mut chains: Vec<Option<(usize, usize)>> = vec![None; spec.targets.len()];
            for group in unit {
                let mut members = group;
                if !repetition.is_multiple_of(2) {
                    members.reverse();
                }
                for cell in members {
                    let step = ordered.then(|| {
                        let chain = &mut chains[cells[cell].target];
                        let step = Step {
                            first: chain.map_or(runs.len(), |(first, _)| first),
                            after: chain.map(|(_, previous)| previous),
                        };
                        *chain = Some((step.first, cell));
                        step
                    });
                    runs.push(PlannedRun {
                        cell,
                        repetition,
                        unit: unit_index,
                        step,
                    });
                }
            }
        }
    }
    runs
}

/// Groups of cells (one per variant × scale × clients, its targets inside), gathered into the
/// units the shuffle moves.
fn units(spec: &LabSpec, cells: &[Cell], sequential: &[bool]) -> Vec<Vec<Vec<usize>>> {
    let targets = spec.targets.len();
    // `expand` puts targets innermost, so each run of `targets` cells is one group, and the
    // variants outermost, so a sequence's groups come in step order.
    let mut units: Vec<Vec<Vec<usize>>> = Vec::new();
    let mut sequence_units: Vec<((usize, Scale, usize), usize)> = Vec::new();
    for g in 0..cells.len() / targets {
        let group: Vec<usize> = (g * targets..(g + 1) * targets).collect();
        let first = &cells[group[0]];
        if !sequential[first.workload] {
            units.push(vec![group]);
            continue;
        }
        let key = (first.workload, first.scale, first.clients);
        match sequence_units.iter().find(|(k, _)| *k == key) {
            Some((_, unit)) => units[*unit].push(group),
            None => {
                sequence_units.push((key, units.len()));
                units.push(vec![group]);
            }
        }
    }
    units
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
        let plan = Plan::new(&spec(3), 7, &[false]);
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
        let plan = Plan::new(&spec, 7, &[false]);
        let targets: Vec<usize> = plan
            .runs
            .iter()
            .map(|r| plan.cells[r.cell].target)
            .collect();
        // Each group runs its two targets back to back, a-b in repetition 0, b-a in 1.
        assert!(targets[..8].chunks(2).all(|pair| pair == [0, 1]));
        assert!(targets[8..].chunks(2).all(|pair| pair == [1, 0]));
        let again = Plan::new(&spec, 7, &[false]);
        assert_eq!(plan.runs, again.runs);
        let other = Plan::new(&spec, 8, &[false]);
        assert_ne!(plan.runs, other.runs);
    }

    #[test]
    fn a_sequence_keeps_its_step_order_and_chains_each_target() {
        let text = "name = \"t\"\nruns = 2\nduration = \"1s\"\n\
             [[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n\
             [[workload]]\nname = \"sysbench\"\nscripts = [\"oltp_insert\", \"oltp_delete\", \"oltp_scan\"]\nclients = [1, 2]\n";
        let spec = parse(Path::new("t.toml"), text).unwrap();
        let plan = Plan::new(&spec, 3, &[false, true]);
        assert_eq!(plan.runs.len(), 2 * (2 + 2 * 3 * 2));
        for (r, repetition) in plan.runs.chunks(14).enumerate() {
            let offset = r * 14;
            for clients in [1, 2] {
                let steps: Vec<(usize, &PlannedRun)> = repetition
                    .iter()
                    .enumerate()
                    .filter(|(_, run)| {
                        let cell = &plan.cells[run.cell];
                        cell.workload == 1 && cell.clients == clients
                    })
                    .map(|(i, run)| (offset + i, run))
                    .collect();
                // Contiguous, in step order, the targets interleaved per step.
                assert_eq!(steps.last().unwrap().0 - steps[0].0, 5);
                let scripts: Vec<&str> = steps
                    .iter()
                    .map(|(_, run)| plan.cells[run.cell].script.as_str())
                    .collect();
                assert_eq!(
                    scripts,
                    [
                        "oltp_insert",
                        "oltp_insert",
                        "oltp_delete",
                        "oltp_delete",
                        "oltp_scan",
                        "oltp_scan"
                    ]
                );
                for (position, run) in &steps {
                    let step = run.step.unwrap();
                    let target = plan.cells[run.cell].target;
                    let chain: Vec<&(usize, &PlannedRun)> = steps
                        .iter()
                        .filter(|(_, other)| plan.cells[other.cell].target == target)
                        .collect();
                    assert_eq!(step.first, chain[0].0);
                    let index = chain.iter().position(|(p, _)| p == position).unwrap();
                    assert_eq!(step.after, index.checked_sub(1).map(|i| chain[i].1.cell));
                }
            }
            let independent = repetition.iter().filter(|run| run.step.is_none()).count();
            assert_eq!(independent, 2);
        }
    }
}
