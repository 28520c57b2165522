//! One job thread: a current-thread tokio runtime whose tasks are this thread's clients. Stats are
//! thread-local (no locks on the per-transaction path) and leave the thread once per interval.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::client::{Client, TxnOutcome};
use super::plan::{RunLimit, RunPlan};
use super::stats::ScriptStats;
use crate::script::prng::PgPrng;

pub enum ThreadMessage {
    /// Everything that completed in interval `index` (since this thread's start) on one thread.
    Interval {
        thread: usize,
        index: u64,
        stats: ScriptStats,
    },
    ClientAborted {
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
}

pub struct ThreadSetup {
    pub index: usize,
    pub clients: Vec<Client>,
    pub choose_random: PgPrng,
    pub barrier: Arc<Barrier>,
    /// Set by any thread whose clients could not connect, so that no thread starts.
    pub start_failed: Arc<AtomicBool>,
    pub messages: Sender<ThreadMessage>,
}

/// State shared by the tasks of one thread.
struct ThreadContext {
    plan: Arc<RunPlan>,
    index: usize,
    start: Instant,
    choose_random: RefCell<PgPrng>,
    stats: RefCell<IntervalAccumulator>,
    per_script: RefCell<Vec<ScriptStats>>,
    live_clients: Cell<usize>,
    all_done: Notify,
    connection_time: Cell<Duration>,
    connections: Cell<u64>,
    aborted_clients: Cell<usize>,
    messages: Sender<ThreadMessage>,
}

/// The current interval's stats; sent to the collector when the interval is over.
struct IntervalAccumulator {
    index: u64,
    stats: ScriptStats,
}

impl ThreadContext {
    fn interval_of(&self, at: Instant) -> u64 {
        (at.duration_since(self.start).as_nanos() / self.plan.interval.as_nanos()) as u64
    }

    /// Sends every interval before `index` that has not been sent, empty ones included, so the
    /// collector hears about every interval from every thread.
    fn flush_before(&self, index: u64) {
        let mut acc = self.stats.borrow_mut();
        while acc.index < index {
            let stats = std::mem::take(&mut acc.stats);
            let _ = self.messages.send(ThreadMessage::Interval {
                thread: self.index,
                index: acc.index,
                stats,
            });
            acc.index += 1;
        }
    }

    fn record(&self, script_index: usize, outcome: &TxnOutcome, latency: Duration, end: Instant) {
        self.flush_before(self.interval_of(end));
        let latency_us = latency.as_secs_f64() * 1e6;
        let mut acc = self.stats.borrow_mut();
        let mut per_script = self.per_script.borrow_mut();
        let script = &mut per_script[script_index];
        match outcome {
            TxnOutcome::Committed => {
                acc.stats.latency.record(latency_us);
                script.latency.record(latency_us);
            }
            TxnOutcome::Failed(error) => {
                acc.stats.failures.count(&error.code);
                script.failures.count(&error.code);
            }
            TxnOutcome::Aborted(_) => {}
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run_clients(plan, setup))
}

async fn run_clients(plan: Arc<RunPlan>, mut setup: ThreadSetup) -> ThreadResult {
    let mut connect_error = None;
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
    let start = Instant::now();
    let failed_elsewhere = setup.start_failed.load(Ordering::SeqCst);
    let context = Rc::new(ThreadContext {
        plan: plan.clone(),
        index: setup.index,
        start,
        choose_random: RefCell::new(setup.choose_random),
        stats: RefCell::new(IntervalAccumulator {
            index: 0,
            stats: ScriptStats::default(),
        }),
        per_script: RefCell::new(vec![ScriptStats::default(); plan.scripts.len()]),
        live_clients: Cell::new(setup.clients.len()),
        all_done: Notify::new(),
        connection_time: Cell::new(Duration::ZERO),
        connections: Cell::new(0),
        aborted_clients: Cell::new(0),
        messages: setup.messages.clone(),
    });
    if !failed_elsewhere {
        let local = tokio::task::LocalSet::new();
        for client in setup.clients.drain(..) {
            local.spawn_local(client_loop(context.clone(), client));
        }
        local.spawn_local(interval_ticker(context.clone()));
        local.await;
    }
    let end_index = context.interval_of(Instant::now()) + 1;
    context.flush_before(end_index);
    let _ = setup.messages.send(ThreadMessage::Finished {
        thread: setup.index,
    });
    for client in &mut setup.clients {
        client.disconnect().await;
    }
    let per_script = context.per_script.take();
    ThreadResult {
        bench_start: start,
        per_script,
        connection_time: context.connection_time.get(),
        connections: context.connections.get(),
        aborted_clients: context.aborted_clients.get(),
        connect_error,
    }
}

async fn client_loop(context: Rc<ThreadContext>, mut client: Client) {
    let plan = context.plan.clone();
    let deadline = match plan.limit {
        RunLimit::Duration(d) => Some(context.start + d),
        RunLimit::TransactionsPerClient(_) => None,
    };
    let mut done = 0u64;
    loop {
        let finished = match plan.limit {
            RunLimit::Duration(_) => Instant::now() >= deadline.expect("set for durations"),
            RunLimit::TransactionsPerClient(n) => done >= n,
        };
        if finished {
            break;
        }
        let script_index = context.choose_script();
        let begin = Instant::now();
        if plan.connect_per_transaction {
            if let Err(e) = client.connect(&plan).await {
                abort(
                    &context,
                    format!(
                        "client {} aborted while establishing connection: {e}",
                        client.id
                    ),
                );
                break;
            }
            context
                .connection_time
                .set(context.connection_time.get() + begin.elapsed());
            context.connections.set(context.connections.get() + 1);
        }
        let outcome = client.run_script(&plan, script_index).await;
        let end = Instant::now();
        context.record(script_index, &outcome, end - begin, end);
        if let TxnOutcome::Aborted(message) = outcome {
            abort(&context, message);
            break;
        }
        done += 1;
        if plan.connect_per_transaction {
            client.disconnect().await;
        }
    }
    client.disconnect().await;
    context.live_clients.set(context.live_clients.get() - 1);
    if context.live_clients.get() == 0 {
        context.all_done.notify_one();
    }
}

fn abort(context: &ThreadContext, message: String) {
    context
        .aborted_clients
        .set(context.aborted_clients.get() + 1);
    let _ = context
        .messages
        .send(ThreadMessage::ClientAborted { message });
}

/// Closes intervals on time even when no transaction completes in them.
async fn interval_ticker(context: Rc<ThreadContext>) {
    let mut next = 1u64;
    while context.live_clients.get() > 0 {
        let boundary = context.start + context.plan.interval * next as u32;
        tokio::select! {
            _ = tokio::time::sleep_until(boundary.into()) => {
                context.flush_before(next);
                next += 1;
            }
            _ = context.all_done.notified() => break,
        }
    }
}
