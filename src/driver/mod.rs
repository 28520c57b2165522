//! The load driver: `threads` OS threads, each a current-thread tokio runtime running its share of
//! the clients; per-thread HDR histograms merged per interval and at the end. It reports through
//! events and returns numbers; it never prints.

pub mod client;
pub mod parts;
mod pauses;
pub mod plan;
pub mod stats;
mod thread;
pub mod txlog;
mod warmup;

#[cfg(test)]
mod mysql_tests;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

pub use plan::{
    ErrorPolicy, MysqlRetried, Protocol, RunLimit, RunPlan, Share, ShareMaker, TxnLogSpec,
    WeightedScript,
};
use stampede_base::cpu::{process_cpu, CpuTimes};
use stampede_base::error::Failure;
use stampede_script::prng::PgPrng;
use stampede_script::Value;
use stampede_stats::fairness::Fairness;
pub use stats::{
    merge_tallies, CommandStats, FailureCounts, FailureKind, LatencyStats, ScriptStats, ScriptTally,
};
use thread::{ThreadMessage, ThreadResult, ThreadSetup};
use txlog::{EpochClock, TxnLog};
use warmup::{Moment, WarmupClock, WarmupGate};

/// The merged stats of one interval of the run, over all threads.
pub struct IntervalReport {
    /// 0-based index; interval `i` covers `[i, i+1) * plan.interval` after the start.
    pub index: u64,
    pub stats: ScriptStats,
    /// Unix time (seconds) at the interval's end, for `--progress-timestamp`.
    pub end_unix_s: f64,
    /// The interval's counts by script, in the plan's order (empty where a source has none).
    pub scripts: Vec<ScriptTally>,
    /// A spread run's interval as its coordinator merged it: each pod's committed
    /// transactions, by pod index (empty on one host).
    pub by_pod: Vec<u64>,
}

pub enum DriverEvent<'a> {
    /// Intervals count from the measured part's start (`RunPlan::warmup`'s are not reported).
    Interval(&'a IntervalReport),
    /// `RunPlan::warmup` is over and no transaction is in flight: what the caller reads now
    /// separates the warmup's transactions from the measured ones exactly.
    WarmupEnded,
    /// After a warmup: every client has run its last transaction and none has closed its
    /// session yet (the server's statistics lag as they did at `WarmupEnded`).
    MeasuredEnded,
    /// A client gave up: its message, and the thread it ran on.
    ClientAborted(&'a str, usize),
    /// `--verbose-errors`: a failed statement, or the decision to retry or give up.
    ClientNotice(&'a str),
}

pub struct RunResult {
    pub total: ScriptStats,
    pub per_script: Vec<ScriptStats>,
    /// From the first thread's start to the end of the last transaction (pgbench's tps basis).
    pub bench_duration: Duration,
    /// From launching the threads until all clients were connected.
    pub initial_connection_time: Duration,
    /// With `-C`: time spent connecting, summed over clients, and how many connections.
    pub reconnection_time: Duration,
    pub reconnections: u64,
    pub aborted_clients: usize,
    pub intervals: Vec<IntervalReport>,
    /// CPU the driver process used during the measured window.
    pub client_cpu: CpuTimes,
    /// `-r`: per script and command.
    pub command_stats: Vec<Vec<CommandStats>>,
    /// Committed transactions per client, by client id.
    pub client_transactions: Vec<u64>,
    /// The committed transactions' summed latency per client, in microseconds, by client id.
    pub client_busy_us: Vec<f64>,
}

impl RunResult {
    /// How evenly the clients were served; None when nothing committed.
    pub fn fairness(&self) -> Option<Fairness> {
        Fairness::of(&self.client_transactions)
    }
}

/// How the failure of a run the watchdog abandoned begins.
const STALLED: &str = "no progress for";

/// Whether `failure` is a run the watchdog abandoned (the lab adds what the server was doing).
pub fn is_stall(failure: &Failure) -> bool {
    failure.message().starts_with(STALLED)
}

/// Runs the plan to completion. Fails before the start if clients cannot connect.
pub fn run(plan: RunPlan, on_event: &mut dyn FnMut(DriverEvent<'_>)) -> Result<RunResult, Failure> {
    let plan = Arc::new(plan);
    raise_open_files_limit(plan.clients).map_err(Failure::run)?;
    let here = plan.threads_here();
    let (clients, thread_randoms) = seed_clients(&plan, &plan.clients_per_thread());
    let clients: Vec<_> = clients
        .into_iter()
        .skip(here.start)
        .take(here.len())
        .collect();
    let thread_randoms: Vec<_> = thread_randoms
        .into_iter()
        .skip(here.start)
        .take(here.len())
        .collect();
    let thread_clients: Vec<usize> = clients.iter().map(Vec::len).collect();
    // This process's clients: all of the run's, or its share's.
    let clients_here: usize = thread_clients.iter().sum();
    let mut logs =
        open_logs(&plan, here.start, &thread_randoms).map_err(|e| Failure::run(e.to_string()))?;
    let barrier = Arc::new(Barrier::new(thread_clients.len() + 1));
    // A spread run: the threads wait again, behind the start gate.
    let go = plan
        .share
        .as_ref()
        .map(|_| Arc::new(Barrier::new(thread_clients.len() + 1)));
    let start_failed = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel();
    let ticks: Vec<Arc<Notify>> = thread_clients
        .iter()
        .map(|_| Arc::new(Notify::new()))
        .collect();
    let abandons: Vec<Arc<Notify>> = thread_clients
        .iter()
        .map(|_| Arc::new(Notify::new()))
        .collect();
    let abandoned = Arc::new(AtomicBool::new(false));
    let events_claimed = Arc::new(AtomicU64::new(0));
    let launch = Instant::now();
    let warmup_gate = (!plan.warmup.is_zero()).then(|| Arc::new(WarmupGate::new(launch)));
    let mut handles = Vec::new();
    for (index, (clients, randoms)) in clients.into_iter().zip(thread_randoms).enumerate() {
        let setup = ThreadSetup {
            index,
            clients,
            choose_random: randoms.choose,
            throttle_random: randoms.throttle,
            log: logs.get_mut(index).and_then(Option::take),
            barrier: barrier.clone(),
            go: go.clone(),
            start_failed: start_failed.clone(),
            messages: sender.clone(),
            tick: ticks[index].clone(),
            abandon: abandons[index].clone(),
            abandoned: abandoned.clone(),
            events_claimed: events_claimed.clone(),
            warmup_gate: warmup_gate.clone(),
        };
        let plan = plan.clone();
        let handle = std::thread::Builder::new()
            .name(format!("stampede-job-{index}"))
            .spawn(move || thread::run_thread(plan, setup))
            .map_err(|e| Failure::run(format!("could not create thread: {e}")).caused_by(e))?;
        handles.push(handle);
    }
    drop(sender);
    barrier.wait();
    let gate_error = pass_start_gate(&plan, &start_failed, go.as_deref());
    let ticker = Ticker::new(plan.interval, ticks);
    let initial_connection_time = launch.elapsed();
    let start_unix_s = EpochClock::now().unix_us(Instant::now()) as f64 / 1e6;
    let mut cpu_start = process_cpu();
    let timeline = Timeline {
        start_unix_s,
        interval_s: plan.interval.as_secs_f64(),
        warmup_intervals: plan.warmup_intervals(),
        first_thread: here.start,
    };
    let watchdog = Watchdog {
        timeout: plan.stall_timeout,
        threads: abandons,
        abandoned,
    };
    let mut warmup_clock = warmup_gate.as_deref().map(|gate| {
        let ends_at = Instant::now() + plan.warmup;
        WarmupClock::new(gate, ends_at, plan.limit.time_bound(), clients_here)
    });
    let mut on_event = |event: DriverEvent<'_>| {
        let warmup_ended = matches!(event, DriverEvent::WarmupEnded);
        on_event(event);
        if warmup_ended {
            // The caller's reading is not the clients' work.
            cpu_start = process_cpu();
        }
    };
    let (intervals, fatal) = collect_intervals(
        &receiver,
        ticker,
        timeline,
        &watchdog,
        warmup_clock.as_mut(),
        &mut on_event,
    );
    let results: Vec<ThreadResult> = handles
        .into_iter()
        .map(|h| h.join().expect("driver thread panicked"))
        .collect();
    let end = Instant::now();
    let client_cpu = process_cpu().since(&cpu_start);
    if let Some(error) = results.iter().find_map(|r| r.connect_error.clone()) {
        // Nothing ran: leave no empty log files behind.
        if let Some(spec) = &plan.log {
            here.clone().for_each(|t| {
                let _ = std::fs::remove_file(spec.path(t));
            });
        }
        return Err(Failure::run(error));
    }
    if let Some(error) = gate_error {
        if let Some(spec) = &plan.log {
            here.clone().for_each(|t| {
                let _ = std::fs::remove_file(spec.path(t));
            });
        }
        return Err(error);
    }
    if let Some(error) = fatal.or_else(|| results.iter().find_map(|r| r.log_error.clone())) {
        return Err(Failure::run(error));
    }
    let abandoned: usize = results.iter().map(|r| r.abandoned_clients).sum();
    if let (true, Some(timeout)) = (abandoned > 0, plan.stall_timeout) {
        return Err(Failure::run(format!(
            "{STALLED} {} s: {abandoned} of {} clients waited that long for the server, \
             and the run was abandoned (their queries cancelled, their connections closed)",
            timeout.as_secs_f64(),
            clients_here
        )));
    }
    let measured_from = warmup_gate
        .as_ref()
        .map(|gate| gate.measured_from().unwrap_or(end));
    Ok(merge_results(
        &plan,
        results,
        Measured {
            from: measured_from,
            end,
        },
        initial_connection_time,
        intervals,
        client_cpu,
    ))
}

/// A spread run's start barrier, passed once every thread has connected its clients (skipped
/// when one could not: the run fails with that); the threads go on when it opens. Its error,
/// if it would not open.
fn pass_start_gate(
    plan: &RunPlan,
    start_failed: &AtomicBool,
    go: Option<&Barrier>,
) -> Option<Failure> {
    let (share, go) = (plan.share.as_ref()?, go?);
    let mut error = None;
    if !start_failed.load(std::sync::atomic::Ordering::SeqCst) {
        if let Err(e) = (share.start_gate)() {
            start_failed.store(true, std::sync::atomic::Ordering::SeqCst);
            error = Some(e);
        }
    }
    go.wait();
    error
}

/// Per thread: the script-choice, throttle (schedule) and log-sampling sequences.
struct ThreadRandoms {
    choose: PgPrng,
    throttle: PgPrng,
    sample: PgPrng,
}

/// `-l`: every thread's log file, created before any thread starts so that a bad path fails
/// the run before it begins (and leaves no files behind). Files are named by the run's thread
/// numbers, which start at `first_thread` in this process.
fn open_logs(
    plan: &RunPlan,
    first_thread: usize,
    randoms: &[ThreadRandoms],
) -> Result<Vec<Option<TxnLog>>, txlog::LogError> {
    let Some(spec) = &plan.log else {
        return Ok(Vec::new());
    };
    let clock = EpochClock::now();
    let mut logs = Vec::new();
    for (offset, random) in randoms.iter().enumerate() {
        let thread = first_thread + offset;
        match TxnLog::create(plan, spec, thread, random.sample.clone(), clock) {
            Ok(log) => logs.push(Some(log)),
            Err(e) => {
                (first_thread..thread).for_each(|t| {
                    let _ = std::fs::remove_file(spec.path(t));
                });
                return Err(e);
            }
        }
    }
    Ok(logs)
}

/// Seeds every client and thread from one base sequence in pgbench's order: clients' function
/// sequences, then `:default_seed`, then each thread's script-choice and throttle sequences.
fn seed_clients(
    plan: &RunPlan,
    thread_clients: &[usize],
) -> (Vec<Vec<client::Client>>, Vec<ThreadRandoms>) {
    let mut base = PgPrng::seeded(plan.random_seed);
    let client_randoms: Vec<PgPrng> = (0..plan.clients)
        .map(|_| PgPrng::seeded(base.next_u64()))
        .collect();
    let default_seed = base.next_u64() as i64;
    let mut client_randoms = client_randoms.into_iter();
    let mut next_id = 0;
    let mut per_thread = Vec::new();
    let mut thread_randoms = Vec::new();
    for count in thread_clients {
        let mut clients = Vec::new();
        for _ in 0..*count {
            let mut variables = plan.initial_values.clone();
            if let Some(slot) = plan.client_id_slot {
                variables[slot] = Value::Int(next_id as i64);
            }
            if let Some(slot) = plan.default_seed_slot {
                variables[slot] = Value::Int(default_seed);
            }
            let random = client_randoms.next().expect("one per client");
            clients.push(client::Client::new(next_id, variables, random, plan));
            next_id += 1;
        }
        per_thread.push(clients);
        thread_randoms.push(ThreadRandoms {
            choose: PgPrng::seeded(base.next_u64()),
            throttle: PgPrng::seeded(base.next_u64()),
            sample: PgPrng::seeded(base.next_u64()),
        });
    }
    (per_thread, thread_randoms)
}

/// Where intervals lie in Unix time, and how many of the first are the warmup's.
#[derive(Clone, Copy)]
struct Timeline {
    start_unix_s: f64,
    interval_s: f64,
    warmup_intervals: u64,
    /// The run's number of this process's first thread (a spread run's share).
    first_thread: usize,
}

/// Gives up on a run whose clients wait on the server for longer than `timeout`: each thread
/// is told to drop its clients.
struct Watchdog {
    timeout: Option<Duration>,
    threads: Vec<Arc<Notify>>,
    abandoned: Arc<AtomicBool>,
}

impl Watchdog {
    fn abandon(&self) {
        self.abandoned
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.threads.iter().for_each(|thread| thread.notify_one());
    }
}

/// Merges interval reports from all threads and emits each interval once every thread has
/// reported it (or finished). A thread reporting a stalled client sets the watchdog off; one
/// reporting a fatal error ends the run the same way, and the first such error is returned.
/// With a warmup, its clock is advanced between messages.
fn collect_intervals(
    receiver: &mpsc::Receiver<ThreadMessage>,
    mut ticker: Ticker,
    timeline: Timeline,
    watchdog: &Watchdog,
    mut warmup: Option<&mut WarmupClock<'_>>,
    on_event: &mut dyn FnMut(DriverEvent<'_>),
) -> (Vec<IntervalReport>, Option<String>) {
    let threads = ticker.threads.len();
    let mut abandoned = false;
    let mut fatal = None;
    let mut next_expected = vec![0u64; threads];
    let mut finished = vec![false; threads];
    let mut pending: std::collections::BTreeMap<u64, (ScriptStats, Vec<ScriptTally>)> =
        Default::default();
    let mut emitted = Vec::new();
    loop {
        if let Some(clock) = warmup.as_deref_mut() {
            clock.advance(&mut |moment| match moment {
                Moment::WarmupEnded => on_event(DriverEvent::WarmupEnded),
                Moment::MeasuredEnded => on_event(DriverEvent::MeasuredEnded),
            });
        }
        let warmup_look = warmup
            .as_deref()
            .map_or(Duration::MAX, WarmupClock::next_look_within);
        let until_tick = ticker.until_next();
        let message = match receiver.recv_timeout(until_tick.min(warmup_look)) {
            Ok(message) => message,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if until_tick <= warmup_look {
                    ticker.tick();
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match message {
            ThreadMessage::Interval {
                thread,
                index,
                stats,
                scripts,
                stalled_clients,
            } => {
                let (merged, tallies) = pending.entry(index).or_default();
                merged.merge(&stats);
                merge_tallies(tallies, &scripts);
                next_expected[thread] = index + 1;
                if stalled_clients > 0 && watchdog.timeout.is_some() && !abandoned {
                    abandoned = true;
                    watchdog.abandon();
                }
            }
            ThreadMessage::ClientAborted { message, thread } => on_event(
                DriverEvent::ClientAborted(&message, timeline.first_thread + thread),
            ),
            ThreadMessage::ClientNotice { message } => {
                on_event(DriverEvent::ClientNotice(&message))
            }
            ThreadMessage::Fatal { message } => {
                fatal.get_or_insert(message);
                if !abandoned {
                    abandoned = true;
                    watchdog.abandon();
                }
            }
            ThreadMessage::Finished { thread } => finished[thread] = true,
        }
        while let Some((&index, _)) = pending.first_key_value() {
            let complete = (0..threads).all(|t| finished[t] || next_expected[t] > index);
            if !complete {
                break;
            }
            let (stats, scripts) = pending.remove(&index).expect("present");
            let Some(measured_index) = index.checked_sub(timeline.warmup_intervals) else {
                continue;
            };
            let report = IntervalReport {
                index: measured_index,
                stats,
                end_unix_s: timeline.start_unix_s + (index + 1) as f64 * timeline.interval_s,
                scripts,
                by_pod: Vec::new(),
            };
            on_event(DriverEvent::Interval(&report));
            emitted.push(report);
        }
    }
    (emitted, fatal)
}

/// Wakes every thread once per interval, a little after the interval's end, so that a thread
/// whose clients complete nothing (all waiting on locks, say) still closes its intervals.
struct Ticker {
    next: Instant,
    interval: Duration,
    threads: Vec<Arc<Notify>>,
}

impl Ticker {
    /// Threads take their start right after the barrier, as the caller does; the margin
    /// covers the difference.
    fn new(interval: Duration, threads: Vec<Arc<Notify>>) -> Ticker {
        let margin = interval / 20;
        Ticker {
            next: Instant::now() + interval + margin,
            interval,
            threads,
        }
    }

    fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    fn tick(&mut self) {
        self.threads.iter().for_each(|thread| thread.notify_one());
        self.next += self.interval;
    }
}

/// The measured part's bounds: from the warmup's end when there was one, else from the
/// first thread's start.
struct Measured {
    from: Option<Instant>,
    end: Instant,
}

fn merge_results(
    plan: &RunPlan,
    results: Vec<ThreadResult>,
    measured: Measured,
    initial_connection_time: Duration,
    intervals: Vec<IntervalReport>,
    client_cpu: CpuTimes,
) -> RunResult {
    let mut per_script = vec![ScriptStats::default(); plan.scripts.len()];
    let mut total = ScriptStats::default();
    for result in &results {
        for (merged, stats) in per_script.iter_mut().zip(&result.per_script) {
            merged.merge(stats);
            total.merge(stats);
        }
    }
    let mut command_stats: Vec<Vec<CommandStats>> = plan
        .scripts
        .iter()
        .map(|s| vec![CommandStats::default(); s.script.commands.len()])
        .collect();
    for result in &results {
        for (script, thread_script) in command_stats.iter_mut().zip(&result.command_stats) {
            for (total, stats) in script.iter_mut().zip(thread_script) {
                total.merge(stats);
            }
        }
    }
    let end = measured.end;
    let bench_start = measured
        .from
        .unwrap_or_else(|| results.iter().map(|r| r.bench_start).min().unwrap_or(end));
    let mut client_transactions = vec![0; plan.clients];
    let mut client_busy_us = vec![0.0; plan.clients];
    for result in &results {
        let first = result.first_client;
        client_transactions[first..first + result.client_transactions.len()]
            .copy_from_slice(&result.client_transactions);
        client_busy_us[first..first + result.client_busy_us.len()]
            .copy_from_slice(&result.client_busy_us);
    }
    RunResult {
        client_transactions,
        client_busy_us,
        total,
        per_script,
        bench_duration: end - bench_start,
        initial_connection_time,
        reconnection_time: results.iter().map(|r| r.connection_time).sum(),
        reconnections: results.iter().map(|r| r.connections).sum(),
        aborted_clients: results.iter().map(|r| r.aborted_clients).sum(),
        intervals,
        client_cpu,
        command_stats,
    }
}

/// One socket per client: lift the soft limit on open files to the hard one when the clients
/// need more than it allows (1,024 by default on many systems, against thousands of users).
fn raise_open_files_limit(clients: usize) -> Result<(), String> {
    // Logs, the probe's connections, stdio: room beyond the clients' sockets.
    let needed = clients as u64 + 64;
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return Ok(());
    };
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        return Err(format!(
            "{clients} clients need {needed} open files, but this process may open at most {hard} (ulimit -Hn)"
        ));
    }
    // Best effort, as before: a refusal shows up as a connection error naming the limit.
    let _ = setrlimit(Resource::RLIMIT_NOFILE, needed, hard);
    Ok(())
}
