//! `stampede bisect`: the commit that made a change. The two ends are built and measured
//! against each other (a lab with the spec's `runs`); without a decided change it stops there.
//! Then, as `git bisect` does, the next commit is picked from what is left (`history`), built
//! in the kept tree (`server::postgres::build_tree`), and measured interleaved with both ends until it is
//! placed on one side (`analysis::bisect`); a commit that does not build, or that the rounds
//! cannot place within the cap, is skipped and said so, never guessed. Every step is a lab of
//! its own in the spec's results, so `report` and `compare` read it, and `--resume` goes on from
//! what the results already hold. At the end the first commit carrying the change is measured
//! once more against its parent (the lab the HTML report shows).

pub mod git;
pub mod template;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lab::executor::{Lab, LabEvent};
use crate::lab::rounds::RoundMetric;
use crate::lab::targets::SpecTargets;
use crate::server::postgres::build::Step;
use crate::server::postgres::build_tree::{BuildTree, CommitBuildError};
use git::{Commit, History, Next};
use stampede_base::error::Failure;
use stampede_stats::bisect::{place, Side};
use stampede_stats::paired::{compare_paired, PairedComparison};
use stampede_stats::verdict::Verdict;
use stampede_store::Store;
use template::Template;

/// What a bisection needs: the history, the spec, the ends and how to judge.
pub struct Bisect<'a> {
    pub history: &'a History,
    pub template: &'a Template,
    pub tree: BuildTree,
    pub good: Commit,
    pub bad: Commit,
    pub metric: RoundMetric,
    /// The smallest change bisected: the ends' interval must lie beyond ±this (relative).
    pub min_change: f64,
    /// Go on from the labs the results already hold.
    pub resume: bool,
    pub stop: Arc<AtomicBool>,
}

/// What a bisection tells its caller as it goes.
pub enum BisectEvent<'a> {
    Note(&'a str),
    /// A build step of `commit` starts (None) or ends (seconds).
    Build {
        commit: &'a Commit,
        step: Step,
        seconds: Option<f64>,
    },
    Lab(LabEvent<'a>),
    /// A row of the step table, as soon as it is known.
    Row(&'a StepRow),
}

/// How a commit was judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The end before the change.
    Start,
    /// The end after it, with the change's verdict.
    End(Verdict),
    /// Measures like the end before the change (`git bisect good`).
    LikeStart,
    /// Measures like the end after it (`git bisect bad`).
    LikeEnd,
    /// Not placed, with the reason (does not build, undecided within the cap).
    Skipped(String),
}

/// One line of the step table.
#[derive(Debug, Clone)]
pub struct StepRow {
    /// 0 for the ends, then 1, 2, … per commit measured between them.
    pub step: usize,
    pub commit: Commit,
    /// Ratio to the start (by the metric) with its 95% interval.
    pub ratio: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub decision: Decision,
    /// How the commit's build went: its seconds (as recorded when it was built) and whether
    /// this invocation found it in the cache; None when it does not build.
    pub build: Option<BuildTime>,
    pub measure: Duration,
    pub rounds: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildTime {
    pub seconds: f64,
    pub cached: bool,
}

/// How a bisection ended.
pub enum Outcome {
    /// The ends measure alike: the interval of their ratio reaches within ±`min_change`.
    NoChange(PairedComparison),
    Found(Box<Found>),
}

pub struct Found {
    pub first: Commit,
    /// Skipped commits before it that may carry the change instead (oldest first).
    pub skipped: Vec<Commit>,
    pub parent: Commit,
    /// The lab of parent against the first commit, its targets, and their comparison.
    pub lab: String,
    pub parent_target: String,
    pub first_target: String,
    pub comparison: Option<PairedComparison>,
}

pub struct Finished {
    pub rows: Vec<StepRow>,
    /// The ends' comparison (end / start).
    pub change: PairedComparison,
    pub outcome: Outcome,
    /// The ends' lab.
    pub ends_lab: String,
}

/// A measured lab: per target index, its value per round.
struct Measured {
    values: Vec<HashMap<u32, f64>>,
    elapsed: Duration,
}

impl Measured {
    /// The rounds where every target has a value, as tuples in target order.
    fn rounds(&self) -> Vec<Vec<f64>> {
        let Some(first) = self.values.first() else {
            return Vec::new();
        };
        let mut repetitions: Vec<u32> = first.keys().copied().collect();
        repetitions.sort_unstable();
        repetitions
            .into_iter()
            .filter_map(|round| self.values.iter().map(|v| v.get(&round).copied()).collect())
            .collect()
    }
}

impl Bisect<'_> {
    /// Runs the bisection; `check_results` first.
    pub fn run(&self, on_event: &mut dyn FnMut(BisectEvent<'_>)) -> Result<Finished, Failure> {
        let mut bins: HashMap<String, PathBuf> = HashMap::new();
        let mut rows = Vec::new();
        let good_build = self.build_end(&self.good, "start", &mut bins, on_event)?;
        let bad_build = self.build_end(&self.bad, "end", &mut bins, on_event)?;
        let ends_lab = self.lab_name("ends");
        let targets = [self.target_name(&self.good), self.target_name(&self.bad)];
        let measured = self.measure(&ends_lab, &targets, &bins, false, on_event)?;
        let pairs: Vec<(f64, f64)> = measured.rounds().iter().map(|r| (r[0], r[1])).collect();
        let change = compare_paired(&pairs, self.metric.direction()).ok_or_else(|| {
            Failure::run(format!(
                "lab \"{ends_lab}\" measured no round of both ends; see its runs' errors"
            ))
        })?;
        let start_row = StepRow {
            step: 0,
            commit: self.good.clone(),
            ratio: Some(1.0),
            interval: None,
            decision: Decision::Start,
            build: Some(good_build),
            measure: measured.elapsed,
            rounds: pairs.len(),
        };
        let end_row = StepRow {
            step: 0,
            commit: self.bad.clone(),
            ratio: Some(change.ratio),
            interval: change.interval,
            decision: Decision::End(change.verdict.clone()),
            build: Some(bad_build),
            measure: Duration::ZERO,
            rounds: pairs.len(),
        };
        for row in [start_row, end_row] {
            on_event(BisectEvent::Row(&row));
            rows.push(row);
        }
        if !beyond(&change, self.min_change) {
            return Ok(Finished {
                rows,
                outcome: Outcome::NoChange(change.clone()),
                change,
                ends_lab,
            });
        }
        let found = self.narrow(&mut rows, &mut bins, on_event)?;
        Ok(Finished {
            rows,
            change,
            outcome: Outcome::Found(Box::new(found)),
            ends_lab,
        })
    }

    /// Steps until no commit is left to measure, then the first commit against its parent.
    fn narrow(
        &self,
        rows: &mut Vec<StepRow>,
        bins: &mut HashMap<String, PathBuf>,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<Found, Failure> {
        let mut before = vec![self.good.hash.clone()];
        let mut after = self.bad.hash.clone();
        let mut skipped: Vec<String> = Vec::new();
        let mut step = 0;
        let (first, skipped_left) = loop {
            let (hash, left) = match self.history.next(&before, &after, &skipped)? {
                Next::Measure { commit, left } => (commit, left),
                Next::Found { first, skipped } => break (first, skipped),
            };
            step += 1;
            let commit = self.history.commit(&hash)?;
            let note = format!(
                "step {step}: {} {} ({left} commits left, about {} more steps)",
                commit.short(),
                commit.subject,
                steps_for(left)
            );
            on_event(BisectEvent::Note(&note));
            let row = self.step(step, &commit, bins, on_event)?;
            match row.decision {
                Decision::LikeStart => before.push(hash),
                Decision::LikeEnd => after = hash,
                _ => skipped.push(hash),
            }
            on_event(BisectEvent::Row(&row));
            rows.push(row);
        };
        let first = self.history.commit(&first)?;
        let skipped = skipped_left
            .iter()
            .map(|hash| self.history.commit(hash))
            .collect::<Result<Vec<_>, _>>()?;
        let parent = self.history.commit(&self.history.parent(&first.hash)?)?;
        self.confirm(first, skipped, parent, bins, on_event)
    }

    /// Builds and measures one commit between the ends.
    fn step(
        &self,
        step: usize,
        commit: &Commit,
        bins: &mut HashMap<String, PathBuf>,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<StepRow, Failure> {
        let mut row = StepRow {
            step,
            commit: commit.clone(),
            ratio: None,
            interval: None,
            decision: Decision::Skipped(String::new()),
            build: None,
            measure: Duration::ZERO,
            rounds: 0,
        };
        match self.build(commit, bins, on_event)? {
            Ok(time) => row.build = Some(time),
            Err(tail) => {
                row.decision =
                    Decision::Skipped(format!("does not build: {}\n{tail}", error_line(&tail)));
                return Ok(row);
            }
        }
        let lab = self.lab_name(&format!("step {step} {}", commit.short()));
        let targets = [
            self.target_name(&self.good),
            self.target_name(&self.bad),
            self.target_name(commit),
        ];
        let measured = self.measure(&lab, &targets, bins, true, on_event)?;
        row.measure = measured.elapsed;
        let rounds: Vec<(f64, f64, f64)> = measured
            .rounds()
            .iter()
            .map(|r| (r[0], r[1], r[2]))
            .collect();
        row.rounds = rounds.len();
        let placement = place(&rounds);
        row.ratio = placement.as_ref().map(|p| p.ratio_to_before);
        row.interval = placement.as_ref().and_then(|p| p.interval);
        row.decision = match placement.as_ref().and_then(|p| p.side) {
            Some(Side::Before) => Decision::LikeStart,
            Some(Side::After) => Decision::LikeEnd,
            None => Decision::Skipped(match placement {
                Some(p) => format!(
                    "undecided after {} rounds: {:.0}% of the way from start to end",
                    p.rounds,
                    p.position * 100.0
                ),
                None => "no round measured".into(),
            }),
        };
        Ok(row)
    }

    /// The first commit against its parent, in a lab of their own (the ends' lab when they
    /// are the ends).
    fn confirm(
        &self,
        first: Commit,
        skipped: Vec<Commit>,
        parent: Commit,
        bins: &mut HashMap<String, PathBuf>,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<Found, Failure> {
        let parent_target = self.target_name(&parent);
        let first_target = self.target_name(&first);
        let lab = if parent.hash == self.good.hash && first.hash == self.bad.hash {
            self.lab_name("ends")
        } else {
            if let Err(tail) = self.build(&parent, bins, on_event)? {
                return Err(Failure::run(format!(
                    "the parent {} of {} does not build, so the change cannot be shown against it: {tail}",
                    parent.short(),
                    first.short()
                )));
            }
            self.lab_name("parent and first")
        };
        let note = format!(
            "measuring {} against its parent {}",
            first.short(),
            parent.short()
        );
        on_event(BisectEvent::Note(&note));
        let measured = self.measure(
            &lab,
            &[parent_target.clone(), first_target.clone()],
            bins,
            false,
            on_event,
        )?;
        let pairs: Vec<(f64, f64)> = measured.rounds().iter().map(|r| (r[0], r[1])).collect();
        Ok(Found {
            comparison: compare_paired(&pairs, self.metric.direction()),
            first,
            skipped,
            parent,
            lab,
            parent_target,
            first_target,
        })
    }

    /// An end's build; an end that does not build stops the bisection.
    fn build_end(
        &self,
        commit: &Commit,
        which: &str,
        bins: &mut HashMap<String, PathBuf>,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<BuildTime, Failure> {
        self.build(commit, bins, on_event)?.map_err(|tail| {
            Failure::run(format!(
                "the {which} {} does not build with the spec's flags: {tail}",
                commit.short()
            ))
        })
    }

    /// The commit's binaries into `bins` and how long they took to build, or the build log's
    /// tail when it does not build.
    fn build(
        &self,
        commit: &Commit,
        bins: &mut HashMap<String, PathBuf>,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<Result<BuildTime, String>, Failure> {
        let mut announce = |step: Step, seconds: Option<f64>| {
            on_event(BisectEvent::Build {
                commit,
                step,
                seconds,
            })
        };
        match self.tree.build(&commit.hash, &self.stop, &mut announce) {
            Ok(built) => {
                bins.insert(self.target_name(commit), built.binaries.bin_dir.clone());
                Ok(Ok(BuildTime {
                    seconds: built.record.steps.iter().map(|(_, s)| s).sum(),
                    cached: built.cache_hit,
                }))
            }
            Err(CommitBuildError::Broken(tail)) => Ok(Err(tail)),
            Err(CommitBuildError::Failed(failure)) => Err(failure),
        }
    }

    /// Runs (or resumes) the lab `name` over `targets` and reads each target's value per round.
    fn measure(
        &self,
        name: &str,
        targets: &[String],
        bins: &HashMap<String, PathBuf>,
        between_ends: bool,
        on_event: &mut dyn FnMut(BisectEvent<'_>),
    ) -> Result<Measured, Failure> {
        let started = Instant::now();
        let with_bins: Vec<(&str, &std::path::Path)> = targets
            .iter()
            .map(|target| (target.as_str(), bins[target].as_path()))
            .collect();
        let (spec, workloads) = self.template.lab(name, &with_bins)?;
        let exists = Store::open(&spec.results)?.find_lab(name)?.is_some();
        let mut relay = |event: LabEvent<'_>| on_event(BisectEvent::Lab(event));
        let mut lab = Lab::prepare(
            &spec,
            workloads,
            &SpecTargets,
            exists,
            false,
            self.stop.clone(),
            &mut relay,
        )?;
        if between_ends {
            lab.place_between_ends(self.metric);
        }
        let outcome = lab.run(&mut relay)?;
        if outcome.interrupted {
            return Err(Failure::interrupted(format!(
                "interrupted in lab \"{name}\"; its completed runs are saved"
            )));
        }
        let plan = lab.plan();
        let mut values: Vec<HashMap<u32, f64>> = vec![HashMap::new(); targets.len()];
        for run in &outcome.completed {
            let Some(cell) = plan.cells.iter().find(|cell| cell.key == run.cell_key) else {
                continue;
            };
            if let Some(value) = self.metric.of(run) {
                values[cell.target].insert(run.repetition, value);
            }
        }
        Ok(Measured {
            values,
            elapsed: started.elapsed(),
        })
    }

    /// A fresh bisection must not find its labs in the results; `--resume` must.
    pub fn check_results(&self) -> Result<(), Failure> {
        let ends = self.lab_name("ends");
        let (spec, _) = self
            .template
            .lab(&ends, &[("check", std::path::Path::new("system"))])?;
        // A results file that does not exist yet is not created by looking.
        let exists =
            spec.results.exists() && Store::open(&spec.results)?.find_lab(&ends)?.is_some();
        match (exists, self.resume) {
            (true, false) => Err(Failure::input(format!(
                "{} already holds this bisection (lab \"{ends}\"); continue it with --resume",
                spec.results
            ))),
            (false, true) => Err(Failure::input(format!(
                "nothing to resume: {} holds no lab \"{ends}\"; start the bisection without --resume",
                spec.results
            ))),
            _ => Ok(()),
        }
    }

    /// "<spec> bisect <start>..<end> <what>": every lab of one bisection shares the prefix.
    pub fn lab_name(&self, what: &str) -> String {
        format!(
            "{} bisect {}..{} {what}",
            self.template.name,
            self.good.short(),
            self.bad.short()
        )
    }

    /// The target of a commit in every lab: its hash, so that its cluster (and loaded data)
    /// serves every lab of the results that measures it, whatever its role there.
    pub fn target_name(&self, commit: &Commit) -> String {
        commit.short().to_string()
    }
}

/// Whether the ends' change is decided and its whole interval lies beyond ±`min_change`: a
/// smaller change cannot be told apart in halves at each step, and an A/A pair of ends decides
/// "faster" or "slower" in α of bisections, but rarely by more than the precision asked for.
fn beyond(change: &PairedComparison, min_change: f64) -> bool {
    let decided = matches!(change.verdict, Verdict::Better | Verdict::Worse);
    decided
        && change
            .interval
            .is_some_and(|(low, high)| high < 1.0 - min_change || low > 1.0 + min_change)
}

/// The line of a build log's tail that says what failed: the compiler's first error (from the
/// file's name on, without the build tree's relative path), else the last line.
fn error_line(tail: &str) -> &str {
    let Some(error) = tail.lines().find(|line| line.contains(": error:")) else {
        return tail.lines().last().unwrap_or("").trim();
    };
    let location_end = error
        .find(": error:")
        .expect("the line was chosen for holding \": error:\"");
    let file_start = error[..location_end]
        .rfind('/')
        .map_or(0, |slash| slash + 1);
    error[file_start..].trim()
}

/// Steps a bisection of `left` commits takes at most: ⌈log₂ left⌉.
fn steps_for(left: usize) -> usize {
    usize::BITS as usize - left.saturating_sub(1).leading_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_build_is_named_by_its_first_compiler_error() {
        let tail = "make[4]: Entering directory\n../../src/backend/utils/adt/misc.c:947:24: error: expected expression before ';' token\n  947 | int x = ;\nmake: *** [all] Error 2";
        assert_eq!(
            error_line(tail),
            "misc.c:947:24: error: expected expression before ';' token"
        );
        assert_eq!(
            error_line("ld: cannot find -lfoo\nmake: *** Error 2"),
            "make: *** Error 2"
        );
    }

    #[test]
    fn steps_left_are_the_ceiling_of_log2() {
        let steps: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 16, 17].map(steps_for).to_vec();
        assert_eq!(steps, [0, 1, 2, 2, 3, 3, 4, 4, 5]);
    }
}
