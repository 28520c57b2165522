//! `stampede pgbench` run mode: pgbench's setup (scale from pgbench_branches, vacuum), the
//! driver run, then pgbench's summary, stampede's extra lines and the JSON file.

use std::time::Duration;

use tokio_postgres::Client;

use super::spec::{RunSpec, VacuumBeforeRun};
use crate::conn::{ConnSpec, Endpoint};
use crate::driver::Protocol;
use crate::driver::{
    self, CommandStats, DriverEvent, RunLimit, RunPlan, RunResult, ScriptStats, TxnLogSpec,
    WeightedScript,
};
use crate::error::{CommandResult, Failure};
use crate::family::common::measure::LatencySummary;
use crate::family::pgbench::analytics;
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::builtins;
use crate::family::pgbench::report::{
    progress_line, summary_text, to_json, ClientCpu, CommandReport, Failures, PgbenchReport,
    ProgressExtras, ScriptResult, SeriesPoint, ServerCounters,
};
use crate::pg::control_runtime;
use crate::pg::{connect_quietly, connection_error, sql_error};
use crate::probe::pgstat::{XactCounters, XactProbe};
use crate::probe::statement_window::{self, StatementTotals};
use crate::script::ast::SqlPiece;
use crate::script::parser::MAX_ARGS;
use crate::script::{parse_script, CommandKind, Script, Value, VarTable};

pub fn run(spec: &RunSpec, target: &ConnSpec) -> CommandResult {
    let exit_on_abort = spec.exit_on_abort;
    let on_event = |event: DriverEvent<'_>| match event {
        DriverEvent::ClientAborted(message) => {
            eprintln!("stampede: error: {message}");
            if exit_on_abort {
                // pgbench's --exit-on-abort: no summary, the run's status is 2.
                eprintln!(
                    "stampede: error: Run was aborted due to an error; --exit-on-abort given"
                );
                std::process::exit(2);
            }
        }
        DriverEvent::ClientNotice(message) => eprintln!("stampede: {message}"),
        DriverEvent::Interval(_) => {}
    };
    let mut progress = ProgressPrinter::new(spec);
    let report = benchmark(spec, target, &mut |event| {
        progress.observe(&event);
        on_event(event);
    })?;
    print!("{}", summary_text(&report));
    if let Some(path) = &spec.json_path {
        crate::report::write_file(path, &to_json(&report))?;
    }
    if report.aborted_clients > 0 {
        return Err(Failure::incomplete());
    }
    Ok(())
}

/// Parses every script of `spec`, for its errors only.
pub fn check_scripts(spec: &RunSpec) -> Result<(), Failure> {
    build_scripts(spec).map(|_| ())
}

/// Everything but printing the summary: setup, the run, and the report's numbers.
pub fn benchmark(
    spec: &RunSpec,
    target: &ConnSpec,
    on_event: &mut dyn FnMut(DriverEvent<'_>),
) -> Result<PgbenchReport, Failure> {
    let (scripts, variables) = build_scripts(spec)?;
    let runtime = control_runtime();
    let setup = runtime.block_on(prepare_server(spec, target))?;
    let plan = build_plan(spec, target, scripts, variables, &setup);
    let random_seed = plan.random_seed;
    let scripts = plan.scripts.clone();
    let result = driver::run(plan, on_event)?;
    let after = runtime
        .block_on(setup.probe.read_settled(
            &setup.client,
            &target.application_name,
            Duration::from_secs(5),
        ))
        .ok();
    let counters = setup
        .counters_before
        .zip(after)
        .map(|(before, after)| ServerCounters {
            xact_commit_delta: after.commits - before.commits,
            xact_rollback_delta: after.rollbacks - before.rollbacks,
            exact: setup.probe.exact,
            connection_starts: if spec.connect_per_transaction {
                result.reconnections
            } else {
                spec.clients as u64
            },
        });
    let mut report = build_report(
        spec,
        target,
        &setup,
        &scripts,
        random_seed,
        &result,
        counters,
    );
    if let Some(before) = &setup.statements_before {
        let after = runtime.block_on(statement_window::read_totals(&setup.client));
        // Only the analytics queries: not the probes' own statements, nor anyone else's.
        let sent: Vec<String> = analytics::QUERIES
            .iter()
            .map(|(_, _, sql)| statement_window::comparable(sql))
            .collect();
        report.statements = after.map(|after| {
            statement_window::window(before, &after)
                .into_iter()
                .filter(|s| sent.contains(&statement_window::comparable(&s.query)))
                .collect()
        });
    }
    Ok(report)
}

fn build_scripts(spec: &RunSpec) -> Result<(Vec<WeightedScript>, VarTable), Failure> {
    let mut variables = VarTable::default();
    let mut scripts = Vec::new();
    for (choice, weight) in &spec.scripts {
        let (source, description, text) = match choice {
            ScriptChoice::Builtin(name) => {
                let builtin = builtins::find_builtin(name).map_err(Failure::input)?;
                (
                    builtin.name.to_string(),
                    builtin.description.to_string(),
                    builtin.script.to_string(),
                )
            }
            ScriptChoice::File(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::input(format!("could not open file \"{path}\": {e}")))?;
                (path.clone(), path.clone(), text)
            }
        };
        let script = parse_script(&source, &description, &text, &mut variables)
            .map_err(|e| Failure::input(e.to_string()))?;
        if spec.protocol != Protocol::Simple {
            check_parameter_count(&script, &variables)?;
        }
        scripts.push(WeightedScript {
            script,
            weight: *weight,
        });
    }
    Ok((scripts, variables))
}

/// pgbench's limit under the extended and prepared protocols: each `:var` of a statement is a
/// parameter, and a statement takes at most MAX_ARGS - 1 of them.
fn check_parameter_count(script: &Script, variables: &VarTable) -> Result<(), Failure> {
    for command in &script.commands {
        let CommandKind::Sql(sql) = &command.kind else {
            continue;
        };
        if sql.params.len() >= MAX_ARGS {
            let text: String = sql
                .pieces
                .iter()
                .map(|piece| match piece {
                    SqlPiece::Text(text) => text.clone(),
                    SqlPiece::Var(slot) => format!(":{}", variables.names()[*slot]),
                })
                .collect();
            return Err(Failure::input(format!(
                "statement has too many arguments (maximum is {}): {text}",
                MAX_ARGS - 1
            )));
        }
    }
    Ok(())
}

/// What the setup connection learned before the run.
struct ServerSetup {
    client: Client,
    server_version: String,
    scale: i64,
    partitions: Option<(String, i64)>,
    probe: XactProbe,
    counters_before: Option<XactCounters>,
    /// pg_stat_statements before the run, for runs of seed 002's analytics queries.
    statements_before: Option<Vec<StatementTotals>>,
}

async fn prepare_server(spec: &RunSpec, target: &ConnSpec) -> Result<ServerSetup, Failure> {
    // Named apart from the clients, so that waiting for the clients' sessions to end works.
    let mut control = ConnSpec {
        application_name: format!("{}-control", target.application_name),
        ..target.clone()
    };
    if spec.untracked_control {
        control = control.untracked();
    }
    let (client, connection) = control
        .connect_control()
        .await
        .map_err(|e| connection_error(target, e).into_input())?;
    tokio::spawn(connection);
    let server_version: String = client
        .query_one("SHOW server_version", &[])
        .await
        .map(|row| row.get(0))
        .map_err(|e| sql_error("SHOW server_version", e))?;
    let uses_builtin = spec
        .scripts
        .iter()
        .any(|(choice, _)| matches!(choice, ScriptChoice::Builtin(_)));
    let (scale, partitions) = if uses_builtin {
        let scale = read_scale(&client, target).await?;
        if spec.scale_given.is_some() {
            eprintln!("stampede: warning: scale option ignored, using count from pgbench_branches table ({scale})");
        }
        (scale, read_partitions(&client).await)
    } else {
        (spec.scale_given.unwrap_or(1), None)
    };
    let analytics = builtin_names(spec).any(|name| name.starts_with("analytics-"));
    if builtin_names(spec).any(analytics::needs_accounts_copy) {
        if accounts_copy_missing(&client).await? {
            eprintln!("stampede: {CREATING_ACCOUNTS_COPY}");
        }
        create_accounts_copy(&client).await?;
    }
    vacuum(&client, spec.vacuum).await?;
    let probe = XactProbe::new(&client)
        .await
        .map_err(|e| sql_error("server_version_num", e))?;
    let counters_before = probe.read(&client).await.ok();
    let statements_before = if analytics {
        let totals = statement_window::read_totals(&client).await;
        if totals.is_none() {
            eprintln!("stampede: warning: pg_stat_statements is not available in database \"{}\" (it needs shared_preload_libraries and CREATE EXTENSION): no per-statement execution times", target.dbname);
        }
        totals
    } else {
        None
    };
    Ok(ServerSetup {
        statements_before,
        probe,
        client,
        server_version,
        scale,
        partitions,
        counters_before,
    })
}

fn builtin_names(spec: &RunSpec) -> impl Iterator<Item = &str> {
    spec.scripts.iter().filter_map(|(choice, _)| match choice {
        ScriptChoice::Builtin(name) => Some(name.as_str()),
        ScriptChoice::File(_) => None,
    })
}

const CREATING_ACCOUNTS_COPY: &str = "creating pgbench_accounts_copy (a copy of pgbench_accounts with a unique index on aid) for the analytics queries";

/// `create_accounts_copy` over a connection of its own, for callers outside a runtime;
/// `note` hears when the copy is made rather than found.
pub fn create_accounts_copy_blocking(
    conn: &ConnSpec,
    note: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    let runtime = control_runtime();
    let (client, missing) = runtime.block_on(async {
        let client = connect_quietly(conn).await?;
        let missing = accounts_copy_missing(&client).await?;
        Ok::<_, Failure>((client, missing))
    })?;
    if missing {
        note(CREATING_ACCOUNTS_COPY);
    }
    runtime.block_on(create_accounts_copy(&client))
}

async fn accounts_copy_missing(client: &Client) -> Result<bool, Failure> {
    client
        .query_one("SELECT to_regclass('pgbench_accounts_copy') IS NULL", &[])
        .await
        .map(|row| row.get::<_, bool>(0))
        .map_err(|e| sql_error("to_regclass", e))
}

/// Seed 002's copy of pgbench_accounts, which analytics queries 3 and 4 join with.
async fn create_accounts_copy(client: &Client) -> Result<(), Failure> {
    for statement in analytics::ACCOUNTS_COPY {
        client
            .batch_execute(statement)
            .await
            .map_err(|e| sql_error(statement, e))?;
    }
    Ok(())
}

/// pgbench's GetTableInfo: the scale is the number of branches.
async fn read_scale(client: &Client, target: &ConnSpec) -> Result<i64, Failure> {
    match client.query_one("select count(*) from pgbench_branches", &[]).await {
        Ok(row) => Ok(row.get(0)),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
            Err(Failure::input(format!(
                "could not count number of branches: ERROR:  relation \"pgbench_branches\" does not exist\nhint: Perhaps you need to do initialization (\"stampede pgbench -i\") in database \"{}\".",
                target.dbname
            )))
        }
        Err(e) => Err(Failure::input(format!(
            "could not count number of branches: {}",
            sql_error("select count(*) from pgbench_branches", e)
        ))),
    }
}

async fn read_partitions(client: &Client) -> Option<(String, i64)> {
    let row = client
        .query_opt(
            "select p.partstrat::text, count(i.inhparent)
             from pg_catalog.pg_class as c
             join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace)
             cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n)
             left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid)
             left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent)
             where c.relname = 'pgbench_accounts' and o.n is not null
             group by o.n, p.partstrat order by o.n asc limit 1",
            &[],
        )
        .await
        .ok()??;
    let method: Option<String> = row.get(0);
    let method = match method?.as_str() {
        "r" => "range",
        "h" => "hash",
        _ => return None,
    };
    Some((method.to_string(), row.get(1)))
}

async fn vacuum(client: &Client, mode: VacuumBeforeRun) -> Result<(), Failure> {
    if mode == VacuumBeforeRun::None {
        return Ok(());
    }
    eprint!("starting vacuum...");
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        // pgbench tolerates failures here (custom scripts may not have these tables).
        let _ = client.batch_execute(sql).await;
    }
    eprintln!("end.");
    if mode == VacuumBeforeRun::All {
        eprint!("starting vacuum pgbench_accounts...");
        client
            .batch_execute("vacuum analyze pgbench_accounts")
            .await
            .map_err(|e| sql_error("vacuum analyze pgbench_accounts", e))?;
        eprintln!("end.");
    }
    Ok(())
}

fn build_plan(
    spec: &RunSpec,
    target: &ConnSpec,
    scripts: Vec<WeightedScript>,
    mut variables: VarTable,
    setup: &ServerSetup,
) -> RunPlan {
    let defined: Vec<(usize, Value)> = spec
        .defines
        .iter()
        .map(|(name, value)| {
            (
                variables.slot(name),
                Value::Text(std::sync::Arc::new(value.clone())),
            )
        })
        .collect();
    let random_seed = spec.random_seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    });
    if let Some(seed) = spec.random_seed {
        eprintln!("stampede: setting random seed to {seed}");
    }
    let automatic =
        ["scale", "client_id", "random_seed", "default_seed"].map(|n| variables.slot(n));
    let mut initial_values = vec![Value::Unset; variables.names().len()];
    initial_values[automatic[0]] = Value::Int(setup.scale);
    initial_values[automatic[2]] = Value::Int(random_seed as i64);
    let user_defined = |slot: usize| defined.iter().any(|(s, _)| *s == slot);
    for (slot, value) in &defined {
        initial_values[*slot] = value.clone();
    }
    RunPlan {
        endpoint: Endpoint::Postgres(target.clone()),
        clients: spec.clients,
        threads: spec.threads,
        limit: match spec.duration_secs {
            Some(secs) => RunLimit::Duration(Duration::from_secs(secs)),
            None => RunLimit::TransactionsPerClient(spec.transactions_per_client),
        },
        protocol: spec.protocol,
        scripts,
        client_id_slot: (!user_defined(automatic[1])).then_some(automatic[1]),
        default_seed_slot: (!user_defined(automatic[3])).then_some(automatic[3]),
        variables,
        initial_values,
        random_seed,
        connect_per_transaction: spec.connect_per_transaction,
        interval: Duration::from_secs(1),
        rate: spec.rate,
        latency_limit: spec
            .latency_limit_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        errors: spec.errors.clone(),
        report_per_command: spec.report_per_command,
        log: spec.log.as_ref().map(|log| TxnLogSpec {
            prefix: log.prefix.clone(),
            pid: std::process::id(),
            sampling_rate: log.sampling_rate,
            aggregate_interval: log.aggregate_interval,
            failures_detailed: spec.failures_detailed,
        }),
        stop: spec.stop.clone(),
        closing_script: None,
        binary_results: false,
        cpu_affinity: spec.cpu_affinity.clone(),
        pauses: None,
        debug: spec.debug,
    }
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

fn build_report(
    spec: &RunSpec,
    target: &ConnSpec,
    setup: &ServerSetup,
    scripts: &[WeightedScript],
    random_seed: u64,
    result: &RunResult,
    server_counters: Option<ServerCounters>,
) -> PgbenchReport {
    let seconds = result.bench_duration.as_secs_f64().max(1e-9);
    let transactions = result.total.latency.count;
    let cpu = result.client_cpu;
    PgbenchReport {
        tool: "stampede",
        version: env!("CARGO_PKG_VERSION"),
        server_version: setup.server_version.clone(),
        target: target.to_string(),
        transaction_type: match scripts {
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
        server_counters,
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
        statements: None,
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

/// Aggregates 1-second intervals into pgbench's `-P N` progress lines.
struct ProgressPrinter {
    every: Option<u64>,
    /// With `-T`, the partial interval after the end is not a progress report.
    duration: Option<u64>,
    throttled: bool,
    limited: bool,
    retrying: bool,
    /// `--progress-timestamp`: Unix time instead of elapsed seconds.
    timestamps: bool,
    pending: ScriptStats,
}

impl ProgressPrinter {
    fn new(spec: &RunSpec) -> Self {
        ProgressPrinter {
            every: spec.progress_secs,
            duration: spec.duration_secs,
            throttled: spec.rate.is_some(),
            limited: spec.latency_limit_ms.is_some(),
            retrying: spec.errors.max_tries != 1,
            timestamps: spec.progress_timestamp,
            pending: ScriptStats::default(),
        }
    }

    fn observe(&mut self, event: &DriverEvent<'_>) {
        let (Some(every), DriverEvent::Interval(report)) = (self.every, event) else {
            return;
        };
        self.pending.merge(&report.stats);
        let elapsed = report.index + 1;
        if elapsed % every == 0 && self.duration.is_none_or(|d| elapsed <= d) {
            let stats = std::mem::take(&mut self.pending);
            let at = if self.timestamps {
                format!("{:.3} s", report.end_unix_s)
            } else {
                format!("{:.1} s", elapsed as f64)
            };
            eprintln!(
                "{}",
                progress_line(
                    &at,
                    stats.latency.count as f64 / every as f64,
                    &LatencySummary::of(&stats.latency),
                    stats.failures.total(),
                    ProgressExtras {
                        lag_ms: self.throttled.then(|| stats.lag.mean_us() / 1000.0),
                        skipped: (self.throttled && self.limited).then_some(stats.skipped),
                        retried: self.retrying.then_some((stats.retried, stats.retries)),
                    },
                )
            );
        }
    }
}
