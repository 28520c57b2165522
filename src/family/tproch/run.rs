//! Running TPROC-H as HammerDB does: each virtual user a query stream in its TPC-H order, the
//! first user the refresh stream when refresh is on (one user with refresh on: the power test,
//! RF1 then the queries in stream 0's order then RF2); and TPC-H's whole performance test (a
//! power test, then S query streams beside a refresh stream of S update sets).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::params::{self, Parameters};
use super::refresh::{self, NewOrders};
use super::session::Dialect;
use super::{metrics, queries, streams};
use crate::family::common::server_work::{Meter, ServerWork};
use crate::family::common::sql_session::Session;
use crate::live::sampler::Tally;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::prng::PgPrng;

/// What a run does, from the command line.
#[derive(Clone)]
pub struct RunPlan {
    pub endpoint: Endpoint,
    pub dialect: Dialect,
    pub scale_factor: f64,
    pub degree_of_parallel: i64,
    pub query_sets: usize,
    /// The queries to run (all 22 unless a subset was asked for), each in its stream's place.
    pub queries: Vec<usize>,
    pub raise_errors: bool,
    pub verbose: bool,
    pub trickle: Duration,
    pub seed: u64,
    /// TPC-H's qualification values instead of random draws.
    pub qualification: bool,
    /// The server's root process when it runs on this machine (PostgreSQL's postmaster,
    /// MariaDB's server): its CPU and I/O are measured.
    pub server_pid: Option<u32>,
    /// `--metrics-addr`: each query and refresh function as it ends, by `live_script`.
    pub live: Option<Arc<Tally>>,
}

/// The series' names of the operations: Q1 … Q22, then the refresh functions.
pub fn live_scripts() -> Vec<String> {
    let queries = (1..=22).map(|q| format!("Q{q}"));
    queries.chain(["RF1".into(), "RF2".into()]).collect()
}

/// An operation's place in `live_scripts`.
fn live_script(operation: &str) -> usize {
    live_scripts()
        .iter()
        .position(|name| name == operation)
        .expect("one of live_scripts")
}

/// One query as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct QueryTiming {
    pub query: usize,
    pub seconds: f64,
    pub rows: u64,
    pub parameters: Vec<String>,
    pub error: Option<String>,
    /// The server's CPU and I/O during the query, when it ran alone on a local server.
    pub server: Option<ServerWork>,
}

/// One pass of a stream over its queries.
#[derive(Debug, Clone, Serialize)]
pub struct QuerySet {
    pub stream: usize,
    pub set: usize,
    pub seconds: f64,
    /// HammerDB's geometric mean: over the queries that returned rows.
    pub geometric_mean_s: Option<f64>,
    pub queries: Vec<QueryTiming>,
}

/// One refresh function as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshTiming {
    pub function: &'static str,
    pub update_set: i64,
    pub orders: i64,
    pub seconds: f64,
}

/// A power test, a throughput test, or HammerDB's query sets without refresh.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    pub test: &'static str,
    pub query_streams: usize,
    pub seconds: f64,
    pub query_sets: Vec<QuerySet>,
    pub refreshes: Vec<RefreshTiming>,
    pub server: Option<ServerWork>,
}

impl RunPlan {
    fn meter(&self) -> Meter {
        Meter {
            server_pid: self.server_pid,
        }
    }

    /// HammerDB's query sets without refresh: `streams` users, one user in stream 0's order,
    /// several in the orders of streams 1..=N.
    pub async fn query_sets_only(&self, streams: usize) -> Result<TestResult, Failure> {
        let started = Instant::now();
        let meter = self.meter();
        let before = meter.read();
        let positions: Vec<usize> = if streams == 1 {
            vec![0]
        } else {
            (1..=streams).collect()
        };
        let measure_each = streams == 1;
        let runs = positions
            .iter()
            .map(|&stream| self.query_stream(stream, self.query_sets, measure_each));
        let sets = gather(futures_util::future::join_all(runs).await)?;
        Ok(TestResult {
            test: "query sets",
            query_streams: streams,
            seconds: started.elapsed().as_secs_f64(),
            query_sets: sets,
            refreshes: Vec::new(),
            server: meter.since(&before),
        })
    }

    /// TPC-H's power test: RF1, the queries in stream 0's order, RF2, on one connection each.
    pub async fn power_test(&self) -> Result<TestResult, Failure> {
        let started = Instant::now();
        let meter = self.meter();
        let before = meter.read();
        let set = next_update_set(&self.endpoint, self.dialect, self.scale_factor).await?;
        let mut refreshes = vec![self.rf1(set, Duration::ZERO).await?];
        let query_sets = self.query_stream(0, 1, true).await?;
        refreshes.push(self.rf2(set, Duration::ZERO).await?);
        Ok(TestResult {
            test: "power",
            query_streams: 1,
            seconds: started.elapsed().as_secs_f64(),
            query_sets,
            refreshes,
            server: meter.since(&before),
        })
    }

    /// TPC-H's throughput test (HammerDB's users with refresh on): `streams` query streams in
    /// the orders of streams 1..=S beside a refresh stream of `update_sets` RF1/RF2 pairs.
    pub async fn throughput_test(
        &self,
        streams: usize,
        update_sets: i64,
    ) -> Result<TestResult, Failure> {
        let started = Instant::now();
        let meter = self.meter();
        let before = meter.read();
        let queries = (1..=streams).map(|stream| self.query_stream(stream, self.query_sets, false));
        let (sets, refreshes) = tokio::join!(
            futures_util::future::join_all(queries),
            self.refresh_stream(update_sets)
        );
        Ok(TestResult {
            test: "throughput",
            query_streams: streams,
            seconds: started.elapsed().as_secs_f64(),
            query_sets: gather(sets)?,
            refreshes: refreshes?,
            server: meter.since(&before),
        })
    }

    async fn refresh_stream(&self, update_sets: i64) -> Result<Vec<RefreshTiming>, Failure> {
        let mut timings = Vec::new();
        for _ in 0..update_sets {
            let set = next_update_set(&self.endpoint, self.dialect, self.scale_factor).await?;
            timings.push(self.rf1(set, self.trickle).await?);
            timings.push(self.rf2(set, self.trickle).await?);
        }
        Ok(timings)
    }

    /// One stream's query sets: each set draws all 22 queries' parameters (in query order, as
    /// HammerDB), then runs them in the stream's order.
    async fn query_stream(
        &self,
        stream: usize,
        sets: usize,
        measure_each: bool,
    ) -> Result<Vec<QuerySet>, Failure> {
        let mut session = Session::connect(&self.endpoint).await?;
        if self.dialect == Dialect::Postgres {
            let setting = format!(
                "SET max_parallel_workers_per_gather = {}",
                self.degree_of_parallel
            );
            session.execute(&setting).await?;
        }
        let mut random = PgPrng::seeded(self.seed.wrapping_add(stream as u64 * 7919));
        let mut done = Vec::with_capacity(sets);
        for set in 1..=sets {
            let drawn: Vec<Parameters> = (1..=22)
                .map(|q| match self.qualification {
                    true => params::qualification(q),
                    false => params::draw(q, self.scale_factor, &mut random),
                })
                .collect();
            let started = Instant::now();
            let mut timings = Vec::new();
            let order = streams::order(stream);
            let chosen: Vec<usize> = order
                .into_iter()
                .filter(|q| self.queries.contains(q))
                .collect();
            for (position, &query) in chosen.iter().enumerate() {
                let text = drawn[query - 1].substitute(queries::text(self.dialect, query));
                let text = text.replace("{stream}", &stream.to_string());
                let meter = if measure_each {
                    self.meter()
                } else {
                    Meter { server_pid: None }
                };
                let timing = self
                    .run_query(&mut session, query, &text, &drawn[query - 1], &meter)
                    .await?;
                self.tally_query(stream, &text, &timing);
                self.say_query(stream, position + 1, chosen.len(), &timing);
                timings.push(timing);
            }
            let returned: Vec<f64> = timings
                .iter()
                .filter(|t| t.rows > 0)
                .map(|t| t.seconds)
                .collect();
            done.push(QuerySet {
                stream,
                set,
                seconds: started.elapsed().as_secs_f64(),
                geometric_mean_s: metrics::geometric_mean(&returned),
                queries: timings,
            });
        }
        Ok(done)
    }

    /// A query's end for `--metrics-addr`: its statements (query 15's view and its drop too).
    fn tally_query(&self, stream: usize, text: &str, timing: &QueryTiming) {
        let Some(tally) = &self.live else { return };
        let script = timing.query - 1;
        let statements = text.split(';').filter(|s| !s.trim().is_empty()).count() as u64;
        match timing.error {
            None => tally.committed(stream, script, secs(timing.seconds), statements),
            // The message keeps no SQLSTATE: counted as "other".
            Some(_) => tally.failed(stream, script, None, statements.saturating_sub(1)),
        }
    }

    fn say_query(&self, stream: usize, position: usize, of: usize, timing: &QueryTiming) {
        let mut line = format!(
            "stream {stream}: query {} ({position} of {of}) completed in {:.3} seconds, {} row(s)",
            timing.query, timing.seconds, timing.rows
        );
        if let Some(server) = timing.server {
            line.push_str(&format!("; {}", server.describe()));
        }
        if let Some(error) = &timing.error {
            line = format!("stream {stream}: query {} failed: {error}", timing.query);
        }
        println!("{line}");
    }

    /// One query, timed as HammerDB times it (query 15: its SELECT, between the view's
    /// creation and drop).
    async fn run_query(
        &self,
        session: &mut Session,
        query: usize,
        text: &str,
        parameters: &Parameters,
        meter: &Meter,
    ) -> Result<QueryTiming, Failure> {
        let statements: Vec<&str> = text.split(';').map(str::trim).collect();
        let (before, timed, after) = match statements.as_slice() {
            [create, select, drop] => (Some(*create), *select, Some(*drop)),
            _ => (None, text, None),
        };
        if self.verbose {
            println!("{text}");
        }
        if let Some(create) = before {
            self.side_statement(session, create).await?;
        }
        let reading = meter.read();
        let started = Instant::now();
        let outcome = session.query(timed).await?;
        let seconds = started.elapsed().as_secs_f64();
        let server = meter.since(&reading);
        if let Some(drop) = after {
            self.side_statement(session, drop).await?;
        }
        let (rows, error) = match outcome {
            Ok(rows) => (self.rows_of(&rows), None),
            Err(error) if self.raise_errors => return Err(Failure::run(error)),
            Err(error) => (0, Some(error)),
        };
        Ok(QueryTiming {
            query,
            seconds,
            rows,
            parameters: parameters.values.clone(),
            error,
            server,
        })
    }

    async fn side_statement(&self, session: &mut Session, statement: &str) -> Result<(), Failure> {
        match session.execute(statement).await {
            Err(e) if self.raise_errors => Err(e),
            _ => Ok(()),
        }
    }

    fn rows_of(&self, rows: &[Vec<Option<String>>]) -> u64 {
        if self.verbose {
            for row in rows {
                let values: Vec<&str> = row.iter().map(|v| v.as_deref().unwrap_or("")).collect();
                println!("{}", values.join("|"));
            }
        }
        rows.len() as u64
    }

    /// RF1: update set `set`'s new orders, each order's lines then the order, committed every
    /// 1000 orders (as HammerDB), `trickle` before each order.
    async fn rf1(&self, set: i64, trickle: Duration) -> Result<RefreshTiming, Failure> {
        let statements = NewOrders::of_set(set, self.scale_factor)
            .map(|new| refresh::insert_statements(self.dialect, &new));
        let timing = self.refresh("RF1", set, statements, trickle).await?;
        println!(
            "New Sales refresh (RF1, update set {set}): {} orders in {:.3} seconds",
            timing.orders, timing.seconds
        );
        Ok(timing)
    }

    /// RF2: update set `set`'s old orders deleted, lines first, committed every 1000 orders.
    async fn rf2(&self, set: i64, trickle: Duration) -> Result<RefreshTiming, Failure> {
        let statements = refresh::deleted_keys(set, self.scale_factor)
            .map(|key| refresh::delete_statements(self.dialect, key));
        let timing = self.refresh("RF2", set, statements, trickle).await?;
        println!(
            "Old Sales refresh (RF2, update set {set}): {} orders in {:.3} seconds",
            timing.orders, timing.seconds
        );
        Ok(timing)
    }

    /// A refresh function: each order's statements in turn, a transaction per 1000 orders.
    async fn refresh(
        &self,
        function: &'static str,
        set: i64,
        orders: impl Iterator<Item = Vec<String>>,
        trickle: Duration,
    ) -> Result<RefreshTiming, Failure> {
        let mut session = Session::connect(&self.endpoint).await?;
        let begin = match self.dialect {
            Dialect::Postgres => "BEGIN; SET CONSTRAINTS lineitem_order_fk DEFERRED",
            Dialect::Mysql => "SET FOREIGN_KEY_CHECKS = 0, autocommit = 0",
        };
        let started = Instant::now();
        let mut count = 0;
        let mut executed = 0;
        for statements in orders {
            if !trickle.is_zero() {
                tokio::time::sleep(trickle).await;
            }
            if count % 1000 == 0 {
                session.execute(begin).await?;
                executed += 1;
            }
            for statement in &statements {
                session.execute(statement).await?;
            }
            executed += statements.len() as u64;
            count += 1;
            if count % 1000 == 0 {
                session.execute("COMMIT").await?;
                executed += 1;
            }
        }
        if count % 1000 != 0 {
            session.execute("COMMIT").await?;
            executed += 1;
        }
        let timing = refresh_timing(function, set, count, started);
        if let Some(tally) = &self.live {
            let script = live_script(function);
            tally.committed(script, script, secs(timing.seconds), executed);
        }
        Ok(timing)
    }
}

fn refresh_timing(
    function: &'static str,
    set: i64,
    orders: i64,
    started: Instant,
) -> RefreshTiming {
    RefreshTiming {
        function,
        update_set: set,
        orders,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn secs(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds.max(0.0))
}

fn gather(streams: Vec<Result<Vec<QuerySet>, Failure>>) -> Result<Vec<QuerySet>, Failure> {
    let mut all = Vec::new();
    for stream in streams {
        all.extend(stream?);
    }
    Ok(all)
}

/// The first update set whose RF2 has not run: set k's first old order is still there. A set
/// whose new orders are in but whose old ones are not gone was interrupted: refused.
pub async fn next_update_set(
    endpoint: &Endpoint,
    dialect: Dialect,
    scale_factor: f64,
) -> Result<i64, Failure> {
    let mut session = Session::connect(endpoint).await?;
    let orders = dialect.table("orders");
    let per_set = refresh::orders_per_set(scale_factor);
    if per_set == 0 {
        return Err(Failure::input(format!(
            "scale factor {scale_factor}: dbgen's update sets hold no order below 0.01"
        )));
    }
    let last_set = (1_500_000.0 * scale_factor) as i64 / per_set;
    for set in 1..=last_set {
        let first = *refresh::set_indexes(set, scale_factor).start();
        let (old, new) = (refresh::sparse_key(first, 0), refresh::sparse_key(first, 1));
        let statement = format!(
            "SELECT count(*) FROM {orders} WHERE o_orderkey = {old} UNION ALL SELECT count(*) FROM {orders} WHERE o_orderkey = {new}"
        );
        let rows = session.query(&statement).await?.map_err(Failure::run)?;
        let present = |row: usize| rows.get(row).and_then(|r| r[0].as_deref()) == Some("1");
        if present(0) {
            if present(1) {
                return Err(Failure::run(format!(
                    "update set {set} is half applied (its new orders are in, its old orders were not deleted): an earlier refresh was interrupted; rebuild with `stampede tproch drop` and `build`"
                )));
            }
            return Ok(set);
        }
    }
    Err(Failure::run(
        "every update set of this database has been applied: rebuild it",
    ))
}
