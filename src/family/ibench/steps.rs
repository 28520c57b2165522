//! The Insert Benchmark's steps as Callaghan's scripts run them (`iq.sh` calling `np.sh` calling
//! iibench.py once per client): each step starts every client's iibench at once, each on its
//! own table `piN` (or all on `pi1`), with the options his scripts give that step:
//!
//! | step   | rows per client            | per commit | indexes | deletes | queries |
//! |--------|----------------------------|------------|---------|---------|---------|
//! | l.i0   | rows / clients             | 100        | none    | no      | none    |
//! | l.x    | 100 / clients, then CREATE INDEX ×3 | 100 | after   | no      | none    |
//! | l.i1   | writes × 4/5 / clients     | 50         | 3       | yes     | none    |
//! | l.i2   | writes × 1/5 / clients     | 5          | 3       | yes     | none    |
//! | qrN    | N × query-seconds, N rows/s | min(50, N) | 3      | yes     | 1 range |
//! | qpN    | N × query-seconds, N rows/s | min(50, N) | 3      | yes     | 1 point |
//!
//! After l.i2 the tables are vacuumed (PostgreSQL: VACUUM (VERBOSE, ANALYZE, INDEX_CLEANUP ON)
//! each, in parallel, then CHECKPOINT; MySQL: ANALYZE TABLE each, InnoDB's dirty pages flushed),
//! and the server is left to settle for 60 s + 1 s per million rows (at most 1200 s) from the
//! start of that, as his `vac_pg`/`vac_my` do.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::args::RunArgs;
use super::instance::{runtime, Instance, InstanceResult, Output};
use super::options::{DataShape, Options};
use super::rows::random_text;
use super::seconds::{Second, Seconds, OPERATION_NAMES};
use super::sql::{self, Dbms};
use super::summary::{self, StepResult};
use crate::family::common::connection::{endpoint, positive};
use crate::family::common::measure;
use crate::family::common::server_work::{local_server_pid, Meter};
use crate::family::common::sql_session::{create_database_if_missing, Session};
use crate::live::sampler::{Described, Sampler, Tally};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::Endpoint;

/// The steps a run takes when none are named.
pub const DEFAULT_STEPS: &str = "l.i0,l.x,l.i1,l.i2,qr100,qp100,qr500,qp500,qr1000,qp1000";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// l.i0: inserts in primary-key order, no secondary index.
    Load,
    /// l.x: the secondary indexes.
    Index,
    /// l.i1: inserts and deletes, 50 rows per commit.
    Write50,
    /// l.i2: inserts and deletes, 5 rows per commit.
    Write5,
    /// qrN / qpN: range or point queries while a writer inserts N rows a second per client.
    Query { rate: u64, point: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub kind: StepKind,
}

impl Step {
    pub fn parse(name: &str) -> Result<Step, Failure> {
        let kind = match name {
            "l.i0" => StepKind::Load,
            "l.x" => StepKind::Index,
            "l.i1" => StepKind::Write50,
            "l.i2" => StepKind::Write5,
            _ => query_step(name).ok_or_else(|| {
                Failure::input(format!(
                    "unknown step \"{name}\": the steps are l.i0, l.x, l.i1, l.i2, qrN and qpN (N rows a second, e.g. qr100)"
                ))
            })?,
        };
        Ok(Step {
            name: name.to_string(),
            kind,
        })
    }

    /// Whether the step writes with a rate limit (the query steps).
    pub fn writer_rate(&self) -> Option<u64> {
        match self.kind {
            StepKind::Query { rate, .. } => Some(rate),
            _ => None,
        }
    }
}

fn query_step(name: &str) -> Option<StepKind> {
    let (point, rate) = match (name.strip_prefix("qr"), name.strip_prefix("qp")) {
        (Some(rate), _) => (false, rate),
        (_, Some(rate)) => (true, rate),
        _ => return None,
    };
    let rate: u64 = rate
        .parse()
        .ok()
        .filter(|r| *r >= 1 && rate.bytes().all(|b| b.is_ascii_digit()))?;
    Some(StepKind::Query { rate, point })
}

/// The run's shape, checked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub clients: u64,
    pub shared_table: bool,
    pub rows: u64,
    pub writes: u64,
    pub query_seconds: u64,
    pub deletes: bool,
    pub settle: Option<u64>,
    pub seed: u64,
}

impl Plan {
    pub fn from_args(args: &RunArgs) -> Result<Plan, Failure> {
        if args.steps.is_empty() {
            return Err(Failure::input("--steps names no step"));
        }
        let steps = args
            .steps
            .iter()
            .map(|name| Step::parse(name))
            .collect::<Result<Vec<_>, _>>()?;
        let settle = match args.settle {
            Some(seconds) if seconds < 0 => {
                return Err(Failure::input(format!(
                    "--settle must be at least 0 (not {seconds})"
                )))
            }
            Some(seconds) => Some(seconds as u64),
            None => None,
        };
        if args.shared_table && !args.no_deletes {
            return Err(Failure::input(
                "--shared-table deletes other clients' rows: add --no-deletes (his iq.sh refuses delete_per_insert with only1t)",
            ));
        }
        Ok(Plan {
            steps,
            clients: positive(args.clients, "clients")?,
            shared_table: args.shared_table,
            rows: positive(args.rows, "rows")?,
            writes: positive(args.writes, "writes")?,
            query_seconds: positive(args.query_seconds, "query-seconds")?,
            deletes: !args.no_deletes,
            settle,
            seed: args.seed.map_or_else(measure::seed, |s| s as u64),
        })
    }

    pub fn table(&self, client: u64) -> String {
        if self.shared_table {
            "pi1".into()
        } else {
            format!("pi{client}")
        }
    }

    /// Tables the run uses.
    pub fn tables(&self) -> Vec<String> {
        let count = if self.shared_table { 1 } else { self.clients };
        (1..=count).map(|n| format!("pi{n}")).collect()
    }

    /// Clients the step starts: l.x on one shared table is one client, as his np.sh does.
    pub fn clients_of(&self, step: &Step) -> u64 {
        if step.kind == StepKind::Index && self.shared_table {
            1
        } else {
            self.clients
        }
    }

    /// Client `n`'s iibench options for `step` (np.sh's command line).
    pub fn options(&self, step: &Step, client: u64, dbms: Dbms) -> Options {
        let clients = self.clients_of(step);
        let base = Options {
            table: self.table(client),
            data: DataShape {
                length_min: 10,
                length_max: 20,
                ..DataShape::default()
            },
            secs_per_report: 1,
            prepared_queries: dbms == Dbms::Postgres,
            seed: self.seed.wrapping_add(client),
            ..Options::default()
        };
        let per_client = |rows: u64| rows / clients;
        let options = match step.kind {
            StepKind::Load => Options {
                max_rows: per_client(self.rows),
                rows_per_commit: 100,
                secondary_indexes: 0,
                ..base
            },
            StepKind::Index => Options {
                max_rows: per_client(100),
                rows_per_commit: 100,
                secondary_at_end: true,
                ..base
            },
            StepKind::Write50 => Options {
                max_rows: per_client(share(self.writes, 4)),
                rows_per_commit: 50,
                delete_per_insert: self.deletes,
                ..base
            },
            StepKind::Write5 => Options {
                max_rows: per_client(share(self.writes, 1)),
                rows_per_commit: 5,
                delete_per_insert: self.deletes,
                ..base
            },
            StepKind::Query { rate, point } => Options {
                max_rows: self.query_seconds * rate,
                rows_per_commit: 50,
                inserts_per_second: rate,
                query_threads: 1,
                query_pk_only: point,
                delete_per_insert: self.deletes,
                ..base
            },
        };
        options.fixed_up()
    }

    /// Seconds to let the server settle after l.i2 (his 60 + 1 per million rows, at most 1200).
    /// What the run will do and how long it takes, before it starts: each step's work, the
    /// time of the steps whose length is fixed (the query steps, the settle), and the rows of
    /// those that last as long as the server takes to write them.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "ibench run: {} step(s) over {} client(s), {}\n",
            self.steps.len(),
            self.clients,
            match (self.shared_table, self.clients) {
                (true, _) | (false, 1) => "table pi1".to_string(),
                (false, n) => format!("a table each (pi1..pi{n})"),
            }
        );
        let mut fixed = 0;
        for step in &self.steps {
            let (what, seconds) = self.step_work(step);
            fixed += seconds.unwrap_or(0);
            out += &format!("  {:<7} {what}\n", step.name);
        }
        let writes = self.steps.iter().any(|s| self.step_work(s).1.is_none());
        out += &format!(
            "takes {}{}; --query-seconds, --rows and --writes make it shorter (docs/ibench.md: a small run)\n",
            stampede_base::duration::human(Duration::from_secs(fixed)),
            if writes {
                " of fixed-length steps, plus as long as the server takes to write the rows above"
            } else {
                ""
            }
        );
        out
    }

    /// A step's work as one phrase, and its length when that is fixed.
    fn step_work(&self, step: &Step) -> (String, Option<u64>) {
        let deletes = if self.deletes {
            ", deleting as many"
        } else {
            ""
        };
        match step.kind {
            StepKind::Load => (format!("load {} rows", self.rows), None),
            StepKind::Index => ("create the secondary indexes".into(), None),
            StepKind::Write50 => (
                format!(
                    "insert {} rows, 50 a commit{deletes}",
                    share(self.writes, 4)
                ),
                None,
            ),
            StepKind::Write5 => (
                format!(
                    "insert {} rows, 5 a commit{deletes}; then vacuum and settle {} s",
                    share(self.writes, 1),
                    self.settle_seconds()
                ),
                Some(self.settle_seconds()),
            ),
            StepKind::Query { rate, point } => (
                format!(
                    "{} s of {} queries beside {rate} inserts/s a client",
                    self.query_seconds,
                    if point { "point" } else { "range" }
                ),
                Some(self.query_seconds),
            ),
        }
    }

    pub fn settle_seconds(&self) -> u64 {
        self.settle
            .unwrap_or_else(|| (60 + self.rows / 1_000_000).min(1200))
    }
}

/// `fifths` fifths of `writes`, rounded, at least 1 (his awk's printf "%.0f").
fn share(writes: u64, fifths: u64) -> u64 {
    ((writes as f64 * fifths as f64 / 5.0).round() as u64).max(1)
}

pub fn run(args: &RunArgs) -> CommandResult {
    let plan = Plan::from_args(args)?;
    if let Some(path) = &args.json {
        require_folder_of(path)?;
    }
    if let Some(dir) = &args.output_dir {
        prepare_output_dir(dir, &plan)?;
    }
    let metrics = args.metrics.start(crate::live::command_labels("ibench"))?;
    let endpoint = endpoint(&args.connection)?;
    let runtime = runtime()?;
    let dbms = Dbms::of(&endpoint);
    if plan.steps[0].kind == StepKind::Load {
        runtime.block_on(create_database_if_missing(&endpoint, &mut |line| {
            eprintln!("{line}")
        }))?;
    } else {
        runtime.block_on(require_tables(&plan, &endpoint, &plan.steps[0]))?;
    }
    // What the run will do and how long it takes, once nothing refuses it.
    eprint!("{}", plan.describe());
    let stop = stampede_base::signals::watch_signals();
    let mut results = Vec::new();
    for step in &plan.steps {
        let live = metrics.as_ref().map(|m| {
            let tally = Tally::new(1);
            let described = Described {
                scripts: OPERATION_NAMES.map(str::to_string).to_vec(),
                clients: plan.clients_of(step) as usize,
                scheduled: false,
                // Inserts and deletes.
                rows: 2,
            };
            let feed = m
                .feed(None)
                .with_labels(vec![("step".into(), step.name.clone())]);
            (Sampler::start(feed, described, tally.clone()), tally)
        });
        let result = runtime.block_on(run_step(&StepRun {
            plan: &plan,
            step,
            endpoint: &endpoint,
            output_dir: args.output_dir.as_deref(),
            stop: &stop,
            progress: None,
            seconds_to: None,
            live: live.as_ref().map(|(_, tally)| tally.clone()),
        }));
        if let Some((sampler, _)) = live {
            sampler.finish(result.as_ref().map_or(true, |r| r.interrupted));
        }
        let result = result?;
        println!("{}", summary::step_lines(&result));
        let interrupted = result.interrupted;
        results.push(result);
        if interrupted {
            break;
        }
        if step.kind == StepKind::Write5 {
            eprintln!("{}", settle_note(plan.settle_seconds(), dbms));
            let wait = Duration::from_secs(plan.settle_seconds());
            runtime.block_on(settle(&plan.tables(), wait, &endpoint, dbms))?;
        }
    }
    println!("{}", summary::table(&results));
    if let Some(path) = &args.json {
        write_json(path, &plan, &results)?;
    }
    if results.iter().any(|r| r.interrupted) {
        return Err(Failure::interrupted(
            "stopped by a signal; the steps above were measured",
        ));
    }
    Ok(())
}

/// A run that does not start with l.i0 continues on the tables an earlier one made: refused,
/// before anything runs, when one is not there.
pub async fn require_tables(plan: &Plan, endpoint: &Endpoint, first: &Step) -> Result<(), Failure> {
    let mut session = Session::connect(endpoint).await?;
    for table in plan.tables() {
        let there = session
            .query(&format!("select 1 from {table} limit 0"))
            .await?
            .is_ok();
        if !there {
            return Err(Failure::input(format!(
                "step {}: table {table} is not there; start with l.i0, which creates the tables",
                first.name
            )));
        }
    }
    Ok(())
}

/// `--json`: the run's shape and every step's result.
#[derive(serde::Serialize)]
struct Report<'a> {
    clients: u64,
    shared_table: bool,
    rows: u64,
    writes: u64,
    query_seconds: u64,
    deletes: bool,
    seed: u64,
    steps: &'a [StepResult],
}

fn write_json(path: &Path, plan: &Plan, results: &[StepResult]) -> Result<(), Failure> {
    let report = Report {
        clients: plan.clients,
        shared_table: plan.shared_table,
        rows: plan.rows,
        writes: plan.writes,
        query_seconds: plan.query_seconds,
        deletes: plan.deletes,
        seed: plan.seed,
        steps: results,
    };
    let text = serde_json::to_string_pretty(&report).expect("the report serializes");
    std::fs::write(path, text + "\n")
        .map_err(|e| Failure::run(format!("{}: {e}", path.display())).caused_by(e))
}

/// `--json`'s folder must be there before the steps run, not found missing after them.
fn require_folder_of(path: &Path) -> Result<(), Failure> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    match folder {
        Some(folder) if !folder.is_dir() => Err(Failure::input(format!(
            "--json {}: the folder {} is not there",
            path.display(),
            folder.display()
        ))),
        _ => Ok(()),
    }
}

/// Refuses a folder that already holds a step's output, before anything runs.
fn prepare_output_dir(dir: &Path, plan: &Plan) -> Result<(), Failure> {
    for step in &plan.steps {
        let path = dir.join(&step.name);
        if path.exists() {
            return Err(Failure::input(format!(
                "--output-dir: {} is already there; give an empty folder",
                path.display()
            )));
        }
    }
    Ok(())
}

/// One step to run, and where its results go besides the returned `StepResult`.
pub struct StepRun<'a> {
    pub plan: &'a Plan,
    pub step: &'a Step,
    pub endpoint: &'a Endpoint,
    /// Each client's iibench output, `DIR/STEP/ib.N`.
    pub output_dir: Option<&'a Path>,
    pub stop: &'a Arc<AtomicBool>,
    /// A step resumed in place (the lab): per client, the rows it had inserted before it was
    /// stopped; its tables are there and it inserts only the rest. None: the step whole.
    pub progress: Option<&'a [u64]>,
    /// Each whole second as it closes, to report it while the step runs.
    pub seconds_to: Option<tokio::sync::mpsc::UnboundedSender<Second>>,
    /// `--metrics-addr`: each operation as it ends.
    pub live: Option<Arc<Tally>>,
}

/// Runs one step: every client's iibench at once; their CPU, the server's, the per-second rates.
pub async fn run_step(run: &StepRun<'_>) -> Result<StepResult, Failure> {
    let (plan, step, endpoint) = (run.plan, run.step, run.endpoint);
    let dbms = Dbms::of(endpoint);
    let mut control = Session::connect(endpoint).await?;
    if step.kind == StepKind::Load && run.progress.is_none() {
        create_tables(plan, dbms, &mut control).await?;
    }
    let meter = Meter {
        server_pid: local_server_pid(&mut control).await,
    };
    let random = random_text(plan.seed);
    let clients = plan.clients_of(step);
    let before_server = meter.read();
    let before_client = stampede_base::cpu::process_cpu();
    let seconds = Arc::new(Seconds::new(Instant::now(), run.live.clone()));
    let (end_closing, ended) = tokio::sync::oneshot::channel();
    let closer = tokio::spawn(close_seconds(
        seconds.clone(),
        ended,
        run.seconds_to.clone(),
    ));
    let mut handles = Vec::new();
    for client in 1..=clients {
        let mut options = plan.options(step, client, dbms);
        if let Some(done) = run.progress.and_then(|p| p.get(client as usize - 1)) {
            options.max_rows = options.max_rows.saturating_sub(*done);
        }
        let instance = Arc::new(Instance {
            endpoint: endpoint.clone(),
            dbms,
            options,
            random: random.clone(),
            seconds: Some(seconds.clone()),
        });
        let out = client_output(run.output_dir, step, client)?;
        handles.push(tokio::spawn(instance.run(out, run.stop.clone())));
    }
    let mut instances: Vec<InstanceResult> = Vec::new();
    for handle in handles {
        let result = handle
            .await
            .map_err(|e| Failure::run(format!("step {}: a client failed: {e}", step.name)))?;
        instances.push(result.map_err(|f| f.map_message(|m| format!("step {}: {m}", step.name)))?);
    }
    let _ = end_closing.send(());
    let mut per_second = closer
        .await
        .map_err(|e| Failure::run(format!("step {}: {e}", step.name)))?;
    // The last whole seconds; the part of a second at the end is left out.
    let last = seconds.close_before(Instant::now());
    if let Some(to) = &run.seconds_to {
        last.iter().for_each(|second| {
            let _ = to.send(*second);
        });
    }
    per_second.extend(last);
    let client_cpu = stampede_base::cpu::process_cpu()
        .since(&before_client)
        .total();
    let indexed = if step.kind == StepKind::Index {
        plan.rows
    } else {
        0
    };
    Ok(summary::step_result(
        &step.name,
        step.writer_rate(),
        &instances,
        per_second,
        indexed,
        client_cpu,
        meter.since(&before_server),
    ))
}

/// l.i0's tables: dropped and created without secondary indexes, as his `--setup` does.
pub async fn create_tables(plan: &Plan, dbms: Dbms, control: &mut Session) -> Result<(), Failure> {
    for table in plan.tables() {
        control.execute(&sql::drop_table(&table)).await?;
        let options = Options {
            table: table.clone(),
            secondary_indexes: 0,
            ..Options::default()
        };
        for statement in sql::create_table(dbms, &options) {
            control.execute(&statement).await?;
        }
    }
    Ok(())
}

/// Closes the step's seconds as they pass (so that only the current one's response times are
/// held), until `ended`, passing each on to `to`.
async fn close_seconds(
    seconds: Arc<Seconds>,
    mut ended: tokio::sync::oneshot::Receiver<()>,
    to: Option<tokio::sync::mpsc::UnboundedSender<Second>>,
) -> Vec<Second> {
    let mut closed = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let now = seconds.close_before(Instant::now());
                if let Some(to) = &to {
                    now.iter().for_each(|second| {
                        let _ = to.send(*second);
                    });
                }
                closed.extend(now);
            }
            _ = &mut ended => return closed,
        }
    }
}

/// Where client `n`'s iibench.py lines go: `DIR/STEP/ib.N`, or nowhere.
fn client_output(dir: Option<&Path>, step: &Step, client: u64) -> Result<Output, Failure> {
    let Some(dir) = dir else {
        return Ok(Arc::new(Mutex::new(Box::new(std::io::sink()))));
    };
    let folder: PathBuf = dir.join(&step.name);
    std::fs::create_dir_all(&folder)
        .map_err(|e| Failure::run(format!("{}: {e}", folder.display())).caused_by(e))?;
    let path = folder.join(format!("ib.{client}"));
    let file = std::fs::File::create(&path)
        .map_err(|e| Failure::run(format!("{}: {e}", path.display())).caused_by(e))?;
    Ok(Arc::new(Mutex::new(Box::new(std::io::BufWriter::new(
        file,
    )))))
}

/// What `settle` is about to do, in a line.
pub fn settle_note(seconds: u64, dbms: Dbms) -> String {
    format!(
        "ibench: {} the tables, then settling until {} s have passed",
        match dbms {
            Dbms::Postgres => "vacuuming",
            Dbms::Mysql => "analyzing",
        },
        seconds
    )
}

/// His `vac_pg` / `vac_my` after l.i2: statistics and dirty pages dealt with, then a wait so
/// that the query steps start on a settled server.
pub async fn settle(
    tables: &[String],
    wait: Duration,
    endpoint: &Endpoint,
    dbms: Dbms,
) -> Result<(), Failure> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for table in tables {
        let (endpoint, table) = (endpoint.clone(), table.clone());
        tasks.push(tokio::spawn(async move {
            let mut session = Session::connect(&endpoint).await?;
            let statement = match dbms {
                Dbms::Postgres => vacuum_statement(&mut session, &table).await?,
                Dbms::Mysql => format!("analyze table {table}"),
            };
            session.query(&statement).await?.map_err(Failure::run)?;
            Ok::<(), Failure>(())
        }));
    }
    let mut control = Session::connect(endpoint).await?;
    let flushing = match dbms {
        Dbms::Mysql => Some(InnodbFlush::start(&mut control).await?),
        Dbms::Postgres => None,
    };
    for task in tasks {
        task.await
            .map_err(|e| Failure::run(format!("vacuum: {e}")))??;
    }
    if dbms == Dbms::Postgres {
        control.execute("checkpoint").await?;
    }
    tokio::time::sleep_until((started + wait).into()).await;
    if let Some(flushing) = flushing {
        flushing.restore(&mut control).await?;
    }
    Ok(())
}

/// His VACUUM: INDEX_CLEANUP ON from PostgreSQL 12, where it exists.
async fn vacuum_statement(session: &mut Session, table: &str) -> Result<String, Failure> {
    let version: i64 = session.value("show server_version_num").await?.unwrap_or(0);
    Ok(if version >= 120_000 {
        format!("vacuum (verbose, analyze, index_cleanup ON) {table}")
    } else {
        format!("vacuum (verbose, analyze) {table}")
    })
}

/// InnoDB's dirty-page settings his `vac_my` lowers so the buffer pool is written back, and
/// their values to put back.
struct InnodbFlush {
    saved: Vec<(&'static str, String)>,
}

const INNODB_FLUSH: [(&str, &str); 3] = [
    ("innodb_max_dirty_pages_pct_lwm", "1"),
    ("innodb_max_dirty_pages_pct", "1"),
    // MySQL 8.0.18+ only; his script ignores it where it is missing, and so does this.
    ("innodb_idle_flush_pct", "100"),
];

impl InnodbFlush {
    async fn start(session: &mut Session) -> Result<InnodbFlush, Failure> {
        let mut saved = Vec::new();
        for (name, value) in INNODB_FLUSH {
            let Ok(Some(current)) = session
                .value::<String>(&format!("select @@global.{name}"))
                .await
            else {
                continue;
            };
            session
                .execute(&format!("set global {name}={value}"))
                .await?;
            saved.push((name, current));
        }
        Ok(InnodbFlush { saved })
    }

    async fn restore(self, session: &mut Session) -> Result<(), Failure> {
        // max_dirty_pages_pct first: the low-water mark may not exceed it.
        for (name, value) in self.saved.iter().rev() {
            session
                .execute(&format!("set global {name}={value}"))
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(clients: u64, shared_table: bool) -> Plan {
        Plan {
            steps: Vec::new(),
            clients,
            shared_table,
            rows: 1_000_000,
            writes: 1_000_000,
            query_seconds: 100,
            deletes: true,
            settle: None,
            seed: 1,
        }
    }

    #[test]
    fn step_names_are_his() {
        assert_eq!(Step::parse("l.i1").unwrap().kind, StepKind::Write50);
        assert_eq!(
            Step::parse("qp500").unwrap().kind,
            StepKind::Query {
                rate: 500,
                point: true
            }
        );
        for bad in ["l.i3", "qr", "qr0", "qr-5", "qx100", "qr+5", ""] {
            let refused = Step::parse(bad).unwrap_err();
            assert!(
                refused
                    .message()
                    .starts_with(&format!("unknown step \"{bad}\"")),
                "{bad}"
            );
        }
    }

    #[test]
    fn each_step_gets_the_options_his_scripts_give_it() {
        let plan = plan(2, false);
        let step = |name: &str| Step::parse(name).unwrap();
        let load = plan.options(&step("l.i0"), 2, Dbms::Postgres);
        assert_eq!(
            (load.table.as_str(), load.max_rows, load.rows_per_commit),
            ("pi2", 500_000, 100)
        );
        assert_eq!(load.secondary_indexes, 0);
        assert_eq!((load.data.length_min, load.data.length_max), (10, 20));
        let index = plan.options(&step("l.x"), 1, Dbms::Postgres);
        assert_eq!(
            (
                index.max_rows,
                index.secondary_at_end,
                index.secondary_indexes
            ),
            (50, true, 3)
        );
        let write = plan.options(&step("l.i1"), 1, Dbms::Mysql);
        assert_eq!(
            (
                write.max_rows,
                write.rows_per_commit,
                write.delete_per_insert
            ),
            (400_000, 50, true)
        );
        assert!(!write.prepared_queries);
        let write5 = plan.options(&step("l.i2"), 1, Dbms::Postgres);
        assert_eq!((write5.max_rows, write5.rows_per_commit), (100_000, 5));
        let query = plan.options(&step("qp100"), 1, Dbms::Postgres);
        assert_eq!(
            (
                query.max_rows,
                query.rows_per_commit,
                query.inserts_per_second,
                query.query_threads
            ),
            (10_000, 50, 100, 1)
        );
        assert!(query.query_pk_only && query.prepared_queries);
        // A rate below 50 rows a second commits that many at a time.
        let slow = plan.options(&step("qr20"), 1, Dbms::Postgres);
        assert_eq!(slow.rows_per_commit, 20);
    }

    #[test]
    fn a_shared_table_is_pi1_and_its_indexes_are_made_once() {
        let plan = plan(4, true);
        let index = Step::parse("l.x").unwrap();
        assert_eq!(plan.clients_of(&index), 1);
        assert_eq!(plan.options(&index, 1, Dbms::Postgres).max_rows, 100);
        assert_eq!(plan.tables(), ["pi1"]);
        assert_eq!(
            plan.options(&Step::parse("l.i0").unwrap(), 3, Dbms::Postgres)
                .table,
            "pi1"
        );
    }

    #[test]
    fn settling_follows_his_formula() {
        let mut plan = plan(1, false);
        assert_eq!(plan.settle_seconds(), 61);
        plan.rows = 5_000_000_000;
        assert_eq!(plan.settle_seconds(), 1200);
        plan.settle = Some(0);
        assert_eq!(plan.settle_seconds(), 0);
    }
}
