//! `stampede tproch build|run|check|drop`.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::args::{BuildArgs, EngineConnectionArgs, GenerateArgs, RunArgs, TprochAction};
use super::load::Build;
use super::run::{RunPlan, TestResult};
use super::schema::TABLES;
use super::session::Dialect;
use super::{check, data, generate, metrics};
use crate::family::common::connection::{endpoint, positive};
use crate::family::common::server_work::local_server_pid;
use crate::family::common::sql_session::{create_database_if_missing, Session};
use crate::live::sampler::{Described, Sampler, Tally};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;

pub fn run(action: &TprochAction) -> CommandResult {
    match action {
        TprochAction::Build(args) => build(args),
        TprochAction::Generate(args) => generate(args),
        TprochAction::Run(args) => run_tests(args),
        TprochAction::Check(args) => {
            let endpoint = endpoint(args)?;
            control_runtime().block_on(check::check(&endpoint))
        }
        TprochAction::Drop(args) => drop_tables(args),
    }
}

/// `--scale-factor`: dbgen's range.
fn checked_scale_factor(scale_factor: f64) -> Result<f64, Failure> {
    match data::scale_factor_problem(scale_factor) {
        None => Ok(scale_factor),
        Some(problem) => Err(Failure::input(format!(
            "--scale-factor {scale_factor}: {problem}"
        ))),
    }
}

fn threads(threads: Option<i64>) -> Result<usize, Failure> {
    match threads {
        Some(t) => positive::<usize>(t, "threads"),
        None => Ok(stampede_base::cpu::cores()),
    }
}

fn generate(args: &GenerateArgs) -> CommandResult {
    let scale_factor = checked_scale_factor(args.scale_factor)?;
    let threads = threads(args.threads)?;
    let files = generate::files(scale_factor);
    if let Some(existing) = files.iter().find(|f| args.dir.join(f).exists()) {
        return Err(Failure::input(format!(
            "{} already exists: generate into an empty folder",
            args.dir.join(existing).display()
        )));
    }
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Failure::input(format!("cannot make {}: {e}", args.dir.display())))?;
    let started = Instant::now();
    let (rows, bytes) =
        generate::write(&args.dir, scale_factor, threads, &|line| println!("{line}"))?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "generated scale factor {scale_factor}: {rows} rows, {:.1} MB in {seconds:.2} s over {threads} thread(s): {:.0} rows/s, {:.1} MB/s",
        bytes as f64 / 1e6,
        rows as f64 / seconds,
        bytes as f64 / 1e6 / seconds
    );
    Ok(())
}

fn build(args: &BuildArgs) -> CommandResult {
    let scale_factor = checked_scale_factor(args.scale_factor)?;
    let threads = threads(args.threads)?;
    let endpoint = endpoint(&args.connection)?;
    control_runtime().block_on(async {
        create_database_if_missing(&endpoint, &mut |line| println!("{line}")).await?;
        let mut session = Session::connect(&endpoint)
            .await
            .map_err(Failure::into_input)?;
        refuse_existing(&mut session, Dialect::of(&endpoint)).await
    })?;
    println!("building TPROC-H: scale factor {scale_factor} over {threads} connection(s)");
    let started = Instant::now();
    let build = Build {
        endpoint,
        scale_factor,
        connections: threads,
    };
    super::build::build(&build, &|line| println!("{line}"))?;
    println!(
        "built scale factor {scale_factor} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Refuses a database holding a table of TPROC-H's names: an earlier build, or another
/// schema's table (TPROC-C has customer and orders) that a build must not touch.
async fn refuse_existing(session: &mut Session, dialect: Dialect) -> Result<(), Failure> {
    for table in &TABLES {
        match table_kind(session, dialect, table.name, table.key_column).await? {
            TableKind::Absent => {}
            TableKind::Ours(name) => {
                return Err(Failure::input(format!(
                    "table {name} already exists; run `stampede tproch drop` first"
                )))
            }
            TableKind::Foreign(name) => {
                return Err(Failure::input(format!(
                    "table {name} already exists and is not TPROC-H's (it has no {} column): build into another database",
                    table.key_column
                )))
            }
        }
    }
    Ok(())
}

/// Whether a table of TPROC-H's name is here, and whether it is TPROC-H's (it has the key
/// column), with its name as the server spells it.
enum TableKind {
    Absent,
    Ours(String),
    Foreign(String),
}

async fn table_kind(
    session: &mut Session,
    dialect: Dialect,
    table: &str,
    key_column: &str,
) -> Result<TableKind, Failure> {
    // MariaDB's table names are case-sensitive: TPROC-H's are upper case, TPROC-C's lower.
    let statement = match dialect {
        Dialect::Postgres => format!(
            "SELECT c.relname::text, count(*) FILTER (WHERE a.attname = '{key_column}') FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped WHERE c.relname = '{table}' AND c.relkind IN ('r', 'p') AND pg_catalog.pg_table_is_visible(c.oid) GROUP BY c.oid, c.relname"
        ),
        Dialect::Mysql => format!(
            "SELECT TABLE_NAME, sum(lower(COLUMN_NAME) = '{key_column}') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND lower(TABLE_NAME) = '{table}' GROUP BY TABLE_NAME ORDER BY 2 DESC"
        ),
    };
    let rows = session.query(&statement).await?.map_err(Failure::run)?;
    Ok(match rows.first() {
        None => TableKind::Absent,
        Some(row) => {
            let name = row[0].clone().unwrap_or_default();
            match row[1].as_deref() {
                Some("0") | None => TableKind::Foreign(name),
                Some(_) => TableKind::Ours(name),
            }
        }
    })
}

fn drop_tables(args: &EngineConnectionArgs) -> CommandResult {
    let endpoint = endpoint(args)?;
    let dialect = Dialect::of(&endpoint);
    control_runtime().block_on(async {
        let mut session = Session::connect(&endpoint)
            .await
            .map_err(Failure::into_input)?;
        let mut ours = Vec::new();
        for table in &TABLES {
            match table_kind(&mut session, dialect, table.name, table.key_column).await? {
                TableKind::Ours(name) => ours.push(name),
                TableKind::Foreign(name) => println!("left {name}: not TPROC-H's"),
                TableKind::Absent => {}
            }
        }
        if ours.is_empty() {
            println!("no TPROC-H tables here");
            return Ok(());
        }
        let statement = match dialect {
            Dialect::Postgres => format!("DROP TABLE {} CASCADE", ours.join(", ")),
            Dialect::Mysql => {
                format!("SET FOREIGN_KEY_CHECKS = 0; DROP TABLE {}", ours.join(", "))
            }
        };
        for part in statement.split("; ") {
            session.execute(part).await?;
        }
        println!("dropped {}", ours.join(", "));
        Ok(())
    })
}

/// What `run --json` writes.
#[derive(Serialize)]
struct RunReport<'a> {
    scale_factor: f64,
    server_version: String,
    degree_of_parallel: i64,
    tests: &'a [TestResult],
    /// TPC-H's metrics from this run's timings: derived, not an audited TPC-H result.
    derived_metrics: Option<DerivedMetrics>,
}

#[derive(Serialize, Clone, Copy)]
struct DerivedMetrics {
    power_at_size: Option<f64>,
    throughput_at_size: Option<f64>,
    qphh_at_size: Option<f64>,
}

fn run_tests(args: &RunArgs) -> CommandResult {
    let settings = RunSettings::of(args)?;
    let metrics = args.metrics.start(crate::live::command_labels("tproch"))?;
    let runtime = control_runtime();
    let (plan, server_version) = runtime.block_on(settings.plan(args))?;
    let parallel = match plan.dialect {
        Dialect::Postgres => format!(
            ", max_parallel_workers_per_gather {}",
            plan.degree_of_parallel
        ),
        Dialect::Mysql => String::new(),
    };
    println!(
        "TPROC-H on {server_version}: scale factor {} (from supplier's rows){parallel}",
        plan.scale_factor
    );
    let tally = Tally::new(settings.streams());
    let plan = RunPlan {
        live: metrics.as_ref().map(|_| tally.clone()),
        ..plan
    };
    let sampler = metrics.as_ref().map(|m| {
        let described = Described {
            scripts: super::run::live_scripts(),
            clients: settings.streams(),
            scheduled: false,
            rows: 0,
        };
        Sampler::start(m.feed(None), described, tally.clone())
    });
    let tests = runtime.block_on(settings.run(&plan));
    let failed_queries = tests.as_ref().map_or(0, |tests| failed_queries(tests));
    if let Some(sampler) = sampler {
        sampler.finish(tests.is_err() || failed_queries > 0);
    }
    let tests = tests?;
    let derived = derived_metrics(&plan, &tests);
    for test in &tests {
        summarize(test);
    }
    if let Some(m) = derived {
        say_metrics(m);
    }
    if let Some(path) = &args.json {
        let report = RunReport {
            scale_factor: plan.scale_factor,
            server_version,
            degree_of_parallel: plan.degree_of_parallel,
            tests: &tests,
            derived_metrics: derived,
        };
        let text = serde_json::to_string_pretty(&report).expect("plain data serializes to JSON");
        std::fs::write(path, text + "\n")
            .map_err(|e| Failure::run(format!("cannot write {}: {e}", path.display())))?;
    }
    if failed_queries > 0 {
        return Err(Failure::run(format!(
            "{failed_queries} query run(s) failed"
        )));
    }
    Ok(())
}

fn failed_queries(tests: &[TestResult]) -> usize {
    tests
        .iter()
        .flat_map(|t| &t.query_sets)
        .flat_map(|s| &s.queries)
        .filter(|q| q.error.is_some())
        .count()
}

/// The run's settings, checked before anything connects.
struct RunSettings {
    virtual_users: usize,
    query_sets: usize,
    update_sets: i64,
    trickle: Duration,
    queries: Vec<usize>,
    tpch_streams: Option<usize>,
    refresh: bool,
}

impl RunSettings {
    fn of(args: &RunArgs) -> Result<RunSettings, Failure> {
        let virtual_users = positive::<usize>(args.vu, "vu")?;
        let query_sets = positive::<usize>(args.query_sets, "query-sets")?;
        let update_sets = positive::<i64>(args.update_sets, "update-sets")?;
        if args.degree_of_parallel < 0 {
            return Err(Failure::input(format!(
                "--degree-of-parallel {}: must be 0 or more",
                args.degree_of_parallel
            )));
        }
        if args.trickle_refresh < 0 {
            return Err(Failure::input(format!(
                "--trickle-refresh {}: must be 0 or more milliseconds",
                args.trickle_refresh
            )));
        }
        if args.refresh && virtual_users == 1 && args.update_sets != 1 {
            println!("the power test runs one update set; --update-sets applies to several users");
        }
        let tpch_streams = match args.tpch_streams {
            Some(s) => Some(positive::<usize>(s, "tpch-streams")?),
            None => None,
        };
        Ok(RunSettings {
            virtual_users,
            query_sets,
            update_sets,
            trickle: Duration::from_millis(args.trickle_refresh as u64),
            queries: query_list(args.queries.as_deref())?,
            tpch_streams,
            refresh: args.refresh,
        })
    }

    async fn plan(&self, args: &RunArgs) -> Result<(RunPlan, String), Failure> {
        let endpoint = endpoint(&args.connection)?;
        let dialect = Dialect::of(&endpoint);
        let mut session = Session::connect(&endpoint)
            .await
            .map_err(Failure::into_input)?;
        if let TableKind::Absent | TableKind::Foreign(_) =
            table_kind(&mut session, dialect, "lineitem", "l_orderkey").await?
        {
            return Err(Failure::input(
                "no TPROC-H tables here (lineitem is missing): run `stampede tproch build` first",
            ));
        }
        let scale_factor = check::scale_factor(&mut session, dialect).await?;
        let version_query = match dialect {
            Dialect::Postgres => "SELECT 'PostgreSQL ' || current_setting('server_version')",
            Dialect::Mysql => "SELECT concat('MariaDB/MySQL ', version())",
        };
        let version = session
            .value::<String>(version_query)
            .await?
            .unwrap_or_default();
        let plan = RunPlan {
            server_pid: local_server_pid(&mut session).await,
            endpoint,
            dialect,
            scale_factor,
            degree_of_parallel: args.degree_of_parallel,
            query_sets: self.query_sets,
            queries: self.queries.clone(),
            raise_errors: args.raise_query_error,
            verbose: args.verbose,
            trickle: self.trickle,
            seed: args
                .seed
                .unwrap_or_else(crate::family::common::measure::seed),
            qualification: args.qualification,
            live: None,
        };
        Ok((plan, version))
    }

    /// The run's connections at once: its query streams, and the refresh stream beside them.
    fn streams(&self) -> usize {
        match self.tpch_streams {
            Some(streams) => streams + 1,
            None => self.virtual_users,
        }
    }

    async fn run(&self, plan: &RunPlan) -> Result<Vec<TestResult>, Failure> {
        if let Some(streams) = self.tpch_streams {
            let power = plan.power_test().await?;
            let throughput = RunPlan {
                trickle: Duration::ZERO,
                query_sets: 1,
                ..plan.clone()
            }
            .throughput_test(streams, streams as i64)
            .await?;
            return Ok(vec![power, throughput]);
        }
        let test = match (self.virtual_users, self.refresh) {
            (1, true) => plan.power_test().await?,
            (users, true) => plan.throughput_test(users - 1, self.update_sets).await?,
            (users, false) => plan.query_sets_only(users).await?,
        };
        Ok(vec![test])
    }
}

/// `--queries 1,6,14`: TPC-H's query numbers, each once; all 22 when absent.
fn query_list(list: Option<&str>) -> Result<Vec<usize>, Failure> {
    let Some(list) = list else {
        return Ok((1..=22).collect());
    };
    let mut queries = Vec::new();
    for item in list.split(',').map(str::trim) {
        match item.parse::<usize>() {
            Ok(n) if (1..=22).contains(&n) => {
                if !queries.contains(&n) {
                    queries.push(n);
                }
            }
            _ => {
                return Err(Failure::input(format!(
                    "--queries {list}: {item} is not a TPC-H query (1 to 22)"
                )))
            }
        }
    }
    Ok(queries)
}

fn derived_metrics(plan: &RunPlan, tests: &[TestResult]) -> Option<DerivedMetrics> {
    let power = tests.iter().find(|t| t.test == "power").and_then(|t| {
        let queries: Vec<f64> = t
            .query_sets
            .iter()
            .flat_map(|s| &s.queries)
            .map(|q| q.seconds)
            .collect();
        let refreshes: Vec<f64> = t.refreshes.iter().map(|r| r.seconds).collect();
        (queries.len() == 22)
            .then(|| metrics::power_at_size(plan.scale_factor, &queries, &refreshes))
    });
    let throughput = tests.iter().find(|t| t.test == "throughput").and_then(|t| {
        let complete = t.query_sets.iter().all(|s| s.queries.len() == 22);
        complete.then(|| metrics::throughput_at_size(plan.scale_factor, t.query_streams, t.seconds))
    });
    if power.is_none() && throughput.is_none() {
        return None;
    }
    Some(DerivedMetrics {
        power_at_size: power,
        throughput_at_size: throughput,
        qphh_at_size: power
            .zip(throughput)
            .map(|(p, t)| metrics::qphh_at_size(p, t)),
    })
}

/// HammerDB's closing lines per query set, and the test's time.
fn summarize(test: &TestResult) {
    for set in &test.query_sets {
        let returned = set.queries.iter().filter(|q| q.rows > 0).count();
        let mean = set
            .geometric_mean_s
            .map_or("-".to_string(), |m| format!("{m:.5}"));
        println!(
            "stream {}: completed query set {} in {:.3} seconds; geometric mean of query times returning rows ({returned}) is {mean}",
            set.stream, set.set, set.seconds
        );
    }
    let mut line = format!(
        "{} test: {} query stream(s), {:.3} seconds",
        test.test, test.query_streams, test.seconds
    );
    if let Some(server) = test.server {
        line.push_str(&format!("; {}", server.describe()));
    }
    println!("{line}");
}

fn say_metrics(m: DerivedMetrics) {
    let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    println!(
        "derived from TPC-H's formulas (not an audited TPC-H result): Power@Size {}, Throughput@Size {}, QphH@Size {}",
        show(m.power_at_size),
        show(m.throughput_at_size),
        show(m.qphh_at_size)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_lists_name_tpc_h_queries_once() {
        assert_eq!(query_list(Some("14, 2,14")).unwrap(), [14, 2]);
        assert_eq!(query_list(None).unwrap().len(), 22);
        let error = query_list(Some("1,23")).unwrap_err();
        assert_eq!(
            error.message(),
            "--queries 1,23: 23 is not a TPC-H query (1 to 22)"
        );
    }
}
