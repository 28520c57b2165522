//! sysbench's report: the intermediate `[ 5s ] thds: ...` lines and the final SQL / general /
//! latency statistics in sysbench 1.0's layout, with p50, p95, p99 and max added, and JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::driver::{IntervalReport, LatencyStats, RunResult, ScriptStats};
use crate::workload::sysbench::catalog::{GeneratedTest, QueryMix};

/// The numbers of a finished run.
#[derive(Debug, Serialize)]
pub struct SysbenchReport {
    pub test: String,
    pub threads: u32,
    pub time_s: f64,
    pub events: u64,
    pub tps: f64,
    pub qps: f64,
    pub queries: QueryCounts,
    /// Events that failed (and were not retried to success), and retries of deadlocks and
    /// serialization failures: sysbench's "ignored errors".
    pub errors: u64,
    pub retries: u64,
    pub reconnects: u64,
    pub latency_ms: LatencyMs,
}

#[derive(Debug, Serialize)]
pub struct QueryCounts {
    pub read: u64,
    pub write: u64,
    pub other: u64,
    pub total: u64,
}

#[derive(Debug, Serialize)]
pub struct LatencyMs {
    pub min: f64,
    pub avg: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub sum: f64,
}

fn latency_ms(stats: &LatencyStats) -> LatencyMs {
    let ms = |us: f64| us / 1000.0;
    let min = if stats.count == 0 {
        0.0
    } else {
        stats.histogram.min() as f64
    };
    LatencyMs {
        min: ms(min),
        avg: ms(stats.mean_us()),
        p50: ms(stats.percentile_us(50.0)),
        p95: ms(stats.percentile_us(95.0)),
        p99: ms(stats.percentile_us(99.0)),
        max: ms(stats.max_us),
        sum: ms(stats.sum_us),
    }
}

impl SysbenchReport {
    pub fn new(test: &GeneratedTest, threads: u32, result: &RunResult) -> SysbenchReport {
        let total = &result.total;
        let events = total.latency.count;
        let time_s = result.bench_duration.as_secs_f64().max(f64::MIN_POSITIVE);
        let mix = test.queries;
        let queries = QueryCounts {
            read: events * mix.reads,
            write: events * mix.writes,
            other: events * mix.other,
            total: events * mix.total(),
        };
        SysbenchReport {
            test: test.name.clone(),
            threads,
            time_s,
            events,
            tps: events as f64 / time_s,
            qps: queries.total as f64 / time_s,
            queries,
            errors: total.failures.total(),
            retries: total.retries,
            reconnects: result.reconnections,
            latency_ms: latency_ms(&total.latency),
        }
    }
}

/// Sums the driver's one-second intervals into sysbench's `--report-interval` lines.
pub struct IntervalLine {
    every: u64,
    /// Seconds the run lasts when it is timed: the driver's last, partial interval is left out.
    duration_s: Option<u64>,
    threads: u32,
    mix: QueryMix,
    percentile: f64,
    pending: ScriptStats,
    seconds: u64,
}

impl IntervalLine {
    pub fn new(
        every: u64,
        duration_s: Option<u64>,
        threads: u32,
        mix: QueryMix,
        percentile: f64,
    ) -> IntervalLine {
        IntervalLine {
            every,
            duration_s,
            threads,
            mix,
            percentile,
            pending: ScriptStats::default(),
            seconds: 0,
        }
    }

    /// The line to print once `every` seconds have been added.
    pub fn add(&mut self, interval: &IntervalReport) -> Option<String> {
        if self.every == 0 || self.duration_s.is_some_and(|d| interval.index >= d) {
            return None;
        }
        self.pending.merge(&interval.stats);
        self.seconds = interval.index + 1;
        if !self.seconds.is_multiple_of(self.every) {
            return None;
        }
        let stats = std::mem::take(&mut self.pending);
        let span = self.every as f64;
        let events = stats.latency.count as f64;
        let per_second = |n: u64| events * n as f64 / span;
        let percentile = if self.percentile > 0.0 {
            stats.latency.percentile_us(self.percentile) / 1000.0
        } else {
            0.0
        };
        Some(format!(
            "[ {}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{}%): {:.2} err/s: {:.2} reconn/s: 0.00",
            self.seconds,
            self.threads,
            events / span,
            per_second(self.mix.total()),
            per_second(self.mix.reads),
            per_second(self.mix.writes),
            per_second(self.mix.other),
            self.percentile,
            percentile,
            (stats.failures.total() + stats.retries) as f64 / span
        ))
    }
}

/// sysbench's final report.
pub fn text(
    report: &SysbenchReport,
    percentile: f64,
    histogram: bool,
    result: &RunResult,
) -> String {
    let r = report;
    let rate = |n: u64| n as f64 / r.time_s;
    let mut out = String::new();
    if histogram {
        out += &latency_histogram(&result.total.latency);
    }
    let _ = writeln!(out, "\nSQL statistics:\n    queries performed:");
    for (label, value) in [
        ("read:", r.queries.read),
        ("write:", r.queries.write),
        ("other:", r.queries.other),
        ("total:", r.queries.total),
    ] {
        let _ = writeln!(out, "        {label:<33}{value}");
    }
    let ignored = r.errors + r.retries;
    for (label, value) in [
        ("transactions:", r.events),
        ("queries:", r.queries.total),
        ("ignored errors:", ignored),
        ("reconnects:", r.reconnects),
    ] {
        let _ = writeln!(
            out,
            "    {label:<37}{:<6} ({:.2} per sec.)",
            value,
            rate(value)
        );
    }
    let _ = writeln!(
        out,
        "\nGeneral statistics:\n    total time:                          {:.4}s\n    total number of events:              {}\n",
        r.time_s, r.events
    );
    let l = &r.latency_ms;
    let _ = writeln!(out, "Latency (ms):");
    let mut lines = vec![
        ("min:".to_string(), l.min),
        ("avg:".into(), l.avg),
        ("max:".into(), l.max),
    ];
    if percentile > 0.0 {
        let value = result.total.latency.percentile_us(percentile) / 1000.0;
        lines.push((format!("{}th percentile:", percentile), value));
    }
    lines.push(("sum:".into(), l.sum));
    for (label, value) in &lines {
        let _ = writeln!(out, "         {label:<24}{value:>16.2}");
    }
    let _ = writeln!(
        out,
        "\nPercentiles (ms): p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        l.p50, l.p95, l.p99, l.max
    );
    out
}

/// sysbench's `--histogram`: counts per latency bucket (buckets growing by 10%), with bars.
fn latency_histogram(stats: &LatencyStats) -> String {
    let mut out = String::from(
        "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n",
    );
    let buckets: Vec<(f64, u64)> = stats
        .histogram
        .iter_log(1, 1.1)
        .filter(|v| v.count_since_last_iteration() > 0)
        .map(|v| {
            (
                v.value_iterated_to() as f64 / 1000.0,
                v.count_since_last_iteration(),
            )
        })
        .collect();
    let most = buckets.iter().map(|(_, c)| *c).max().unwrap_or(1);
    for (value, count) in buckets {
        let bar = "*".repeat(((count * 40) / most).max(1) as usize);
        let _ = writeln!(out, "{value:>12.3} |{bar:<40} {count}");
    }
    out + "\n"
}

pub fn json(report: &SysbenchReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}
