//! Runs a lab: provisions each target's cluster, loads each (target, scale) dataset once,
//! measures every planned run in order from pristine data, and records each run as it ends.
//! Finished runs are skipped on resume; a crashed server is restarted and the matrix goes on.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::live_record::LiveRecord;
use super::lock::{lock_path, LabLock};
use super::plan::{Cell, Plan, PlannedRun};
use super::pods::PodTarget;
use super::rounds::{GroupState, Rounds};
use super::spec::{LabSpec, Scale, TargetSpec};
use super::targets::{LabPlace, LabServer, ResolvedTarget, Targets};
use super::window::{OpenWindow, RunProbes};
use crate::driver::IntervalReport;
use crate::driver::Protocol;
use crate::family::api::{LabWorkload, Measurement, RunObserver, RunRequest};
use crate::server::profile::Machine;
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_stats::stopping::Stop;
use stampede_store::{
    unix_now, CellRecord, LiveRunStart, RunRecord, RunStatus, RunSummary, SettingRow, Store,
    WaitSample, OWN_CLIENTS, OWN_SCALE,
};

/// What the lab tells its caller as it goes.
pub enum LabEvent<'a> {
    Note(&'a str),
    /// Getting a target's binaries: a download's progress, a build's steps.
    Setup(SetupEvent<'a>),
    RunStarting {
        /// 1-based place among all planned runs, and their number.
        position: usize,
        total: usize,
        cell: &'a Cell,
        repetition: u32,
        /// Time left, from the runs measured so far in this invocation.
        eta: Option<Duration>,
        /// `runs = "auto"`: the ETA counts rounds that may not run, so it is an upper bound.
        eta_at_most: bool,
    },
    /// One measured second of the current run.
    Second {
        index: u64,
        tps: f64,
    },
    /// The same second's statistics, as the driver merged them (over the run's pods too).
    Interval(&'a IntervalReport),
    RunEnded {
        status: RunStatus,
        tps: Option<f64>,
        error: Option<&'a str>,
    },
}

/// A run ready to measure: where its clients connect, its dataset's scale, and the server's
/// settings as it starts (for a server others may change).
struct PreparedRun {
    conn: Endpoint,
    scale: i64,
    settings: Option<Vec<SettingRow>>,
}

/// Opens the probes' window when the workload's warmup ends and relays its seconds.
struct Observer<'e> {
    probes: Option<Box<dyn RunProbes>>,
    window: Option<Box<dyn OpenWindow>>,
    on_event: &'e mut dyn FnMut(LabEvent<'_>),
    /// The run's seconds into the results database as they come.
    live: LiveRecord<'e>,
}

impl Observer<'_> {
    /// Says once that the run's seconds could not be written live (its row still is at its end).
    fn note_live_failure(&mut self) {
        if let Some(failure) = self.live.failure.take() {
            (self.on_event)(LabEvent::Note(&format!(
                "the run's seconds are not written as they come: {failure}"
            )));
        }
    }
}

impl RunObserver for Observer<'_> {
    fn open_window(&mut self) {
        self.window = self.probes.as_ref().and_then(|p| p.open().ok());
    }

    fn second(&mut self, index: u64, tps: f64) {
        self.live.second(index, tps);
        (self.on_event)(LabEvent::Second { index, tps });
        self.note_live_failure();
    }

    fn interval(&mut self, interval: &IntervalReport) {
        self.live.interval(interval);
        (self.on_event)(LabEvent::Interval(interval));
    }
}

/// A target's running server and what the lab has loaded into it.
struct TargetServer {
    server: Box<dyn LabServer>,
    /// (workload, scale) → the workload's scale factor in the loaded database.
    datasets: HashMap<(usize, Scale), i64>,
    /// Bytes one scale unit of a workload takes, measured on this server.
    unit_bytes: HashMap<usize, u64>,
    /// (dataset, statement) pairs whose plan is stored.
    explained: HashSet<(String, String)>,
}

pub struct Lab<'a> {
    spec: &'a LabSpec,
    plan: Plan,
    store: Store,
    lab_id: i64,
    workloads: Vec<Box<dyn LabWorkload>>,
    targets: &'a dyn Targets,
    /// Per target: its binaries, or why they could not be had.
    binaries: Vec<Result<Arc<dyn ResolvedTarget>, Failure>>,
    servers: Vec<Option<TargetServer>>,
    /// Skip a target that cannot be provisioned instead of stopping the lab.
    keep_going: bool,
    /// Per target: why it cannot be provisioned, once that is known.
    broken: Vec<Option<Failure>>,
    stop: Arc<AtomicBool>,
    /// Root of the lab's clusters: `<results>.servers/`.
    server_root: PathBuf,
    /// `runs = "auto"`: which rounds still run.
    rounds: Option<Rounds>,
    /// The machine the runs are measured on (`machines.id`).
    machine_id: i64,
    /// This machine's identity, against which earlier runs of a cell are checked on resume.
    machine: stampede_store::Machine,
    /// A shard of a lab spread over a fleet: the units it runs.
    shard: Option<Shard>,
    /// Keep a remote server's datasets when the lab ends.
    keep_data: bool,
    /// Keep the Clusters the lab created when it ends.
    keep_clusters: bool,
    /// No other lab writes these results while this one runs.
    _lock: LabLock,
}

/// One shard of a lab sharded over a fleet (`lab run --shards N`): unit u of the plan runs on
/// shard u mod N, so every target of a cell, and every round of it, runs on one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// The invocation its launcher opened.
    pub lab_id: i64,
    pub index: usize,
    pub of: usize,
}

impl Shard {
    pub fn holds(&self, unit: usize) -> bool {
        unit % self.of == self.index
    }
}

/// Which invocation a lab writes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The next invocation (or the latest, when it has measured nothing yet).
    Run,
    /// The latest invocation, from its next unfinished run.
    Resume,
    /// One shard of the invocation its launcher opened.
    Shard(Shard),
}

/// The lab this `run` or `resume` writes into: `resume` continues the spec's latest
/// invocation; `run` starts the next one when the latest ran to its end (or there is none),
/// goes on in one that has not measured yet, and refuses one with finished runs that did not
/// end (that is what `resume` is for).
pub(super) fn open_invocation(
    store: &mut Store,
    spec: &LabSpec,
    resume: bool,
) -> Result<(i64, u64), Failure> {
    let latest = store.latest_invocation(&spec.name)?;
    let seed = spec.seed.unwrap_or_else(|| unix_now().to_bits());
    match latest {
        None if resume => Err(Failure::input(format!(
            "nothing to resume: {} holds no lab \"{}\"; start it with `stampede lab run`",
            spec.results, spec.name
        ))),
        None => store.next_invocation(&spec.name, &spec.text, seed),
        Some(lab) if !resume && lab.ended => store.next_invocation(&spec.name, &spec.text, seed),
        Some(lab) => {
            if !resume && !store.finished_runs(lab.id)?.is_empty() {
                return Err(Failure::input(format!(
                    "lab \"{}\" already has finished runs in {}; continue it with `stampede lab resume`",
                    lab.name, spec.results
                )));
            }
            store.lab(&lab.name, &spec.text, seed)
        }
    }
}

/// The invocation a shard writes into: the one its launcher opened, which must still be the
/// spec's latest and not have ended.
fn shard_invocation(
    store: &mut Store,
    spec: &LabSpec,
    shard: Shard,
) -> Result<(i64, u64), Failure> {
    match store.latest_invocation(&spec.name)? {
        Some(lab) if lab.id == shard.lab_id && !lab.ended => Ok((lab.id, lab.seed)),
        _ => Err(Failure::input(format!(
            "shard {} of {}: invocation {} is not the open invocation of lab \"{}\" in {}",
            shard.index, shard.of, shard.lab_id, spec.name, spec.results
        ))),
    }
}

/// A unit as the user knows it: its first cell without the target ("oltp/read_only/10/8").
fn unit_label(plan: &Plan, unit: usize) -> String {
    let cell = &plan.cells[plan.units[unit][0][0]];
    let key = &cell.key;
    key.split_once('/')
        .map_or(key.clone(), |(_, rest)| format!("cell {rest}"))
}

/// How the lab ended.
pub struct LabOutcome {
    pub interrupted: bool,
    pub failed_runs: usize,
    pub completed: Vec<RunSummary>,
    /// Targets that could not be provisioned under `--keep-going`.
    pub skipped: Vec<SkippedTarget>,
}

pub struct SkippedTarget {
    pub target: String,
    pub reason: String,
    /// Its runs left unrun.
    pub runs: usize,
}

impl<'a> Lab<'a> {
    /// Checks everything that can be checked before starting: binaries, variants, the results
    /// database. `resume` requires the lab to exist already; a fresh `run` requires it not to
    /// have finished runs.
    pub fn prepare(
        spec: &'a LabSpec,
        workloads: Vec<Box<dyn LabWorkload>>,
        targets: &'a dyn Targets,
        resume: bool,
        keep_going: bool,
        stop: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<Lab<'a>, Failure> {
        let opening = if resume {
            Opening::Resume
        } else {
            Opening::Run
        };
        Self::open(
            spec, workloads, targets, opening, keep_going, stop, on_event,
        )
    }

    /// The lab of `opening`'s invocation; `Opening::Shard` runs only the shard's units, on
    /// this machine, and leaves ending the lab to its launcher.
    pub fn open(
        spec: &'a LabSpec,
        workloads: Vec<Box<dyn LabWorkload>>,
        targets: &'a dyn Targets,
        opening: Opening,
        keep_going: bool,
        stop: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<Lab<'a>, Failure> {
        // A target that cannot be had is refused before the lab takes its lock or writes
        // anything.
        if !keep_going {
            for target in &spec.targets {
                targets.check(target)?;
            }
        }
        for (workload, w) in spec.workloads.iter().zip(&workloads) {
            for script in &workload.scripts {
                w.check_variant(script)?;
            }
        }
        // Binaries are had (downloaded, built, their settings checked) before the lock is
        // taken, so that a lab refused for them writes nothing, its lock file included.
        let binaries: Vec<Result<Arc<dyn ResolvedTarget>, Failure>> = spec
            .targets
            .iter()
            .map(|t| targets.resolve(t, &mut |event| on_event(LabEvent::Setup(event))))
            .collect();
        if !keep_going {
            if let Some(Err(error)) = binaries.iter().find(|b| b.is_err()) {
                return Err(error.clone());
            }
        }
        let lock = LabLock::acquire(&lock_path(&spec.results, &spec.server_root), &spec.name)?;
        // A results database that cannot take the lab is the spec's problem: nothing ran yet.
        let mut store = Store::open(&spec.results)?;
        let (lab_id, seed) = match opening {
            Opening::Run => open_invocation(&mut store, spec, false),
            Opening::Resume => open_invocation(&mut store, spec, true),
            Opening::Shard(shard) => shard_invocation(&mut store, spec, shard),
        }
        .map_err(Failure::into_input)?;
        let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
        let plan = Plan::new(spec, seed, &sequential);
        let machine = stampede_store::Machine::this();
        let machine_id = store
            .record_machine(&machine)
            .map_err(Failure::into_input)?;
        store
            .save_cells(lab_id, &cell_records(spec, &plan, &workloads))
            .map_err(Failure::into_input)?;
        store
            .record_client_cores(lab_id, stampede_base::cpu::cores())
            .map_err(Failure::into_input)?;
        store
            .record_planned_rounds(lab_id, plan.rounds())
            .map_err(Failure::into_input)?;
        // A sharded lab's machines are its runs' (its launcher describes the invocation).
        if !matches!(opening, Opening::Shard(_)) {
            store
                .describe_invocation(lab_id, &spec.name, &machine, &spec.tags)
                .map_err(Failure::into_input)?;
        }
        let server_root = spec.server_root.clone();
        Ok(Lab {
            spec,
            plan,
            store,
            lab_id,
            workloads,
            targets,
            servers: spec.targets.iter().map(|_| None).collect(),
            broken: binaries.iter().map(|b| b.as_ref().err().cloned()).collect(),
            binaries,
            keep_going,
            stop,
            server_root,
            rounds: spec.auto.map(|auto| Rounds::new(spec, auto)),
            machine_id,
            machine,
            shard: match opening {
                Opening::Shard(shard) => Some(shard),
                _ => None,
            },
            keep_data: false,
            keep_clusters: false,
            _lock: lock,
        })
    }

    /// The invocation's id in the results database.
    pub fn id(&self) -> i64 {
        self.lab_id
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// `--keep-data`: a remote server's datasets stay when the lab ends.
    pub fn keep_data(&mut self, keep: bool) {
        self.keep_data = keep;
    }

    /// `--keep-clusters`: the Clusters the lab created stay when it ends.
    pub fn keep_clusters(&mut self, keep: bool) {
        self.keep_clusters = keep;
    }

    /// The spec's claims judged from the lab's stored runs.
    pub fn claims(&mut self) -> Result<Vec<crate::report::claims::ClaimResult>, Failure> {
        let claims: Vec<_> = self.spec.claims.iter().map(|c| c.claim.clone()).collect();
        let mut runs = self.store.lab_runs(self.lab_id)?;
        if claims.iter().any(|claim| claim.metric.needs_statements()) {
            self.store.attach_statements(self.lab_id, &mut runs)?;
        }
        Ok(crate::report::claims::check(&claims, &runs))
    }

    /// A bisection's step: the targets are (before, after, commit), and each unit stops once
    /// the commit is placed on one side by `metric` (or at the cap).
    pub fn place_between_ends(&mut self, metric: super::rounds::RoundMetric) {
        self.rounds = Some(Rounds::between_ends(self.spec, metric));
    }

    /// Runs every unfinished run in order, then stops the servers.
    pub fn run(&mut self, on_event: &mut dyn FnMut(LabEvent<'_>)) -> Result<LabOutcome, Failure> {
        let result = self.run_all(on_event);
        let ended = matches!(result, Ok((false, _, _)));
        self.release(ended);
        // Once the lab has started, whatever stops it is a failed run (exit 2), whichever
        // layer it came from: the spec and its inputs were accepted by `prepare`.
        let (interrupted, failed_runs, skipped_runs) = result.map_err(Failure::into_run)?;
        // A shard's launcher ends the lab once every shard has.
        if !interrupted && self.shard.is_none() {
            self.store.end_lab(self.lab_id)?;
        }
        let skipped = self
            .broken
            .iter()
            .zip(&self.spec.targets)
            .zip(skipped_runs)
            .filter_map(|((reason, target), runs)| {
                Some(SkippedTarget {
                    target: target.name.clone(),
                    reason: reason.clone()?.into_message(),
                    runs,
                })
            })
            .collect();
        Ok(LabOutcome {
            interrupted,
            failed_runs,
            completed: self.store.completed_runs(self.lab_id)?,
            skipped,
        })
    }

    /// Whether a signal interrupted the lab, the failed runs, and per target the runs skipped
    /// because it could not be provisioned.
    fn run_all(
        &mut self,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<(bool, usize, Vec<usize>), Failure> {
        let todo = self.unfinished_runs(on_event)?;
        let planned = self.plan.runs.iter().filter(|r| self.runs_here(r)).count();
        if todo.len() < planned {
            let note = format!(
                "resuming: {} of {planned} runs already finished",
                planned - todo.len(),
            );
            on_event(LabEvent::Note(&note));
        }
        let started = Instant::now();
        let mut failed = 0;
        let mut skipped = vec![0; self.spec.targets.len()];
        for (done, (position, run)) in todo.iter().enumerate() {
            if self.stop.load(Ordering::SeqCst) {
                return Ok((true, failed, skipped));
            }
            if self.round_not_needed(run, on_event)? {
                continue;
            }
            let target = self.plan.cells[run.cell].target;
            if self.broken[target].is_some() {
                skipped[target] += 1;
                continue;
            }
            let eta =
                (done > 0).then(|| started.elapsed() / done as u32 * (todo.len() - done) as u32);
            let cell = self.plan.cells[run.cell].clone();
            on_event(LabEvent::RunStarting {
                position: position + 1,
                total: self.plan.runs.len(),
                cell: &cell,
                repetition: run.repetition,
                eta,
                eta_at_most: self.rounds.is_some(),
            });
            let record = match self.measure(*position, run, &cell, on_event) {
                Ok(record) => record,
                Err(error) if self.keep_going => {
                    let note = format!(
                        "target \"{}\" cannot be provisioned, its runs are skipped (--keep-going): {error}",
                        self.spec.targets[target].name
                    );
                    on_event(LabEvent::Note(&note));
                    self.broken[target] = Some(error);
                    skipped[target] += 1;
                    continue;
                }
                Err(error) => return Err(error),
            };
            on_event(LabEvent::RunEnded {
                status: record.status,
                tps: record.metrics.as_ref().map(|m| m.tps),
                error: record.error.as_deref(),
            });
            self.store.record_run(self.lab_id, &record)?;
            match record.status {
                RunStatus::Interrupted => return Ok((true, failed, skipped)),
                RunStatus::Failed => failed += 1,
                RunStatus::Completed => {}
            }
        }
        self.record_caps(on_event)?;
        Ok((false, failed, skipped))
    }

    /// An auto lab's judgement before a unit's round: true when the unit runs no more rounds.
    fn round_not_needed(
        &mut self,
        run: &PlannedRun,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<bool, Failure> {
        let Some(rounds) = &mut self.rounds else {
            return Ok(false);
        };
        if rounds.is_stopped(run.unit) {
            return Ok(true);
        }
        if !rounds.needs_judging(run.unit, run.repetition) {
            return Ok(false);
        }
        let completed = self.store.completed_runs(self.lab_id)?;
        let Some((stop, states)) =
            rounds.stop_before(&self.plan, run.unit, run.repetition, &completed)
        else {
            return Ok(false);
        };
        self.record_stop(stop, &states, on_event)?;
        Ok(true)
    }

    /// At the end of an auto lab, the units still undecided stopped at the cap — unless their
    /// last round brought the precision (or decided their claims), which then is why they stop.
    fn record_caps(&mut self, on_event: &mut dyn FnMut(LabEvent<'_>)) -> Result<(), Failure> {
        let Some(rounds) = &self.rounds else {
            return Ok(());
        };
        let completed = self.store.completed_runs(self.lab_id)?;
        let undecided: Vec<Vec<GroupState>> = (0..self.plan.units.len())
            .filter(|unit| !rounds.is_stopped(*unit))
            .filter(|unit| self.shard.is_none_or(|shard| shard.holds(*unit)))
            .map(|unit| rounds.judge(&self.plan, unit, self.spec.runs, &completed))
            .collect();
        for states in undecided {
            self.record_stop(super::rounds::stop_at_cap(&states), &states, on_event)?;
        }
        Ok(())
    }

    /// Stores why each group of a unit stopped, and says so.
    fn record_stop(
        &mut self,
        stop: Stop,
        states: &[GroupState],
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<(), Failure> {
        for state in states {
            for &cell in &state.cells {
                let key = &self.plan.cells[cell].key;
                self.store
                    .record_stop(self.lab_id, key, stop.name(), state.rounds)?;
            }
            let note = stop_note(&self.plan.cells[state.cells[0]], stop, state);
            on_event(LabEvent::Note(&note));
        }
        Ok(())
    }

    /// Whether this process runs `run`: every run, or a shard's units' runs.
    fn runs_here(&self, run: &PlannedRun) -> bool {
        self.shard.is_none_or(|shard| shard.holds(run.unit))
    }

    /// The runs still to do, in order. A sequence with any step unfinished runs again from its
    /// first step, since each step measures the data its predecessors left; the results of
    /// its finished steps are removed first — unless its workload resumes in place, when only
    /// its unfinished steps run, on the data copy as it was left.
    fn unfinished_runs(
        &mut self,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<Vec<(usize, PlannedRun)>, Failure> {
        self.restart_units_measured_elsewhere(on_event)?;
        let finished = self.store.finished_runs(self.lab_id)?;
        let is_finished = |run: &PlannedRun| {
            finished.contains(&(self.plan.cells[run.cell].key.clone(), run.repetition))
        };
        let incomplete_sequences: HashSet<usize> = self
            .plan
            .runs
            .iter()
            .filter(|run| !is_finished(run))
            .filter(|run| !self.workloads[self.plan.cells[run.cell].workload].resumes_in_place())
            .filter_map(|run| run.step.map(|step| step.first))
            .collect();
        let mut todo = Vec::new();
        for (position, run) in self.plan.runs.iter().enumerate() {
            if !self.runs_here(run) {
                continue;
            }
            let rerun = run
                .step
                .is_some_and(|step| incomplete_sequences.contains(&step.first));
            if rerun && is_finished(run) {
                let key = &self.plan.cells[run.cell].key;
                self.store.delete_runs(self.lab_id, key, run.repetition)?;
            }
            if rerun || !is_finished(run) {
                todo.push((position, *run));
            }
        }
        Ok(todo)
    }

    /// A unit (a cell on every target) with runs still to do whose finished runs were measured
    /// on another machine starts again here: its rounds are pairs, and a pair measured on two
    /// machines compares the machines as much as the targets. (Its runs on the other machine are
    /// removed; a lab resumed on its own machine keeps every finished run.)
    fn restart_units_measured_elsewhere(
        &mut self,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<(), Failure> {
        let here = self.machine.identity();
        let finished = self.store.finished_run_machines(self.lab_id)?;
        for unit in 0..self.plan.units.len() {
            if self.shard.is_some_and(|shard| !shard.holds(unit)) {
                continue;
            }
            let cells: HashSet<&str> = self.plan.units[unit]
                .iter()
                .flatten()
                .map(|&cell| self.plan.cells[cell].key.as_str())
                .collect();
            let in_unit: Vec<&(String, u32, Option<String>)> = finished
                .iter()
                .filter(|(key, _, _)| cells.contains(key.as_str()))
                .collect();
            let planned = self.plan.runs.iter().filter(|r| r.unit == unit).count();
            let elsewhere = in_unit
                .iter()
                .find_map(|(_, _, machine)| machine.as_ref().filter(|m| **m != here));
            let (Some(elsewhere), true) = (elsewhere, in_unit.len() < planned) else {
                continue;
            };
            let note = format!(
                "{}: its {} finished run(s) were measured on another machine ({elsewhere}); the \
                 cell starts again on this one ({here}), since a cell's rounds never mix machines",
                unit_label(&self.plan, unit),
                in_unit.len()
            );
            on_event(LabEvent::Note(&note));
            for (key, repetition, _) in in_unit {
                self.store.delete_runs(self.lab_id, key, *repetition)?;
            }
        }
        Ok(())
    }

    /// One run: server up, dataset loaded, pristine copy for writers, checkpoint, measure.
    /// A server that cannot be provisioned or loaded is an error rather than a failed run: it
    /// measured nothing, and a resume after the cause is fixed should run it.
    fn measure(
        &mut self,
        position: usize,
        run: &PlannedRun,
        cell: &Cell,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<RunRecord, Failure> {
        let started_unix_s = unix_now();
        let run_started = Instant::now();
        let mut record = RunRecord {
            cell_key: cell.key.clone(),
            repetition: run.repetition,
            position,
            status: RunStatus::Failed,
            error: None,
            started_unix_s,
            ended_unix_s: started_unix_s,
            resolved_scale: None,
            overhead_s: 0.0,
            metrics: None,
            series: Vec::new(),
            counters: Vec::new(),
            statements: Vec::new(),
            counter_series: Vec::new(),
            wait_events: Vec::new(),
            pods: Vec::new(),
            settings: None,
            machine_id: Some(self.machine_id),
            shard: self.shard.map(|shard| shard.index as u32),
        };
        let provisioning_started = Instant::now();
        self.ensure_server(cell.target, on_event)?;
        let scale = self.ensure_dataset(cell, on_event)?;
        let between = self.between_steps(run, cell, scale, on_event);
        let provisioning = provisioning_started.elapsed();
        let prepared = between.and_then(|()| self.prepare_run(run, cell, scale, on_event));
        let outcome = prepared.and_then(|prepared| {
            let PreparedRun {
                conn,
                scale,
                settings,
            } = prepared;
            record.resolved_scale = Some(scale);
            record.settings = settings;
            let workload = &self.spec.workloads[cell.workload];
            // A Cluster's runs come from pods unless the workload says how many.
            let pod_load = self.servers[cell.target]
                .as_ref()
                .and_then(|server| server.pod_load());
            let pods = workload.pods.or(pod_load.as_ref().map(|load| load.pods));
            let request = RunRequest {
                conn: &conn,
                scale,
                clients: cell.clients,
                // Spread, every pod runs one thread at least (this machine's cores say
                // nothing of the pods').
                threads: match pods {
                    Some(pods) => workload.threads.unwrap_or(pods).clamp(pods, cell.clients),
                    None => workload
                        .threads
                        .unwrap_or_else(default_threads)
                        .min(cell.clients),
                },
                protocol: workload.protocol.unwrap_or_else(|| {
                    crate::family::lab_workload(&workload.name)
                        .map_or(Protocol::Prepared, |kind| kind.default_protocol)
                }),
                warmup: self.spec.warmup,
                duration: self.spec.duration,
                client_cpus: workload.client_cpus.as_deref(),
                stop: self.stop.clone(),
                stall_timeout: self.spec.stall_timeout,
                share: None,
            };
            let live_start = LiveRunStart {
                cell_key: cell.key.clone(),
                repetition: run.repetition,
                position,
                shard: self.shard.map(|shard| shard.index as u32),
                started_unix_s: unix_now(),
            };
            let mut observer = Observer {
                probes: self.window_probes(cell.target, &conn),
                window: None,
                on_event: &mut *on_event,
                live: LiveRecord::begin(&mut self.store, self.lab_id, &live_start),
            };
            observer.note_live_failure();
            let pod_target = match &pod_load {
                Some(load) => PodTarget::Load(load),
                None if self.spec.targets[cell.target].server.is_managed() => PodTarget::Managed,
                None => PodTarget::Url(&conn),
            };
            let measured = match pods {
                Some(pods) => crate::lab::pods::kube_for(&self.spec.kubernetes, pod_target)
                    .and_then(|access| {
                        crate::lab::pods::measure(
                            &access,
                            workload,
                            pods,
                            &cell.variant,
                            &request,
                            &mut observer,
                        )
                    }),
                None => self.workloads[cell.workload].run(&cell.variant, &request, &mut observer),
            };
            // A failed run keeps what the probes saw too; a run that hung says what its
            // sessions waited on.
            if let Some(window) = observer.window {
                let stalled = measured
                    .as_ref()
                    .err()
                    .filter(|e| crate::driver::is_stall(e));
                if let Some(error) = stalled {
                    // Said before the window's last readings: a backend hung while holding a
                    // lock those readings take (pg_stat_statements' own) holds them up until it
                    // moves, and the user should know why the lab waits.
                    (observer.on_event)(LabEvent::Note(&format!(
                        "{}; reading what the server was doing",
                        error.message()
                    )));
                }
                window.close(&mut record);
                if let Some(error) = stalled {
                    return Err(error.clone().with_note(&waits_seen(&record.wait_events)));
                }
            }
            measured
        });
        // What a target set for its runs alone is put back before anything else runs; a
        // server that cannot be given back its settings stops the lab.
        if let Some(server) = &self.servers[cell.target] {
            server.end_run()?;
        }
        let outcome = self.undisturbed(cell.target, outcome);
        record.ended_unix_s = unix_now();
        let measuring = if outcome.is_ok() {
            self.spec.warmup + self.spec.duration
        } else {
            Duration::ZERO
        };
        record.overhead_s = run_started
            .elapsed()
            .saturating_sub(provisioning + measuring)
            .as_secs_f64();
        match outcome {
            _ if self.stop.load(Ordering::SeqCst) => {
                record.status = RunStatus::Interrupted;
                record.error = Some("interrupted by a signal".into());
            }
            Ok(measurement) => {
                record.status = RunStatus::Completed;
                record.metrics = Some(measurement.metrics);
                record.series = measurement.series;
                record.pods = measurement.pods;
                self.explain_new_statements(cell, &record);
            }
            Err(error) => {
                record.error = Some(self.explain_failure(cell.target, error.into_message()));
            }
        }
        Ok(record)
    }

    /// The probes for a run on `conn`, unless the spec turned them off.
    fn window_probes(&self, target: usize, conn: &Endpoint) -> Option<Box<dyn RunProbes>> {
        let server = self.servers[target].as_ref()?;
        self.spec
            .probes
            .then(|| server.window_probes(conn))
            .flatten()
    }

    /// EXPLAIN, once per target and dataset, each statement the run executed.
    fn explain_new_statements(&mut self, cell: &Cell, record: &RunRecord) {
        let Some(scale) = record.resolved_scale else {
            return;
        };
        let dataset = dataset_name(&self.spec.workloads[cell.workload].name, scale);
        let target = &self.spec.targets[cell.target].name;
        let Some(server) = self.servers[cell.target].as_mut() else {
            return;
        };
        for statement in &record.statements {
            if !server
                .explained
                .insert((dataset.clone(), statement.query.clone()))
            {
                continue;
            }
            if let Some(plan) = server.explain(&dataset, &statement.query) {
                let _ =
                    self.store
                        .save_plan(self.lab_id, target, &dataset, &statement.query, &plan);
            }
        }
    }

    /// Adds the server log's tail when the server is gone or hung, and brings it back up.
    fn explain_failure(&mut self, target: usize, error: String) -> String {
        let Some(server) = &self.servers[target] else {
            return error;
        };
        if server.alive() {
            return error;
        }
        let Some(host) = server.host() else {
            return format!(
                "{error}; the server did not answer (stampede does not restart a server it did not start)"
            );
        };
        let tail = host.log_tail(20);
        let restart = match host.restart() {
            Ok(()) => "the server was restarted".to_string(),
            Err(e) => {
                self.servers[target] = None;
                format!("restarting the server failed: {e}")
            }
        };
        format!("{error}; the server did not answer ({restart}); server log tail:\n{tail}")
    }

    /// The connection and scale factor for a run, after restoring pristine data if it writes.
    /// The steps of a sequence share one copy, made fresh for the first.
    fn prepare_run(
        &mut self,
        run: &PlannedRun,
        cell: &Cell,
        scale: i64,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<PreparedRun, Failure> {
        let fresh_copy = match run.step {
            Some(step) => step.after.is_none() && !self.continues_in_place(run, cell)?,
            None => self.workloads[cell.workload].writes(&cell.variant),
        };
        let server = self.servers[cell.target]
            .as_ref()
            .expect("a cell's target is provisioned before its first run");
        let dataset = dataset_name(&self.spec.workloads[cell.workload].name, scale);
        if fresh_copy {
            server.copy_database(&dataset, RUN_COPY)?;
        }
        let database = if fresh_copy || run.step.is_some() {
            RUN_COPY.to_string()
        } else {
            dataset
        };
        server.checkpoint()?;
        server.begin_run(&mut |note| on_event(LabEvent::Note(note)))?;
        Ok(PreparedRun {
            conn: server.workload_conn(&database),
            scale,
            settings: server.run_settings(&database),
        })
    }

    /// Whether a sequence's run continues the data copy a signal left it: its workload resumes
    /// in place and the run was interrupted after its copy was made (one stopped before that
    /// would find an earlier sequence's copy).
    fn continues_in_place(&mut self, run: &PlannedRun, cell: &Cell) -> Result<bool, Failure> {
        if !self.workloads[cell.workload].resumes_in_place() {
            return Ok(false);
        }
        let interrupted = self.store.runs_interrupted_on_their_data(self.lab_id)?;
        Ok(interrupted.contains(&(cell.key.clone(), run.repetition)))
    }

    /// The workload's work between the previous step of a sequence and this one.
    fn between_steps(
        &mut self,
        run: &PlannedRun,
        cell: &Cell,
        scale: i64,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<(), Failure> {
        let Some(previous) = run.step.and_then(|step| step.after) else {
            return Ok(());
        };
        let server = self.servers[cell.target]
            .as_ref()
            .expect("a cell's target is provisioned before its first run");
        // Untracked: the step's own statements stay out of the next run's statistics.
        let conn = server.conn(RUN_COPY);
        let previous = &self.plan.cells[previous].variant;
        self.workloads[cell.workload].between_steps(
            &conn,
            previous,
            &cell.variant,
            scale,
            &mut |note| on_event(LabEvent::Note(note)),
        )
    }

    fn ensure_server(
        &mut self,
        target: usize,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<(), Failure> {
        if self.servers[target].is_some() {
            return Ok(());
        }
        let spec = &self.spec.targets[target];
        let binaries = self.binaries[target].as_ref().map_err(Clone::clone)?;
        let verb = if spec.server.is_managed() {
            "starting"
        } else {
            "reaching"
        };
        let note = format!("{verb} target {} ({})", spec.name, binaries.version());
        on_event(LabEvent::Note(&note));
        let on_event = std::cell::RefCell::new(on_event);
        let notes = |line: &str| (on_event.borrow_mut())(LabEvent::Note(line));
        let place = LabPlace {
            lab: &self.spec.name,
            root: self.server_root.join(&spec.name),
            max_clients: max_clients(self.spec),
            keep_data: self.keep_data,
            keep_clusters: self.keep_clusters,
            notes: &notes,
            run_duration: self.spec.duration,
        };
        let server = TargetServer {
            server: self
                .targets
                .provision(binaries.as_ref(), spec, &place)
                .map_err(|e| {
                    e.map_message(|text| {
                        format!("target \"{}\" ({}): {text}", spec.name, binaries.version())
                    })
                })?,
            datasets: HashMap::new(),
            unit_bytes: HashMap::new(),
            explained: HashSet::new(),
        };
        self.store
            .save_target(self.lab_id, &server.describe(spec)?)?;
        self.servers[target] = Some(server);
        Ok(())
    }

    /// Loads the cell's dataset once per (target, workload, scale): load, VACUUM FREEZE,
    /// ANALYZE, CHECKPOINT; a marker table says the load completed.
    fn ensure_dataset(
        &mut self,
        cell: &Cell,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<i64, Failure> {
        let key = (cell.workload, cell.scale);
        if let Some(scale) = self.servers[cell.target]
            .as_ref()
            .and_then(|s| s.datasets.get(&key))
        {
            return Ok(*scale);
        }
        let scale = self.resolve_scale(cell, on_event)?;
        let workload_name = &self.spec.workloads[cell.workload].name;
        let server = self.servers[cell.target]
            .as_mut()
            .expect("a cell's target is provisioned before its first run");
        let name = dataset_name(workload_name, scale);
        if !server.has_dataset(&name) {
            let note = format!(
                "loading {workload_name} scale {scale} on {}",
                self.spec.targets[cell.target].name
            );
            on_event(LabEvent::Note(&note));
            server.create_empty(&name)?;
            let conn = server.conn(&name);
            self.workloads[cell.workload]
                .load(&conn, scale, &mut |line| on_event(LabEvent::Note(line)))?;
            dataset_sql(&conn, &self.spec.targets[cell.target], on_event)?;
            server.seal_dataset(&name)?;
        }
        server.datasets.insert(key, scale);
        Ok(scale)
    }

    /// A fixed scale as given; a class from the measured size of one scale unit.
    fn resolve_scale(
        &mut self,
        cell: &Cell,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<i64, Failure> {
        let Scale::Fixed(n) = cell.scale else {
            let unit = self.unit_bytes(cell, on_event)?;
            let server = self.servers[cell.target]
                .as_ref()
                .expect("a cell's target is provisioned before its first run");
            let shared_buffers = server.shared_buffers_bytes()?;
            let machine = match (cell.scale, server.machine()) {
                (_, Some(machine)) => machine,
                // Only shared_buffers sizes the buffers class.
                (Scale::Buffers, None) => Machine {
                    ram_bytes: u64::MAX,
                    cores: 0,
                    free_disk_bytes: u64::MAX,
                },
                (class, None) => {
                    return Err(Failure::input(format!(
                        "scale \"{class}\": target \"{}\" runs on a machine stampede cannot see (its RAM and disk are unknown); use a number or \"buffers\"",
                        self.spec.targets[cell.target].name
                    )))
                }
            };
            return scale_for_class(cell.scale, unit, shared_buffers, &machine);
        };
        Ok(n)
    }

    /// Loads scale 1 into a scratch database and measures it (once per target and workload).
    fn unit_bytes(
        &mut self,
        cell: &Cell,
        on_event: &mut dyn FnMut(LabEvent<'_>),
    ) -> Result<u64, Failure> {
        let server = self.servers[cell.target]
            .as_mut()
            .expect("a cell's target is provisioned before its first run");
        if let Some(bytes) = server.unit_bytes.get(&cell.workload) {
            return Ok(*bytes);
        }
        on_event(LabEvent::Note("measuring the size of one scale unit"));
        const PROBE: &str = "stampede_probe";
        server.create_empty(PROBE)?;
        let empty = server.database_bytes(PROBE)?;
        // Quietly: the note above says what this load is for.
        self.workloads[cell.workload].load(&server.conn(PROBE), 1, &mut |_| {})?;
        let full = server.database_bytes(PROBE)?;
        server.drop_database(PROBE)?;
        let bytes = full.saturating_sub(empty).max(1);
        server.unit_bytes.insert(cell.workload, bytes);
        Ok(bytes)
    }

    /// A run during which its server changed under it (a Cluster's primary moved) failed,
    /// whatever it measured; the server is provisioned again before the target's next run, to
    /// reach it where it is now.
    fn undisturbed(
        &mut self,
        target: usize,
        outcome: Result<Measurement, Failure>,
    ) -> Result<Measurement, Failure> {
        let disturbed = self.servers[target]
            .as_ref()
            .and_then(|server| server.run_disturbed());
        let Some(reason) = disturbed else {
            return outcome;
        };
        // Not released: the server stays as it is, to be reached again.
        self.servers[target] = None;
        Err(match outcome {
            Ok(_) => Failure::run(reason),
            Err(error) => Failure::run(format!("{reason}; {}", error.message())),
        })
    }

    /// Hands every server back: the clusters this lab started are stopped, a remote server's
    /// settings are put back (and, when the lab ended, its datasets dropped).
    pub fn release(&mut self, lab_ended: bool) {
        for server in self.servers.iter_mut().filter_map(Option::take) {
            server.release(lab_ended);
        }
    }
}

impl std::ops::Deref for TargetServer {
    type Target = dyn LabServer;

    fn deref(&self) -> &(dyn LabServer + 'static) {
        self.server.as_ref()
    }
}

/// The database a run that writes (or a sequence) works on: a copy of the loaded dataset.
const RUN_COPY: &str = "stampede_run";

/// "decided: pgbench/select-only/10/1 to ±2.7% after 7 rounds" and the like.
fn stop_note(cell: &Cell, stop: Stop, state: &GroupState) -> String {
    let group = cell
        .key
        .split_once('/')
        .map_or(cell.key.as_str(), |(_, rest)| rest);
    let precision = state
        .precision
        .map_or("no interval".to_string(), |p| format!("±{:.1}%", p * 100.0));
    let rounds = state.rounds;
    match stop {
        Stop::Precise => format!("decided: {group} to {precision} after {rounds} rounds"),
        Stop::Cap => format!("stopped at the cap: {group} at {precision} after {rounds} rounds"),
        Stop::Budget => {
            format!("stopped by the budget: {group} at {precision} after {rounds} rounds")
        }
        Stop::Claim => {
            format!("claims decided: {group} at {precision} after {rounds} rounds")
        }
    }
}

/// "the sampler saw CPU:CPU 2.0, Lock:transactionid 1.0 sessions on average": the three
/// states most sessions were in over a failed run's window.
fn waits_seen(samples: &[WaitSample]) -> String {
    let mut ticks_per_second: HashMap<u64, u32> = HashMap::new();
    let mut per_state: HashMap<String, u32> = HashMap::new();
    for sample in samples {
        let ticks = ticks_per_second.entry(sample.second).or_default();
        *ticks = (*ticks).max(sample.ticks);
        *per_state
            .entry(format!("{}:{}", sample.wait_event_type, sample.wait_event))
            .or_default() += sample.samples;
    }
    let ticks: u32 = ticks_per_second.values().sum();
    if ticks == 0 {
        // Idle sessions are not sampled: the server was not working on any of the queries.
        return "the sampler saw no session working on a query".into();
    }
    let mut states: Vec<(String, u32)> = per_state.into_iter().collect();
    states.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shown: Vec<String> = states
        .iter()
        .take(3)
        .map(|(state, samples)| format!("{state} {:.1}", f64::from(*samples) / f64::from(ticks)))
        .collect();
    format!("the sampler saw {} sessions on average", shown.join(", "))
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn max_clients(spec: &LabSpec) -> usize {
    spec.workloads
        .iter()
        .flat_map(|w| w.clients.iter().copied())
        .max()
        .unwrap_or(1)
}

fn dataset_name(workload: &str, scale: i64) -> String {
    format!("stampede_{}_s{scale}", workload.replace('-', "_"))
}

/// Scale factor whose data lands in the class: `buffers` ≤ 90% of shared_buffers; `ram` twice
/// shared_buffers (at least 1 GB more), at most half the RAM; `disk` 1.25 × RAM, refused when
/// the disk lacks 1.5 × that.
pub fn scale_for_class(
    class: Scale,
    unit_bytes: u64,
    shared_buffers: u64,
    machine: &Machine,
) -> Result<i64, Failure> {
    const GB: u64 = 1024 * 1024 * 1024;
    let bytes = match class {
        Scale::Fixed(n) => return Ok(n),
        Scale::Buffers => shared_buffers / 10 * 9,
        Scale::Ram => {
            let wanted = (shared_buffers * 2).max(shared_buffers + GB);
            if wanted > machine.ram_bytes / 2 {
                return Err(Failure::run(format!(
                    "scale \"ram\": data larger than shared_buffers ({} MB) needs {} MB, more than half of this machine's RAM ({} MB); lower shared_buffers or use a number",
                    shared_buffers >> 20,
                    wanted >> 20,
                    machine.ram_bytes >> 20
                )));
            }
            wanted
        }
        Scale::Disk => {
            let wanted = machine.ram_bytes / 4 * 5;
            if machine.free_disk_bytes < wanted / 2 * 3 {
                return Err(Failure::run(format!(
                    "scale \"disk\": data exceeding RAM needs {} MB and room to spare, but only {} MB are free",
                    wanted >> 20,
                    machine.free_disk_bytes >> 20
                )));
            }
            wanted
        }
    };
    Ok(((bytes / unit_bytes.max(1)) as i64).max(1))
}

pub(super) fn cell_records(
    spec: &LabSpec,
    plan: &Plan,
    workloads: &[Box<dyn LabWorkload>],
) -> Vec<CellRecord> {
    plan.cells
        .iter()
        .map(|c| {
            let workload = &spec.workloads[c.workload].name;
            // A workload that brings its own clients and data (a replay) has neither a scale
            // nor a client count of the spec's: stored so, reports say "its own sessions".
            let own = crate::family::lab_workload(workload).is_some_and(|k| k.clients_are_its_own);
            CellRecord {
                key: c.key.clone(),
                target: spec.targets[c.target].name.clone(),
                workload: workload.clone(),
                script: c.script.clone(),
                scale: if own {
                    OWN_SCALE.into()
                } else {
                    c.scale.to_string()
                },
                clients: if own { OWN_CLIENTS as usize } else { c.clients },
                family: workloads[c.workload].group(&c.variant),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// The target's `dataset_sql`, on a dataset it has just loaded.
fn dataset_sql(
    conn: &Endpoint,
    target: &TargetSpec,
    on_event: &mut dyn FnMut(LabEvent<'_>),
) -> Result<(), Failure> {
    if target.dataset_sql.is_empty() {
        return Ok(());
    }
    let note = format!(
        "running {} dataset_sql statement(s) of target {}",
        target.dataset_sql.len(),
        target.name
    );
    on_event(LabEvent::Note(&note));
    stampede_conn::control_runtime().block_on(async {
        let mut session = crate::family::common::sql_session::Session::connect(conn).await?;
        for statement in &target.dataset_sql {
            session.execute(statement).await.map_err(|e| {
                e.map_message(|m| {
                    format!("target \"{}\": dataset_sql {statement}: {m}", target.name)
                })
            })?;
        }
        Ok(())
    })
}
