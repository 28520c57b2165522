//! The Insert Benchmark as a lab workload: each of his steps is a variant, so each is a cell
//! whose rate the lab compares between targets with paired intervals, and the steps are one
//! sequence on one data copy in the spec's order (`scripts`, by default l.i0, l.x, l.i1, l.i2,
//! qr100, qp100, qr500, qp500, qr1000, qp1000). `scale` is the rows l.i0 loads over all clients
//! (his nr1), `clients` his dop (a table each, `piN`), `duration` the query steps' seconds; the
//! lab's warmup does not apply: each step is measured whole, as his scripts measure it. After
//! l.i2 the tables are vacuumed (analyzed) and the server settles, as his `vac_pg`/`vac_my`.
//!
//! A run's tps is the step's rate of its operation: rows inserted a second (l.x: with the rows
//! it indexed), queries a second in the query steps; `ips`, `dps`, `qps`, the writer's share of
//! its target (`writer_pct`), the insert rate's coefficient of variation (`ips_cv`) and the
//! longest insert stall (`stall_s`) are stored beside it, and every second's rate as the run's
//! series. A step a signal stopped resumes in place on `lab resume` (`progress.rs`).
//!
//! `options = { writes = 100000, shared_table = false, deletes = true, settle = 0 }`: the
//! rows l.i1 and l.i2 insert (his nr2; 4/5 and 1/5; by default as many as l.i0 loads), one
//! table for all clients (his only1t: with `deletes = false` only), and the seconds to settle
//! after l.i2 (his 60 + 1 per million rows, at most 1200, by default).

use std::time::Duration;

use super::instance::runtime;
use super::progress::{self, Start};
use super::seconds::Second;
use super::sql::Dbms;
use super::steps::{self, run_step, Plan, Step, StepKind, StepRun, DEFAULT_STEPS};
use super::summary::StepResult;
use crate::family::api::{
    FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, WorkloadMetric,
};
use crate::family::common::measure::{self, QPS};
use crate::family::common::options::{self, OptionsError};
use crate::family::common::sql_session::Session;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_stats::verdict::Direction;
use stampede_store::{RunMetrics, SeriesRow};

/// Rows inserted a second.
pub const IPS: WorkloadMetric = WorkloadMetric {
    name: "ips",
    direction: Direction::HigherIsBetter,
    from_server: false,
};

/// His statements as literals over the simple protocol (PREPARE/EXECUTE texts for the
/// PostgreSQL queries, as psycopg2 sends them).
pub const KINDS: &[LabWorkloadKind] =
    &[
        LabWorkloadKind::new("ibench", |options| Ok(Box::new(IbenchLab::new(options)?)))
            .simple_protocol_only()
            .scale_numbers_only()
            .metrics(&[IPS, QPS]),
    ];

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct IbenchOptions {
    writes: Option<i64>,
    shared_table: Option<bool>,
    deletes: Option<bool>,
    settle: Option<i64>,
}

pub struct IbenchLab {
    writes: Option<u64>,
    shared_table: bool,
    deletes: bool,
    settle: Option<u64>,
}

impl IbenchLab {
    fn new(options: &toml::Table) -> Result<IbenchLab, OptionsError> {
        let parsed: IbenchOptions = options::parse("ibench", options)?;
        let at_least = |value: Option<i64>, least: i64, name: &str| match value {
            Some(v) if v < least => Err(OptionsError::at(
                "ibench",
                name,
                format!("{name} = {v}: must be at least {least}"),
            )),
            other => Ok(other.map(|v| v as u64)),
        };
        let lab = IbenchLab {
            writes: at_least(parsed.writes, 1, "writes")?,
            shared_table: parsed.shared_table.unwrap_or(false),
            deletes: parsed.deletes.unwrap_or(true),
            settle: at_least(parsed.settle, 0, "settle")?,
        };
        if lab.shared_table && lab.deletes {
            return Err(OptionsError::at(
                "ibench",
                "shared_table",
                "shared_table = true deletes other clients' rows: add deletes = false (his iq.sh refuses delete_per_insert with only1t)",
            ));
        }
        Ok(lab)
    }

    /// The run's shape for one step at the lab's scale and clients.
    fn plan(&self, step: &Step, rows: i64, clients: usize, seconds: Duration) -> Plan {
        let rows = rows.max(1) as u64;
        Plan {
            steps: vec![step.clone()],
            clients: clients.max(1) as u64,
            shared_table: self.shared_table,
            rows,
            writes: self.writes.unwrap_or(rows),
            query_seconds: seconds.as_secs().max(1),
            deletes: self.deletes,
            settle: self.settle,
            seed: measure::seed(),
        }
    }
}

impl FamilyWorkload for IbenchLab {
    type Variant = Step;

    fn variant(&self, name: &str) -> Result<Step, Failure> {
        Step::parse(name).map_err(|e| e.map_message(|m| format!("workload \"ibench\": {m}")))
    }

    fn default_variants(&self) -> Vec<String> {
        DEFAULT_STEPS.split(',').map(String::from).collect()
    }

    /// The dataset is an empty database: l.i0, the first step, loads the rows it measures.
    fn load(
        &self,
        _conn: &Endpoint,
        _scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        Ok(())
    }

    fn writes(&self, _step: &Step) -> bool {
        true
    }

    fn group(&self, step: &Step) -> String {
        match step.kind {
            StepKind::Load | StepKind::Index => "load",
            StepKind::Write50 | StepKind::Write5 => "write",
            StepKind::Query { point: false, .. } => "range query",
            StepKind::Query { point: true, .. } => "point query",
        }
        .into()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn resumes_in_place(&self) -> bool {
        true
    }

    fn between_steps(
        &self,
        conn: &Endpoint,
        previous: &Step,
        _next: &Step,
        scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        if previous.kind != StepKind::Write5 {
            return Ok(());
        }
        let plan = self.plan(previous, scale, 1, Duration::ZERO);
        let dbms = Dbms::of(conn);
        note(&steps::settle_note(plan.settle_seconds(), dbms));
        runtime()?.block_on(async {
            let mut session = Session::connect(conn).await?;
            let tables = benchmark_tables(&mut session, dbms).await?;
            let wait = Duration::from_secs(plan.settle_seconds());
            steps::settle(&tables, wait, conn, dbms).await
        })
    }

    fn run(
        &self,
        step: &Step,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let plan = self.plan(step, request.scale, request.clients, request.duration);
        if plan.rows < plan.clients {
            return Err(Failure::run(format!(
                "scale {} gives fewer rows than the {} clients' tables",
                plan.rows, plan.clients
            )));
        }
        let conn = request.conn;
        let dbms = Dbms::of(conn);
        let runtime = runtime()?;
        let start = runtime.block_on(async {
            if step.kind != StepKind::Load {
                steps::require_tables(&plan, conn, step).await?;
            }
            let mut control = Session::connect(&untracked(conn)).await?;
            progress::begin(&mut control, &plan, step, dbms).await
        })?;
        // The lab's probes run their own runtime: the window opens, and the seconds are told,
        // from this thread while another drives the step.
        observer.open_window();
        let (seconds_to, mut seconds) = tokio::sync::mpsc::unbounded_channel();
        let step_run = StepRun {
            plan: &plan,
            step,
            endpoint: conn,
            output_dir: None,
            stop: &request.stop,
            progress: Some(&start.done),
            seconds_to: Some(seconds_to),
            live: None,
        };
        let primary = primary_op(step);
        let result = std::thread::scope(|scope| {
            // The step (and with it the channel's sender) ends with this thread.
            let stepping = scope.spawn(move || runtime.block_on(run_step(&step_run)));
            while let Some(second) = seconds.blocking_recv() {
                observer.second(second.second, second.op(primary).count as f64);
            }
            stepping.join()
        })
        .map_err(|_| Failure::run(format!("step {}: its thread panicked", step.name)))??;
        Ok(measurement(step, &result, &start))
    }
}

/// Inserts, or queries in the query steps: what a step's rate counts (`Second::op`).
fn primary_op(step: &Step) -> usize {
    match step.kind {
        StepKind::Query { .. } => 2,
        _ => 0,
    }
}

/// A PostgreSQL session whose statements stay out of pg_stat_statements (the progress rows are
/// stampede's, not his).
fn untracked(conn: &Endpoint) -> Endpoint {
    match conn {
        Endpoint::Postgres(spec) => Endpoint::Postgres(spec.untracked()),
        other => other.clone(),
    }
}

/// The benchmark's tables in the connected database, `pi1` … `piN`.
async fn benchmark_tables(session: &mut Session, dbms: Dbms) -> Result<Vec<String>, Failure> {
    let sql = match dbms {
        Dbms::Postgres => {
            "select tablename from pg_tables where schemaname = current_schema() and tablename ~ '^pi[0-9]+$' order by 1"
        }
        Dbms::Mysql => {
            "select table_name from information_schema.tables where table_schema = database() and table_name regexp '^pi[0-9]+$' order by 1"
        }
    };
    let rows = session.query(sql).await?.map_err(Failure::run)?;
    Ok(rows
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten())
        .collect())
}

/// The lab's record of a step.
fn measurement(step: &Step, result: &StepResult, start: &Start) -> Measurement {
    let primary = primary_op(step);
    let latency = if primary == 2 {
        &result.query_ms
    } else {
        &result.insert_ms
    };
    let mut workload = vec![
        ("ips".to_string(), result.inserts_per_s),
        ("dps".to_string(), result.deletes_per_s),
        ("qps".to_string(), result.queries_per_s),
        ("stall_s".to_string(), result.longest_insert_stall_s),
    ];
    if let Some(cv) = result.inserts_cv {
        workload.push(("ips_cv".into(), cv));
    }
    if let Some((writer, target)) = result.writer_per_s.zip(result.writer_target_per_s) {
        workload.push(("writer_pct".into(), 100.0 * writer / target));
    }
    if let Some(index) = result.index_seconds {
        workload.push(("index_s".into(), index));
    }
    if start.resumed {
        workload.push(("resumed_rows".into(), start.resumed_rows() as f64));
    }
    Measurement {
        metrics: RunMetrics {
            failures: result.retries.iter().sum(),
            client_cpu_us_per_txn: result.client_cpu_us_per_op,
            workload,
            ..latency.run_metrics(result.seconds, result.operations)
        },
        series: result
            .per_second
            .iter()
            .map(|second| series_row(second, primary))
            .collect(),
        pods: Vec::new(),
    }
}

fn series_row(second: &Second, op: usize) -> SeriesRow {
    let of = second.op(op);
    SeriesRow {
        second: second.second,
        tps: of.count as f64,
        p50_ms: of.p50_ms.unwrap_or(0.0),
        p99_ms: of.p99_ms.unwrap_or(0.0),
        failed: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(options: &str) -> Result<IbenchLab, OptionsError> {
        IbenchLab::new(&toml::from_str(options).unwrap())
    }

    #[test]
    fn variants_are_his_steps_in_his_order() {
        let lab = lab("").unwrap();
        assert_eq!(
            FamilyWorkload::default_variants(&lab),
            [
                "l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000",
                "qp1000"
            ]
        );
        assert_eq!(lab.group(&lab.variant("qp500").unwrap()), "point query");
        assert_eq!(lab.group(&lab.variant("l.i2").unwrap()), "write");
        assert_eq!(
            lab.variant("l.i9").unwrap_err().message(),
            "workload \"ibench\": unknown step \"l.i9\": the steps are l.i0, l.x, l.i1, l.i2, qrN and qpN (N rows a second, e.g. qr100)"
        );
    }

    #[test]
    fn a_step_gets_the_lab_scale_clients_and_duration() {
        let lab = lab("writes = 5000").unwrap();
        let step = Step::parse("qr100").unwrap();
        let plan = lab.plan(&step, 200_000, 4, Duration::from_secs(30));
        assert_eq!((plan.rows, plan.writes, plan.clients), (200_000, 5000, 4));
        assert_eq!(plan.query_seconds, 30);
        assert_eq!(plan.options(&step, 2, Dbms::Postgres).max_rows, 3000);
        assert_eq!(plan.table(3), "pi3");
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        let error = |text: &str| lab(text).err().unwrap().to_string();
        assert!(error("writes = 0").contains("writes = 0: must be at least 1"));
        assert!(error("settle = -1").contains("settle = -1: must be at least 0"));
        assert!(error("shared_table = true").contains("add deletes = false"));
        assert!(lab("shared_table = true\ndeletes = false").is_ok());
        assert!(error("rows = 5").contains("rows"));
    }
}
