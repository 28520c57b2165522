//! `stampede dbstress prepare|run|cleanup`: dbSTRESS's tables generated on the server, and
//! sessions running its read-only or read+write transactions through the driver, reported as
//! study 003 did: TPS and response times, per statement as well.

use crate::live::command_labels;
use std::time::Duration;

use futures_util::future::try_join_all;
use tokio_postgres::Client;

use crate::driver::plan::{ErrorPolicy, Protocol, RunLimit, RunPlan, WeightedScript};
use crate::driver::stats::CommandStats;
use crate::driver::{DriverEvent, RunResult};
use crate::family::common::connection::{endpoint, positive};
use crate::family::common::measure::{ClientFairness, LatencySummary};
use crate::family::dbstress::args::{DbstressAction, PrepareArgs, RunArgs};
use crate::family::dbstress::mysql;
use crate::family::dbstress::statements::{self, Mode, TransactionShape, MARKER, STATEMENTS};
use crate::pods::place::Place;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;
use stampede_conn::Endpoint;
use stampede_control::postgres::{connect_quietly, sql_error, visible_tables};
use stampede_script::{parse_script, Value, VarTable};

/// Five tables per set: a thousand sets are 5,000 tables, more than any study asks for.
const MAX_SETS: i64 = 1000;

const NOT_PREPARED: &str =
    "no dbSTRESS tables here (or their prepare did not finish); run `stampede dbstress prepare` first";

pub fn run(action: &DbstressAction) -> CommandResult {
    match action {
        DbstressAction::Prepare(args) => prepare(args),
        DbstressAction::Run(args) => run_sessions(args),
        DbstressAction::Cleanup(args) => cleanup(&endpoint(args)?),
    }
}

fn prepare(args: &PrepareArgs) -> CommandResult {
    let objects = positive::<i64>(args.objects, "objects")?;
    let sets = positive::<i64>(args.sets, "sets")?;
    if sets > MAX_SETS {
        return Err(Failure::input(format!("--sets {sets}: at most {MAX_SETS}")));
    }
    let sets = sets as u32;
    let threads = match args.threads {
        Some(t) => positive::<usize>(t, "threads")?,
        None => stampede_base::cpu::cores(),
    };
    let target = endpoint(&args.connection)?;
    let started = std::time::Instant::now();
    prepare_tables(&target, objects, sets, threads, args.history_unique)?;
    eprintln!(
        "prepared {sets} set(s) of {objects} object(s) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Creates and fills the tables of `sets` sets of `objects` objects, then indexes, ANALYZE and
/// the marker; refuses a database that has them.
pub fn prepare_tables(
    target: &Endpoint,
    objects: i64,
    sets: u32,
    threads: usize,
    history_unique: bool,
) -> Result<(), Failure> {
    match target {
        Endpoint::Postgres(conn) => prepare_postgres(conn, objects, sets, threads, history_unique),
        Endpoint::Mysql(spec) => mysql::prepare(spec, objects, sets, threads, history_unique),
    }
}

fn prepare_postgres(
    conn: &ConnSpec,
    objects: i64,
    sets: u32,
    threads: usize,
    history_unique: bool,
) -> Result<(), Failure> {
    let started = std::time::Instant::now();
    let conn = conn.clone();
    control_runtime().block_on(async {
        let client = connect_quietly(&conn).await.map_err(Failure::into_input)?;
        // Also the tables of a prepare that did not finish (no marker yet).
        if !existing_tables(&client).await?.is_empty() {
            return Err(Failure::input(
                "dbSTRESS tables exist here; run `stampede dbstress cleanup` first",
            ));
        }
        for set in 1..=sets {
            for statement in statements::create_tables(set)
                .into_iter()
                .chain(statements::load_reference_tables(set))
            {
                execute(&client, &statement).await?;
            }
        }
        let chunks = object_chunks(objects, sets, threads);
        in_parallel(&conn, chunks).await?;
        eprintln!(
            "generated {} object(s) and {} history row(s) per set ({:.1} s)",
            objects,
            objects * statements::HISTORY_PER_OBJECT,
            started.elapsed().as_secs_f64()
        );
        let indexes: Vec<String> = (1..=sets)
            .flat_map(|set| statements::indexes(set, history_unique))
            .collect();
        in_parallel(&conn, spread(indexes, threads)).await?;
        let analyze: Vec<String> = (1..=sets)
            .flat_map(statements::table_names)
            .map(|table| format!("VACUUM ANALYZE {table}"))
            .collect();
        in_parallel(&conn, spread(analyze, threads)).await?;
        execute(
            &client,
            &format!("CREATE TABLE {MARKER} AS SELECT {objects}::bigint AS objects, {sets}::integer AS sets"),
        )
        .await
    })
}

/// Each connection's share of the object inserts: every set's objects cut into `threads`
/// ranges, dealt out in turn.
fn object_chunks(objects: i64, sets: u32, threads: usize) -> Vec<Vec<String>> {
    let ranges = threads.max(1) as i64;
    let per_range = (objects + ranges - 1) / ranges;
    let mut statements = Vec::new();
    for set in 1..=sets {
        for range in 0..ranges {
            let first = range * per_range;
            let last = ((range + 1) * per_range).min(objects) - 1;
            if first <= last {
                statements.extend(statements::load_objects(set, first, last));
            }
        }
    }
    // An object range's two inserts stay together on one connection.
    let pairs: Vec<String> = statements.chunks(2).map(|pair| pair.join(";\n")).collect();
    spread(pairs, threads)
}

/// Statements dealt out over at most `threads` lists.
fn spread(statements: Vec<String>, threads: usize) -> Vec<Vec<String>> {
    let lists = threads.clamp(1, statements.len().max(1));
    let mut out = vec![Vec::new(); lists];
    for (index, statement) in statements.into_iter().enumerate() {
        out[index % lists].push(statement);
    }
    out
}

/// Each list on a connection of its own, the lists at once.
async fn in_parallel(conn: &ConnSpec, lists: Vec<Vec<String>>) -> Result<(), Failure> {
    try_join_all(lists.into_iter().map(|list| async move {
        let client = connect_quietly(conn).await?;
        for statement in &list {
            execute(&client, statement).await?;
        }
        Ok::<_, Failure>(())
    }))
    .await
    .map(|_| ())
}

async fn execute(client: &Client, sql: &str) -> Result<(), Failure> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| sql_error(sql, e))
}

/// (objects, sets) that `prepare` recorded at `target`, or the message to prepare first.
pub fn read_prepared_size(target: &Endpoint) -> Result<(i64, u32), Failure> {
    let size = match target {
        Endpoint::Postgres(conn) => control_runtime().block_on(async {
            let client = connect_quietly(conn).await.map_err(Failure::into_input)?;
            Ok::<_, Failure>(prepared_size(&client).await)
        })?,
        Endpoint::Mysql(spec) => mysql::prepared_size(spec)?,
    };
    size.ok_or_else(|| Failure::input(NOT_PREPARED))
}

/// (objects, sets) that `prepare` recorded, if it finished here.
async fn prepared_size(client: &Client) -> Option<(i64, u32)> {
    let row = client
        .query_one(&format!("SELECT objects, sets FROM {MARKER}"), &[])
        .await
        .ok()?;
    Some((row.get(0), row.get::<_, i32>(1) as u32))
}

/// dbSTRESS's tables of any set, and the marker.
async fn existing_tables(client: &Client) -> Result<Vec<String>, Failure> {
    let pattern = format!("^((zone|section|stat|object|history)[0-9]+|{MARKER})$");
    visible_tables(client, &pattern).await
}

fn cleanup(target: &Endpoint) -> CommandResult {
    let dropped = match target {
        Endpoint::Postgres(conn) => control_runtime().block_on(async {
            let client = connect_quietly(conn).await.map_err(Failure::into_input)?;
            let tables = existing_tables(&client).await?;
            for table in &tables {
                execute(&client, &format!("DROP TABLE {table}")).await?;
            }
            Ok::<_, Failure>(tables.len())
        })?,
        Endpoint::Mysql(spec) => mysql::cleanup(spec)?,
    };
    eprintln!("dropped {dropped} table(s)");
    Ok(())
}

/// What a run is asked for.
pub struct Settings {
    pub shape: TransactionShape,
    pub sets: u32,
    pub seconds: u64,
    pub protocol: Protocol,
    pub seed: u64,
}

fn run_sessions(args: &RunArgs) -> CommandResult {
    args.kube.check_alone()?;
    let mode = Mode::parse(&args.mode)?;
    let sessions = positive::<u32>(args.sessions, "sessions")?;
    let seconds = positive::<u64>(args.time, "time")?;
    let stall_timeout = crate::driver::plan::stall_timeout_option(
        args.stall_timeout.as_deref(),
        &RunLimit::Duration(Duration::from_secs(seconds)),
    )?;
    let rw_ratio = positive::<u32>(args.rw_ratio, "rw-ratio")?;
    let seed = args
        .seed
        .unwrap_or_else(crate::family::common::measure::seed);
    if args.kube.pods.is_some() {
        return super::spread::launch(args, sessions, seed);
    }
    let metrics = args.metrics.start(command_labels("dbstress"))?;
    let mut place =
        Place::of_this_process(Box::new(|_| {}))?.fed(metrics.as_ref().map(|m| m.feed(None)));
    let prepared = (|| {
        let target = endpoint(&args.connection)?;
        let (objects, sets) = read_prepared_size(&target)?;
        let settings = Settings {
            shape: TransactionShape {
                mode,
                rw_ratio,
                for_update: args.for_update,
                same_ref: args.same_ref,
                anti_dead: args.anti_dead,
                sessions,
                objects,
            },
            sets,
            seconds,
            protocol: if args.prepared {
                Protocol::Prepared
            } else {
                Protocol::Simple
            },
            seed,
        };
        let mut plan = plan(&target, &settings)?;
        plan.stall_timeout = stall_timeout;
        Ok((settings, plan))
    })();
    let (settings, plan) = place.join(prepared, |_| {})?;
    if place.leads() {
        println!("{}", heading(&settings));
    }
    let scripts = plan.scripts.clone();
    let Some(ran) = place.run(plan, &mut |event| {
        if let DriverEvent::ClientAborted(message, _) = event {
            eprintln!("stampede: error: {message}");
        }
    })?
    else {
        return Ok(());
    };
    check_sessions(&ran.result)?;
    let mut report = DbstressReport::new(&settings, &scripts, &ran.result);
    report.spread = ran.spread;
    print_report(args, &report)
}

/// A session that aborted fails the run.
fn check_sessions(result: &RunResult) -> CommandResult {
    if result.aborted_clients > 0 {
        return Err(Failure::run(format!(
            "{} session(s) aborted",
            result.aborted_clients
        )));
    }
    Ok(())
}

fn print_report(args: &RunArgs, report: &DbstressReport) -> CommandResult {
    print!("{}", report.text());
    if let Some(path) = &args.json {
        crate::report::write_file(path, &report.json())?;
    }
    Ok(())
}

fn heading(settings: &Settings) -> String {
    let shape = &settings.shape;
    let mode = match shape.mode {
        Mode::ReadOnly => "read-only (SEL1 + SEL2)".to_string(),
        Mode::ReadWrite => format!(
            "read+write (SEL1 + SEL2; UPDATE, DELETE + INSERT every {} transaction(s))",
            shape.rw_ratio
        ),
    };
    let options: Vec<&str> = [
        (shape.same_ref, "same ref"),
        (shape.for_update, "for update"),
        (shape.anti_dead, "anti-dead"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| *name)
    .collect();
    format!(
        "dbSTRESS {mode}, {} session(s), {} protocol, {} set(s) of {} object(s), {} s, seed {}{}",
        shape.sessions,
        settings.protocol.name(),
        settings.sets,
        shape.objects,
        settings.seconds,
        settings.seed,
        if options.is_empty() {
            String::new()
        } else {
            format!(" ({})", options.join(", "))
        }
    )
}

/// One script per set, equally weighted; each session counts its transactions from 0.
pub fn plan(target: &Endpoint, settings: &Settings) -> Result<RunPlan, Failure> {
    let mut variables = VarTable::default();
    let mut scripts = Vec::new();
    for set in 1..=settings.sets {
        let name = format!("set {set}");
        let text = statements::script(set, &settings.shape, target.engine());
        let script = parse_script(&name, &name, &text, &mut variables)
            .map_err(|e| Failure::input(format!("internal script {name}: {e}")))?;
        scripts.push(WeightedScript { script, weight: 1 });
    }
    let counter = variables.slot("txn_number");
    let mut plan = RunPlan::for_workload(
        target,
        settings.shape.sessions as usize,
        RunLimit::Duration(Duration::from_secs(settings.seconds)),
        settings.protocol,
        scripts,
        variables,
        settings.seed,
    );
    plan.initial_values[counter] = Value::Int(0);
    // A thread per session, as dbSTRESS's injector runs them: measured on MariaDB (ro, 8
    // sessions, prepared, bench/dbstress_client_cost.py) the client's CPU per transaction was
    // 19.2 us (mean of four runs) against 21.7 us with the sessions on a thread per core.
    plan.threads = settings.shape.sessions as usize;
    plan.report_per_command = true;
    // Deadlocks are possible in rw without --anti-dead.
    plan.errors = ErrorPolicy::surviving(10);
    Ok(plan)
}

struct DbstressReport {
    mode: Mode,
    seconds: f64,
    transactions: u64,
    errors: u64,
    retries: u64,
    latency: crate::driver::stats::LatencyStats,
    /// Per statement (STATEMENTS order), over every set.
    statements: Vec<(&'static str, CommandStats)>,
    /// Transactions per session and their spread.
    fairness: Option<ClientFairness>,
    /// A run spread over Kubernetes pods (`--pods`): each pod's share.
    spread: Option<crate::pods::SpreadSummary>,
}

impl DbstressReport {
    fn new(settings: &Settings, scripts: &[WeightedScript], result: &RunResult) -> DbstressReport {
        let mut statements: Vec<(&'static str, CommandStats)> = STATEMENTS
            .iter()
            .map(|name| (*name, CommandStats::default()))
            .collect();
        for (script, stats) in scripts.iter().zip(&result.command_stats) {
            for (command, stats) in script.script.commands.iter().zip(stats) {
                if let Some(index) = statement_index(&command.first_line) {
                    statements[index].1.merge(stats);
                }
            }
        }
        DbstressReport {
            mode: settings.shape.mode,
            seconds: result.bench_duration.as_secs_f64().max(1e-9),
            transactions: result.total.latency.count,
            errors: result.total.failures.total(),
            retries: result.total.retries,
            latency: result.total.latency.clone(),
            statements,
            fairness: ClientFairness::of(&result.client_transactions),
            spread: None,
        }
    }

    fn text(&self) -> String {
        let latency = LatencySummary::of(&self.latency);
        let mut out = format!(
            "transactions: {} ({:.1} TPS), with writes: {}; errors: {}, retries: {}\n",
            self.transactions,
            self.transactions as f64 / self.seconds,
            self.statements[2].1.count,
            self.errors,
            self.retries
        );
        out.push_str(&format!(
            "response time (ms): avg {:.3}, p50 {:.3}, p95 {:.3}, p99 {:.3}, max {:.3}\n",
            latency.avg, latency.p50, latency.p95, latency.p99, latency.max
        ));
        if let Some(fairness) = &self.fairness {
            out.push_str(&fairness.summary_line());
            out.push('\n');
        }
        out.push_str(&format!(
            "{:<8} {:>10} {:>10} {:>8}\n",
            "statement", "calls", "mean ms", "errors"
        ));
        for (name, stats) in &self.statements {
            if self.mode == Mode::ReadOnly && stats.count == 0 {
                continue;
            }
            out.push_str(&format!(
                "{name:<8} {:>10} {:>10.3} {:>8}\n",
                stats.count,
                stats.mean_ms(),
                stats.failures
            ));
        }
        for line in self
            .spread
            .iter()
            .flat_map(crate::pods::summary::spread_lines)
        {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    fn json(&self) -> String {
        let latency = LatencySummary::of(&self.latency);
        let statements: serde_json::Map<String, serde_json::Value> = self
            .statements
            .iter()
            .map(|(name, stats)| {
                (
                    name.to_string(),
                    serde_json::json!({"calls": stats.count, "mean_ms": stats.mean_ms(), "errors": stats.failures}),
                )
            })
            .collect();
        let mut value = serde_json::json!({
            "mode": self.mode.name(),
            "seconds": self.seconds,
            "transactions": self.transactions,
            "tps": self.transactions as f64 / self.seconds,
            "errors": self.errors,
            "retries": self.retries,
            "latency_ms": {
                "avg": latency.avg,
                "p50": latency.p50,
                "p95": latency.p95,
                "p99": latency.p99,
                "max": latency.max,
            },
            "statements": statements,
            "fairness": self.fairness,
        });
        if let Some(spread) = &self.spread {
            value["spread"] = serde_json::to_value(spread).expect("plain data serializes to JSON");
        }
        serde_json::to_string_pretty(&value).expect("plain data serializes to JSON")
    }
}

/// Which of dbSTRESS's statements a script line is.
fn statement_index(first_line: &str) -> Option<usize> {
    let line = first_line.trim_start();
    let index = if line.starts_with("SELECT S.REF, S.NAME, Z.REF") {
        0
    } else if line.starts_with("SELECT S.REF, S.NAME, H.HORDER") {
        1
    } else if line.starts_with("UPDATE history") {
        2
    } else if line.starts_with("DELETE FROM history") {
        3
    } else if line.starts_with("INSERT INTO history") {
        4
    } else {
        return None;
    };
    Some(index)
}
