//! `--metrics-addr` of a Lua script's run: the workers' own counters (sysbench's events,
//! queries, ignored errors, reconnects and latency histogram) read once a second by the
//! registry's sampler, as differences from the last reading — nothing added to an event.

use std::sync::Arc;

use super::control::RunControl;
use super::stats::{Counter, LogHistogram, COUNTERS};
use crate::live::sampler::{Gathered, Source};

/// The run's counters as last read.
pub struct LuaSource {
    control: Arc<RunControl>,
    counts: [u64; COUNTERS],
    latency_ns: u64,
    buckets: Vec<u64>,
}

impl LuaSource {
    pub fn new(control: Arc<RunControl>) -> LuaSource {
        LuaSource {
            control,
            counts: [0; COUNTERS],
            latency_ns: 0,
            buckets: Vec::new(),
        }
    }
}

impl Source for LuaSource {
    fn take(&mut self) -> Gathered {
        let (counts, timers, histogram) = self.control.stats.cumulative_counts(false);
        let latency_ns: u64 = timers.iter().map(|t| t.sum_ns).sum();
        if counts[Counter::Events as usize] < self.counts[Counter::Events as usize] {
            // --report-checkpoints restarted the counters: what came since is all new.
            *self = LuaSource::new(self.control.clone());
        }
        let delta = |counter: Counter| counts[counter as usize] - self.counts[counter as usize];
        let mut gathered = Gathered::default();
        let events = delta(Counter::Events);
        let statements = delta(Counter::Reads) + delta(Counter::Writes) + delta(Counter::Other);
        gathered.stats.statements = statements;
        // sysbench restarts an event after an error it ignores.
        gathered.stats.retries = delta(Counter::Errors);
        gathered.stats.reconnects = delta(Counter::Reconnects);
        gathered.scripts = vec![crate::driver::ScriptTally {
            committed: events,
            statements,
            ..Default::default()
        }];
        self.add_latency(
            &mut gathered,
            &histogram,
            latency_ns - self.latency_ns.min(latency_ns),
        );
        self.counts = counts;
        self.latency_ns = latency_ns;
        gathered
    }
}

impl LuaSource {
    /// The events' latency since the last reading: each new count at its bucket's value.
    fn add_latency(&mut self, gathered: &mut Gathered, histogram: &LogHistogram, sum_ns: u64) {
        let latency = &mut gathered.stats.latency;
        for (bucket, count) in histogram.buckets() {
            if self.buckets.len() <= bucket {
                self.buckets.resize(bucket + 1, 0);
            }
            let new = count - self.buckets[bucket].min(count);
            self.buckets[bucket] = count;
            if new == 0 {
                continue;
            }
            let us = histogram.value_of(bucket) * 1000.0;
            latency.record_n(us, new);
        }
        latency.sum_us = sum_ns as f64 / 1000.0;
    }
}
