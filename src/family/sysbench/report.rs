//! sysbench's report: the intermediate `[ 5s ] thds: ...` lines and the final SQL / general /
//! latency statistics in sysbench 1.0's layout, with p50, p95, p99 and max added, and JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::driver::{IntervalReport, LatencyStats, RunResult, ScriptStats};
use crate::family::common::measure::{ClientFairness, LatencySummary};
use crate::family::sysbench::catalog::{GeneratedTest, QueryMix};
use crate::family::sysbench::layout::{self, Stat, Timer};
use crate::family::sysbench::microbench::{Group, MicroTest};
use crate::family::sysbench::oltp_options::OltpOptions;
use stampede_stats::{median, range};

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
    /// Events per thread (sysbench's threads are its clients) and their spread.
    pub fairness: Option<ClientFairness>,
    /// A run spread over Kubernetes pods (`--pods`): each pod's share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<crate::pods::SpreadSummary>,
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
    let min_us = if stats.count == 0 {
        0.0
    } else {
        stats.histogram.min() as f64
    };
    let summary = LatencySummary::of(stats);
    LatencyMs {
        min: min_us / 1000.0,
        avg: summary.avg,
        p50: summary.p50,
        p95: summary.p95,
        p99: summary.p99,
        max: summary.max,
        sum: stats.sum_us / 1000.0,
    }
}

impl SysbenchReport {
    pub fn new(test: &GeneratedTest, threads: u32, result: &RunResult) -> SysbenchReport {
        let total = &result.total;
        let events = total.latency.count;
        let time_s = result.bench_duration.as_secs_f64().max(f64::MIN_POSITIVE);
        let mix = test.queries.of_events(events, total.statements);
        let queries = QueryCounts {
            read: mix.reads,
            write: mix.writes,
            other: mix.other,
            total: mix.total(),
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
            reconnects: total.reconnects,
            latency_ms: latency_ms(&total.latency),
            fairness: ClientFairness::of(&result.client_transactions),
            spread: None,
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
        let queries = self.mix.of_events(stats.latency.count, stats.statements);
        let per_second = |n: u64| n as f64 / span;
        let percentile = if self.percentile > 0.0 {
            stats.latency.percentile_us(self.percentile) / 1000.0
        } else {
            0.0
        };
        Some(format!(
            "[ {}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{}%): {:.2} err/s: {:.2} reconn/s: {:.2}",
            self.seconds,
            self.threads,
            events / span,
            per_second(queries.total()),
            per_second(queries.reads),
            per_second(queries.writes),
            per_second(queries.other),
            self.percentile,
            percentile,
            (stats.failures.total() + stats.retries) as f64 / span,
            stats.reconnects as f64 / span
        ))
    }
}

/// sysbench's final report (stampede's additions follow it: `additions`).
pub fn text(
    report: &SysbenchReport,
    percentile: f64,
    histogram: bool,
    result: &RunResult,
) -> String {
    let r = report;
    let l = &r.latency_ms;
    let stat = Stat {
        time_total: r.time_s,
        time_interval: r.time_s,
        events: r.events,
        reads: r.queries.read,
        writes: r.queries.write,
        other: r.queries.other,
        errors: r.errors + r.retries,
        reconnects: r.reconnects,
        latency_pct: result.total.latency.percentile_us(percentile) / 1e6,
        latency_min: l.min / 1000.0,
        latency_avg: l.avg / 1000.0,
        latency_max: l.max / 1000.0,
        latency_sum: l.sum / 1000.0,
        threads_running: 0,
    };
    let timers: Vec<Timer> = result
        .client_transactions
        .iter()
        .zip(&result.client_busy_us)
        .map(|(&events, &busy_us)| Timer {
            events,
            sum_ns: (busy_us * 1000.0) as u64,
            ..Timer::default()
        })
        .collect();
    let mut out = String::new();
    if histogram {
        out += &latency_histogram(&result.total.latency);
    }
    out += &layout::sql_statistics(&stat);
    out += &layout::general_statistics(&stat, &timers, percentile.round() as u32);
    out
}

/// stampede's lines after sysbench's report: percentiles, how evenly the threads were served,
/// and the seed the random numbers were drawn from.
pub fn additions(report: &SysbenchReport, seed: u64) -> String {
    let l = &report.latency_ms;
    let mut out = format!(
        "Percentiles (ms): p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}\n",
        l.p50, l.p95, l.p99, l.max
    );
    if let Some(fairness) = &report.fairness {
        let _ = writeln!(out, "{}", fairness.summary_line());
    }
    let _ = writeln!(out, "random numbers from seed {seed}");
    for line in report
        .spread
        .iter()
        .flat_map(crate::pods::summary::spread_lines)
    {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// sysbench's `--histogram`: counts per latency bucket (each about 1.8% wider than the one
/// before, as sysbench's 1024 buckets from 0.001 ms to 100 s), with bars.
fn latency_histogram(stats: &LatencyStats) -> String {
    let mut out = String::from(
        "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n",
    );
    let buckets: Vec<(f64, u64)> = stats
        .histogram
        .iter_log(1, 1.018)
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
    out + " \n"
}

pub fn json(report: &SysbenchReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}

pub const SUITE_HEADER: &str =
    "test                                  qps or rows/s        tps    p50 ms    p95 ms    p99 ms    max ms  errors";

/// One microbenchmark's result: what Callaghan's tables compare is `score` — QPS, or for scan
/// the rows scanned per second.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct SuiteLine {
    pub test: String,
    pub group: String,
    pub qps: f64,
    pub tps: f64,
    pub events: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub rows_per_s: Option<f64>,
    pub score: f64,
}

impl SuiteLine {
    pub fn new(
        test: &MicroTest,
        generated: &GeneratedTest,
        threads: u32,
        options: &OltpOptions,
        result: &RunResult,
    ) -> SuiteLine {
        let report = SysbenchReport::new(generated, threads, result);
        let rows_per_s =
            (generated.name == "oltp_scan").then_some(report.tps * options.table_size as f64);
        SuiteLine {
            test: test.label(),
            group: test.group().name().to_string(),
            qps: report.qps,
            tps: report.tps,
            events: report.events,
            errors: report.errors + report.retries,
            p50_ms: report.latency_ms.p50,
            p95_ms: report.latency_ms.p95,
            p99_ms: report.latency_ms.p99,
            max_ms: report.latency_ms.max,
            score: rows_per_s.unwrap_or(report.qps),
            rows_per_s,
        }
    }

    pub fn text(&self) -> String {
        let unit = if self.rows_per_s.is_some() {
            " rows/s"
        } else {
            ""
        };
        format!(
            "{:<36}{:>15.0}{unit:<7}{:>10.1}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>8}",
            self.test,
            self.score,
            self.tps,
            self.p50_ms,
            self.p95_ms,
            self.p99_ms,
            self.max_ms,
            self.errors
        )
    }
}

#[derive(Debug, Serialize, serde::Deserialize)]
pub struct SuiteFile {
    pub suite: String,
    pub tables: u32,
    pub table_size: u32,
    pub threads: u32,
    pub tests: Vec<SuiteLine>,
}

pub fn suite_json(results: &[SuiteLine], base: &OltpOptions, threads: u32) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        suite: &'a str,
        tables: u32,
        table_size: u32,
        threads: u32,
        tests: &'a [SuiteLine],
    }
    let out = Out {
        suite: "microbench",
        tables: base.tables,
        table_size: base.table_size,
        threads,
        tests: results,
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

/// A suite's JSON with the name it is shown under (its file name).
pub struct NamedSuite {
    pub name: String,
    pub suite: SuiteFile,
}

pub fn read_suite(path: &std::path::Path) -> Result<NamedSuite, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let suite: SuiteFile = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not the --json of `stampede sysbench run --suite`: {e}",
            path.display()
        )
    })?;
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok(NamedSuite { name, suite })
}

/// Per test, each other suite's score over the first's; then per group min / median / max /
/// mean of those ratios — the layout of Callaghan's `qps.rel` tables.
pub fn relative_table(suites: &[NamedSuite]) -> String {
    let Some((base, others)) = suites.split_first() else {
        return String::new();
    };
    let mut out = format!("Relative to: {}\n{:<36}", base.name, "test");
    for other in others {
        let _ = write!(out, "{:>14}", other.name);
    }
    out.push('\n');
    let mut ratios: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for test in &base.suite.tests {
        let row: Vec<Option<f64>> = others
            .iter()
            .map(|o| {
                let other = o.suite.tests.iter().find(|t| t.test == test.test)?;
                (test.score > 0.0).then(|| other.score / test.score)
            })
            .collect();
        let _ = write!(out, "{:<36}", test.test);
        for ratio in &row {
            let _ = write!(
                out,
                "{:>14}",
                ratio.map_or("-".into(), |r| format!("{r:.2}"))
            );
        }
        out.push('\n');
        ratios.push((test.group.clone(), row));
    }
    out += "\ngroup                          statistic";
    for other in others {
        let _ = write!(out, "{:>14}", other.name);
    }
    out.push('\n');
    for group in [
        Group::Point,
        Group::RangeNoAggregation,
        Group::RangeAggregation,
        Group::Write,
    ] {
        let columns: Vec<Vec<f64>> = (0..others.len())
            .map(|i| {
                ratios
                    .iter()
                    .filter(|(g, _)| g == group.name())
                    .filter_map(|(_, row)| row[i])
                    .collect()
            })
            .collect();
        for (statistic, of) in STATISTICS {
            let _ = write!(out, "{:<31}{statistic:<9}", group.name());
            for values in &columns {
                let _ = write!(
                    out,
                    "{:>14}",
                    of(values).map_or("-".into(), |v| format!("{v:.2}"))
                );
            }
            out.push('\n');
        }
    }
    out
}

type Statistic = fn(&[f64]) -> Option<f64>;

const STATISTICS: [(&str, Statistic); 4] = [
    ("min", |v| range(v).map(|r| r.0)),
    ("median", median),
    ("max", |v| range(v).map(|r| r.1)),
    ("mean", |v| {
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }),
];
