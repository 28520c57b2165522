//! What the driver is asked to run: connections, clients and threads, scripts and their weights,
//! the protocol, and when to stop.

use std::time::Duration;

use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::ast::VarSlot;
use stampede_script::{Script, Value, VarTable};
use stampede_wire::mysql;
use stampede_wire::DbError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Simple,
    Extended,
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        [Protocol::Simple, Protocol::Extended, Protocol::Prepared]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLimit {
    /// Clients start no new transaction once this much time has passed since the start.
    Duration(Duration),
    /// Each client runs exactly this many transactions.
    TransactionsPerClient(u64),
    /// sysbench's `--events` with its `--time`: this many transactions over all clients, each
    /// client taking the next one when it is free (so no client has a quota), and no new one
    /// once `within` has passed, if given.
    Events {
        total: u64,
        within: Option<Duration>,
    },
}

impl RunLimit {
    /// How long the run may last at most, if a time bounds it.
    pub fn time_bound(&self) -> Option<Duration> {
        match self {
            RunLimit::Duration(length) => Some(*length),
            RunLimit::TransactionsPerClient(_) => None,
            RunLimit::Events { within, .. } => *within,
        }
    }
}

/// A terminal's pauses around one script's transactions, as TPC-C's (clause 5.2.5): a fixed
/// keying time before the transaction and a think time after it, drawn from an exponential
/// distribution with this mean. Neither is part of the transaction's latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pauses {
    pub keying: Duration,
    pub mean_think: Duration,
}

#[derive(Debug, Clone)]
pub struct WeightedScript {
    pub script: Script,
    pub weight: u32,
}

/// Which MySQL errors restart a transaction (sysbench's `--mysql-ignore-errors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MysqlRetried {
    Listed(Vec<u16>),
    All,
}

impl Default for MysqlRetried {
    fn default() -> Self {
        MysqlRetried::Listed(mysql::RETRIED_BY_DEFAULT.to_vec())
    }
}

/// What a client does when a statement fails (pgbench's `--max-tries`, `--continue-on-error`,
/// `--verbose-errors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Tries per transaction after serialization or deadlock failures; 0 means no limit other
    /// than `-L` and `-T`.
    pub max_tries: u32,
    /// Count other SQL errors as failed transactions instead of aborting the client.
    pub continue_on_error: bool,
    /// Report every failed statement and every retry decision.
    pub verbose: bool,
    /// When the server drops a client's connection (a terminated backend, a restart), count the
    /// transaction as failed and connect again instead of aborting the client.
    pub reconnect: bool,
    /// The MySQL errors tried again (PostgreSQL's are serialization failures and deadlocks).
    pub mysql_retried: MysqlRetried,
}

impl ErrorPolicy {
    /// A workload's own run that should survive what a long benchmark meets (TPROC-C's,
    /// dbSTRESS's): deadlocks and serialization failures tried again up to `max_tries` times,
    /// other errors counted, lost connections made again.
    pub fn surviving(max_tries: u32) -> ErrorPolicy {
        ErrorPolicy {
            max_tries,
            continue_on_error: true,
            verbose: false,
            reconnect: true,
            mysql_retried: MysqlRetried::default(),
        }
    }

    /// Whether a failure is one that is tried again (up to `max_tries`).
    pub fn retries(&self, error: &DbError) -> bool {
        match (error.mysql_errno, &self.mysql_retried) {
            (Some(_), MysqlRetried::All) => true,
            (Some(number), MysqlRetried::Listed(numbers)) => numbers.contains(&number),
            (None, _) => error.is_retryable(),
        }
    }
}

impl Default for ErrorPolicy {
    fn default() -> Self {
        ErrorPolicy {
            max_tries: 1,
            continue_on_error: false,
            verbose: false,
            reconnect: false,
            mysql_retried: MysqlRetried::default(),
        }
    }
}

/// `-l`: pgbench's per-thread transaction log files.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnLogSpec {
    /// Files are `<prefix>.<pid>` for the first thread and `<prefix>.<pid>.<thread>` after.
    pub prefix: String,
    pub pid: u32,
    /// `--sampling-rate`: the fraction of transactions written.
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval`: one line per this many seconds instead of one per transaction.
    pub aggregate_interval: Option<u64>,
    /// `--failures-detailed`: failures named by kind (and split in aggregate lines).
    pub failures_detailed: bool,
}

impl TxnLogSpec {
    pub fn path(&self, thread: usize) -> String {
        if thread == 0 {
            format!("{}.{}", self.prefix, self.pid)
        } else {
            format!("{}.{}.{thread}", self.prefix, self.pid)
        }
    }
}

/// Called once every client of this process is connected; returns when the run may start (a
/// spread run's start barrier), or why it may not.
pub type StartGate = dyn Fn() -> Result<(), Failure> + Send + Sync;

/// This process's part of a run spread over several hosts: which of the run's threads it runs
/// (client ids, random streams and log file names are the whole run's, so the union of the
/// parts is the run a single host would make with the same seed), and the start barrier.
#[derive(Clone)]
pub struct Share {
    pub threads: std::ops::Range<usize>,
    pub start_gate: std::sync::Arc<StartGate>,
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Share")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// Makes this process's share of a plan of so many threads: a workload that builds its plan
/// itself is handed one when its runs are spread (a lab's run over pods).
#[derive(Clone)]
pub struct ShareMaker(pub std::sync::Arc<dyn Fn(usize) -> Share + Send + Sync>);

impl ShareMaker {
    pub fn share(&self, threads: usize) -> Share {
        (self.0)(threads)
    }
}

impl std::fmt::Debug for ShareMaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShareMaker")
    }
}

#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The server the clients connect to; its engine decides the protocol they speak.
    pub endpoint: Endpoint,
    pub clients: usize,
    pub threads: usize,
    pub limit: RunLimit,
    pub protocol: Protocol,
    pub scripts: Vec<WeightedScript>,
    pub variables: VarTable,
    /// Starting value of every variable slot, the same for all clients.
    pub initial_values: Vec<Value>,
    /// Automatic variables the driver fills in per client (pgbench's `:client_id`) and from the
    /// seeded random sequence (`:default_seed`), unless the user defined them.
    pub client_id_slot: Option<VarSlot>,
    pub default_seed_slot: Option<VarSlot>,
    pub random_seed: u64,
    /// pgbench's `-C`: a new connection for every transaction.
    pub connect_per_transaction: bool,
    /// Length of the intervals of the per-interval series.
    pub interval: Duration,
    /// `-R`: target transactions per second over all clients (a Poisson schedule per thread).
    pub rate: Option<f64>,
    /// `-L`: transactions slower than this count as late; with `-R`, ones already this late
    /// when scheduled are skipped.
    pub latency_limit: Option<Duration>,
    pub errors: ErrorPolicy,
    /// `-r`: time every command of every script.
    pub report_per_command: bool,
    pub log: Option<TxnLogSpec>,
    /// Set from outside (a signal) to end the run early: clients start no new transaction.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Ask for query results in binary, as sysbench's driver does (libpq's resultFormat 1), so
    /// that the server's work per query is the same as under sysbench.
    pub binary_results: bool,
    /// A script (of `scripts`, weight 0) each client runs once after its last transaction, as
    /// sysbench's `thread_done` (bulk_insert flushes its buffer there): not a transaction, not
    /// timed; its statements count.
    pub closing_script: Option<usize>,
    /// Pin the driver's threads to these CPUs.
    pub cpu_affinity: Option<Vec<usize>>,
    /// Keying and think times, one entry per script (closed-loop terminals, TPC-C's).
    pub pauses: Option<Vec<Pauses>>,
    /// pgbench's `-d`: each client reports what it executes, sends and receives.
    pub debug: bool,
    /// The watchdog: a client whose transaction has waited this long ends the run (its
    /// clients' connections are closed, and the run fails saying how many were stuck), during
    /// the run and after its end alike. None waits forever, as pgbench does.
    pub stall_timeout: Option<Duration>,
    /// A warmup in the same sessions before the measured `limit` (HammerDB's ramp-up, see
    /// `warmup.rs`): what ends within it is not counted, and `DriverEvent::WarmupEnded` marks
    /// its end. A whole number of intervals; zero for none. `-r`'s per-command times include it.
    pub warmup: Duration,
    /// A spread run: the threads this process runs, and the barrier before the start. None:
    /// the whole run is this process's.
    pub share: Option<Share>,
}

/// `--stall-timeout` as every run command reads it: a duration ("90s", "5m"), 0 for no
/// watchdog (pgbench's wait forever), by default `default_stall_timeout`.
pub fn stall_timeout_option(
    given: Option<&str>,
    limit: &RunLimit,
) -> Result<Option<Duration>, Failure> {
    let Some(text) = given else {
        return Ok(Some(default_stall_timeout(limit)));
    };
    match stampede_base::duration::parse_duration(text) {
        Some(d) if d.is_zero() => Ok(None),
        Some(d) => Ok(Some(d)),
        None => Err(Failure::input(format!(
            "invalid stall timeout: \"{text}\" (a duration such as 90s or 5m, or 0 to wait forever)"
        ))),
    }
}

/// The watchdog's default: a minute, or the run's length when it is longer (a transaction may
/// legitimately take as long as the run it belongs to).
pub fn default_stall_timeout(limit: &RunLimit) -> Duration {
    const MINUTE: Duration = Duration::from_secs(60);
    limit
        .time_bound()
        .map_or(MINUTE, |length| MINUTE.max(length))
}

impl RunPlan {
    /// How many of the series' first intervals are the warmup's (it is a whole number of them).
    pub fn warmup_intervals(&self) -> u64 {
        (self.warmup.as_nanos() / self.interval.as_nanos().max(1)) as u64
    }

    /// A plan for a workload's own scripts (sysbench's, TPROC-C's): one thread per client,
    /// every variable unset at the start, `:client_id` and `:default_seed` filled in by the
    /// driver, and pgbench's defaults for the rest (no rate or latency limit, no log,
    /// one-second intervals, text results, errors abort the client).
    pub fn for_workload(
        target: &Endpoint,
        clients: usize,
        limit: RunLimit,
        protocol: Protocol,
        scripts: Vec<WeightedScript>,
        mut variables: VarTable,
        random_seed: u64,
    ) -> RunPlan {
        let client_id = variables.slot("client_id");
        let default_seed = variables.slot("default_seed");
        let stall_timeout = Some(default_stall_timeout(&limit));
        RunPlan {
            endpoint: target.clone(),
            clients,
            threads: clients,
            limit,
            protocol,
            scripts,
            initial_values: vec![Value::Unset; variables.names().len()],
            variables,
            client_id_slot: Some(client_id),
            default_seed_slot: Some(default_seed),
            random_seed,
            connect_per_transaction: false,
            interval: Duration::from_secs(1),
            rate: None,
            latency_limit: None,
            errors: ErrorPolicy::default(),
            report_per_command: false,
            log: None,
            stop: None,
            binary_results: false,
            closing_script: None,
            cpu_affinity: None,
            pauses: None,
            debug: false,
            stall_timeout,
            warmup: Duration::ZERO,
            share: None,
        }
    }

    pub fn total_weight(&self) -> u64 {
        self.scripts.iter().map(|s| u64::from(s.weight)).sum()
    }

    /// Clients of each thread of the whole run: as even as possible, the first threads taking
    /// the remainder.
    pub fn clients_per_thread(&self) -> Vec<usize> {
        let threads = self.threads.min(self.clients).max(1);
        (0..threads)
            .map(|t| self.clients / threads + usize::from(t < self.clients % threads))
            .collect()
    }

    /// The threads this process runs: all of them, or its share's.
    pub fn threads_here(&self) -> std::ops::Range<usize> {
        let all = self.clients_per_thread().len();
        match &self.share {
            Some(share) => share.threads.start.min(all)..share.threads.end.min(all),
            None => 0..all,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_spread_evenly_and_threads_are_capped() {
        let spread = |clients, threads| {
            let conn =
                stampede_conn::ConnSpec::on_socket(std::path::Path::new("/tmp"), 1, "u", "d");
            let mut plan = RunPlan::for_workload(
                &Endpoint::Postgres(conn),
                clients,
                RunLimit::TransactionsPerClient(1),
                Protocol::Simple,
                vec![],
                VarTable::default(),
                0,
            );
            plan.threads = threads;
            plan.clients_per_thread()
        };
        assert_eq!(spread(4, 3), vec![2, 1, 1]);
        assert_eq!(spread(2, 8), vec![1, 1]);
        assert_eq!(spread(32, 2), vec![16, 16]);
    }

    #[test]
    fn mysql_errors_retried_are_the_listed_ones_and_postgresqls_stay_fixed() {
        let mysql = |number| DbError::from_mysql(number, "HY000".into(), "m".into());
        let mut policy = ErrorPolicy::default();
        assert!(policy.retries(&mysql(1213)) && policy.retries(&mysql(1020)));
        assert!(policy.retries(&mysql(1205)) && !policy.retries(&mysql(1062)));
        policy.mysql_retried = MysqlRetried::Listed(vec![1062]);
        assert!(policy.retries(&mysql(1062)) && !policy.retries(&mysql(1213)));
        policy.mysql_retried = MysqlRetried::All;
        assert!(policy.retries(&mysql(1146)));
        let postgres = |code: &str| DbError {
            mysql_errno: None,
            code: code.into(),
            ..mysql(0)
        };
        let (deadlock, unique) = (postgres("40P01"), postgres("23505"));
        policy.mysql_retried = MysqlRetried::Listed(vec![]);
        assert!(policy.retries(&deadlock) && !policy.retries(&unique));
    }
}
