//! Running TPROC-H as HammerDB does: each virtual user a query stream in its TPC-H order, the
//! first user the refresh stream when refresh is on (one user with refresh on: the power test,
//! RF1 then the queries in stream 0's order then RF2); and TPC-H's whole performance test (a
//! power test, then S query streams beside a refresh stream of S update sets).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::params::{self, Parameters};
use super::refresh::{self, NewOrders};
use super::{metrics, queries, streams};
use crate::conn::ConnSpec;
use crate::error::Failure;
use crate::pg::{connect_quietly, sql_error};
use crate::probe::server_io::{self, ServerIo};
use crate::script::prng::PgPrng;

/// What a run does, from the command line.
#[derive(Clone)]
pub struct RunPlan {
    pub conn: ConnSpec,
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
    /// The server's data directory when it runs on this machine: its CPU and I/O are measured.
    pub data_dir: Option<PathBuf>,
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

/// CPU seconds and storage bytes of the server's processes over an interval.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ServerWork {
    pub cpu_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
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

/// Server CPU and I/O readings, when the server is local.
#[derive(Clone)]
struct Meter {
    data_dir: Option<PathBuf>,
}

struct Reading {
    cpu_s: f64,
    io: ServerIo,
}

impl Meter {
    fn read(&self) -> Option<Reading> {
        let dir = self.data_dir.as_ref()?;
        let cpu_s = crate::probe::server_cpu::counters(dir)
            .iter()
            .map(|c| c.value)
            .sum();
        Some(Reading {
            cpu_s,
            io: server_io::read(dir)?,
        })
    }

    fn since(&self, before: &Option<Reading>) -> Option<ServerWork> {
        let (before, after) = (before.as_ref()?, self.read()?);
        Some(ServerWork {
            cpu_s: after.cpu_s - before.cpu_s,
            read_bytes: after.io.read_bytes.saturating_sub(before.io.read_bytes),
            write_bytes: after.io.write_bytes.saturating_sub(before.io.write_bytes),
        })
    }
}

impl RunPlan {
    fn meter(&self) -> Meter {
        Meter {
            data_dir: self.data_dir.clone(),
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
        let set = next_update_set(&self.conn, self.scale_factor).await?;
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
            let set = next_update_set(&self.conn, self.scale_factor).await?;
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
        let client = connect_quietly(&self.conn).await?;
        let setting = format!(
            "SET max_parallel_workers_per_gather = {}",
            self.degree_of_parallel
        );
        client
            .batch_execute(&setting)
            .await
            .map_err(|e| sql_error(&setting, e))?;
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
                let text = drawn[query - 1].substitute(queries::text(query));
                let text = text.replace("{stream}", &stream.to_string());
                let meter = if measure_each {
                    self.meter()
                } else {
                    Meter { data_dir: None }
                };
                let timing = self
                    .run_query(&client, query, &text, &drawn[query - 1], &meter)
                    .await?;
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

    fn say_query(&self, stream: usize, position: usize, of: usize, timing: &QueryTiming) {
        let mut line = format!(
            "stream {stream}: query {} ({position} of {of}) completed in {:.3} seconds, {} row(s)",
            timing.query, timing.seconds, timing.rows
        );
        if let Some(server) = timing.server {
            line.push_str(&format!(
                "; server CPU {:.2} s, read {:.1} MB, written {:.1} MB",
                server.cpu_s,
                server.read_bytes as f64 / 1e6,
                server.write_bytes as f64 / 1e6
            ));
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
        client: &Client,
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
            self.side_statement(client, create).await?;
        }
        let reading = meter.read();
        let started = Instant::now();
        let outcome = client.simple_query(timed).await;
        let seconds = started.elapsed().as_secs_f64();
        let server = meter.since(&reading);
        if let Some(drop) = after {
            self.side_statement(client, drop).await?;
        }
        let (rows, error) = match outcome {
            Ok(messages) => (self.rows_of(&messages), None),
            Err(e) if self.raise_errors => return Err(sql_error(timed, e)),
            Err(e) => (0, Some(sql_error(timed, e).into_message())),
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

    async fn side_statement(&self, client: &Client, statement: &str) -> Result<(), Failure> {
        match client.batch_execute(statement).await {
            Err(e) if self.raise_errors => Err(sql_error(statement, e)),
            _ => Ok(()),
        }
    }

    fn rows_of(&self, messages: &[SimpleQueryMessage]) -> u64 {
        let mut rows = 0;
        for message in messages {
            if let SimpleQueryMessage::Row(row) = message {
                rows += 1;
                if self.verbose {
                    let values: Vec<&str> =
                        (0..row.len()).map(|i| row.get(i).unwrap_or("")).collect();
                    println!("{}", values.join("|"));
                }
            }
        }
        rows
    }

    /// RF1: update set `set`'s new orders, each order's lines then the order, committed every
    /// 1000 orders (as HammerDB), `trickle` before each order.
    async fn rf1(&self, set: i64, trickle: Duration) -> Result<RefreshTiming, Failure> {
        let client = connect_quietly(&self.conn).await?;
        let started = Instant::now();
        let mut orders = 0;
        for new in NewOrders::of_set(set, self.scale_factor) {
            if !trickle.is_zero() {
                tokio::time::sleep(trickle).await;
            }
            let mut batch = String::new();
            if orders % 1000 == 0 {
                batch.push_str("BEGIN; SET CONSTRAINTS lineitem_order_fk DEFERRED;\n");
            }
            batch.push_str(&refresh::insert_statements(&new));
            orders += 1;
            if orders % 1000 == 0 {
                batch.push_str("COMMIT;");
            }
            execute(&client, &batch, "RF1").await?;
        }
        if orders % 1000 != 0 {
            execute(&client, "COMMIT", "RF1").await?;
        }
        let timing = refresh_timing("RF1", set, orders, started);
        println!(
            "New Sales refresh (RF1, update set {set}): {orders} orders in {:.3} seconds",
            timing.seconds
        );
        Ok(timing)
    }

    /// RF2: update set `set`'s old orders deleted, lines first, committed every 1000 orders.
    async fn rf2(&self, set: i64, trickle: Duration) -> Result<RefreshTiming, Failure> {
        let client = connect_quietly(&self.conn).await?;
        let started = Instant::now();
        let mut orders = 0;
        for key in refresh::deleted_keys(set, self.scale_factor) {
            if !trickle.is_zero() {
                tokio::time::sleep(trickle).await;
            }
            let mut batch = String::new();
            if orders % 1000 == 0 {
                batch.push_str("BEGIN;\n");
            }
            batch.push_str(&refresh::delete_statements(key));
            orders += 1;
            if orders % 1000 == 0 {
                batch.push_str("COMMIT;");
            }
            execute(&client, &batch, "RF2").await?;
        }
        if orders % 1000 != 0 {
            execute(&client, "COMMIT", "RF2").await?;
        }
        let timing = refresh_timing("RF2", set, orders, started);
        println!(
            "Old Sales refresh (RF2, update set {set}): {orders} orders in {:.3} seconds",
            timing.seconds
        );
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

async fn execute(client: &Client, batch: &str, what: &str) -> Result<(), Failure> {
    client
        .batch_execute(batch)
        .await
        .map_err(|e| sql_error(what, e))
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
pub async fn next_update_set(conn: &ConnSpec, scale_factor: f64) -> Result<i64, Failure> {
    let client = connect_quietly(conn).await?;
    let exists = |key: i64| {
        let client = &client;
        async move {
            let statement = format!("SELECT 1 FROM orders WHERE o_orderkey = {key}");
            let rows = client
                .simple_query(&statement)
                .await
                .map_err(|e| sql_error(&statement, e))?;
            Ok::<bool, Failure>(rows.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))))
        }
    };
    let last_set = (1_500_000.0 * scale_factor) as i64 / refresh::orders_per_set(scale_factor);
    for set in 1..=last_set {
        let first = *refresh::set_indexes(set, scale_factor).start();
        if exists(refresh::sparse_key(first, 0)).await? {
            if exists(refresh::sparse_key(first, 1)).await? {
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
