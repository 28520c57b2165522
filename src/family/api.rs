//! The seam between the lab and a workload family: the lab provisions servers, orders runs and
//! stores results; a workload loads its data and measures one run. Each family implements
//! `FamilyWorkload` once per lab workload it offers, with its own variant type, and lists them as
//! `LabWorkloadKind`s, which the registry in `family/mod.rs` collects; the lab holds each as a
//! `LabWorkload`, which names variants as the spec and the results database do, and every lab
//! feature then applies to it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::driver::Protocol;
use crate::family::common::options::OptionsError;
pub use crate::report::comparison::WorkloadMetric;
use stampede_base::error::Failure;
use stampede_conn::{Endpoint, Engine};
use stampede_store::{PodRow, RunMetrics, SeriesRow};

/// A lab workload a family offers: its name in a spec, what it accepts, how to make it.
pub struct LabWorkloadKind {
    /// `[[workload]] name` in a lab spec.
    pub name: &'static str,
    /// The protocols its runs honour; a spec that asks for another is refused before anything
    /// starts.
    pub protocols: &'static [Protocol],
    /// The protocol of a spec that gives none.
    pub default_protocol: Protocol,
    /// The engines it runs on; a lab that puts it on another target's engine is refused at
    /// `lab plan`, naming both.
    pub engines: &'static [Engine],
    /// Whether `scale` may be a class (`"buffers"`, `"ram"`, `"disk"`), found from the size of
    /// one scale unit loaded on the target; a workload whose load is not its data (the Insert
    /// Benchmark's l.i0 measures the loading) takes numbers only.
    pub scale_classes: bool,
    /// Whether its runs bring their own clients (a replay: the captured sessions), so that a
    /// spec gives `clients = [1]` and any other count is refused at `lab plan`.
    pub clients_are_its_own: bool,
    /// Makes the workload from the spec's `options = { ... }`, refusing unknown or bad ones.
    pub create: CreateWorkload,
    /// The numbers its runs report beyond tps and latency (`Measurement.metrics.workload`),
    /// which `compare` and `report` can rank by with `--metric`.
    pub metrics: &'static [WorkloadMetric],
    /// Which of its spec values name files.
    pub files: SpecFiles,
}

impl LabWorkloadKind {
    /// A workload named `name` made by `create`, with what most workloads are: every protocol
    /// (prepared by default), both engines, scale classes, the lab's clients, no metrics of its
    /// own, no files. The setters below change one thing each, so a new field has its default
    /// here and no family's list changes.
    pub const fn new(name: &'static str, create: CreateWorkload) -> LabWorkloadKind {
        LabWorkloadKind {
            name,
            protocols: ALL_PROTOCOLS,
            default_protocol: Protocol::Prepared,
            engines: BOTH_ENGINES,
            scale_classes: true,
            clients_are_its_own: false,
            create,
            metrics: &[],
            files: NO_FILES,
        }
    }

    /// Its statements are sent as simple queries only (whole scripts, captured sessions).
    pub const fn simple_protocol_only(self) -> LabWorkloadKind {
        LabWorkloadKind {
            protocols: &[Protocol::Simple],
            default_protocol: Protocol::Simple,
            ..self
        }
    }

    /// The protocols its runs honour and the one a spec that names none gets.
    pub const fn protocols(self, protocols: &'static [Protocol], default: Protocol) -> Self {
        LabWorkloadKind {
            protocols,
            default_protocol: default,
            ..self
        }
    }

    pub const fn engines(self, engines: &'static [Engine]) -> LabWorkloadKind {
        LabWorkloadKind { engines, ..self }
    }

    /// Its `scale` is a number only (see `scale_classes`).
    pub const fn scale_numbers_only(self) -> LabWorkloadKind {
        LabWorkloadKind {
            scale_classes: false,
            ..self
        }
    }

    /// Its runs bring their own clients (see `clients_are_its_own`).
    pub const fn clients_are_its_own(self) -> LabWorkloadKind {
        LabWorkloadKind {
            clients_are_its_own: true,
            ..self
        }
    }

    pub const fn metrics(self, metrics: &'static [WorkloadMetric]) -> LabWorkloadKind {
        LabWorkloadKind { metrics, ..self }
    }

    pub const fn files(self, files: SpecFiles) -> LabWorkloadKind {
        LabWorkloadKind { files, ..self }
    }
}

/// Which values of a `[[workload]]` name files. The lab resolves each from the spec's folder
/// (an absolute path stays as it is), so a spec runs the same from any directory.
pub struct SpecFiles {
    /// Scripts that are files: those ending in this (`".sql"`), every one (`""`), or none.
    pub scripts: Option<&'static str>,
    /// Options whose values are files.
    pub options: &'static [&'static str],
}

/// A workload whose scripts are names and whose options are values.
pub const NO_FILES: SpecFiles = SpecFiles {
    scripts: None,
    options: &[],
};

impl SpecFiles {
    pub fn script_is_file(&self, script: &str) -> bool {
        self.scripts.is_some_and(|suffix| script.ends_with(suffix))
    }
}

/// Makes a lab workload from the spec's `options = { ... }`, read with
/// `family::common::options::parse` into the family's own struct.
pub type CreateWorkload = fn(&toml::Table) -> Result<Box<dyn LabWorkload>, OptionsError>;

/// Every protocol: for workloads whose statements go through the driver's protocol choice.
pub const ALL_PROTOCOLS: &[Protocol] = &[Protocol::Simple, Protocol::Extended, Protocol::Prepared];

/// PostgreSQL and MariaDB/MySQL: workloads whose statements and loader exist for both.
pub const BOTH_ENGINES: &[Engine] = &[Engine::Postgres, Engine::Mysql];

/// PostgreSQL only.
pub const POSTGRES_ONLY: &[Engine] = &[Engine::Postgres];

/// One measured run.
pub struct RunRequest<'a> {
    pub conn: &'a Endpoint,
    pub scale: i64,
    pub clients: usize,
    pub threads: usize,
    /// The spec's `protocol`, one the workload's kind accepts (its default when the spec gives
    /// none).
    pub protocol: Protocol,
    /// Run this long first, as a run of its own whose sessions end before the measured one
    /// starts, so that server statistics (flushed when sessions end) exclude it exactly.
    pub warmup: Duration,
    pub duration: Duration,
    pub client_cpus: Option<&'a [usize]>,
    /// Set on SIGINT/SIGTERM: the run stops early and is recorded as interrupted.
    pub stop: Arc<AtomicBool>,
    /// The driver's watchdog (the spec's `stall_timeout`); None waits forever.
    pub stall_timeout: Option<Duration>,
    /// A run spread over pods (a workload's `pods = N`): this process's share of the threads,
    /// for every run of the driver the workload makes (the warmup's and the measured one).
    pub share: Option<crate::driver::ShareMaker>,
}

pub struct Measurement {
    pub metrics: RunMetrics,
    /// Per second after the warmup.
    pub series: Vec<SeriesRow>,
    /// Each pod's share, when the run's clients came from pods.
    pub pods: Vec<PodRow>,
}

/// What a workload tells the lab while it measures.
pub trait RunObserver {
    /// Between the warmup and the measured run: the lab resets and snapshots the server's
    /// counters and starts its sampler here.
    fn open_window(&mut self);
    /// After each measured second, its throughput.
    fn second(&mut self, index: u64, tps: f64);
    /// Each measured second's statistics, as the driver reported them (a pod of a spread
    /// run passes them on).
    fn interval(&mut self, _interval: &crate::driver::IntervalReport) {}
    /// The measured run's client CPU and each client's transactions (the whole run's clients).
    fn measured(&mut self, _client_cpu: Duration, _client_transactions: &[u64]) {}
}

/// A lab workload as its family writes it: `Variant` is what one run does (a builtin or a
/// script file, a sysbench test, a mode), read once from the name a spec gives.
pub trait FamilyWorkload {
    type Variant;

    /// Reads a variant a spec names; an unknown builtin or an unreadable file is refused here
    /// (`Failure::input`), before anything starts.
    fn variant(&self, name: &str) -> Result<Self::Variant, Failure>;
    /// The variants a `[[workload]]` without `scripts` runs, by name.
    fn default_variants(&self) -> Vec<String>;
    /// Loads the dataset at `scale` into the connected, empty database; `note` tells the user
    /// what a long load is doing (the lab prints it on lines of its own, never beside a run's).
    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure>;
    /// Whether runs of this variant change the data, so that each needs a pristine copy.
    fn writes(&self, variant: &Self::Variant) -> bool;
    /// The group a variant belongs to in relative-throughput tables (for sysbench's suite:
    /// point, range, write; for pgbench: read or write).
    fn group(&self, variant: &Self::Variant) -> String;
    /// How long a run of `variant` measures, for `lab plan`'s estimate: `spec_time` (the spec's
    /// warmup + duration), unless the workload decides its own length (a replay: its capture's).
    fn run_time(&self, _variant: &Self::Variant, spec_time: Duration) -> Duration {
        spec_time
    }
    /// Whether the variants are steps of one sequence that share a data copy and run in the
    /// spec's order (sysbench's microbench suite: reads, writes, then reads of the written
    /// data), rather than independent runs on pristine data.
    fn sequential(&self) -> bool {
        false
    }
    /// Whether a sequence stopped by a signal resumes in place: its finished steps are kept and
    /// its stopped step runs again on the data copy as the signal left it, which the workload
    /// continues from (the Insert Benchmark's steps insert only the rows they had not), rather
    /// than the sequence running again from its first step on a fresh copy.
    fn resumes_in_place(&self) -> bool {
        false
    }
    /// Work between two steps of a sequence, on its data copy (the suite's postwrite step);
    /// `note` tells the user about anything that takes a while.
    fn between_steps(
        &self,
        _conn: &Endpoint,
        _previous: &Self::Variant,
        _next: &Self::Variant,
        _scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        Ok(())
    }
    /// Refuses, before anything starts, what it cannot run on a target of `engine`: a
    /// variant, the protocol or an option only the other engine has (the reason).
    fn check_engine(
        &self,
        _engine: Engine,
        _variant: &Self::Variant,
        _protocol: Protocol,
    ) -> Result<(), EngineRefusal> {
        Ok(())
    }
    /// Runs the warmup, calls `observer.open_window`, then the measured run of `variant`,
    /// reporting each second to the observer.
    fn run(
        &self,
        variant: &Self::Variant,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure>;
}

/// What a workload cannot run on a target's engine: a variant, the protocol or an option
/// (`what`, as the spec writes it) that only `runs_on` has, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineRefusal {
    pub what: &'static str,
    pub runs_on: Engine,
    pub why: &'static str,
}

impl std::fmt::Display for EngineRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runs_on = match self.runs_on {
            Engine::Postgres => "PostgreSQL",
            Engine::Mysql => "MariaDB/MySQL",
        };
        write!(f, "{} runs on {runs_on} only: {}", self.what, self.why)
    }
}

/// A lab workload as the lab holds it, whatever its family: variants by the name the spec and
/// the results database give them.
pub trait LabWorkload {
    /// Checks a variant before anything starts.
    fn check_variant(&self, name: &str) -> Result<(), Failure>;
    fn default_variants(&self) -> Vec<String>;
    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure>;
    /// Whether runs of a variant change the data (a variant that cannot be read is taken to).
    fn writes(&self, name: &str) -> bool;
    /// The variant's group in relative-throughput tables, stored as the cell's family.
    fn group(&self, name: &str) -> String;
    /// As `FamilyWorkload::run_time`, for a variant by name (`spec_time` when it cannot be
    /// read).
    fn run_time(&self, name: &str, spec_time: Duration) -> Duration;
    fn sequential(&self) -> bool;
    fn resumes_in_place(&self) -> bool;
    /// As `FamilyWorkload::check_engine`, for a variant by name (one that cannot be read
    /// passes: `check_variant` refuses it).
    fn check_engine(
        &self,
        engine: Engine,
        name: &str,
        protocol: Protocol,
    ) -> Result<(), EngineRefusal>;
    fn between_steps(
        &self,
        conn: &Endpoint,
        previous: &str,
        next: &str,
        scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure>;
    fn run(
        &self,
        name: &str,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure>;
}

impl<W: FamilyWorkload> LabWorkload for W {
    fn check_variant(&self, name: &str) -> Result<(), Failure> {
        self.variant(name).map(|_| ())
    }

    fn default_variants(&self) -> Vec<String> {
        FamilyWorkload::default_variants(self)
    }

    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        FamilyWorkload::load(self, conn, scale, note)
    }

    fn writes(&self, name: &str) -> bool {
        self.variant(name)
            .map_or(true, |variant| FamilyWorkload::writes(self, &variant))
    }

    fn group(&self, name: &str) -> String {
        self.variant(name).map_or_else(
            |_| name.to_string(),
            |variant| FamilyWorkload::group(self, &variant),
        )
    }

    fn run_time(&self, name: &str, spec_time: Duration) -> Duration {
        self.variant(name).map_or(spec_time, |variant| {
            FamilyWorkload::run_time(self, &variant, spec_time)
        })
    }

    fn sequential(&self) -> bool {
        FamilyWorkload::sequential(self)
    }

    fn resumes_in_place(&self) -> bool {
        FamilyWorkload::resumes_in_place(self)
    }

    fn check_engine(
        &self,
        engine: Engine,
        name: &str,
        protocol: Protocol,
    ) -> Result<(), EngineRefusal> {
        match self.variant(name) {
            Ok(variant) => FamilyWorkload::check_engine(self, engine, &variant, protocol),
            Err(_) => Ok(()),
        }
    }

    fn between_steps(
        &self,
        conn: &Endpoint,
        previous: &str,
        next: &str,
        scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        let (previous, next) = (self.variant(previous)?, self.variant(next)?);
        FamilyWorkload::between_steps(self, conn, &previous, &next, scale, note)
    }

    fn run(
        &self,
        name: &str,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        FamilyWorkload::run(self, &self.variant(name)?, request, observer)
    }
}
