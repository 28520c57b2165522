//! A warmup in the run's own sessions, as HammerDB's ramp-up: its virtual users keep their
//! connections from the ramp-up into the timed part, so each session's cached plans (a
//! PL/pgSQL statement's generic plan, chosen after its fifth call) carry over. When the warmup
//! is over, clients start no new transaction until none is in flight; the caller reads what it
//! counts (`DriverEvent::WarmupEnded`), and the measured part begins. Every transaction then
//! lies wholly on one side of that moment, so a count the server keeps (TPC-C's
//! `d_next_o_id`) and the driver's agree exactly. At the end, clients keep their sessions
//! until the caller has read again (`DriverEvent::MeasuredEnded`): the server's statistics
//! (pg_stat_database) lag a session's last second until it ends or has been idle 10 s, and so
//! they lag alike at both readings.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Not yet: the measured part has not begun.
const NOT_YET: u64 = u64::MAX;

/// Shared by the collector, which holds and opens it, and every client, which passes it
/// before each transaction.
pub struct WarmupGate {
    held: AtomicBool,
    in_flight: AtomicUsize,
    opened: Notify,
    /// When the measured part began, in nanoseconds after `origin`.
    measured_from_ns: AtomicU64,
    origin: Instant,
    /// Clients that have run their last transaction, and whether they may close their sessions.
    finished: AtomicUsize,
    closed: AtomicBool,
    released: Notify,
}

impl WarmupGate {
    pub fn new(origin: Instant) -> WarmupGate {
        WarmupGate {
            held: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            opened: Notify::new(),
            measured_from_ns: AtomicU64::new(NOT_YET),
            origin,
            finished: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            released: Notify::new(),
        }
    }

    /// A client that has run its last transaction waits here before it closes its session.
    pub async fn finish(&self) {
        let released = self.released.notified();
        self.finished.fetch_add(1, SeqCst);
        if !self.closed.load(SeqCst) {
            released.await;
        }
    }

    /// Every client of `clients` has finished: the sessions may close once the caller has read.
    fn all_finished(&self, clients: usize) -> bool {
        self.finished.load(SeqCst) >= clients
    }

    fn release(&self) {
        self.closed.store(true, SeqCst);
        self.released.notify_waiters();
    }

    /// A client about to begin a transaction: counted in flight at once, unless the gate is
    /// held, when it waits for the gate to open. Counting before looking pairs with `hold`
    /// looking after setting: either the collector sees this client in flight, or the
    /// client sees the gate held.
    pub async fn enter(&self) {
        loop {
            let opened = self.opened.notified();
            self.in_flight.fetch_add(1, SeqCst);
            if !self.held.load(SeqCst) {
                return;
            }
            self.in_flight.fetch_sub(1, SeqCst);
            opened.await;
        }
    }

    /// The transaction `enter` let in has ended.
    pub fn leave(&self) {
        self.in_flight.fetch_sub(1, SeqCst);
    }

    /// No client begins a transaction from now until `open`.
    pub fn hold(&self) {
        self.held.store(true, SeqCst);
    }

    /// Held, with no transaction in flight.
    pub fn is_idle(&self) -> bool {
        self.held.load(SeqCst) && self.in_flight.load(SeqCst) == 0
    }

    /// Begins the measured part at `at` and lets the waiting clients go.
    pub fn open(&self, at: Instant) {
        let since_origin = at.saturating_duration_since(self.origin).as_nanos() as u64;
        self.measured_from_ns.store(since_origin, SeqCst);
        self.held.store(false, SeqCst);
        self.opened.notify_waiters();
    }

    /// When the measured part began, once it has.
    pub fn measured_from(&self) -> Option<Instant> {
        match self.measured_from_ns.load(SeqCst) {
            NOT_YET => None,
            ns => Some(self.origin + Duration::from_nanos(ns)),
        }
    }

    /// Whether a transaction that ended at `end` belongs to the warmup.
    pub fn is_warmup(&self, end: Instant) -> bool {
        self.measured_from().is_none_or(|from| end < from)
    }
}

/// Where the collector stands.
enum Phase {
    Warming,
    Holding,
    Measuring,
    Over,
}

/// What the collector tells the caller.
pub enum Moment {
    WarmupEnded,
    MeasuredEnded,
}

/// The collector's side: holds the gate at the warmup's end, and once no transaction is in
/// flight, tells the caller and opens it; once every client has finished, tells the caller
/// again and lets them close their sessions.
pub struct WarmupClock<'a> {
    gate: &'a WarmupGate,
    ends_at: Instant,
    /// When the measured part ends by the clock (None: by transaction counts).
    measured_ends_at: Option<Instant>,
    clients: usize,
    phase: Phase,
}

/// How often a collector looks whether the last transactions have ended, once they should.
const POLL: Duration = Duration::from_millis(1);
/// How often it looks whether every client has finished, when the run ends by counts.
const COUNT_POLL: Duration = Duration::from_millis(10);

impl<'a> WarmupClock<'a> {
    pub fn new(
        gate: &'a WarmupGate,
        ends_at: Instant,
        measured_length: Option<Duration>,
        clients: usize,
    ) -> WarmupClock<'a> {
        WarmupClock {
            gate,
            ends_at,
            measured_ends_at: measured_length.map(|length| ends_at + length),
            clients,
            phase: Phase::Warming,
        }
    }

    /// How long the collector may wait for a message before it must look again.
    pub fn next_look_within(&self) -> Duration {
        let until = |at: Instant| at.saturating_duration_since(Instant::now());
        match self.phase {
            Phase::Warming => until(self.ends_at),
            Phase::Holding => POLL,
            Phase::Measuring => self
                .measured_ends_at
                .map_or(COUNT_POLL, |end| until(end).max(POLL)),
            Phase::Over => Duration::MAX,
        }
    }

    /// Moves on as time and the clients allow; `tell` runs at each moment, once.
    pub fn advance(&mut self, tell: &mut dyn FnMut(Moment)) {
        let warming = matches!(self.phase, Phase::Warming | Phase::Holding);
        if warming && self.gate.all_finished(self.clients) {
            // Stopped within the warmup: nothing was measured, nothing to tell.
            self.gate.release();
            self.phase = Phase::Over;
            return;
        }
        if let Phase::Warming = self.phase {
            if Instant::now() < self.ends_at {
                return;
            }
            self.gate.hold();
            self.phase = Phase::Holding;
        }
        if let (Phase::Holding, true) = (&self.phase, self.gate.is_idle()) {
            tell(Moment::WarmupEnded);
            self.gate.open(Instant::now());
            self.phase = Phase::Measuring;
        }
        if let (Phase::Measuring, true) = (&self.phase, self.gate.all_finished(self.clients)) {
            tell(Moment::MeasuredEnded);
            self.gate.release();
            self.phase = Phase::Over;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_ending_before_the_gate_opens_are_the_warmups() {
        let origin = Instant::now();
        let gate = WarmupGate::new(origin);
        assert!(gate.is_warmup(origin + Duration::from_secs(100)));
        gate.hold();
        assert!(gate.is_idle());
        let opened_at = origin + Duration::from_secs(2);
        gate.open(opened_at);
        assert_eq!(gate.measured_from(), Some(opened_at));
        assert!(gate.is_warmup(opened_at - Duration::from_nanos(1)));
        assert!(!gate.is_warmup(opened_at));
    }

    #[test]
    fn the_clock_waits_for_the_transaction_in_flight_before_it_opens() {
        let gate = WarmupGate::new(Instant::now());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(gate.enter());
        let mut clock = WarmupClock::new(&gate, Instant::now(), None, 1);
        let mut told = Vec::new();
        let mut tell = |moment: Moment| told.push(matches!(moment, Moment::WarmupEnded));
        clock.advance(&mut tell);
        assert!(gate.measured_from().is_none(), "a transaction is in flight");
        gate.leave();
        clock.advance(&mut tell);
        clock.advance(&mut tell);
        assert!(gate.measured_from().is_some());
        assert_eq!(clock.next_look_within(), COUNT_POLL);
        runtime.block_on(async {
            let finish = gate.finish();
            tokio::pin!(finish);
            tokio::select! {
                biased;
                () = &mut finish => panic!("released before the caller read"),
                () = std::future::ready(()) => {}
            }
            clock.advance(&mut tell);
            finish.await;
        });
        assert_eq!(told, [true, false]);
        assert_eq!(clock.next_look_within(), Duration::MAX);
    }
}
