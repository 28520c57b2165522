//! One iibench run, as iibench.py's processes make it: a statement maker that builds each INSERT
//! (and, with deletes, the DELETE of as many of the oldest rows) and hands them to an inserter
//! and a deleter connection through queues of eight, so neither runs more than eight statements
//! ahead of the other; query connections that run until the inserts are done; optionally a
//! connection that keeps a transaction open. A reporter prints iibench.py's line every report
//! interval and keeps every second's totals.
//!
//! stampede's own choices, where iibench.py's processes differ: a rate limit releases INSERTs
//! evenly (INSERT n at n × rows_per_commit / inserts_per_second seconds) instead of a burst at
//! each second's start; a statement the server refuses is counted under the retry columns and
//! not as rows (iibench.py on MySQL counts its rows anyway); each role draws from its own seed.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

use super::options::Options;
use super::output::{self, RtHistogram, Totals};
use super::rows::{timestamp_now, RowMaker};
use super::seconds::Seconds;
use super::sql::{self, Dbms, QueryKind};
use crate::driver::stats::LatencyStats;
use crate::family::common::sql_session::Session;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::prng::PgPrng;

/// Statements the maker may run ahead of each executor (iibench.py's Queue(8)).
const QUEUE: usize = 8;

/// A runtime for a run's connections: one worker per core, as iibench.py's processes spread.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(stampede_base::cpu::cores().max(2))
        .enable_all()
        .build()
        .map_err(|e| {
            Failure::run(format!("could not start the client's threads: {e}")).caused_by(e)
        })
}

/// Where an instance's iibench.py output goes.
pub type Output = Arc<Mutex<Box<dyn Write + Send>>>;

pub fn say(out: &Output, line: &str) {
    let mut out = out.lock().expect("no thread panics holding this lock");
    // A closed pipe must not end the run: the results still go to the summary and JSON.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// One iibench run's inputs.
pub struct Instance {
    pub endpoint: Endpoint,
    pub dbms: Dbms,
    pub options: Options,
    /// The random text the data columns take slices of.
    pub random: Arc<str>,
    /// The step's seconds this run's statements count in (`ibench run`), if any.
    pub seconds: Option<Arc<Seconds>>,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Insert = 0,
    Delete = 1,
    Query = 2,
}

/// What the roles share with the reporter.
struct Shared {
    inserted: AtomicU64,
    deleted: AtomicU64,
    queries: AtomicU64,
    /// Each operation's longest response in the current interval, µs; -1 when none.
    interval_max_us: [AtomicI64; 3],
    retries: [AtomicU64; 3],
    /// The maker's estimate of the smallest transactionid (the point queries' lower bound).
    min_trxid: AtomicI64,
    /// The maker stops making statements (time is up, or the run was stopped).
    stop_making: AtomicBool,
    /// The inserts are done (or the run failed): the query connections stop.
    done: AtomicBool,
    wake: Notify,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            inserted: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            interval_max_us: [AtomicI64::new(-1), AtomicI64::new(-1), AtomicI64::new(-1)],
            retries: Default::default(),
            min_trxid: AtomicI64::new(0),
            stop_making: AtomicBool::new(false),
            done: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    fn totals(&self) -> Totals {
        Totals {
            inserted: self.inserted.load(Ordering::Relaxed),
            deleted: self.deleted.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
        }
    }

    fn retries(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.retries[i].load(Ordering::Relaxed))
    }

    /// The interval's longest responses, starting the next interval.
    fn take_interval_max(&self) -> [i64; 3] {
        [0, 1, 2].map(|i| self.interval_max_us[i].swap(-1, Ordering::Relaxed))
    }

    fn finish(&self) {
        self.stop_making.store(true, Ordering::Relaxed);
        self.done.store(true, Ordering::Relaxed);
        self.wake.notify_one();
    }
}

/// One operation over the run: iibench.py's histogram, stampede's latency distribution, and
/// the longest a connection went without finishing one.
#[derive(Debug, Clone, Default)]
pub struct OpRecord {
    pub statements: u64,
    pub histogram: RtHistogram,
    pub latency: LatencyStats,
    pub longest_gap: Duration,
}

impl OpRecord {
    pub fn merge(&mut self, other: &OpRecord) {
        self.statements += other.statements;
        self.histogram.merge(&other.histogram);
        self.latency.merge(&other.latency);
        self.longest_gap = self.longest_gap.max(other.longest_gap);
    }
}

/// Times one connection's statements.
struct Timer {
    op: Op,
    record: OpRecord,
    last_end: Instant,
    seconds: Option<Arc<Seconds>>,
}

impl Timer {
    fn new(op: Op, start: Instant, seconds: Option<Arc<Seconds>>) -> Timer {
        Timer {
            op,
            record: OpRecord::default(),
            last_end: start,
            seconds,
        }
    }

    /// A statement begun at `began` has finished, having done `count` (rows, or one query).
    fn finished(&mut self, began: Instant, count: u64, shared: &Shared) {
        let end = Instant::now();
        let elapsed = end - began;
        if let Some(seconds) = &self.seconds {
            seconds.record(self.op as usize, count, end, elapsed);
        }
        self.record.statements += 1;
        self.record.histogram.record(elapsed);
        self.record.latency.record(elapsed.as_secs_f64() * 1e6);
        self.record.longest_gap = self.record.longest_gap.max(end - self.last_end);
        self.last_end = end;
        shared.interval_max_us[self.op as usize]
            .fetch_max(elapsed.as_micros() as i64, Ordering::Relaxed);
    }
}

/// What one run did.
#[derive(Debug, Clone, Default)]
pub struct InstanceResult {
    /// From the start to the end of the inserts (or of the queries without inserts).
    pub seconds: f64,
    /// iibench.py's Totals time: to the end, the index creation at the end included.
    pub total_seconds: f64,
    pub totals: Totals,
    pub insert: OpRecord,
    pub delete: OpRecord,
    pub query: OpRecord,
    pub rows_fetched: u64,
    pub retries: [u64; 3],
    pub get_min_queries: u64,
    pub get_min_time: Duration,
    pub index_seconds: Option<f64>,
    /// Stopped by a signal before it was done.
    pub interrupted: bool,
}

/// What the statement maker reports at its end.
#[derive(Default)]
struct MakerReport {
    get_min_queries: u64,
    get_min_time: Duration,
}

impl Instance {
    /// Runs it: setup, the roles, the reporter; iibench.py's lines go to `out`. `stop` (a
    /// signal) ends it early, results kept.
    pub async fn run(
        self: Arc<Self>,
        out: Output,
        stop: Arc<AtomicBool>,
    ) -> Result<InstanceResult, Failure> {
        say(&out, output::HEADER);
        let mut control = Session::connect(&self.endpoint).await?;
        if self.options.setup {
            self.create_table(&mut control).await?;
        }
        if self.options.initial_size > 0 {
            self.insert_initial_rows(&mut control, &out).await?;
        }
        let shared = Arc::new(Shared::new());
        let start = Instant::now();
        let roles = self.start_roles(&shared, &out, start).await?;
        let (reporter, interrupted) = report(&self.options, &shared, &out, start, &stop).await;
        // The last line counts what the deleter and the queries finished after the inserts.
        let joined = roles.join(&shared).await;
        let seconds = start.elapsed().as_secs_f64();
        reporter.finish(&shared, &out);
        let (mut result, first_query) = joined?;
        self.print_histograms(&result, first_query, &out);
        result.seconds = seconds;
        result.interrupted = interrupted;
        if self.options.secondary_at_end && !interrupted {
            let began = Instant::now();
            self.create_indexes(&mut control).await?;
            let took = began.elapsed().as_secs_f64();
            say(
                &out,
                &format!("Created secondary indexes in {took:.1} seconds"),
            );
            result.index_seconds = Some(took);
        }
        if !self.options.no_inserts {
            say(
                &out,
                &output::get_min_line(result.get_min_queries, result.get_min_time),
            );
        }
        result.total_seconds = start.elapsed().as_secs_f64();
        result.totals = shared.totals();
        result.retries = shared.retries();
        say(
            &out,
            &output::totals_line(result.total_seconds, result.totals.inserted, result.retries),
        );
        say(&out, "Done");
        Ok(result)
    }

    /// iibench.py's closing histograms: the inserts', the deletes', one query connection's.
    fn print_histograms(
        &self,
        result: &InstanceResult,
        first_query: Option<OpRecord>,
        out: &Output,
    ) {
        if !self.options.no_inserts {
            say(out, &result.insert.histogram.lines("Insert rt:"));
        }
        if self.options.delete_per_insert && !self.options.no_inserts {
            say(out, &result.delete.histogram.lines("Delete rt:"));
        }
        if let Some(first) = first_query {
            say(out, &first.histogram.lines("Query rt:"));
            say(
                out,
                &output::query_thread_line(
                    result.query.statements,
                    self.options.rows_per_query,
                    result.rows_fetched,
                ),
            );
        }
    }

    async fn create_table(&self, session: &mut Session) -> Result<(), Failure> {
        session
            .execute(&sql::drop_table(&self.options.table))
            .await?;
        for statement in sql::create_table(self.dbms, &self.options) {
            session.execute(&statement).await?;
        }
        if self.options.secondary_at_start {
            self.create_indexes(session).await?;
        }
        Ok(())
    }

    pub async fn create_indexes(&self, session: &mut Session) -> Result<(), Failure> {
        let statements = sql::create_indexes(
            self.dbms,
            &self.options.table,
            self.options.secondary_indexes,
        );
        for statement in statements {
            session.execute(&statement).await?;
        }
        Ok(())
    }

    async fn insert_initial_rows(
        &self,
        session: &mut Session,
        out: &Output,
    ) -> Result<(), Failure> {
        say(out, "Inserting initial tuples...");
        let mut maker = RowMaker::new(
            self.options.seed,
            self.options.data.clone(),
            self.random.clone(),
        );
        for _ in 0..self.options.initial_size / self.options.rows_per_commit {
            let text = maker.insert(
                &self.options.table,
                self.options.rows_per_commit,
                &timestamp_now(),
            );
            session.execute(&text).await?;
        }
        say(out, "Done");
        Ok(())
    }

    /// Connects every role, then starts them at `start`.
    async fn start_roles(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        out: &Output,
        start: Instant,
    ) -> Result<Roles, Failure> {
        let mut roles = Roles::default();
        if !self.options.no_inserts {
            let inserter = self.inserter_session().await?;
            let maker = Session::connect(&self.endpoint).await?;
            let (insert_tx, insert_rx) = mpsc::channel(QUEUE);
            let (delete_tx, delete_rx) = mpsc::channel(QUEUE);
            if self.options.delete_per_insert {
                let deleter = Session::connect(&self.endpoint).await?;
                roles.deleter = Some(spawn(
                    shared,
                    execute(
                        self.clone(),
                        deleter,
                        delete_rx,
                        Op::Delete,
                        shared.clone(),
                        out.clone(),
                        start,
                    ),
                ));
            }
            roles.inserter = Some(spawn(
                shared,
                execute(
                    self.clone(),
                    inserter,
                    insert_rx,
                    Op::Insert,
                    shared.clone(),
                    out.clone(),
                    start,
                ),
            ));
            roles.maker = Some(spawn(
                shared,
                make_statements(
                    self.clone(),
                    maker,
                    insert_tx,
                    delete_tx,
                    shared.clone(),
                    out.clone(),
                    start,
                ),
            ));
        }
        for thread in 0..self.options.query_threads {
            let session = Session::connect(&self.endpoint).await?;
            roles.queries.push(spawn(
                shared,
                query(self.clone(), session, thread as u64, shared.clone(), start),
            ));
        }
        if self.options.htap_seconds > 0 {
            let session = Session::connect(&self.endpoint).await?;
            roles.htap = Some(spawn(
                shared,
                hold_transactions(self.clone(), session, shared.clone()),
            ));
        }
        Ok(roles)
    }

    /// The inserter's connection, with the session settings iibench.py gives MyRocks and TokuDB.
    async fn inserter_session(&self) -> Result<Session, Failure> {
        let mut session = Session::connect(&self.endpoint).await?;
        if self.dbms == Dbms::Mysql {
            let engine = self.options.storage_engine.to_lowercase();
            if !self.options.unique_checks && (engine == "rocksdb" || engine == "tokudb") {
                session.execute("set unique_checks=0").await?;
            }
            if self.options.bulk_load && engine == "rocksdb" {
                session.execute("set rocksdb_bulk_load=1").await?;
            }
        }
        if self.options.prepared_inserts {
            let rows = self.options.rows_per_commit;
            session
                .execute(&sql::prepare_insert(&self.options.table, rows))
                .await?;
        }
        Ok(session)
    }
}

/// Starts a role; a role that fails ends the others (the query connections stop, the maker
/// makes no more), so the run ends with the failure rather than waiting out its inserts.
fn spawn<T: Send + 'static>(
    shared: &Arc<Shared>,
    role: impl std::future::Future<Output = Result<T, Failure>> + Send + 'static,
) -> JoinHandle<Result<T, Failure>> {
    let shared = shared.clone();
    tokio::spawn(async move {
        let outcome = role.await;
        if outcome.is_err() {
            shared.finish();
        }
        outcome
    })
}

/// The running roles.
#[derive(Default)]
struct Roles {
    maker: Option<JoinHandle<Result<MakerReport, Failure>>>,
    inserter: Option<JoinHandle<Result<OpRecord, Failure>>>,
    deleter: Option<JoinHandle<Result<OpRecord, Failure>>>,
    queries: Vec<JoinHandle<Result<(OpRecord, u64), Failure>>>,
    htap: Option<JoinHandle<Result<(), Failure>>>,
}

impl Roles {
    /// Waits for every role; the first failure wins. Also the first query connection's record
    /// (iibench.py prints one query process's histogram).
    async fn join(self, shared: &Shared) -> Result<(InstanceResult, Option<OpRecord>), Failure> {
        let mut result = InstanceResult::default();
        let mut first_failure = None;
        let mut keep = |outcome: Result<Result<(), Failure>, tokio::task::JoinError>| {
            let failure = match outcome {
                Ok(Ok(())) => return,
                Ok(Err(failure)) => failure,
                Err(panic) => Failure::run(format!("an iibench connection failed: {panic}")),
            };
            shared.finish();
            first_failure.get_or_insert(failure);
        };
        if let Some(inserter) = self.inserter {
            keep(
                inserter
                    .await
                    .map(|r| r.map(|record| result.insert = record)),
            );
        }
        if let Some(deleter) = self.deleter {
            keep(
                deleter
                    .await
                    .map(|r| r.map(|record| result.delete = record)),
            );
        }
        if let Some(maker) = self.maker {
            keep(maker.await.map(|r| {
                r.map(|report| {
                    result.get_min_queries = report.get_min_queries;
                    result.get_min_time = report.get_min_time;
                })
            }));
        }
        shared.finish();
        let mut first_query: Option<OpRecord> = None;
        for handle in self.queries {
            keep(handle.await.map(|r| {
                r.map(|(record, fetched)| {
                    result.query.merge(&record);
                    result.rows_fetched += fetched;
                    first_query.get_or_insert(record);
                })
            }));
        }
        if let Some(htap) = self.htap {
            keep(htap.await);
        }
        match first_failure {
            Some(failure) => Err(failure),
            None => Ok((result, first_query)),
        }
    }
}

/// The interval lines so far: when the last was printed, and its totals.
struct Reporter {
    start: Instant,
    last_report: Instant,
    before: Totals,
}

impl Reporter {
    fn line(&mut self, shared: &Shared, out: &Output, now: Instant) {
        let totals = shared.totals();
        let line = output::interval_line(
            (now - self.last_report).as_secs_f64(),
            (now - self.start).as_secs_f64(),
            totals,
            self.before,
            shared.take_interval_max(),
            shared.retries(),
        );
        say(out, &line);
        self.before = totals;
        self.last_report = now;
    }

    /// The last, partial interval's line.
    fn finish(mut self, shared: &Shared, out: &Output) {
        let now = Instant::now();
        if now - self.last_report >= Duration::from_millis(1) || shared.totals() != self.before {
            self.line(shared, out, now);
        }
    }
}

/// Prints a line every report interval until the inserts are done (or time is up, or `stop`);
/// returns the reporter and whether `stop` ended it.
async fn report(
    options: &Options,
    shared: &Shared,
    out: &Output,
    start: Instant,
    stop: &AtomicBool,
) -> (Reporter, bool) {
    let mut reporter = Reporter {
        start,
        last_report: start,
        before: Totals::default(),
    };
    let mut second = 1u64;
    let mut interrupted = false;
    let limit = (options.max_seconds > 0).then(|| start + Duration::from_secs(options.max_seconds));
    loop {
        let tick = start + Duration::from_secs(second);
        let ticked = tokio::select! {
            _ = tokio::time::sleep_until(tick.into()) => true,
            _ = shared.wake.notified() => false,
        };
        let now = Instant::now();
        if ticked {
            if second.is_multiple_of(options.secs_per_report) {
                reporter.line(shared, out, now);
            }
            second += 1;
        }
        if stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            shared.stop_making.store(true, Ordering::Relaxed);
        }
        if limit.is_some_and(|limit| now >= limit) {
            shared.stop_making.store(true, Ordering::Relaxed);
            if options.no_inserts {
                shared.done.store(true, Ordering::Relaxed);
            }
        }
        if interrupted && options.no_inserts {
            shared.done.store(true, Ordering::Relaxed);
        }
        if shared.done.load(Ordering::Relaxed) {
            return (reporter, interrupted);
        }
    }
}

/// Makes the INSERTs (and DELETEs), holding the rate limit, until max_rows are queued or it is
/// told to stop.
async fn make_statements(
    instance: Arc<Instance>,
    mut session: Session,
    inserts: mpsc::Sender<String>,
    deletes: mpsc::Sender<String>,
    shared: Arc<Shared>,
    out: Output,
    start: Instant,
) -> Result<MakerReport, Failure> {
    let options = &instance.options;
    let table = &options.table;
    let rows = options.rows_per_commit;
    let mut maker = RowMaker::new(options.seed, options.data.clone(), instance.random.clone());
    let mut report = MakerReport::default();
    let mut min_trxid: Option<i64> = None;
    let mut resync = options.resync_get_min;
    for round in 0..options.insert_rounds() {
        if shared.stop_making.load(Ordering::Relaxed) {
            break;
        }
        if options.inserts_per_second > 0 {
            tokio::time::sleep_until(due(start, round * rows, options.inserts_per_second).into())
                .await;
        }
        let when = timestamp_now();
        let text = if options.prepared_inserts {
            maker.execute_insert(rows, &when)
        } else {
            maker.insert(table, rows, &when)
        };
        if inserts.send(text).await.is_err() {
            break;
        }
        if !options.delete_per_insert {
            continue;
        }
        let resync_now = min_trxid.is_none() || (resync == 0 && options.resync_get_min > 0);
        let min = match min_trxid {
            Some(min) if !resync_now => {
                if options.resync_get_min > 0 {
                    resync -= 1;
                }
                min
            }
            _ => {
                resync = options.resync_get_min;
                let first = min_trxid.is_none();
                let began = Instant::now();
                let min: Option<i64> = session.value(&sql::min_transactionid(table)).await?;
                let took = began.elapsed();
                report.get_min_queries += 1;
                report.get_min_time += took;
                let min = min.unwrap_or(0);
                if first || options.print_get_min {
                    say(
                        &out,
                        &format!(
                            "get_min_trxid = {min} in {:.3} seconds\n",
                            took.as_secs_f64()
                        ),
                    );
                }
                min
            }
        };
        if deletes
            .send(sql::delete(instance.dbms, table, min, rows))
            .await
            .is_err()
        {
            break;
        }
        min_trxid = Some(min + rows as i64);
        shared.min_trxid.store(min + rows as i64, Ordering::Relaxed);
    }
    // Under a rate limit each INSERT stands for rows_per_commit / inserts_per_second seconds of
    // writing: the last one's too, so the rate over the run is the target when the server
    // keeps up (as iibench.py's limiter sleeps out each second).
    if options.inserts_per_second > 0 && !shared.stop_making.load(Ordering::Relaxed) {
        let end = options.insert_rounds() * rows;
        tokio::time::sleep_until(due(start, end, options.inserts_per_second).into()).await;
    }
    Ok(report)
}

/// When the INSERT that starts at row `row` may go under a limit of `per_second` rows a second.
fn due(start: Instant, row: u64, per_second: u64) -> Instant {
    start + Duration::from_secs_f64(row as f64 / per_second as f64)
}

/// Runs the statements a queue hands it (the inserter, the deleter).
async fn execute(
    instance: Arc<Instance>,
    mut session: Session,
    mut queue: mpsc::Receiver<String>,
    op: Op,
    shared: Arc<Shared>,
    out: Output,
    start: Instant,
) -> Result<OpRecord, Failure> {
    let mut timer = Timer::new(op, start, instance.seconds.clone());
    let rows = instance.options.rows_per_commit;
    while let Some(statement) = queue.recv().await {
        let began = Instant::now();
        let outcome = session.counted(&statement).await?;
        let done = outcome.as_ref().map_or(0, |counted| counted.changed);
        timer.finished(began, done, &shared);
        match outcome {
            Ok(counted) => {
                let counter = match op {
                    Op::Delete => &shared.deleted,
                    _ => &shared.inserted,
                };
                counter.fetch_add(counted.changed, Ordering::Relaxed);
                if matches!(op, Op::Delete)
                    && instance.dbms == Dbms::Postgres
                    && counted.changed != rows
                {
                    say(&out, &format!("delete: {} : {statement}", counted.changed));
                }
            }
            // iibench.py on MySQL counts a refused statement and goes on.
            Err(_) if instance.dbms == Dbms::Mysql => {
                shared.retries[op as usize].fetch_add(1, Ordering::Relaxed);
            }
            Err(message) => return Err(Failure::run(message)),
        }
    }
    if matches!(op, Op::Insert) {
        shared.finish();
    }
    Ok(timer.record)
}

/// A query connection: random queries of the chosen kinds until the inserts are done.
async fn query(
    instance: Arc<Instance>,
    mut session: Session,
    thread: u64,
    shared: Arc<Shared>,
    start: Instant,
) -> Result<(OpRecord, u64), Failure> {
    let options = &instance.options;
    let table = &options.table;
    let kinds = QueryKind::chosen(options);
    let mut prng = PgPrng::seeded(options.seed.wrapping_add(1 + thread));
    let mut timer = Timer::new(Op::Query, start, instance.seconds.clone());
    let mut fetched = 0u64;
    let mut max_trxid: i64 = -1;
    if options.query_pk_only {
        max_trxid = session
            .value(&sql::max_transactionid(table))
            .await?
            .unwrap_or(0);
    }
    if options.prepared_queries {
        for kind in &kinds {
            session
                .execute(&sql::prepare_query(*kind, table, options.rows_per_query))
                .await?;
        }
    }
    let mut loops = 0u64;
    while !shared.done.load(Ordering::Relaxed) {
        let kind = kinds[prng.u64_in_range(0, kinds.len() as u64 - 1) as usize];
        let min = shared.min_trxid.load(Ordering::Relaxed);
        let statement = query_text(&instance, kind, &mut prng, min, max_trxid);
        let began = Instant::now();
        let outcome = session.counted(&statement).await?;
        timer.finished(began, u64::from(outcome.is_ok()), &shared);
        match outcome {
            Ok(counted) => {
                fetched += counted.returned;
                shared.queries.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) if instance.dbms == Dbms::Mysql => {
                shared.retries[Op::Query as usize].fetch_add(1, Ordering::Relaxed);
            }
            Err(message) => return Err(Failure::run(message)),
        }
        loops += 1;
        if options.query_pk_only && loops.is_multiple_of(100) {
            max_trxid = session
                .value(&sql::max_transactionid(table))
                .await?
                .unwrap_or(0);
        }
    }
    Ok((timer.record, fetched))
}

/// One query's text with its values drawn: literals, or the EXECUTE of the prepared query.
fn query_text(
    instance: &Instance,
    kind: QueryKind,
    prng: &mut PgPrng,
    min: i64,
    max: i64,
) -> String {
    let options = &instance.options;
    let below = |prng: &mut PgPrng, n: u64| prng.u64_in_range(0, n.saturating_sub(1));
    let values: Vec<i64> = match kind {
        QueryKind::Market => vec![below(prng, options.data.products) as i64],
        QueryKind::Register => vec![below(prng, options.data.cashregisters) as i64],
        QueryKind::Pdc => vec![below(prng, options.data.max_price) as i64],
        QueryKind::PrimaryKey => (0..options.rows_per_query)
            .map(|_| {
                // Python's randrange(min, max): min ≤ id < max.
                if max > min {
                    prng.int_in_range(min, max - 1)
                } else {
                    min
                }
            })
            .collect(),
    };
    if options.prepared_queries {
        return sql::execute_query(kind, &values);
    }
    match kind {
        QueryKind::PrimaryKey => sql::pk_query(&options.table, &values),
        _ => sql::range_query(
            instance.dbms,
            kind,
            &options.table,
            values[0] as u64,
            options.rows_per_query,
        ),
    }
}

/// iibench.py's HTAP connection: a transaction that reads a row and stays open
/// htap_transaction_seconds, again and again until the run is done.
async fn hold_transactions(
    instance: Arc<Instance>,
    mut session: Session,
    shared: Arc<Shared>,
) -> Result<(), Failure> {
    let begin = match instance.dbms {
        Dbms::Postgres => "BEGIN",
        Dbms::Mysql => "SET autocommit=0",
    };
    if instance.dbms == Dbms::Mysql {
        session.execute(begin).await?;
    }
    let read = format!("select * from {} limit 1", instance.options.table);
    loop {
        if instance.dbms == Dbms::Postgres {
            session.execute(begin).await?;
        }
        session.query(&read).await?.map_err(Failure::run)?;
        for _ in 0..instance.options.htap_seconds {
            if shared.done.load(Ordering::Relaxed) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        session.execute("COMMIT").await?;
        if shared.done.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}
