//! What a run counts, per worker thread as sysbench counts it: events and their latency,
//! queries by class (read: rows came back; write: rows changed; other), ignored errors and
//! reconnects; latency histograms with sysbench's log-scale buckets; and sysbench's reports of
//! them (the intermediate line, the final statistics, the threads' fairness).

use std::fmt::Write as _;

use crate::family::sysbench::layout::{Stat, Timer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Events = 0,
    Reads = 1,
    Writes = 2,
    Other = 3,
    Errors = 4,
    Reconnects = 5,
}

pub const COUNTERS: usize = 6;

/// sysbench's latency histogram: 1024 buckets on a log scale from 0.001 to 100,000 ms (each
/// about 1.8% wider than the one before).
#[derive(Debug, Clone)]
pub struct LogHistogram {
    counts: Vec<u64>,
    low: f64,
    high: f64,
    /// Buckets per unit of ln(ms).
    per_log: f64,
    total: u64,
}

impl LogHistogram {
    pub fn new(size: usize, low: f64, high: f64) -> LogHistogram {
        let size = size.max(1);
        let low = if low > 0.0 { low } else { 0.001 };
        let high = if high > low { high } else { low * 10.0 };
        LogHistogram {
            counts: vec![0; size],
            low,
            high,
            per_log: (size as f64 - 1.0) / (high / low).ln(),
            total: 0,
        }
    }

    pub fn latency() -> LogHistogram {
        LogHistogram::new(1024, 0.001, 100_000.0)
    }

    fn bucket(&self, value: f64) -> usize {
        let clamped = value.clamp(self.low, self.high);
        let index = ((clamped / self.low).ln() * self.per_log).round() as usize;
        index.min(self.counts.len() - 1)
    }

    pub fn value_of(&self, bucket: usize) -> f64 {
        self.low * (bucket as f64 / self.per_log).exp()
    }

    pub fn update(&mut self, value: f64) {
        let bucket = self.bucket(value);
        self.count(bucket);
    }

    fn count(&mut self, bucket: usize) {
        self.counts[bucket] += 1;
        self.total += 1;
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }

    /// The non-empty buckets, (bucket, count): a histogram's compact form between pods.
    pub fn buckets(&self) -> Vec<(usize, u64)> {
        let counted = self.counts.iter().enumerate().filter(|(_, c)| **c > 0);
        counted.map(|(bucket, count)| (bucket, *count)).collect()
    }

    /// Adds counts in `buckets`' form (buckets out of range are left out).
    pub fn add_buckets(&mut self, buckets: &[(usize, u64)]) {
        for &(bucket, count) in buckets {
            if let Some(mine) = self.counts.get_mut(bucket) {
                *mine += count;
                self.total += count;
            }
        }
    }

    pub fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.total = 0;
    }

    /// The value below which `percentile`% of the updates fall (the bucket's value), 0 when
    /// empty.
    pub fn percentile(&self, percentile: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let wanted = ((self.total as f64) * percentile / 100.0).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                return self.value_of(bucket);
            }
        }
        self.high
    }

    /// sysbench's histogram print: a line per non-empty bucket with a bar of up to 40 stars.
    pub fn text(&self) -> String {
        let mut out =
            String::from("       value  ------------- distribution ------------- count\n");
        let most = self.counts.iter().copied().max().unwrap_or(0).max(1);
        for (bucket, &count) in self.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let stars = ((count * 40) / most).max(1) as usize;
            let _ = writeln!(
                out,
                "{:>12.3} |{:<40} {count}",
                self.value_of(bucket),
                "*".repeat(stars)
            );
        }
        out
    }
}

struct Latency {
    timer: Timer,
    cumulative: LogHistogram,
    interval: LogHistogram,
}

/// One worker's: aligned to its own cache lines, as every worker bumps its counters per
/// statement and per event, and neighbours sharing a line would pass it back and forth.
#[repr(align(128))]
struct ThreadStats {
    counters: [AtomicU64; COUNTERS],
    /// What the last intermediate report had seen.
    reported: [AtomicU64; COUNTERS],
    latency: Mutex<Latency>,
}

/// Adds one to a counter only its worker writes (others read it): a load and a store, not a
/// locked read-modify-write per statement.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// The counters of a run's worker threads.
pub struct Stats {
    threads: Vec<ThreadStats>,
}

impl Stats {
    pub fn new(threads: usize) -> Stats {
        Stats {
            threads: (0..threads.max(1))
                .map(|_| ThreadStats {
                    counters: Default::default(),
                    reported: Default::default(),
                    latency: Mutex::new(Latency {
                        timer: Timer::default(),
                        cumulative: LogHistogram::latency(),
                        interval: LogHistogram::latency(),
                    }),
                })
                .collect(),
        }
    }

    pub fn count(&self, thread: usize, counter: Counter) {
        if let Some(stats) = self.threads.get(thread) {
            bump(&stats.counters[counter as usize]);
        }
    }

    /// An event ended after `ns` nanoseconds.
    pub fn event(&self, thread: usize, ns: u64) {
        let Some(stats) = self.threads.get(thread) else {
            return;
        };
        bump(&stats.counters[Counter::Events as usize]);
        let mut latency = stats
            .latency
            .lock()
            .expect("no thread panics holding this lock");
        latency.timer.add(ns);
        // Both histograms have the same buckets: the logarithm is taken once.
        let bucket = latency.cumulative.bucket(ns as f64 / 1e6);
        latency.cumulative.count(bucket);
        latency.interval.count(bucket);
    }

    fn totals(&self, since_report: bool) -> [u64; COUNTERS] {
        let mut sums = [0; COUNTERS];
        for stats in &self.threads {
            for (i, sum) in sums.iter_mut().enumerate() {
                let now = stats.counters[i].load(Ordering::Relaxed);
                *sum += if since_report {
                    now - stats.reported[i].swap(now, Ordering::Relaxed)
                } else {
                    now
                };
            }
        }
        sums
    }

    /// The numbers since the last intermediate report, the interval's histogram restarted.
    pub fn intermediate(&self, percentile: f64) -> Stat {
        let (counts, histogram) = self.intermediate_counts();
        let mut stat = Stat::of_counts(&counts);
        stat.latency_pct = histogram.percentile(percentile) / 1000.0;
        stat
    }

    /// `intermediate`'s counters and latency histogram, as they are.
    pub fn intermediate_counts(&self) -> ([u64; COUNTERS], LogHistogram) {
        let counts = self.totals(true);
        let mut histogram = LogHistogram::latency();
        for stats in &self.threads {
            let mut latency = stats
                .latency
                .lock()
                .expect("no thread panics holding this lock");
            histogram.merge(&latency.interval);
            latency.interval.clear();
        }
        (counts, histogram)
    }

    /// The numbers of the whole run (or since the last checkpoint when `reset`).
    pub fn cumulative(&self, percentile: f64, reset: bool) -> (Stat, Vec<Timer>, LogHistogram) {
        let (counts, timers, histogram) = self.cumulative_counts(reset);
        let stat = Stat::of_run(&counts, &timers, &histogram, percentile);
        (stat, timers, histogram)
    }

    /// `cumulative`'s counters, each thread's timer and the latency histogram, as they are.
    pub fn cumulative_counts(&self, reset: bool) -> ([u64; COUNTERS], Vec<Timer>, LogHistogram) {
        let counts = self.totals(false);
        let mut histogram = LogHistogram::latency();
        let mut timers = Vec::with_capacity(self.threads.len());
        for stats in &self.threads {
            let mut latency = stats
                .latency
                .lock()
                .expect("no thread panics holding this lock");
            histogram.merge(&latency.cumulative);
            timers.push(latency.timer);
            if reset {
                latency.cumulative.clear();
                latency.timer = Timer::default();
            }
        }
        if reset {
            for stats in &self.threads {
                for counter in &stats.counters {
                    counter.store(0, Ordering::Relaxed);
                }
                for counter in &stats.reported {
                    counter.store(0, Ordering::Relaxed);
                }
            }
        }
        (counts, timers, histogram)
    }
}

impl Stat {
    /// A whole run's (or a checkpoint's) numbers: counters, latency from the threads' timers,
    /// the percentile from the histogram.
    pub fn of_run(
        counts: &[u64; COUNTERS],
        timers: &[Timer],
        histogram: &LogHistogram,
        percentile: f64,
    ) -> Stat {
        let mut total = Timer::default();
        timers.iter().for_each(|t| total.merge(t));
        let mut stat = Stat::of_counts(counts);
        stat.latency_pct = histogram.percentile(percentile) / 1000.0;
        stat.latency_min = total.min_ns as f64 / 1e9;
        stat.latency_max = total.max_ns as f64 / 1e9;
        stat.latency_sum = total.sum_ns as f64 / 1e9;
        stat.latency_avg = if total.events > 0 {
            stat.latency_sum / total.events as f64
        } else {
            0.0
        };
        stat
    }

    pub fn of_counts(counts: &[u64; COUNTERS]) -> Stat {
        Stat {
            events: counts[Counter::Events as usize],
            reads: counts[Counter::Reads as usize],
            writes: counts[Counter::Writes as usize],
            other: counts[Counter::Other as usize],
            errors: counts[Counter::Errors as usize],
            reconnects: counts[Counter::Reconnects as usize],
            ..Stat::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_about_two_percent_wide_and_percentiles_fall_in_them() {
        let mut histogram = LogHistogram::latency();
        for ms in 1..=100 {
            histogram.update(ms as f64);
        }
        let p95 = histogram.percentile(95.0);
        assert!((p95 / 95.0 - 1.0).abs() < 0.02, "{p95}");
        let width = histogram.value_of(501) / histogram.value_of(500);
        assert!((width - 1.018).abs() < 0.001, "{width}");
    }

    #[test]
    fn a_histogram_sent_as_its_buckets_merges_as_the_union() {
        let (mut a, mut b, mut union) = (
            LogHistogram::latency(),
            LogHistogram::latency(),
            LogHistogram::latency(),
        );
        for ms in 1..=60 {
            a.update(ms as f64);
            union.update(ms as f64);
        }
        for ms in 40..=140 {
            b.update(ms as f64 * 1.5);
            union.update(ms as f64 * 1.5);
        }
        let mut merged = LogHistogram::latency();
        merged.add_buckets(&a.buckets());
        merged.add_buckets(&b.buckets());
        assert_eq!(merged.buckets(), union.buckets());
        for p in [1.0, 50.0, 95.0, 99.0, 100.0] {
            assert_eq!(merged.percentile(p), union.percentile(p));
        }
    }
}
