//! What a `stampede pgbench` invocation asks for once its options are checked: an
//! initialization (`InitSpec`) or a run (`RunSpec`). `command.rs` makes them from the
//! arguments, the lab and quickstart make them directly; `init.rs` and `run.rs` carry them out.

use crate::driver::{ErrorPolicy, Protocol};
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::loader::InitStep;
use crate::family::pgbench::schema::SchemaOptions;

/// `-i` and its options.
pub struct InitSpec {
    pub steps: Vec<InitStep>,
    pub schema: SchemaOptions,
    pub quiet: bool,
}

/// A benchmark run and its options.
pub struct RunSpec {
    pub scripts: Vec<(ScriptChoice, u32)>,
    /// Keep the setup and probe session out of pg_stat_statements (the lab, superuser of its
    /// own servers, reads the workload's statements from there).
    pub untracked_control: bool,
    pub clients: usize,
    pub threads: usize,
    pub duration_secs: Option<u64>,
    pub transactions_per_client: u64,
    pub protocol: Protocol,
    pub progress_secs: Option<u64>,
    pub random_seed: Option<u64>,
    pub defines: Vec<(String, String)>,
    pub connect_per_transaction: bool,
    pub vacuum: VacuumBeforeRun,
    pub scale_given: Option<i64>,
    pub json_path: Option<String>,
    /// `-R`: transactions per second over all clients.
    pub rate: Option<f64>,
    /// `-L`: latency limit in milliseconds.
    pub latency_limit_ms: Option<f64>,
    pub errors: ErrorPolicy,
    /// `--failures-detailed`: failures by kind in the summary and the log.
    pub failures_detailed: bool,
    /// `-r`
    pub report_per_command: bool,
    pub log: Option<LogOptions>,
    /// `--progress-timestamp`: progress lines carry Unix time instead of elapsed seconds.
    pub progress_timestamp: bool,
    /// `--exit-on-abort`: stop the whole run, status 2, when a client aborts.
    pub exit_on_abort: bool,
    /// Ends the run early when set (the lab's signal handling).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Pin the driver's threads (the lab's `client_cpus`).
    pub cpu_affinity: Option<Vec<usize>>,
    /// `-d`: print what each client executes, sends and receives.
    pub debug: bool,
    /// `--stall-timeout`: the driver's watchdog; None waits forever (pgbench's behaviour).
    pub stall_timeout: Option<std::time::Duration>,
    /// A lab run spread over pods: this process's share of the threads.
    pub share: Option<crate::driver::ShareMaker>,
}

impl RunSpec {
    /// A `-T seconds` run of `scripts` with every other option at pgbench's default.
    pub fn timed(
        scripts: Vec<(ScriptChoice, u32)>,
        clients: usize,
        threads: usize,
        seconds: u64,
        protocol: Protocol,
    ) -> RunSpec {
        RunSpec {
            scripts,
            clients,
            threads,
            duration_secs: Some(seconds),
            transactions_per_client: 0,
            protocol,
            progress_secs: None,
            random_seed: None,
            defines: vec![],
            connect_per_transaction: false,
            vacuum: VacuumBeforeRun::Standard,
            scale_given: None,
            json_path: None,
            rate: None,
            latency_limit_ms: None,
            errors: ErrorPolicy::default(),
            failures_detailed: false,
            report_per_command: false,
            log: None,
            progress_timestamp: false,
            exit_on_abort: false,
            stop: None,
            cpu_affinity: None,
            untracked_control: false,
            debug: false,
            share: None,
            stall_timeout: Some(crate::driver::plan::default_stall_timeout(
                &crate::driver::RunLimit::Duration(std::time::Duration::from_secs(seconds)),
            )),
        }
    }
}

/// `-l` and its companions.
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    pub prefix: String,
    pub sampling_rate: Option<f64>,
    pub aggregate_interval: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VacuumBeforeRun {
    None,
    /// pgbench's default: vacuum branches and tellers, truncate history.
    Standard,
    /// `-v`: also VACUUM ANALYZE pgbench_accounts.
    All,
}
