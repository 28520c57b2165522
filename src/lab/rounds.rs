//! `runs = "auto"`: which rounds an auto lab still runs. The plan holds `max_runs` rounds; before
//! a unit's round starts, each of its groups (one cell per target) is judged from the runs
//! already stored, by the paired interval of every target against the spec's first target
//! (`analysis::stopping`). A unit whose groups all reached the precision runs no more rounds;
//! when the lab's measuring time reaches the budget, no unit does. The judgement reads only
//! stored runs of earlier rounds, so `lab resume` makes the same decisions again.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::plan::Plan;
use super::spec::{AutoRuns, LabSpec};
use crate::analysis::paired::compare_paired;
use crate::analysis::stopping::{should_stop, Stop, StoppingRule};
use crate::analysis::verdict::Direction;
use crate::store::RunSummary;

/// A group's state after a number of rounds: decided (and why) or still going.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    /// The group's cells, one per target (the first is the base).
    pub cells: Vec<usize>,
    /// Rounds with a completed run of every target.
    pub rounds: u32,
    /// The widest relative half-width among the targets' intervals against the base.
    pub precision: Option<f64>,
    pub stopped: Option<Stop>,
}

pub struct Rounds {
    rule: StoppingRule,
    budget: Option<Duration>,
    run_time: Duration,
    /// Units that run no more rounds, and why.
    stopped: HashMap<usize, Stop>,
    /// (unit, round) pairs judged already: a unit is judged once per round, before its first
    /// run of the round, so a round is never cut in half.
    judged: HashSet<(usize, u32)>,
}

impl Rounds {
    pub fn new(spec: &LabSpec, auto: AutoRuns) -> Rounds {
        Rounds {
            rule: StoppingRule {
                precision: auto.precision,
                max_rounds: spec.runs as usize,
            },
            budget: auto.budget,
            run_time: spec.warmup + spec.duration,
            stopped: HashMap::new(),
            judged: HashSet::new(),
        }
    }

    /// Whether `unit` runs no more rounds.
    pub fn is_stopped(&self, unit: usize) -> bool {
        self.stopped.contains_key(&unit)
    }

    /// Whether `unit`'s round `repetition` is yet to be judged.
    pub fn needs_judging(&self, unit: usize, repetition: u32) -> bool {
        !self.judged.contains(&(unit, repetition))
    }

    /// Judges `unit` before its round `repetition` from the runs completed so far: whether it
    /// stops here, and its groups' states when it does.
    pub fn stop_before(
        &mut self,
        plan: &Plan,
        unit: usize,
        repetition: u32,
        completed: &[RunSummary],
    ) -> Option<(Stop, Vec<GroupState>)> {
        self.judged.insert((unit, repetition));
        let states = self.judge(plan, unit, repetition, completed);
        let stop = if states.iter().all(|s| s.stopped == Some(Stop::Precise)) {
            Some(Stop::Precise)
        } else if self.budget_spent(completed) {
            Some(Stop::Budget)
        } else {
            None
        }?;
        self.stopped.insert(unit, stop);
        Some((stop, states))
    }

    /// The states of a unit's groups over its rounds before `repetition`.
    pub fn judge(
        &self,
        plan: &Plan,
        unit: usize,
        repetition: u32,
        completed: &[RunSummary],
    ) -> Vec<GroupState> {
        let value = |cell: usize, round: u32| {
            let key = &plan.cells[cell].key;
            completed
                .iter()
                .find(|run| run.repetition == round && &run.cell_key == key)
                .and_then(|run| run.tps)
        };
        plan.units[unit]
            .iter()
            .map(|group| {
                let comparisons: Vec<Vec<(f64, f64)>> = group[1..]
                    .iter()
                    .map(|&other| {
                        (0..repetition)
                            .filter_map(|round| {
                                Some((value(group[0], round)?, value(other, round)?))
                            })
                            .collect()
                    })
                    .collect();
                // A lone target has nothing to be compared with: its rounds are its runs.
                let rounds = match comparisons.iter().map(Vec::len).min() {
                    Some(pairs) => pairs as u32,
                    None => (0..repetition)
                        .filter(|&round| value(group[0], round).is_some())
                        .count() as u32,
                };
                let precision = comparisons
                    .iter()
                    .map(|pairs| {
                        compare_paired(pairs, Direction::HigherIsBetter).and_then(|c| c.precision())
                    })
                    .try_fold(None, |widest: Option<f64>, reached| {
                        let reached = reached?;
                        Some(Some(widest.map_or(reached, |w| w.max(reached))))
                    })
                    .flatten();
                GroupState {
                    cells: group.clone(),
                    rounds,
                    precision,
                    stopped: should_stop(&comparisons, &self.rule)
                        .filter(|stop| *stop == Stop::Precise),
                }
            })
            .collect()
    }

    /// Whether the lab has measured for its budget (warmup and duration of every completed run).
    fn budget_spent(&self, completed: &[RunSummary]) -> bool {
        self.budget
            .is_some_and(|budget| self.run_time * completed.len() as u32 >= budget)
    }
}
