//! What the workers of one run share: the limits (`--time`, `--events`), the `--rate`
//! arrivals, the clock and the counters.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::stats::Stats;
use stampede_script::prng::PgPrng;

/// What the workers of one run share: the limits, the clock and the counters.
pub struct RunControl {
    pub stats: Stats,
    /// When the control was made; the run started `started_ns` after it (every worker reads
    /// the clock per event: an atomic, not a lock).
    pub(super) created: Instant,
    pub(super) started_ns: AtomicU64,
    pub(super) time_limit: Option<Duration>,
    pub(super) max_events: u64,
    pub(super) issued: AtomicU64,
    /// A worker failed: the others stop at their next event.
    pub failed: AtomicBool,
    pub(super) running: AtomicU32,
    pub(super) arrivals: Option<Mutex<Arrivals>>,
    pub(super) stop: Arc<AtomicBool>,
}

/// `--rate`: events arrive at exponentially distributed intervals, the next one claimed by
/// whichever worker is free; its latency counts from its arrival.
pub(super) struct Arrivals {
    pub(super) next: Instant,
    pub(super) mean_interval_s: f64,
    pub(super) rng: PgPrng,
}

impl RunControl {
    /// The start of the next event (its arrival under `--rate`), None when the run is over.
    pub fn next_event(&self) -> Option<Instant> {
        if self.failed.load(Ordering::Relaxed) || self.stop.load(Ordering::Relaxed) {
            return None;
        }
        // One reading of the clock serves the time limit and the event's start.
        let now = Instant::now();
        if self
            .time_limit
            .is_some_and(|limit| self.elapsed_at(now) >= limit.as_secs_f64())
        {
            return None;
        }
        if self.max_events > 0 && self.issued.fetch_add(1, Ordering::Relaxed) >= self.max_events {
            return None;
        }
        let Some(arrivals) = &self.arrivals else {
            return Some(now);
        };
        let arrival = {
            let mut arrivals = arrivals.lock().expect("no thread panics holding this lock");
            let arrival = arrivals.next;
            let draw = 1.0 - arrivals.rng.next_f64();
            let gap = -draw.ln() * arrivals.mean_interval_s;
            arrivals.next = arrival + Duration::from_secs_f64(gap);
            arrival
        };
        if let Some(wait) = arrival.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        Some(arrival)
    }

    pub(super) fn elapsed(&self) -> f64 {
        self.elapsed_at(Instant::now())
    }

    /// Seconds from the run's start to `now`.
    fn elapsed_at(&self, now: Instant) -> f64 {
        let since_created = now.saturating_duration_since(self.created).as_nanos() as u64;
        since_created.saturating_sub(self.started_ns.load(Ordering::Relaxed)) as f64 / 1e9
    }

    pub(super) fn start_now(&self) {
        let since_created = self.created.elapsed().as_nanos() as u64;
        self.started_ns.store(since_created, Ordering::Relaxed);
    }
}
