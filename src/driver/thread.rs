//! One job thread: a current-thread tokio runtime whose tasks are this thread's clients. Stats are
//! thread-local (no locks on the per-transaction path) and leave the thread once per interval.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::client::{Client, TxnOutcome, TxnResult};
use super::pauses::{self, FirstStep};
use super::plan::{RunLimit, RunPlan};
use super::stats::{CommandStats, ScriptStats, ScriptTally};
use super::txlog::{LogEntry, LoggedOutcome, TxnLog};
use super::warmup::WarmupGate;
use stampede_script::prng::PgPrng;
use stampede_wire::cancel::CancelToken;
use stampede_wire::Waiting;

pub enum ThreadMessage {
    /// Everything that completed in interval `index` (since this thread's start) on one thread.
    Interval {
        thread: usize,
        index: u64,
        stats: Box<ScriptStats>,
        /// The interval's counts by script.
        scripts: Vec<ScriptTally>,
        /// The thread's clients whose transaction has waited longer than the stall timeout
        /// when the interval was sent.
        stalled_clients: usize,
    },
    ClientAborted {
        message: String,
        /// The thread the client ran on (pgbench's `--exit-on-abort` names it).
        thread: usize,
    },
    /// `--verbose-errors` lines.
    ClientNotice {
        message: String,
    },
    /// An error that ends the whole run (a transaction log that cannot be written).
    Fatal {
        message: String,
    },
    Finished {
        thread: usize,
    },
}

/// What a thread hands back when it ends.
pub struct ThreadResult {
    pub bench_start: Instant,
    pub per_script: Vec<ScriptStats>,
    pub connection_time: Duration,
    pub connections: u64,
    pub aborted_clients: usize,
    pub connect_error: Option<String>,
    /// `-r`: per script and command, over this thread's clients.
    pub command_stats: Vec<Vec<CommandStats>>,
    pub log_error: Option<String>,
    /// Clients still running when the watchdog abandoned the run (0 when it did not).
    pub abandoned_clients: usize,
    /// Committed transactions of each of this thread's clients, from its first client's id on.
    pub client_transactions: Vec<u64>,
    /// Their summed latency, in microseconds, by the same position.
    pub client_busy_us: Vec<f64>,
    pub first_client: usize,
}

pub struct ThreadSetup {
    pub index: usize,
    pub clients: Vec<Client>,
    pub choose_random: PgPrng,
    pub throttle_random: PgPrng,
    /// `-l`: this thread's log file, already created.
    pub log: Option<TxnLog>,
    pub barrier: Arc<Barrier>,
    /// A spread run: passed after `barrier`, once the run's start barrier opened.
    pub go: Option<Arc<Barrier>>,
    /// Set by any thread whose clients could not connect, so that no thread starts.
    pub start_failed: Arc<AtomicBool>,
    pub messages: Sender<ThreadMessage>,
    /// Notified by the collector after each interval's end.
    pub tick: Arc<Notify>,
    /// Notified by the collector when the watchdog gives up on the run: the thread drops its
    /// clients (closing their connections) and ends.
    pub abandon: Arc<Notify>,
    /// Set with that notification, for clients that never yield to be told at their next
    /// transaction: a thread's only client reads with blocking calls (`go_solo`) and leaves
    /// the runtime only when a reply is slow to come.
    pub abandoned: Arc<AtomicBool>,
    /// With `RunPlan::warmup`: passed before every transaction.
    pub warmup_gate: Option<Arc<WarmupGate>>,
    /// `RunLimit::Events`: the transactions the run's clients have claimed so far.
    pub events_claimed: Arc<AtomicU64>,
}

/// How far a client of a sweep thread may run ahead of its thread's mean before it lets the
/// others go first after each transaction. A client whose reply is already there when it reads
/// goes on at once, and its backend, kept on a CPU, answers fast again: left alone, some
/// clients ran 1.5-2.5x the transactions of others (10 `\set` script, `-c 8 -j 2`, 2 cores).
/// Yielding at 5% ahead kept the busiest / least busy client within 1.1-1.35 at a few percent
/// of throughput (bench/results/pgbench.md, "Several clients per thread"); yielding after every
/// transaction was fair to the transaction but cost 15-25% of it.
const AHEAD_MARGIN: f64 = 1.05;

/// State shared by the tasks of one thread.
struct ThreadContext {
    plan: Arc<RunPlan>,
    index: usize,
    start: Instant,
    warmup_gate: Option<Arc<WarmupGate>>,
    choose_random: RefCell<PgPrng>,
    throttle: Option<Throttle>,
    stats: RefCell<IntervalAccumulator>,
    per_script: RefCell<Vec<ScriptStats>>,
    live_clients: Cell<usize>,
    all_done: Notify,
    connection_time: Cell<Duration>,
    connections: Cell<u64>,
    aborted_clients: Cell<usize>,
    command_stats: RefCell<Vec<Vec<CommandStats>>>,
    log: RefCell<Option<TxnLog>>,
    messages: Sender<ThreadMessage>,
    /// When each of the thread's clients started the transaction it is in, by position
    /// (client id less `first_client`); None between transactions.
    in_flight: Vec<Cell<Option<Instant>>>,
    first_client: usize,
    /// Committed transactions of each client, by the same position, and their sum.
    client_transactions: Vec<Cell<u64>>,
    /// The committed transactions' summed latency of each client (sysbench's execution time
    /// per thread), by the same position.
    client_busy_us: Vec<Cell<f64>>,
    committed: Cell<u64>,
    /// What cancels each client's running query (by the same position), kept from its last
    /// connection: the watchdog cancels stuck queries before it closes their connections.
    cancel_tokens: Vec<RefCell<Option<CancelToken>>>,
    abandoned: Arc<AtomicBool>,
    events_claimed: Arc<AtomicU64>,
}

/// `-R`: the thread's Poisson schedule, shared by its clients as in pgbench: each transaction
/// takes the next scheduled start.
struct Throttle {
    /// Mean gap between this thread's scheduled starts, in microseconds.
    mean_gap_us: f64,
    next_start: Cell<Instant>,
    random: RefCell<PgPrng>,
}

impl Throttle {
    /// pgbench's getPoissonRand: advances the schedule by an exponential gap.
    fn advance(&self) -> Instant {
        let uniform = 1.0 - self.random.borrow_mut().next_f64();
        let gap_us = (-uniform.ln() * self.mean_gap_us + 0.5) as u64;
        let next = self.next_start.get() + Duration::from_micros(gap_us);
        self.next_start.set(next);
        next
    }
}

/// When a transaction was due, started and ended, as the stats need it.
#[derive(Clone, Copy)]
struct TxnTiming {
    /// From the scheduled start (`-R`) or the actual start to the end.
    latency: Duration,
    /// `-R`: how late the start was against the schedule.
    lag: Option<Duration>,
    end: Instant,
}

/// The current interval's stats; sent to the collector when the interval is over.
struct IntervalAccumulator {
    index: u64,
    stats: ScriptStats,
    scripts: Vec<ScriptTally>,
}

/// Counts a finished transaction into its script's tally for the interval.
fn tally(tally: &mut ScriptTally, result: &TxnResult, client: &Client) {
    tally.statements += client.statements;
    match result.outcome {
        TxnOutcome::Committed => tally.committed += 1,
        TxnOutcome::Failed { kind, class, .. } => tally.failures.count(kind, class),
        TxnOutcome::TimeUp | TxnOutcome::Aborted(_) => {}
    }
}

impl ThreadContext {
    /// Whether a client that has processed `processed` transactions may start another: under
    /// `RunLimit::Events` this claims it from the run's total (as sysbench's threads take
    /// events from one counter), so it is asked once per transaction about to start.
    fn may_start_another(&self, processed: u64) -> bool {
        match self.plan.limit {
            RunLimit::Duration(_) => true,
            RunLimit::TransactionsPerClient(n) => processed < n,
            RunLimit::Events { total, .. } => {
                self.events_claimed.fetch_add(1, Ordering::Relaxed) < total
            }
        }
    }

    fn interval_of(&self, at: Instant) -> u64 {
        // In u64 nanoseconds (584 years), not u128: this runs for every transaction.
        at.duration_since(self.start).as_nanos() as u64 / self.plan.interval.as_nanos() as u64
    }

    /// Sends every interval before `index` that has not been sent, empty ones included, so the
    /// collector hears about every interval from every thread.
    fn flush_before(&self, index: u64) {
        let mut acc = self.stats.borrow_mut();
        if acc.index >= index {
            return;
        }
        let stalled_clients = self.stalled_clients();
        while acc.index < index {
            let stats = Box::new(std::mem::take(&mut acc.stats));
            let fresh = vec![ScriptTally::default(); acc.scripts.len()];
            let scripts = std::mem::replace(&mut acc.scripts, fresh);
            let _ = self.messages.send(ThreadMessage::Interval {
                thread: self.index,
                index: acc.index,
                stats,
                scripts,
                stalled_clients,
            });
            acc.index += 1;
        }
    }

    /// Clients whose transaction has waited longer than the stall timeout.
    fn stalled_clients(&self) -> usize {
        let Some(timeout) = self.plan.stall_timeout else {
            return 0;
        };
        let now = Instant::now();
        self.in_flight
            .iter()
            .filter(|since| since.get().is_some_and(|at| now - at > timeout))
            .count()
    }

    /// Keeps what cancels the client's new connection.
    fn remember_cancel_token(&self, client: &Client) {
        if let Some(slot) = self.cancel_tokens.get(client.id - self.first_client) {
            *slot.borrow_mut() = client.cancel_token(&self.plan.endpoint);
        }
    }

    /// Sends a cancel request for every client in a transaction, all at once.
    async fn cancel_running_queries(&self) {
        let tokens: Vec<CancelToken> = self
            .in_flight
            .iter()
            .zip(&self.cancel_tokens)
            .filter(|(since, _)| since.get().is_some())
            .filter_map(|(_, token)| token.borrow().clone())
            .collect();
        let requests = tokens.iter().map(|token| token.cancel());
        // A request that fails (the server is gone too) changes nothing: the run is over.
        let _ = futures_util::future::join_all(requests).await;
    }

    fn count_committed(&self, client: &Client, latency_us: f64) {
        let position = client.id - self.first_client;
        if let Some(count) = self.client_transactions.get(position) {
            count.set(count.get() + 1);
            self.committed.set(self.committed.get() + 1);
        }
        if let Some(busy) = self.client_busy_us.get(position) {
            busy.set(busy.get() + latency_us);
        }
    }

    /// Whether the client has committed more than its share of the thread's transactions, by
    /// more than `AHEAD_MARGIN`.
    fn is_ahead(&self, client: &Client) -> bool {
        let Some(count) = self.client_transactions.get(client.id - self.first_client) else {
            return false;
        };
        let share = self.committed.get() as f64 / self.client_transactions.len() as f64;
        count.get() as f64 > share * AHEAD_MARGIN
    }

    /// Marks the client as in a transaction since `at`, or (None) between transactions.
    /// Whether what ended at `end` belongs to `RunPlan::warmup` (and is not counted).
    fn in_warmup(&self, end: Instant) -> bool {
        self.warmup_gate
            .as_ref()
            .is_some_and(|gate| gate.is_warmup(end))
    }

    async fn enter_warmup_gate(&self) {
        if let Some(gate) = &self.warmup_gate {
            gate.enter().await;
        }
    }

    fn leave_warmup_gate(&self) {
        if let Some(gate) = &self.warmup_gate {
            gate.leave();
        }
    }

    fn set_in_flight(&self, client: &Client, at: Option<Instant>) {
        if let Some(slot) = self.in_flight.get(client.id - self.first_client) {
            slot.set(at);
        }
    }

    /// The interval a measured event at `at` is counted in. The measured part begins when the
    /// warmup gate opens, a little after this thread's start plus the warmup (the collector
    /// reads the server between), but a thread scheduled late after the start barrier counts
    /// from a later start: its first measured events could fall in the warmup's last interval,
    /// which the collector drops, and the series would miss what the totals count.
    fn measured_interval_of(&self, at: Instant) -> u64 {
        self.interval_of(at).max(self.plan.warmup_intervals())
    }

    /// Accounts one finished transaction: interval and script stats, and the log.
    fn record(&self, script_index: usize, result: &TxnResult, timing: TxnTiming, client: &Client) {
        if self.in_warmup(timing.end) {
            self.flush_before(self.interval_of(timing.end));
            return;
        }
        self.flush_before(self.measured_interval_of(timing.end));
        let latency_us = timing.latency.as_secs_f64() * 1e6;
        let lag_us = timing.lag.map_or(0.0, |lag| lag.as_secs_f64() * 1e6);
        let late = self
            .plan
            .latency_limit
            .is_some_and(|limit| timing.latency > limit);
        let mut acc = self.stats.borrow_mut();
        tally(&mut acc.scripts[script_index], result, client);
        let mut per_script = self.per_script.borrow_mut();
        for stats in [&mut acc.stats, &mut per_script[script_index]] {
            stats.statements += client.statements;
            if result.tries > 1 {
                stats.retried += 1;
                stats.retries += u64::from(result.tries - 1);
            }
            match result.outcome {
                TxnOutcome::Committed => {
                    stats.latency.record(latency_us);
                    if timing.lag.is_some() {
                        stats.lag.record(lag_us);
                    }
                    stats.late += u64::from(late);
                }
                TxnOutcome::Failed { kind, class, .. } => stats.failures.count(kind, class),
                TxnOutcome::TimeUp | TxnOutcome::Aborted(_) => {}
            }
        }
        if let TxnOutcome::Committed = result.outcome {
            self.count_committed(client, latency_us);
        }
        let outcome = match result.outcome {
            TxnOutcome::Committed => LoggedOutcome::Committed { latency_us, lag_us },
            TxnOutcome::Failed { kind, .. } => LoggedOutcome::Failed(kind),
            TxnOutcome::TimeUp | TxnOutcome::Aborted(_) => return,
        };
        self.log(LogEntry {
            client_id: client.id,
            transaction_no: client.processed,
            script: script_index,
            outcome,
            tries: result.tries,
            at: timing.end,
        });
    }

    /// Logs the entry; a log that cannot be written ends the run (the collector abandons it)
    /// and is written no more.
    fn log(&self, entry: LogEntry) {
        let mut log = self.log.borrow_mut();
        let Some(Err(error)) = log.as_mut().map(|log| log.record(&entry)) else {
            return;
        };
        *log = None;
        let message = error.to_string();
        let _ = self.messages.send(ThreadMessage::Fatal { message });
    }

    /// `-R -L`: a transaction skipped because it was already too late when due.
    fn record_skipped(&self, script_index: usize, at: Instant, client_id: usize, number: u64) {
        if self.in_warmup(at) {
            self.flush_before(self.interval_of(at));
            return;
        }
        self.flush_before(self.measured_interval_of(at));
        self.stats.borrow_mut().stats.skipped += 1;
        self.per_script.borrow_mut()[script_index].skipped += 1;
        self.log(LogEntry {
            client_id,
            transaction_no: number,
            script: script_index,
            outcome: LoggedOutcome::Skipped,
            tries: 1,
            at,
        });
    }

    fn notify(&self, messages: Vec<String>) {
        for message in messages {
            let _ = self.messages.send(ThreadMessage::ClientNotice { message });
        }
    }

    /// pgbench's chooseScript: a weighted draw from the thread's own random sequence.
    fn choose_script(&self) -> usize {
        let scripts = &self.plan.scripts;
        if scripts.len() == 1 {
            return 0;
        }
        let total = self.plan.total_weight() as i64;
        let mut w = self.choose_random.borrow_mut().int_in_range(0, total - 1);
        let mut i = 0;
        loop {
            w -= i64::from(scripts[i].weight);
            i += 1;
            if w < 0 {
                return i - 1;
            }
        }
    }
}

pub fn run_thread(plan: Arc<RunPlan>, setup: ThreadSetup) -> ThreadResult {
    if let Some(cpus) = &plan.cpu_affinity {
        pin_current_thread(cpus);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(stampede_wire::sweep::before_park)
        .build()
        .expect("a tokio runtime builds where threads can start");
    runtime.block_on(run_clients(plan, setup))
}

async fn run_clients(plan: Arc<RunPlan>, mut setup: ThreadSetup) -> ThreadResult {
    let mut connect_error = None;
    let waiting = waiting_of(&plan, setup.clients.len());
    for client in &mut setup.clients {
        client.waiting = waiting;
    }
    if waiting == Waiting::Sweep {
        stampede_wire::sweep::set_clients(setup.clients.len());
    }
    if !plan.connect_per_transaction {
        let attempts = setup.clients.iter_mut().map(|c| {
            let plan = &plan;
            async move { c.connect(plan).await.map_err(|e| (c.id, e)) }
        });
        for result in futures_util::future::join_all(attempts).await {
            if let Err((id, e)) = result {
                connect_error
                    .get_or_insert(format!("could not create connection for client {id}: {e}"));
            }
        }
    }
    if connect_error.is_some() {
        setup.start_failed.store(true, Ordering::SeqCst);
    }
    setup.barrier.wait();
    if let Some(go) = &setup.go {
        go.wait();
    }
    let start = Instant::now();
    let failed_elsewhere = setup.start_failed.load(Ordering::SeqCst);
    let context = Rc::new(ThreadContext {
        plan: plan.clone(),
        index: setup.index,
        start,
        warmup_gate: setup.warmup_gate.clone(),
        choose_random: RefCell::new(setup.choose_random),
        throttle: plan.rate.map(|rate| Throttle {
            // Each thread schedules its share of the rate.
            mean_gap_us: 1e6 / rate * plan.clients_per_thread().len() as f64,
            next_start: Cell::new(start),
            random: RefCell::new(setup.throttle_random),
        }),
        stats: RefCell::new(IntervalAccumulator {
            index: 0,
            stats: ScriptStats::default(),
            scripts: vec![ScriptTally::default(); plan.scripts.len()],
        }),
        per_script: RefCell::new(vec![ScriptStats::default(); plan.scripts.len()]),
        live_clients: Cell::new(setup.clients.len()),
        all_done: Notify::new(),
        connection_time: Cell::new(Duration::ZERO),
        connections: Cell::new(0),
        aborted_clients: Cell::new(0),
        command_stats: RefCell::new(
            plan.scripts
                .iter()
                .map(|s| vec![CommandStats::default(); s.script.commands.len()])
                .collect(),
        ),
        log: RefCell::new(setup.log.take().map(|mut log| {
            log.start(start);
            log
        })),
        messages: setup.messages.clone(),
        in_flight: setup.clients.iter().map(|_| Cell::new(None)).collect(),
        first_client: setup.clients.first().map_or(0, |c| c.id),
        client_transactions: setup.clients.iter().map(|_| Cell::new(0)).collect(),
        client_busy_us: setup.clients.iter().map(|_| Cell::new(0.0)).collect(),
        committed: Cell::new(0),
        cancel_tokens: setup
            .clients
            .iter()
            .map(|c| RefCell::new(c.cancel_token(&plan.endpoint)))
            .collect(),
        abandoned: setup.abandoned.clone(),
        events_claimed: setup.events_claimed.clone(),
    });
    let mut abandoned_clients = 0;
    if !failed_elsewhere {
        let mut local = tokio::task::LocalSet::new();
        for client in setup.clients.drain(..) {
            local.spawn_local(client_loop(context.clone(), client));
        }
        local.spawn_local(interval_ticker(context.clone(), setup.tick.clone()));
        tokio::select! {
            () = &mut local => {}
            () = setup.abandon.notified() => {
                abandoned_clients = context.live_clients.get();
                stampede_wire::sweep::leave_to_reactor();
                // A backend waiting on a lock does not read its socket: closing the connection
                // alone would leave it waiting, holding what it holds, after the run.
                context.cancel_running_queries().await;
            }
        }
        // Dropping the clients' tasks closes their connections, stuck ones included.
        drop(local);
    }
    let end_index = context.interval_of(Instant::now()) + 1;
    context.flush_before(end_index);
    let _ = setup.messages.send(ThreadMessage::Finished {
        thread: setup.index,
    });
    for client in &mut setup.clients {
        client.disconnect().await;
    }
    let log_error = context
        .log
        .take()
        .and_then(|log| log.finish(Instant::now()).err())
        .map(|error| error.to_string());
    let per_script = context.per_script.take();
    ThreadResult {
        bench_start: start,
        per_script,
        connection_time: context.connection_time.get(),
        connections: context.connections.get(),
        aborted_clients: context.aborted_clients.get(),
        connect_error,
        command_stats: context.command_stats.take(),
        log_error,
        abandoned_clients,
        client_transactions: context.client_transactions.iter().map(Cell::get).collect(),
        client_busy_us: context.client_busy_us.iter().map(Cell::get).collect(),
        first_client: context.first_client,
    }
}

async fn client_loop(context: Rc<ThreadContext>, mut client: Client) {
    let plan = context.plan.clone();
    let deadline = plan
        .limit
        .time_bound()
        .map(|length| context.start + plan.warmup + length);
    let mut ended_normally = true;
    let stop = plan.stop.as_deref();
    let mut running = true;
    // With pauses, the first transaction may be one whose keying is under way.
    let mut keying_under_way = None;
    if let Some(pauses) = &plan.pauses {
        match pauses::steady_state_start(pauses, &plan.scripts, &mut client.random) {
            FirstStep::Keying { script, remaining } => keying_under_way = Some((script, remaining)),
            FirstStep::Thinking(think) => running = pauses::pause(think, deadline, stop).await,
        }
    }
    while running {
        if context.abandoned.load(Ordering::Relaxed) {
            ended_normally = false;
            break;
        }
        let finished = deadline.is_some_and(|end| Instant::now() >= end)
            || !context.may_start_another(client.processed)
            || plan
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed));
        if finished {
            break;
        }
        let (script_index, keying) = match keying_under_way.take() {
            Some((script, remaining)) => (script, Some(remaining)),
            None => {
                let script = context.choose_script();
                (script, plan.pauses.as_ref().map(|p| p[script].keying))
            }
        };
        let script_pauses = plan.pauses.as_ref().map(|p| p[script_index]);
        if let Some(keying) = keying {
            if !pauses::pause(keying, deadline, stop).await {
                break;
            }
        }
        let scheduled = match schedule(&context, script_index, &mut client, deadline).await {
            Schedule::Start(at) => at,
            Schedule::Finished => break,
        };
        context.enter_warmup_gate().await;
        let begin = Instant::now();
        if plan.connect_per_transaction && !reconnect(&context, &mut client, begin).await {
            context.leave_warmup_gate();
            break;
        }
        client.statements = 0;
        context.set_in_flight(&client, Some(begin));
        let result = client
            .run_transaction(&plan, script_index, scheduled.unwrap_or(begin), deadline)
            .await;
        context.set_in_flight(&client, None);
        let end = Instant::now();
        context.leave_warmup_gate();
        context.notify(std::mem::take(&mut client.notices));
        if let TxnOutcome::Aborted(message) = result.outcome {
            abort(&context, message);
            ended_normally = false;
            break;
        }
        if let TxnOutcome::TimeUp = result.outcome {
            break;
        }
        client.processed += 1;
        if context.in_warmup(end) {
            // A limit in transactions counts the measured ones.
            client.processed = 0;
        }
        // Under -R, latency counts from the scheduled start (no coordinated omission).
        let timing = match scheduled {
            Some(at) => TxnTiming {
                latency: end - at,
                lag: Some(begin.saturating_duration_since(at)),
                end,
            },
            None => TxnTiming {
                latency: end - begin,
                lag: None,
                end,
            },
        };
        context.record(script_index, &result, timing, &client);
        if client.waiting == Waiting::Sweep && context.is_ahead(&client) {
            stampede_wire::sweep::yield_turn().await;
        }
        if let Some(message) = result.abort_after {
            abort(&context, message);
            ended_normally = false;
            break;
        }
        if plan.connect_per_transaction {
            client.disconnect().await;
        } else if client.connection_lost()
            && !connect_again(&context, &mut client, script_index, deadline).await
        {
            ended_normally = false;
            break;
        }
        if let Some(mean) = script_pauses.map(|p| p.mean_think) {
            let think = pauses::think_time(mean, &mut client.random);
            running = pauses::pause(think, deadline, stop).await;
        }
    }
    if ended_normally {
        run_closing_script(&context, &mut client).await;
    }
    if let Some(gate) = &context.warmup_gate {
        gate.finish().await;
    }
    client.disconnect().await;
    merge_command_stats(&context, &client);
    context.live_clients.set(context.live_clients.get() - 1);
    if client.waiting == Waiting::Sweep {
        stampede_wire::sweep::set_clients(context.live_clients.get());
    }
    if context.live_clients.get() == 0 {
        context.all_done.notify_one();
    }
}

/// How the thread's clients wait for the server. A thread's only client waits in the kernel
/// itself. Several clients share the thread's sweep over their sockets, unless they also wait
/// on timers most of the time (`-R`, keying and thinking) or connect for every transaction
/// (`-C`): there the reactor, which watches timers and sockets in one wait, serves them better.
fn waiting_of(plan: &RunPlan, clients: usize) -> Waiting {
    if clients == 1 {
        Waiting::Solo
    } else if plan.rate.is_some() || plan.pauses.is_some() || plan.connect_per_transaction {
        Waiting::Reactor
    } else {
        Waiting::Sweep
    }
}

/// `RunPlan::closing_script`, on the client's connection (a new one under `-C`).
async fn run_closing_script(context: &ThreadContext, client: &mut Client) {
    let plan = context.plan.clone();
    let Some(script_index) = plan.closing_script else {
        return;
    };
    if !client.is_connected() && !reconnect(context, client, Instant::now()).await {
        return;
    }
    client.statements = 0;
    let result = client
        .run_transaction(&plan, script_index, Instant::now(), None)
        .await;
    context.per_script.borrow_mut()[script_index].statements += client.statements;
    if let TxnOutcome::Aborted(message) = result.outcome {
        abort(context, message);
    } else if let Some(message) = result.abort_after {
        abort(context, message);
    }
}

/// After the server dropped the client's connection: connect again, retrying every 100 ms
/// while the server is away (a restart) until the run's end, or for 30 s under a
/// transaction count; false if it did not come back (the client is aborted) or the run ended.
async fn connect_again(
    context: &ThreadContext,
    client: &mut Client,
    script_index: usize,
    deadline: Option<Instant>,
) -> bool {
    client.disconnect().await;
    let plan = &context.plan;
    let give_up = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(30));
    loop {
        let error = match client.connect(plan).await {
            Ok(()) => {
                context.remember_cancel_token(client);
                context.stats.borrow_mut().stats.reconnects += 1;
                context.per_script.borrow_mut()[script_index].reconnects += 1;
                return true;
            }
            Err(e) => e,
        };
        if plan
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return false;
        }
        let retry_at = Instant::now() + Duration::from_millis(100);
        if retry_at >= give_up {
            if deadline.is_none_or(|end| Instant::now() < end) {
                let message = format!("client {} aborted while reconnecting: {error}", client.id);
                abort(context, message);
            }
            return false;
        }
        tokio::time::sleep_until(retry_at.into()).await;
    }
}

/// `-C`: a new connection for this transaction; false (client aborted) if it fails.
async fn reconnect(context: &ThreadContext, client: &mut Client, begin: Instant) -> bool {
    if let Err(e) = client.connect(&context.plan).await {
        abort(
            context,
            format!(
                "client {} aborted while establishing connection: {e}",
                client.id
            ),
        );
        return false;
    }
    context.remember_cancel_token(client);
    context
        .connection_time
        .set(context.connection_time.get() + begin.elapsed());
    context.connections.set(context.connections.get() + 1);
    true
}

fn merge_command_stats(context: &ThreadContext, client: &Client) {
    if !context.plan.report_per_command {
        return;
    }
    let mut totals = context.command_stats.borrow_mut();
    for (script, client_script) in totals.iter_mut().zip(&client.command_stats) {
        for (total, stats) in script.iter_mut().zip(client_script) {
            total.merge(stats);
        }
    }
}

enum Schedule {
    /// Start now (no `-R`) or at the scheduled instant, after waiting for it.
    Start(Option<Instant>),
    Finished,
}

/// `-R`: takes the next start from the thread's schedule, skips (with `-L`) the ones already
/// later than the limit, and waits for it. Stops when the schedule passes the run's end or the
/// skipped transactions used up the client's count.
async fn schedule(
    context: &ThreadContext,
    script_index: usize,
    client: &mut Client,
    deadline: Option<Instant>,
) -> Schedule {
    let Some(throttle) = &context.throttle else {
        return Schedule::Start(None);
    };
    let mut at = throttle.advance();
    if let Some(limit) = context.plan.latency_limit {
        let now = Instant::now();
        while at + limit < now {
            client.processed += 1;
            context.record_skipped(script_index, now, client.id, client.processed);
            if !context.may_start_another(client.processed) {
                return Schedule::Finished;
            }
            at = throttle.advance();
        }
    }
    if deadline.is_some_and(|end| at > end) {
        return Schedule::Finished;
    }
    wait_precisely_until(at).await;
    Schedule::Start(Some(at))
}

/// tokio's timer has 1 ms granularity and rounds up, which would add up to a millisecond of
/// schedule lag (and latency, measured from the scheduled start). Sleep to within a
/// millisecond, then yield to this thread's other clients until the instant itself.
async fn wait_precisely_until(at: Instant) {
    const TIMER_GRANULARITY: Duration = Duration::from_millis(1);
    if let Some(coarse) = at.checked_sub(TIMER_GRANULARITY) {
        if coarse > Instant::now() {
            tokio::time::sleep_until(coarse.into()).await;
        }
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

fn abort(context: &ThreadContext, message: String) {
    context
        .aborted_clients
        .set(context.aborted_clients.get() + 1);
    let _ = context.messages.send(ThreadMessage::ClientAborted {
        message,
        thread: context.index,
    });
}

/// Closes intervals on time even when no transaction completes in them. The collector's tick
/// wakes it rather than a timer of this thread's own: a pending tokio timer costs every wait
/// for the server a pass over the timer wheel (some 500 instructions per statement).
async fn interval_ticker(context: Rc<ThreadContext>, tick: Arc<Notify>) {
    while context.live_clients.get() > 0 {
        tokio::select! {
            _ = tick.notified() => context.flush_before(context.interval_of(Instant::now())),
            _ = context.all_done.notified() => break,
        }
    }
}

/// Best effort: a CPU list the machine lacks leaves the thread where it was.
fn pin_current_thread(cpus: &[usize]) {
    let _ = stampede_base::sys::pin_current_thread(cpus);
}
