//! pgbench-compatible text (same wording, so existing parsers keep working), stampede's extra
//! lines, and the JSON document. Works on plain numbers; never touches the driver or a server.

use serde::Serialize;

use crate::family::common::measure::{ClientFairness, LatencySummary};
use crate::probe::postgres::statement_window::StatementWindow;

/// Failed transactions by kind, and the retries made (of successful and failed ones).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Failures {
    pub total: u64,
    pub serialization: u64,
    pub deadlock: u64,
    /// `--continue-on-error`: other SQL errors.
    pub other: u64,
    /// Transactions that took more than one try, and the retries they made.
    pub retried: u64,
    pub retries: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScriptResult {
    pub name: String,
    pub weight: u32,
    pub transactions: u64,
    pub tps: f64,
    pub failures: Failures,
    pub skipped: u64,
    pub latency_ms: LatencySummary,
}

/// `-r`: one command of a script.
#[derive(Debug, Clone, Serialize)]
pub struct CommandReport {
    /// The command's first line, as pgbench prints it.
    pub text: String,
    pub latency_avg_ms: f64,
    pub executions: u64,
    pub failures: u64,
    pub retries: u64,
}

/// One point of the per-interval series.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesPoint {
    /// End of the interval, in seconds since the start.
    pub second: f64,
    pub tps: f64,
    pub failed: u64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientCpu {
    pub user_s: f64,
    pub system_s: f64,
    /// (user + system) / transactions processed.
    pub per_transaction_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerCounters {
    /// pg_stat_database.xact_commit after the run minus before, without the probe's own reads:
    /// the run's commits plus the connection starts of its clients (one commit each).
    pub xact_commit_delta: i64,
    /// Client connections opened during the window (each start commits once on the server).
    pub connection_starts: u64,
    pub xact_rollback_delta: i64,
    /// True on PostgreSQL 15+, where the probe flushes statistics itself; before 15 the
    /// statistics collector lags and the deltas are approximate.
    pub exact: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct PgbenchReport {
    pub tool: &'static str,
    pub version: &'static str,
    pub server_version: String,
    /// The target without its password.
    pub target: String,
    pub transaction_type: String,
    pub scale: i64,
    pub partition_method: Option<String>,
    pub partitions: Option<i64>,
    pub query_mode: &'static str,
    pub clients: usize,
    pub threads: usize,
    pub duration_s: Option<u64>,
    pub transactions_per_client: Option<u64>,
    pub random_seed: u64,
    pub connect_per_transaction: bool,
    pub transactions: u64,
    pub failures: Failures,
    /// `-R`: target rate; `-L`: latency limit.
    pub rate: Option<f64>,
    pub latency_limit_ms: Option<f64>,
    /// `-R`: schedule lag of started transactions (average and maximum).
    pub lag_avg_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
    /// `-R -L`: transactions skipped because they were already late when due.
    pub skipped: u64,
    /// `-L`: successful transactions slower than the limit.
    pub late: u64,
    pub tps: f64,
    pub bench_duration_s: f64,
    pub initial_connection_time_ms: f64,
    pub average_connection_time_ms: Option<f64>,
    pub latency_ms: LatencySummary,
    pub client_cpu: ClientCpu,
    /// Committed transactions per client and their spread; None when nothing committed.
    pub fairness: Option<ClientFairness>,
    pub server_counters: Option<ServerCounters>,
    pub aborted_clients: usize,
    /// `--max-tries` (0: unlimited), `--failures-detailed`, `--continue-on-error`.
    pub max_tries: u32,
    pub failures_detailed: bool,
    pub continue_on_error: bool,
    pub scripts: Vec<ScriptResult>,
    /// `-r`: per script, per command.
    pub commands: Option<Vec<Vec<CommandReport>>>,
    pub series: Vec<SeriesPoint>,
    /// Study 002's analytics: pg_stat_statements over the run (calls, mean and stddev).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statements: Option<Vec<StatementWindow>>,
    /// A run spread over Kubernetes pods (`--pods`): each pod's share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<crate::pods::SpreadSummary>,
}

/// The summary block, line for line as pgbench 15–18 prints it, then stampede's own lines.
pub fn summary_text(report: &PgbenchReport) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("transaction type: {}", report.transaction_type));
    line(format!("scaling factor: {}", report.scale));
    if let (Some(method), Some(partitions)) = (&report.partition_method, report.partitions) {
        line(format!("partition method: {method}"));
        line(format!("partitions: {partitions}"));
    }
    line(format!("query mode: {}", report.query_mode));
    line(format!("number of clients: {}", report.clients));
    line(format!("number of threads: {}", report.threads));
    if report.max_tries > 0 {
        line(format!("maximum number of tries: {}", report.max_tries));
    }
    match (report.duration_s, report.transactions_per_client) {
        (Some(duration), _) => {
            line(format!("duration: {duration} s"));
            line(format!(
                "number of transactions actually processed: {}",
                report.transactions
            ));
        }
        (None, per_client) => {
            let per_client = per_client.unwrap_or(0);
            line(format!("number of transactions per client: {per_client}"));
            line(format!(
                "number of transactions actually processed: {}/{}",
                report.transactions,
                per_client * report.clients as u64
            ));
        }
    }
    let attempted = report.transactions + report.failures.total + report.skipped;
    if attempted > 0 {
        line(format!(
            "number of failed transactions: {} ({:.3}%)",
            report.failures.total,
            100.0 * report.failures.total as f64 / attempted as f64
        ));
        failure_lines(report, &report.failures, attempted, "", &mut line);
        throttle_lines(report, attempted, &mut line);
        line(format!("latency average = {:.3} ms", report.latency_ms.avg));
        line(format!(
            "latency stddev = {:.3} ms",
            report.latency_ms.stddev
        ));
        if let (Some(avg), Some(max)) = (report.lag_avg_ms, report.lag_max_ms) {
            line(format!(
                "rate limit schedule lag: avg {avg:.3} (max {max:.3}) ms"
            ));
        }
        match report.average_connection_time_ms {
            Some(average) => {
                line(format!("average connection time = {average:.3} ms"));
                line(format!(
                    "tps = {:.6} (including reconnection times)",
                    report.tps
                ));
            }
            None => {
                line(format!(
                    "initial connection time = {:.3} ms",
                    report.initial_connection_time_ms
                ));
                line(format!(
                    "tps = {:.6} (without initial connection time)",
                    report.tps
                ));
            }
        }
    }
    script_sections(report, &mut line);
    line(percentile_line(&report.latency_ms));
    if let Some(fairness) = &report.fairness {
        line(fairness.summary_line());
    }
    line(format!(
        "client CPU: user {:.3} s, system {:.3} s, {:.3} us per transaction",
        report.client_cpu.user_s, report.client_cpu.system_s, report.client_cpu.per_transaction_us
    ));
    if let Some(counters) = &report.server_counters {
        line(format!(
            "server counters: {} commits, {} rollbacks in pg_stat_database during the run ({} of them client connection starts){}",
            counters.xact_commit_delta,
            counters.xact_rollback_delta,
            counters.connection_starts,
            if counters.exact { "" } else { "; approximate before PostgreSQL 15" }
        ));
    }
    if let Some(statements) = &report.statements {
        statement_lines(statements, &mut line);
    }
    if let Some(spread) = &report.spread {
        crate::pods::summary::spread_lines(spread)
            .into_iter()
            .for_each(&mut line);
    }
    out
}

/// Study 002's result table: pg_stat_statements' execution times over the run, per statement.
fn statement_lines(statements: &[StatementWindow], line: &mut dyn FnMut(String)) {
    line("pg_stat_statements during the run (execution time, ms):".into());
    line(format!(
        "{:>8} {:>12} {:>12}  statement",
        "calls", "mean", "stddev"
    ));
    for statement in statements {
        line(format!(
            "{:>8} {:>12.3} {:>12.3}  {}",
            statement.calls,
            statement.mean_ms,
            statement.stddev_ms,
            statement
                .query
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
}

/// `-R -L`: skipped transactions; `-L`: late ones (pgbench's wording and percentages).
fn throttle_lines(report: &PgbenchReport, attempted: u64, line: &mut dyn FnMut(String)) {
    if report.rate.is_some() && report.latency_limit_ms.is_some() {
        line(format!(
            "number of transactions skipped: {} ({:.3}%)",
            report.skipped,
            100.0 * report.skipped as f64 / attempted as f64
        ));
    }
    if let Some(limit) = report.latency_limit_ms {
        line(format!(
            "number of transactions above the {limit:.1} ms latency limit: {}/{} ({:.3}%)",
            report.late,
            report.transactions,
            100.0 * report.late as f64 / report.transactions.max(1) as f64
        ));
    }
}

/// `--failures-detailed` and `--max-tries` lines, for the whole run or (with `prefix` " - ")
/// one script.
fn failure_lines(
    report: &PgbenchReport,
    failures: &Failures,
    attempted: u64,
    prefix: &str,
    line: &mut dyn FnMut(String),
) {
    let share = |n: u64| 100.0 * n as f64 / attempted.max(1) as f64;
    if report.failures_detailed {
        // pgbench 19 names the third class always (15–18 had only the first two).
        let kinds = [
            ("serialization", failures.serialization),
            ("deadlock", failures.deadlock),
            ("other", failures.other),
        ];
        for (kind, count) in kinds {
            line(format!(
                "{prefix}number of {kind} failures: {count} ({:.3}%)",
                share(count)
            ));
        }
    }
    if report.max_tries != 1 {
        line(format!(
            "{prefix}number of transactions retried: {} ({:.3}%)",
            failures.retried,
            share(failures.retried)
        ));
        line(format!(
            "{prefix}total number of retries: {}",
            failures.retries
        ));
    }
}

/// pgbench's per-script sections (several scripts) and `-r` statement tables.
fn script_sections(report: &PgbenchReport, line: &mut dyn FnMut(String)) {
    let several = report.scripts.len() > 1;
    if !several && report.commands.is_none() {
        return;
    }
    let total_weight: u64 = report.scripts.iter().map(|s| u64::from(s.weight)).sum();
    let attempted_all = (report.transactions + report.failures.total + report.skipped).max(1);
    for (index, script) in report.scripts.iter().enumerate() {
        if several {
            let attempted = script.transactions + script.failures.total + script.skipped;
            line(format!("SQL script {}: {}", index + 1, script.name));
            line(format!(
                " - weight: {} (targets {:.1}% of total)",
                script.weight,
                100.0 * f64::from(script.weight) / total_weight.max(1) as f64
            ));
            line(format!(
                " - {} transactions ({:.1}% of total)",
                attempted,
                100.0 * attempted as f64 / attempted_all as f64
            ));
            if attempted > 0 {
                script_counts(report, script, attempted, line);
            }
            if script.latency_ms.count > 0 {
                line(format!(
                    " - latency average = {:.3} ms",
                    script.latency_ms.avg
                ));
                line(format!(
                    " - latency stddev = {:.3} ms",
                    script.latency_ms.stddev
                ));
                line(format!(" - {}", percentile_line(&script.latency_ms)));
            }
        }
        if let Some(commands) = report.commands.as_ref().and_then(|c| c.get(index)) {
            statement_table(report, commands, several, line);
        }
    }
}

fn script_counts(
    report: &PgbenchReport,
    script: &ScriptResult,
    attempted: u64,
    line: &mut dyn FnMut(String),
) {
    line(format!(
        " - number of transactions actually processed: {} (tps = {:.6})",
        script.transactions, script.tps
    ));
    line(format!(
        " - number of failed transactions: {} ({:.3}%)",
        script.failures.total,
        100.0 * script.failures.total as f64 / attempted as f64
    ));
    failure_lines(report, &script.failures, attempted, " - ", line);
    if report.rate.is_some() && report.latency_limit_ms.is_some() {
        line(format!(
            " - number of transactions skipped: {} ({:.3}%)",
            script.skipped,
            100.0 * script.skipped as f64 / attempted as f64
        ));
    }
}

/// `-r`: `statement latencies in milliseconds and failures:` (with retries when
/// `--max-tries` is not 1), one line per command.
fn statement_table(
    report: &PgbenchReport,
    commands: &[CommandReport],
    several: bool,
    line: &mut dyn FnMut(String),
) {
    let retries = report.max_tries != 1;
    line(format!(
        "{}statement latencies in milliseconds{}:",
        if several { " - " } else { "" },
        if retries {
            ", failures and retries"
        } else {
            " and failures"
        }
    ));
    for command in commands {
        if retries {
            line(format!(
                "   {:11.3}  {:10} {:10} {}",
                command.latency_avg_ms, command.failures, command.retries, command.text
            ));
        } else {
            line(format!(
                "   {:11.3}  {:10} {}",
                command.latency_avg_ms, command.failures, command.text
            ));
        }
    }
}

pub fn percentile_line(latency: &LatencySummary) -> String {
    format!(
        "latency percentiles: p50 = {:.3} ms, p90 = {:.3} ms, p95 = {:.3} ms, p99 = {:.3} ms, p99.9 = {:.3} ms, max = {:.3} ms",
        latency.p50, latency.p90, latency.p95, latency.p99, latency.p999, latency.max
    )
}

/// What a `-P` line adds: lag under `-R`, skipped under `-R -L`, retries under `--max-tries`.
pub struct ProgressExtras {
    pub lag_ms: Option<f64>,
    pub skipped: Option<u64>,
    /// (transactions retried, retries) in the interval.
    pub retried: Option<(u64, u64)>,
}

/// pgbench's `-P` line; `at` is `12.0 s`, or Unix time under `--progress-timestamp`.
pub fn progress_line(
    at: &str,
    tps: f64,
    latency: &LatencySummary,
    failed: u64,
    extras: ProgressExtras,
) -> String {
    let mut line = format!(
        "progress: {at}, {tps:.1} tps, lat {:.3} ms stddev {:.3}, {failed} failed",
        latency.avg, latency.stddev
    );
    if let Some(lag) = extras.lag_ms {
        line.push_str(&format!(", lag {lag:.3} ms"));
    }
    if let Some(skipped) = extras.skipped {
        line.push_str(&format!(", {skipped} skipped"));
    }
    if let Some((retried, retries)) = extras.retried {
        line.push_str(&format!(", {retried} retried, {retries} retries"));
    }
    line
}

pub fn to_json(report: &PgbenchReport) -> String {
    serde_json::to_string_pretty(report).expect("a report of numbers and strings always serialises")
}
