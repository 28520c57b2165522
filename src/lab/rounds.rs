//! `runs = "auto"`: which rounds an auto lab still runs. The plan holds `max_runs` rounds; before
//! a unit's round starts, each of its groups (one cell per target) is judged from the runs
//! already stored, by the paired interval of every target against the spec's first target
//! (`analysis::stopping`). A unit whose groups all reached the precision runs no more rounds;
//! when the lab's measuring time reaches the budget, no unit does. The judgement reads only
//! stored runs of earlier rounds, so `lab resume` makes the same decisions again.
//!
//! A bisection's step measures a commit between its two ends instead: groups of three cells
//! (the end before the change, the end after it, the commit), and a group stops once the commit
//! is placed on one side (`analysis::bisect`), from the third round on.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::claims::group_key;
use super::plan::Plan;
pub use super::round_metric::RoundMetric;
use super::spec::{AutoRuns, LabSpec};
use stampede_stats::bisect::place;
use stampede_stats::claim::{decided_at_look, Expectation};
use stampede_stats::paired::MIN_PAIRS;
use stampede_stats::stopping::{self, should_stop, Stop, StoppingRule};
use stampede_store::RunSummary;

/// A group's state after a number of rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    /// The group's cells, one per target (the first is the base).
    pub cells: Vec<usize>,
    /// Rounds with a completed run of every target.
    pub rounds: u32,
    /// The widest relative half-width among the targets' intervals against the base.
    pub precision: Option<f64>,
    /// Whether every target's interval reached the precision (from the fifth round on).
    pub precise: bool,
    /// Whether every claim about the group is decided at an interim look; None without a
    /// claim an auto lab can judge (its metric is tps or p99).
    pub claims_decided: Option<bool>,
}

impl GroupState {
    /// Measured enough: precise, or its claims decided.
    fn done(&self) -> bool {
        self.precise || self.claims_decided == Some(true)
    }
}

/// Why a unit that ran every round stopped: its last round may have brought the precision or
/// decided its claims; otherwise the cap.
pub fn stop_at_cap(states: &[GroupState]) -> Stop {
    if states.iter().all(|s| s.precise) {
        Stop::Precise
    } else if states.iter().all(GroupState::done) {
        Stop::Claim
    } else {
        Stop::Cap
    }
}

/// What stops a unit before the cap.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// Every target's ratio to the base is known to the precision.
    Precision(StoppingRule),
    /// Groups of (before, after, commit): the commit is placed on one side.
    Sides,
}

/// A claim as a round's judgement reads it.
struct RoundClaim {
    /// Target indexes in the spec.
    base: usize,
    target: usize,
    /// The `plan::group_key`s of the cells it selects.
    groups: HashSet<String>,
    metric: RoundMetric,
    expectation: Expectation,
}

pub struct Rounds {
    rule: Rule,
    claims: Vec<RoundClaim>,
    /// The spec's workload names by index, for group keys.
    workloads: Vec<String>,
    metric: RoundMetric,
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
            rule: Rule::Precision(StoppingRule {
                precision: auto.precision,
                max_rounds: spec.runs as usize,
            }),
            claims: round_claims(spec),
            workloads: spec.workloads.iter().map(|w| w.name.clone()).collect(),
            metric: auto.metric,
            budget: auto.budget,
            run_time: spec.warmup + spec.duration,
            stopped: HashMap::new(),
            judged: HashSet::new(),
        }
    }

    /// A bisection's step: each group is (before, after, commit) and stops once the commit is
    /// placed on a side by `metric`; the plan's rounds (`runs`, or `max_runs` when auto) cap it.
    pub fn between_ends(spec: &LabSpec, metric: RoundMetric) -> Rounds {
        Rounds {
            rule: Rule::Sides,
            claims: Vec::new(),
            workloads: Vec::new(),
            metric,
            budget: spec.auto.and_then(|auto| auto.budget),
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
        let stop = if states.iter().all(|s| s.precise) {
            Some(Stop::Precise)
        } else if states.iter().all(GroupState::done) {
            Some(Stop::Claim)
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
                .and_then(|run| self.metric.of(run))
        };
        plan.units[unit]
            .iter()
            .map(|group| {
                if self.rule == Rule::Sides {
                    let rounds: Vec<(f64, f64, f64)> = (0..repetition)
                        .filter_map(|round| match group[..] {
                            [before, after, commit] => Some((
                                value(before, round)?,
                                value(after, round)?,
                                value(commit, round)?,
                            )),
                            _ => None,
                        })
                        .collect();
                    return sides_state(group, &rounds);
                }
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
                let rounds = if comparisons.is_empty() {
                    (0..repetition)
                        .filter(|&round| value(group[0], round).is_some())
                        .count()
                } else {
                    stopping::rounds(&comparisons)
                };
                GroupState {
                    cells: group.clone(),
                    rounds: rounds as u32,
                    precision: stopping::widest_precision(&comparisons),
                    precise: match self.rule {
                        Rule::Precision(rule) => {
                            should_stop(&comparisons, &rule) == Some(Stop::Precise)
                        }
                        Rule::Sides => false,
                    },
                    claims_decided: self.claims_decided(plan, group, repetition, completed),
                }
            })
            .collect()
    }

    /// Whether every claim about `group` is decided by the rounds before `repetition`; None
    /// when no claim the rounds can judge is about it.
    fn claims_decided(
        &self,
        plan: &Plan,
        group: &[usize],
        repetition: u32,
        completed: &[RunSummary],
    ) -> Option<bool> {
        let first = &plan.cells[*group.first()?];
        let key = group_key(
            &self.workloads[first.workload],
            &first.script,
            &first.scale.to_string(),
            first.clients,
        );
        let cell_of = |target: usize| {
            group
                .iter()
                .copied()
                .find(|&c| plan.cells[c].target == target)
        };
        let value = |cell: usize, round: u32, metric: RoundMetric| {
            let key = &plan.cells[cell].key;
            completed
                .iter()
                .find(|run| run.repetition == round && &run.cell_key == key)
                .and_then(|run| metric.of(run))
        };
        let mut about = self
            .claims
            .iter()
            .filter(|c| c.groups.contains(&key))
            .peekable();
        about.peek()?;
        Some(about.all(|claim| {
            let (Some(base), Some(other)) = (cell_of(claim.base), cell_of(claim.target)) else {
                return false;
            };
            let pairs: Vec<(f64, f64)> = (0..repetition)
                .filter_map(|round| {
                    Some((
                        value(base, round, claim.metric)?,
                        value(other, round, claim.metric)?,
                    ))
                })
                .collect();
            decided_at_look(&claim.expectation, &pairs)
        }))
    }

    /// Whether the lab has measured for its budget (warmup and duration of every completed run).
    fn budget_spent(&self, completed: &[RunSummary]) -> bool {
        self.budget
            .is_some_and(|budget| self.run_time * completed.len() as u32 >= budget)
    }
}

/// The spec's claims on metrics a round's judgement reads (tps, p99); a claim on another
/// metric is judged in the report only, and its cells stop at the precision or the cap.
fn round_claims(spec: &LabSpec) -> Vec<RoundClaim> {
    let target = |name: &str| spec.targets.iter().position(|t| t.name == name);
    spec.claims
        .iter()
        .filter_map(|spec_claim| {
            let claim = &spec_claim.claim;
            Some(RoundClaim {
                base: target(&claim.base)?,
                target: target(&claim.target)?,
                groups: spec_claim.groups.iter().cloned().collect(),
                metric: RoundMetric::of_metric(&claim.metric)?,
                expectation: claim.expectation,
            })
        })
        .collect()
}

/// A bisection step's group over its rounds of (before, after, commit): precise once the commit
/// is on one side.
fn sides_state(group: &[usize], rounds: &[(f64, f64, f64)]) -> GroupState {
    let placement = place(rounds);
    GroupState {
        cells: group.to_vec(),
        rounds: rounds.len() as u32,
        precision: placement.as_ref().and_then(|placement| {
            let (low, high) = placement.interval?;
            let ratio = placement.ratio_to_before;
            Some((high / ratio - 1.0).max(1.0 - low / ratio))
        }),
        precise: rounds.len() >= MIN_PAIRS
            && placement.is_some_and(|placement| placement.side.is_some()),
        claims_decided: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::spec::parse;
    use std::path::Path;

    fn spec(targets: &[&str], extra: &str) -> LabSpec {
        let mut text =
            format!("name = \"t\"\nruns = \"auto\"\nmax_runs = 8\nduration = \"10s\"\n{extra}\n");
        for target in targets {
            text.push_str(&format!("[[target]]\nname = \"{target}\"\n"));
        }
        text.push_str(
            "[[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n",
        );
        parse(Path::new("t.toml"), &text).unwrap()
    }

    /// Completed runs: per round, each cell's tps in the plan's cell order.
    fn runs(plan: &Plan, rounds: &[&[f64]]) -> Vec<RunSummary> {
        let mut completed = Vec::new();
        for (round, values) in rounds.iter().enumerate() {
            for (cell, tps) in plan.cells.iter().zip(*values) {
                completed.push(RunSummary {
                    cell_key: cell.key.clone(),
                    repetition: round as u32,
                    tps: Some(*tps),
                    p99_ms: None,
                    server_cpu_us_per_txn: None,
                });
            }
        }
        completed
    }

    #[test]
    fn a_unit_stops_once_its_pairs_are_precise_and_drift_does_not_matter() {
        let spec = spec(&["a", "b"], "precision = \"3%\"");
        let plan = Plan::new(&spec, 1, &[false]);
        let mut rounds = Rounds::new(&spec, spec.auto.unwrap());
        // The machine's speed doubles and halves between rounds; b is 10% faster in each.
        let speeds = [1000.0, 2000.0, 500.0, 1500.0, 800.0];
        let pairs: Vec<[f64; 2]> = speeds
            .iter()
            .enumerate()
            .map(|(i, s)| [*s, s * if i % 2 == 0 { 1.10 } else { 1.11 }])
            .collect();
        let values: Vec<&[f64]> = pairs.iter().map(|p| &p[..]).collect();
        let completed = runs(&plan, &values);
        assert!(rounds.needs_judging(0, 4));
        assert_eq!(rounds.stop_before(&plan, 0, 4, &completed[..8]), None);
        assert!(!rounds.needs_judging(0, 4));
        let (stop, states) = rounds.stop_before(&plan, 0, 5, &completed).unwrap();
        assert_eq!(stop, Stop::Precise);
        assert_eq!(states[0].rounds, 5);
        assert!(states[0].precision.unwrap() < 0.01, "{states:?}");
        assert!(rounds.is_stopped(0));
    }

    #[test]
    fn a_bisection_step_stops_once_the_commit_is_placed_from_the_third_round() {
        let spec = spec(&["start", "end", "commit"], "");
        let plan = Plan::new(&spec, 1, &[false]);
        let mut rounds = Rounds::between_ends(&spec, RoundMetric::Tps);
        // The end is 40% slower; the commit measures like the end, under drift.
        let speeds = [1000.0, 1700.0, 600.0];
        let values: Vec<[f64; 3]> = speeds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let wobble = if i % 2 == 0 { 1.02 } else { 0.98 };
                [*s, s * 0.6 * wobble, s * 0.61 / wobble]
            })
            .collect();
        let values: Vec<&[f64]> = values.iter().map(|v| &v[..]).collect();
        let completed = runs(&plan, &values);
        assert_eq!(rounds.stop_before(&plan, 0, 2, &completed[..6]), None);
        let (stop, states) = rounds.stop_before(&plan, 0, 3, &completed).unwrap();
        assert_eq!((stop, states[0].rounds), (Stop::Precise, 3));
        // The same rounds with the commit halfway between the ends: not placed.
        let mut halfway = Rounds::between_ends(&spec, RoundMetric::Tps);
        let middle: Vec<[f64; 3]> = speeds
            .iter()
            .zip([1.02, 0.98, 1.01])
            .map(|(s, wobble)| [*s, s * 0.6, s * 0.6f64.sqrt() * wobble])
            .collect();
        let middle: Vec<&[f64]> = middle.iter().map(|v| &v[..]).collect();
        assert_eq!(
            halfway.stop_before(&plan, 0, 3, &runs(&plan, &middle)),
            None
        );
    }

    #[test]
    fn the_budget_stops_an_undecided_unit_and_a_lone_target_counts_its_runs() {
        // 10 s runs, 30 s budget: three completed runs spend it.
        let spec = spec(&["a"], "budget = \"30s\"");
        let plan = Plan::new(&spec, 1, &[false]);
        let mut rounds = Rounds::new(&spec, spec.auto.unwrap());
        let completed = runs(&plan, &[&[100.0], &[300.0]]);
        assert_eq!(rounds.stop_before(&plan, 0, 2, &completed), None);
        let completed = runs(&plan, &[&[100.0], &[300.0], &[200.0]]);
        let (stop, states) = rounds.stop_before(&plan, 0, 3, &completed).unwrap();
        assert_eq!(stop, Stop::Budget);
        assert_eq!((states[0].rounds, states[0].precision), (3, None));
    }
}
