//! A run's seconds into the results database while it is measured (`live_runs`): batched, at
//! most one write a second, so that a page reading the results (`stampede serve`, `lab run
//! --serve`) shows the run live and a lab killed mid-run keeps what it measured. A write that
//! fails is tried again with the next second's; the run never waits on it.

use std::time::{Duration, Instant};

use crate::driver::IntervalReport;
use crate::family::common::measure::LatencySummary;
use stampede_store::{LiveRunStart, LiveSecond, LiveTotals, Store};

/// How often the seconds gathered so far are written.
const WRITE_EVERY: Duration = Duration::from_secs(1);

pub struct LiveRecord<'s> {
    store: &'s mut Store,
    /// The live row; None when it could not be made (the run goes on unrecorded live).
    live: Option<i64>,
    pending: Vec<LiveSecond>,
    totals: LiveTotals,
    last_write: Instant,
    /// The last second recorded (a workload's interval and its second come both).
    last_index: Option<u64>,
    /// The first write that failed, for the lab to say once.
    pub failure: Option<String>,
}

impl<'s> LiveRecord<'s> {
    pub fn begin(store: &'s mut Store, lab: i64, start: &LiveRunStart) -> LiveRecord<'s> {
        let (live, failure) = match store.begin_live_run(lab, start) {
            Ok(id) => (Some(id), None),
            Err(error) => (None, Some(error.into_message())),
        };
        LiveRecord {
            store,
            live,
            pending: Vec::new(),
            totals: LiveTotals::default(),
            last_write: Instant::now(),
            last_index: None,
            failure,
        }
    }

    /// A measured second as the driver merged it: tps, percentiles, failures, lag and pods.
    pub fn interval(&mut self, interval: &IntervalReport) {
        let stats = &interval.stats;
        let latency = LatencySummary::of(&stats.latency);
        let committed = stats.latency.count;
        let second = LiveSecond {
            second: interval.index,
            tps: committed as f64,
            p50_ms: (committed > 0).then_some(latency.p50),
            p99_ms: (committed > 0).then_some(latency.p99),
            failed: stats.failures.total(),
            lag_ms: (stats.lag.count > 0).then(|| stats.lag.sum_us / stats.lag.count as f64 / 1e3),
        };
        if self.totals.pods.len() < interval.by_pod.len() {
            self.totals.pods.resize(interval.by_pod.len(), 0);
        }
        for (total, count) in self.totals.pods.iter_mut().zip(&interval.by_pod) {
            *total += count;
        }
        self.totals.failures += second.failed;
        self.add(second, committed);
    }

    /// A second a workload counts by itself (no interval of the driver's for it): its rate only.
    pub fn second(&mut self, index: u64, tps: f64) {
        if self.last_index.is_some_and(|last| last >= index) {
            return;
        }
        let second = LiveSecond {
            second: index,
            tps,
            p50_ms: None,
            p99_ms: None,
            failed: 0,
            lag_ms: None,
        };
        self.add(second, tps.round() as u64);
    }

    fn add(&mut self, second: LiveSecond, committed: u64) {
        self.last_index = Some(second.second);
        self.totals.seconds = self.totals.seconds.max(second.second + 1);
        self.totals.transactions += committed;
        self.pending.push(second);
        if self.last_write.elapsed() >= WRITE_EVERY {
            self.write();
        }
    }

    /// Writes what is pending; kept for the next try when the write fails.
    fn write(&mut self) {
        let Some(live) = self.live else {
            return;
        };
        self.last_write = Instant::now();
        match self
            .store
            .append_live_seconds(live, &self.pending, &self.totals)
        {
            Ok(()) => self.pending.clear(),
            Err(error) => {
                self.failure.get_or_insert(error.into_message());
            }
        }
    }
}

impl Drop for LiveRecord<'_> {
    /// The last seconds land before the run's own row replaces them (or the lab stops).
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            self.write();
        }
    }
}
