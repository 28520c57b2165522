//! A step's result over all its clients, as stampede reports it: rates, the writer's rate against
//! its target, CPU and I/O per operation, response-time percentiles, and the insert rate second
//! by second with its coefficient of variation and the longest stall — in the terminal, and
//! whole in `--json`.

use std::time::Duration;

use serde::Serialize;

use super::instance::{InstanceResult, OpRecord};
use super::seconds::Second;
use crate::family::common::measure::LatencySummary;
use crate::family::common::server_work::ServerWork;

/// A writer whose rate is below this share of its target fell behind.
pub const WRITER_SHORTFALL: f64 = 0.99;

#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub step: String,
    pub clients: u64,
    /// From the clients' start (connected) to the last one's end (l.x: its CREATE INDEX
    /// included).
    pub seconds: f64,
    pub inserted: u64,
    pub deleted: u64,
    pub queries: u64,
    /// Rows inserted a second; l.x's counts the rows it indexed too, as his reports do.
    pub inserts_per_s: f64,
    pub deletes_per_s: f64,
    pub queries_per_s: f64,
    /// The query steps' writers: the rows a second they were to insert, over all clients,
    /// and what they inserted a second, each over its own run.
    pub writer_target_per_s: Option<f64>,
    pub writer_per_s: Option<f64>,
    /// Whether the writers' rate fell below 99% of the target.
    pub writer_fell_behind: bool,
    /// What "per operation" counts: a row inserted, or a query (the query steps).
    pub operation: &'static str,
    pub operations: u64,
    pub client_cpu_us_per_op: f64,
    pub server: Option<ServerPerOp>,
    pub insert_ms: LatencySummary,
    pub delete_ms: LatencySummary,
    pub query_ms: LatencySummary,
    /// Each whole second from the step's start, over all clients: rows inserted and deleted,
    /// queries, and each one's p50 and p99 response time.
    pub per_second: Vec<Second>,
    /// The per-second insert rate's (sample) standard deviation over its mean (None under 2
    /// seconds).
    pub inserts_cv: Option<f64>,
    /// The longest any client went without an insert finishing, seconds.
    pub longest_insert_stall_s: f64,
    /// l.x: the longest client's CREATE INDEX, seconds.
    pub index_seconds: Option<f64>,
    /// iibench.py's error counts: inserts, deletes, queries.
    pub retries: [u64; 3],
    pub interrupted: bool,
}

/// The server's CPU and storage I/O per operation, when it runs on this machine.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ServerPerOp {
    pub cpu_us: f64,
    pub read_kb: f64,
    pub written_kb: f64,
}

/// The result of step `name`, whose writers were held to `writer_rate` rows a second each
/// (the query steps); `indexed` is the rows already in the tables when the step builds their
/// indexes (l.x).
pub fn step_result(
    name: &str,
    writer_rate: Option<u64>,
    instances: &[InstanceResult],
    per_second: Vec<Second>,
    indexed: u64,
    client_cpu: Duration,
    server: Option<ServerWork>,
) -> StepResult {
    let seconds = instances
        .iter()
        .map(|r| r.total_seconds)
        .fold(0.0, f64::max);
    let sum = |f: fn(&InstanceResult) -> u64| instances.iter().map(f).sum::<u64>();
    let inserted = sum(|r| r.totals.inserted);
    let deleted = sum(|r| r.totals.deleted);
    let queries = sum(|r| r.totals.queries);
    let merged = |f: fn(&InstanceResult) -> &OpRecord| {
        let mut all = OpRecord::default();
        instances.iter().for_each(|r| all.merge(f(r)));
        all
    };
    let (insert, delete, query) = (
        merged(|r| &r.insert),
        merged(|r| &r.delete),
        merged(|r| &r.query),
    );
    let rate = |n: u64| {
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    };
    let writer_target = writer_rate.map(|r| (r * instances.len() as u64) as f64);
    let writer = writer_target.map(|_| {
        instances
            .iter()
            .filter(|r| r.seconds > 0.0)
            .map(|r| r.totals.inserted as f64 / r.seconds)
            .sum::<f64>()
    });
    let (operation, operations) = if writer_target.is_some() {
        ("query", queries)
    } else {
        ("insert", inserted + indexed)
    };
    let per_op = |total: f64| {
        if operations > 0 {
            total / operations as f64
        } else {
            0.0
        }
    };
    StepResult {
        step: name.to_string(),
        clients: instances.len() as u64,
        seconds,
        inserted,
        deleted,
        queries,
        inserts_per_s: rate(inserted + indexed),
        deletes_per_s: rate(deleted),
        queries_per_s: rate(queries),
        writer_target_per_s: writer_target,
        writer_per_s: writer,
        writer_fell_behind: writer
            .zip(writer_target)
            .is_some_and(|(writer, target)| writer < target * WRITER_SHORTFALL),
        operation,
        operations,
        client_cpu_us_per_op: per_op(client_cpu.as_secs_f64() * 1e6),
        server: server.map(|work| ServerPerOp {
            cpu_us: per_op(work.cpu_s * 1e6),
            read_kb: per_op(work.read_bytes as f64 / 1024.0),
            written_kb: per_op(work.write_bytes as f64 / 1024.0),
        }),
        insert_ms: LatencySummary::of(&insert.latency),
        delete_ms: LatencySummary::of(&delete.latency),
        query_ms: LatencySummary::of(&query.latency),
        inserts_cv: stampede_stats::coefficient_of_variation(
            &per_second
                .iter()
                .map(|s| s.insert.count as f64)
                .collect::<Vec<_>>(),
        ),
        per_second,
        longest_insert_stall_s: insert.longest_gap.as_secs_f64(),
        index_seconds: instances
            .iter()
            .filter_map(|r| r.index_seconds)
            .reduce(f64::max),
        retries: [0, 1, 2].map(|i| instances.iter().map(|r| r.retries[i]).sum()),
        interrupted: instances.iter().any(|r| r.interrupted),
    }
}

/// The lines printed when a step ends.
pub fn step_lines(r: &StepResult) -> String {
    let mut text = format!(
        "{}: {} client(s), {:.1} s: {:.0} inserts/s, {:.0} deletes/s, {:.1} queries/s",
        r.step, r.clients, r.seconds, r.inserts_per_s, r.deletes_per_s, r.queries_per_s
    );
    if let Some((writer, target)) = r.writer_per_s.zip(r.writer_target_per_s) {
        text.push_str(&format!(
            "\n  writer: {writer:.1} rows/s of {target:.0} targeted ({:.1}%){}",
            100.0 * writer / target,
            if r.writer_fell_behind {
                " — FELL BEHIND"
            } else {
                ""
            }
        ));
    }
    if let Some(index) = r.index_seconds {
        text.push_str(&format!("\n  secondary indexes created in {index:.1} s"));
    }
    text.push_str(&format!(
        "\n  per {}: client CPU {:.1} µs",
        r.operation, r.client_cpu_us_per_op
    ));
    if let Some(server) = r.server {
        text.push_str(&format!(
            ", server CPU {:.1} µs, read {:.3} KB, written {:.3} KB",
            server.cpu_us, server.read_kb, server.written_kb
        ));
    }
    for (name, latency) in [
        ("insert", &r.insert_ms),
        ("delete", &r.delete_ms),
        ("query", &r.query_ms),
    ] {
        if latency.count > 0 {
            text.push_str(&format!(
                "\n  {name} ms: p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  ({} statements)",
                latency.p50, latency.p90, latency.p99, latency.p999, latency.max, latency.count
            ));
        }
    }
    let cv = r
        .inserts_cv
        .map_or("-".to_string(), |cv| format!("{cv:.3}"));
    text.push_str(&format!(
        "\n  inserts per second: cv {cv}, longest stall {:.3} s{}{}",
        r.longest_insert_stall_s,
        worst_second_p99(&r.per_second),
        sparkline(&r.per_second)
    ));
    if r.retries.iter().any(|n| *n > 0) {
        text.push_str(&format!(
            "\n  refused statements: {} inserts, {} deletes, {} queries",
            r.retries[0], r.retries[1], r.retries[2]
        ));
    }
    text
}

/// ", worst second's insert p99 12.345 ms (second 17)", when any second has one.
fn worst_second_p99(per_second: &[Second]) -> String {
    per_second
        .iter()
        .filter_map(|s| s.insert.p99_ms.map(|p99| (p99, s.second)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(String::new(), |(p99, second)| {
            format!(", worst second's insert p99 {p99:.3} ms (second {second})")
        })
}

/// The insert rate over the step as one line of block characters (his "IPS over time").
fn sparkline(per_second: &[Second]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = per_second.iter().map(|s| s.insert.count).max().unwrap_or(0);
    if per_second.len() < 2 || max == 0 {
        return String::new();
    }
    // At most 60 columns: each the mean of its seconds.
    let width = per_second.len().min(60);
    let line: String = (0..width)
        .map(|c| {
            let from = c * per_second.len() / width;
            let to = ((c + 1) * per_second.len() / width).max(from + 1);
            let mean = per_second[from..to]
                .iter()
                .map(|s| s.insert.count)
                .sum::<u64>() as f64
                / (to - from) as f64;
            BLOCKS[((mean / max as f64) * 7.0).round() as usize]
        })
        .collect();
    format!("\n  {line}")
}

/// The closing table, one row per step, as his reports read.
pub fn table(results: &[StepResult]) -> String {
    let mut text = format!(
        "{:<8} {:>8} {:>10} {:>10} {:>9} {:>7} {:>10} {:>10} {:>8}",
        "step", "secs", "ips", "dps", "qps", "cv", "stall_s", "cpu/op_us", "op"
    );
    for r in results {
        let cpu = r.server.map_or(r.client_cpu_us_per_op, |s| {
            s.cpu_us + r.client_cpu_us_per_op
        });
        text.push_str(&format!(
            "\n{:<8} {:>8.1} {:>10.0} {:>10.0} {:>9.1} {:>7} {:>10.3} {:>10.1} {:>8}",
            r.step,
            r.seconds,
            r.inserts_per_s,
            r.deletes_per_s,
            r.queries_per_s,
            r.inserts_cv.map_or("-".into(), |cv| format!("{cv:.3}")),
            r.longest_insert_stall_s,
            cpu,
            r.operation
        ));
    }
    text
}
