//! What a run counts, per worker thread as sysbench counts it: events and their latency,
//! queries by class (read: rows came back; write: rows changed; other), ignored errors and
//! reconnects; latency histograms with sysbench's log-scale buckets; and sysbench's reports of
//! them (the intermediate line, the final statistics, the threads' fairness).

use std::fmt::Write as _;
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

const COUNTERS: usize = 6;

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

    fn value_of(&self, bucket: usize) -> f64 {
        self.low * (bucket as f64 / self.per_log).exp()
    }

    pub fn update(&mut self, value: f64) {
        let bucket = self.bucket(value);
        self.counts[bucket] += 1;
        self.total += 1;
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
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

/// One worker's event timer: events, their summed, shortest and longest latency.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timer {
    pub events: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Timer {
    fn add(&mut self, ns: u64) {
        self.min_ns = if self.events == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.events += 1;
        self.sum_ns += ns;
    }

    fn merge(&mut self, other: &Timer) {
        if other.events == 0 {
            return;
        }
        self.min_ns = if self.events == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.events += other.events;
        self.sum_ns += other.sum_ns;
    }
}

struct Latency {
    timer: Timer,
    cumulative: LogHistogram,
    interval: LogHistogram,
}

struct ThreadStats {
    counters: [AtomicU64; COUNTERS],
    /// What the last intermediate report had seen.
    reported: [AtomicU64; COUNTERS],
    latency: Mutex<Latency>,
}

/// The counters of a run's worker threads.
pub struct Stats {
    threads: Vec<ThreadStats>,
}

/// One report's numbers: sysbench's `sb_stat_t`, as its hooks receive it.
#[derive(Debug, Clone, Default)]
pub struct Stat {
    pub threads_running: u32,
    pub time_interval: f64,
    pub time_total: f64,
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
    pub latency_pct: f64,
    pub latency_min: f64,
    pub latency_avg: f64,
    pub latency_max: f64,
    pub latency_sum: f64,
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
            stats.counters[counter as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An event ended after `ns` nanoseconds.
    pub fn event(&self, thread: usize, ns: u64) {
        let Some(stats) = self.threads.get(thread) else {
            return;
        };
        stats.counters[Counter::Events as usize].fetch_add(1, Ordering::Relaxed);
        let mut latency = stats.latency.lock().expect("latency");
        latency.timer.add(ns);
        let ms = ns as f64 / 1e6;
        latency.cumulative.update(ms);
        latency.interval.update(ms);
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
        let counts = self.totals(true);
        let mut histogram = LogHistogram::latency();
        for stats in &self.threads {
            let mut latency = stats.latency.lock().expect("latency");
            histogram.merge(&latency.interval);
            latency.interval.clear();
        }
        let mut stat = Stat::of_counts(&counts);
        stat.latency_pct = histogram.percentile(percentile) / 1000.0;
        stat
    }

    /// The numbers of the whole run (or since the last checkpoint when `reset`).
    pub fn cumulative(&self, percentile: f64, reset: bool) -> (Stat, Vec<Timer>, LogHistogram) {
        let counts = self.totals(false);
        let mut histogram = LogHistogram::latency();
        let mut timers = Vec::with_capacity(self.threads.len());
        for stats in &self.threads {
            let mut latency = stats.latency.lock().expect("latency");
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
        let mut total = Timer::default();
        timers.iter().for_each(|t| total.merge(t));
        let mut stat = Stat::of_counts(&counts);
        stat.latency_pct = histogram.percentile(percentile) / 1000.0;
        stat.latency_min = total.min_ns as f64 / 1e9;
        stat.latency_max = total.max_ns as f64 / 1e9;
        stat.latency_sum = total.sum_ns as f64 / 1e9;
        stat.latency_avg = if total.events > 0 {
            stat.latency_sum / total.events as f64
        } else {
            0.0
        };
        (stat, timers, histogram)
    }

    /// Committed events per thread (stampede's fairness).
    pub fn events_per_thread(&self) -> Vec<u64> {
        self.threads
            .iter()
            .map(|s| s.counters[Counter::Events as usize].load(Ordering::Relaxed))
            .collect()
    }
}

impl Stat {
    fn of_counts(counts: &[u64; COUNTERS]) -> Stat {
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

/// sysbench's default intermediate line: with SQL statistics when a database driver was used.
pub fn intermediate_line(stat: &Stat, percentile: u32, sql: bool) -> String {
    let seconds = stat.time_interval.max(f64::MIN_POSITIVE);
    if !sql {
        return format!(
            "[ {:.0}s ] thds: {} eps: {:.2} lat (ms,{percentile}%): {:.2}",
            stat.time_total,
            stat.threads_running,
            stat.events as f64 / seconds,
            stat.latency_pct * 1000.0
        );
    }
    let per_second = |n: u64| n as f64 / seconds;
    format!(
        "[ {:.0}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{percentile}%): {:.2} err/s: {:.2} reconn/s: {:.2}",
        stat.time_total,
        stat.threads_running,
        per_second(stat.events),
        per_second(stat.reads + stat.writes + stat.other),
        per_second(stat.reads),
        per_second(stat.writes),
        per_second(stat.other),
        stat.latency_pct * 1000.0,
        per_second(stat.errors),
        per_second(stat.reconnects)
    )
}

/// sysbench's "SQL statistics" block.
pub fn sql_statistics(stat: &Stat) -> String {
    let seconds = stat.time_interval.max(f64::MIN_POSITIVE);
    let queries = stat.reads + stat.writes + stat.other;
    let mut out = String::from("SQL statistics:\n    queries performed:\n");
    for (label, value) in [
        ("read:", stat.reads),
        ("write:", stat.writes),
        ("other:", stat.other),
        ("total:", queries),
    ] {
        let _ = writeln!(out, "        {label:<33}{value}");
    }
    for (label, value) in [
        ("transactions:", stat.events),
        ("queries:", queries),
        ("ignored errors:", stat.errors),
        ("reconnects:", stat.reconnects),
    ] {
        let _ = writeln!(
            out,
            "    {label:<37}{value:<6} ({:.2} per sec.)",
            value as f64 / seconds
        );
    }
    out
}

/// sysbench's general statistics, latency and threads' fairness, after an empty line.
pub fn general_statistics(stat: &Stat, timers: &[Timer], percentile: u32) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "\nGeneral statistics:\n    total time:                          {:.4}s\n    total number of events:              {}\n\n",
        stat.time_total, stat.events
    );
    out.push_str("Latency (ms):\n");
    let _ = writeln!(out, "         min: {:>39.2}", stat.latency_min * 1000.0);
    let _ = writeln!(out, "         avg: {:>39.2}", stat.latency_avg * 1000.0);
    let _ = writeln!(out, "         max: {:>39.2}", stat.latency_max * 1000.0);
    if percentile > 0 {
        let _ = writeln!(
            out,
            "        {percentile:>3}th percentile: {:>27.2}",
            stat.latency_pct * 1000.0
        );
    } else {
        out.push_str("         percentile stats:               disabled\n");
    }
    let _ = writeln!(out, "         sum: {:>39.2}\n", stat.latency_sum * 1000.0);
    let threads = timers.len().max(1) as f64;
    let events_avg = timers.iter().map(|t| t.events).sum::<u64>() as f64 / threads;
    let time_avg = stat.latency_sum / threads;
    let spread = |value: &dyn Fn(&Timer) -> f64, avg: f64| {
        (timers.iter().map(|t| (value(t) - avg).powi(2)).sum::<f64>() / threads).sqrt()
    };
    let events_stddev = spread(&|t| t.events as f64, events_avg);
    let time_stddev = spread(&|t| t.sum_ns as f64 / 1e9, time_avg);
    let _ = write!(
        out,
        "Threads fairness:\n    events (avg/stddev):           {events_avg:.4}/{events_stddev:3.2}\n    execution time (avg/stddev):   {time_avg:.4}/{time_stddev:3.2}\n\n"
    );
    out
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
    fn fairness_is_the_spread_of_events_and_time() {
        let timers = [
            Timer {
                events: 3,
                sum_ns: 3_000_000_000,
                min_ns: 1,
                max_ns: 1,
            },
            Timer {
                events: 1,
                sum_ns: 1_000_000_000,
                min_ns: 1,
                max_ns: 1,
            },
        ];
        let stat = Stat {
            latency_sum: 4.0,
            ..Stat::default()
        };
        let text = general_statistics(&stat, &timers, 95);
        assert!(
            text.contains("events (avg/stddev):           2.0000/1.00\n"),
            "{text}"
        );
        assert!(
            text.contains("execution time (avg/stddev):   2.0000/1.00\n"),
            "{text}"
        );
    }
}
