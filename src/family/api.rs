//! The seam between the lab and a workload family: the lab provisions servers, orders runs and
//! stores results; a workload loads its data and measures one run. Each family implements
//! `LabWorkload` once per lab workload it offers and lists them as `LabWorkloadKind`s, which the
//! registry in `family/mod.rs` collects; every lab feature then applies to it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::analysis::verdict::Direction;
use crate::driver::Protocol;
use crate::server::target::ConnSpec;
use crate::store::{RunMetrics, SeriesRow};

/// A lab workload a family offers: its name in a spec, what it accepts, how to make it.
pub struct LabWorkloadKind {
    /// `[[workload]] name` in a lab spec.
    pub name: &'static str,
    /// The protocols its runs honour; a spec that asks for another is refused before anything
    /// starts.
    pub protocols: &'static [Protocol],
    /// Makes the workload from the spec's `options = { ... }` (as text), refusing unknown or
    /// bad ones.
    pub create: CreateWorkload,
    /// The numbers its runs report beyond tps and latency (`Measurement.metrics.workload`),
    /// which `compare` and `report` can rank by with `--metric`.
    pub metrics: &'static [WorkloadMetric],
}

/// A number a workload reports for each run, and which way is better.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkloadMetric {
    /// As stored (`run_metrics.name`) and as `--metric` takes it.
    pub name: &'static str,
    pub direction: Direction,
}

/// A workload's `options = { ... }` from the spec: name and value as text.
pub type WorkloadOptions = [(String, String)];

/// Makes a lab workload from its options.
pub type CreateWorkload = fn(&WorkloadOptions) -> Result<Box<dyn LabWorkload>, String>;

/// Every protocol: for workloads whose statements go through the driver's protocol choice.
pub const ALL_PROTOCOLS: &[Protocol] = &[Protocol::Simple, Protocol::Extended, Protocol::Prepared];

/// One measured run.
pub struct RunRequest<'a> {
    pub conn: &'a ConnSpec,
    /// The workload variant (for pgbench: a builtin name or a script file).
    pub script: &'a str,
    pub scale: i64,
    pub clients: usize,
    pub threads: usize,
    /// The spec's `protocol`, one the workload's kind accepts (prepared when the spec gives none).
    pub protocol: Protocol,
    /// Run this long first, as a run of its own whose sessions end before the measured one
    /// starts, so that server statistics (flushed when sessions end) exclude it exactly.
    pub warmup: Duration,
    pub duration: Duration,
    pub client_cpus: Option<&'a [usize]>,
    /// Set on SIGINT/SIGTERM: the run stops early and is recorded as interrupted.
    pub stop: Arc<AtomicBool>,
}

pub struct Measurement {
    pub metrics: RunMetrics,
    /// Per second after the warmup.
    pub series: Vec<SeriesRow>,
}

/// What a workload tells the lab while it measures.
pub trait RunObserver {
    /// Between the warmup and the measured run: the lab resets and snapshots the server's
    /// counters and starts its sampler here.
    fn open_window(&mut self);
    /// After each measured second, its throughput.
    fn second(&mut self, index: u64, tps: f64);
}

pub trait LabWorkload {
    /// Loads the dataset at `scale` into the connected, empty database; `note` tells the user
    /// what a long load is doing (the lab prints it on lines of its own, never beside a run's).
    fn load(&self, conn: &ConnSpec, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), String>;
    /// Whether runs of this variant change the data, so that each needs a pristine copy.
    fn writes(&self, script: &str) -> bool;
    /// The group a variant belongs to in relative-throughput tables (for sysbench's suite:
    /// point, range, write; for pgbench: read or write).
    fn family(&self, script: &str) -> String;
    /// Checks a variant before anything starts (unknown builtin, unreadable file).
    fn check_variant(&self, script: &str) -> Result<(), String>;
    /// The variants a `[[workload]]` without `scripts` runs.
    fn default_variants(&self) -> Vec<String>;
    /// Whether the variants are steps of one sequence that share a data copy and run in the
    /// spec's order (sysbench's microbench suite: reads, writes, then reads of the written
    /// data), rather than independent runs on pristine data.
    fn sequential(&self) -> bool {
        false
    }
    /// Work between two steps of a sequence, on its data copy (the suite's postwrite step);
    /// `note` tells the user about anything that takes a while.
    fn between_steps(
        &self,
        _conn: &ConnSpec,
        _previous: &str,
        _next: &str,
        _scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        Ok(())
    }
    /// Runs the warmup, calls `observer.open_window`, then the measured run, reporting each
    /// second to the observer.
    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String>;
}
