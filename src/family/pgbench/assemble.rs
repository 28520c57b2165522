//! The numbers of a finished `stampede pgbench` run put together as its report: the driver's
//! statistics per run, script and command, the per-second series and the server's counters.

use super::report::{ClientCpu, CommandReport, Failures, PgbenchReport, ScriptResult, SeriesPoint};
use super::setup::{ServerObservations, ServerSetup};
use super::spec::RunSpec;
use crate::driver::{CommandStats, RunResult, ScriptStats, WeightedScript};
use crate::family::common::measure::{ClientFairness, LatencySummary};
use stampede_conn::ConnSpec;

/// What the driver ran and measured.
pub struct DriverRun {
    pub scripts: Vec<WeightedScript>,
    pub random_seed: u64,
    pub result: RunResult,
}

fn failures(stats: &ScriptStats) -> Failures {
    Failures {
        total: stats.failures.total(),
        serialization: stats.failures.serialization,
        deadlock: stats.failures.deadlock,
        other: stats.failures.other,
        retried: stats.retried,
        retries: stats.retries,
    }
}

/// `-r`: each command's first line with its average time, failures and retries.
fn command_reports(
    plan_scripts: &[WeightedScript],
    stats: &[Vec<CommandStats>],
) -> Vec<Vec<CommandReport>> {
    plan_scripts
        .iter()
        .zip(stats)
        .map(|(script, commands)| {
            script
                .script
                .commands
                .iter()
                .zip(commands)
                .map(|(command, stats)| CommandReport {
                    text: command.first_line.clone(),
                    latency_avg_ms: stats.mean_us() / 1000.0,
                    executions: stats.count,
                    failures: stats.failures,
                    retries: stats.retries,
                })
                .collect()
        })
        .collect()
}

/// The report of a run: the options it ran with, what the setup found, the driver's result and
/// the server's counters.
pub fn build_report(
    spec: &RunSpec,
    target: &ConnSpec,
    setup: &ServerSetup,
    run: &DriverRun,
    server: ServerObservations,
) -> PgbenchReport {
    let DriverRun {
        scripts,
        random_seed,
        result,
    } = run;
    let random_seed = *random_seed;
    let seconds = result.bench_duration.as_secs_f64().max(1e-9);
    let transactions = result.total.latency.count;
    let cpu = result.client_cpu;
    PgbenchReport {
        tool: "stampede",
        version: env!("CARGO_PKG_VERSION"),
        server_version: setup.server_version.clone(),
        target: target.to_string(),
        transaction_type: match scripts.as_slice() {
            [only] => only.script.description.clone(),
            _ => "multiple scripts".into(),
        },
        scale: setup.scale,
        partition_method: setup.partitions.as_ref().map(|(m, _)| m.clone()),
        partitions: setup.partitions.as_ref().map(|(_, n)| *n),
        query_mode: spec.protocol.name(),
        clients: spec.clients,
        threads: spec.threads,
        duration_s: spec.duration_secs,
        transactions_per_client: spec
            .duration_secs
            .is_none()
            .then_some(spec.transactions_per_client),
        random_seed,
        connect_per_transaction: spec.connect_per_transaction,
        transactions,
        failures: failures(&result.total),
        rate: spec.rate,
        latency_limit_ms: spec.latency_limit_ms,
        lag_avg_ms: spec.rate.map(|_| result.total.lag.mean_us() / 1000.0),
        lag_max_ms: spec.rate.map(|_| result.total.lag.max_us / 1000.0),
        skipped: result.total.skipped,
        late: result.total.late,
        tps: transactions as f64 / seconds,
        bench_duration_s: seconds,
        initial_connection_time_ms: result.initial_connection_time.as_secs_f64() * 1000.0,
        average_connection_time_ms: spec.connect_per_transaction.then(|| {
            result.reconnection_time.as_secs_f64() * 1000.0 / result.reconnections.max(1) as f64
        }),
        latency_ms: LatencySummary::of(&result.total.latency),
        client_cpu: ClientCpu {
            user_s: cpu.user.as_secs_f64(),
            system_s: cpu.system.as_secs_f64(),
            per_transaction_us: cpu.total().as_secs_f64() * 1e6 / transactions.max(1) as f64,
        },
        fairness: ClientFairness::of(&result.client_transactions),
        server_counters: server.counters,
        aborted_clients: result.aborted_clients,
        max_tries: spec.errors.max_tries,
        failures_detailed: spec.failures_detailed,
        continue_on_error: spec.errors.continue_on_error,
        scripts: scripts
            .iter()
            .zip(&result.per_script)
            .map(|(script, stats)| ScriptResult {
                name: script.script.description.clone(),
                weight: script.weight,
                transactions: stats.latency.count,
                tps: stats.latency.count as f64 / seconds,
                failures: failures(stats),
                skipped: stats.skipped,
                latency_ms: LatencySummary::of(&stats.latency),
            })
            .collect(),
        commands: spec
            .report_per_command
            .then(|| command_reports(scripts, &result.command_stats)),
        series: series(result, seconds),
        statements: server.statements,
        spread: None,
    }
}

/// The per-interval series; the last interval is usually partial and is scaled by its length.
fn series(result: &RunResult, total_seconds: f64) -> Vec<SeriesPoint> {
    result
        .intervals
        .iter()
        .filter_map(|interval| {
            let start = interval.index as f64;
            let length = (total_seconds - start).clamp(0.0, 1.0);
            if length < 1e-3 {
                return None;
            }
            let latency = LatencySummary::of(&interval.stats.latency);
            Some(SeriesPoint {
                second: start + length,
                tps: interval.stats.latency.count as f64 / length,
                failed: interval.stats.failures.total(),
                latency_avg_ms: latency.avg,
                latency_stddev_ms: latency.stddev,
                p50_ms: latency.p50,
                p99_ms: latency.p99,
            })
        })
        .collect()
}
