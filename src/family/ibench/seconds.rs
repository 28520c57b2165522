//! A step's seconds, counted from the step's start over all its clients: each operation's rows
//! (queries) finished in each second and their response times' median and 99th percentile. A
//! second in which nothing finished is a second of zeros — a stall shows as one. Seconds are
//! closed as they pass, so a long step keeps only the current second's response times.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::live::sampler::Tally;

/// Inserts, deletes, queries: the operations' order everywhere in a second.
pub const OPERATIONS: usize = 3;
/// The operations' names, in that order (the metrics' scripts).
pub const OPERATION_NAMES: [&str; OPERATIONS] = ["insert", "delete", "query"];
const QUERY: usize = 2;

/// One operation in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct OpSecond {
    /// Rows inserted or deleted, or queries.
    pub count: u64,
    /// None when nothing finished in the second.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// One whole second of a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Second {
    /// From the step's start: 0 is its first second.
    pub second: u64,
    pub insert: OpSecond,
    pub delete: OpSecond,
    pub query: OpSecond,
}

impl Second {
    pub fn op(&self, op: usize) -> &OpSecond {
        match op {
            0 => &self.insert,
            1 => &self.delete,
            _ => &self.query,
        }
    }
}

#[derive(Default)]
struct Open {
    counts: [u64; OPERATIONS],
    latencies_us: [Vec<u32>; OPERATIONS],
}

/// What a step's clients finish, by second.
pub struct Seconds {
    start: Instant,
    state: Mutex<State>,
    /// `--metrics-addr`: each operation as it ends, by its index (insert, delete, query).
    live: Option<Arc<Tally>>,
}

#[derive(Default)]
struct State {
    open: BTreeMap<u64, Open>,
    /// Every second before this one has been closed.
    next_to_close: u64,
}

impl Seconds {
    pub fn new(start: Instant, live: Option<Arc<Tally>>) -> Seconds {
        Seconds {
            start,
            state: Mutex::new(State::default()),
            live,
        }
    }

    /// `count` rows (or one query) of operation `op` finished at `end`, after `latency`.
    pub fn record(&self, op: usize, count: u64, end: Instant, latency: Duration) {
        let second = end.saturating_duration_since(self.start).as_secs();
        let mut state = self
            .state
            .lock()
            .expect("no thread panics holding this lock");
        // A second already closed (a late clock read) counts in the first open one.
        let second = second.max(state.next_to_close);
        let open = state.open.entry(second).or_default();
        open.counts[op] += count;
        open.latencies_us[op].push(latency.as_micros().min(u32::MAX as u128) as u32);
        drop(state);
        if let Some(tally) = &self.live {
            // One statement each: an insert's or a delete's batch, or a query.
            tally.committed(0, op, latency, 1);
            if op != QUERY {
                tally.rows(0, op, count);
            }
        }
    }

    /// Closes every whole second before `now`'s, in order, the empty ones as zeros.
    pub fn close_before(&self, now: Instant) -> Vec<Second> {
        let current = now.saturating_duration_since(self.start).as_secs();
        let mut state = self
            .state
            .lock()
            .expect("no thread panics holding this lock");
        let mut closed = Vec::new();
        while state.next_to_close < current {
            let second = state.next_to_close;
            let open = state.open.remove(&second).unwrap_or_default();
            closed.push(summarize(second, open));
            state.next_to_close += 1;
        }
        closed
    }
}

fn summarize(second: u64, mut open: Open) -> Second {
    let mut ops = [OpSecond::default(); OPERATIONS];
    for (op, summary) in ops.iter_mut().enumerate() {
        let latencies = &mut open.latencies_us[op];
        latencies.sort_unstable();
        *summary = OpSecond {
            count: open.counts[op],
            p50_ms: percentile_ms(latencies, 0.50),
            p99_ms: percentile_ms(latencies, 0.99),
        };
    }
    Second {
        second,
        insert: ops[0],
        delete: ops[1],
        query: ops[2],
    }
}

/// The nearest-rank percentile of sorted microseconds, in milliseconds.
fn percentile_ms(sorted_us: &[u32], fraction: f64) -> Option<f64> {
    if sorted_us.is_empty() {
        return None;
    }
    let rank = ((fraction * sorted_us.len() as f64).ceil() as usize).clamp(1, sorted_us.len());
    Some(f64::from(sorted_us[rank - 1]) / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_close_in_order_with_a_stall_as_zeros() {
        let start = Instant::now();
        let seconds = Seconds::new(start, None);
        let at = |ms: u64| start + Duration::from_millis(ms);
        seconds.record(0, 50, at(100), Duration::from_millis(2));
        seconds.record(0, 50, at(900), Duration::from_millis(4));
        seconds.record(2, 1, at(950), Duration::from_micros(300));
        seconds.record(0, 50, at(2500), Duration::from_millis(1500));
        assert!(seconds.close_before(at(999)).is_empty());
        let closed = seconds.close_before(at(3000));
        assert_eq!(closed.len(), 3);
        assert_eq!(closed[0].insert.count, 100);
        assert_eq!(closed[0].insert.p50_ms, Some(2.0));
        assert_eq!(closed[0].insert.p99_ms, Some(4.0));
        assert_eq!(closed[0].query.count, 1);
        assert_eq!(closed[0].delete, OpSecond::default());
        // Nothing finished in the second second: zeros, no percentiles.
        assert_eq!(
            (closed[1].second, closed[1].insert),
            (1, OpSecond::default())
        );
        assert_eq!(closed[2].insert.p50_ms, Some(1500.0));
        // A record for a closed second lands in the first open one.
        seconds.record(0, 5, at(1200), Duration::from_millis(1));
        assert_eq!(seconds.close_before(at(4000))[0].insert.count, 5);
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let sorted: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(percentile_ms(&sorted, 0.50), Some(50.0));
        assert_eq!(percentile_ms(&sorted, 0.99), Some(99.0));
        assert_eq!(percentile_ms(&[7000], 0.99), Some(7.0));
        assert_eq!(percentile_ms(&[], 0.5), None);
    }
}
