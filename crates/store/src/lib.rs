//! The results database: every lab, target (with settings and binary provenance), cell, run and
//! per-second series. SQLite by default, or a shared PostgreSQL database with the same schema.
//! Each run is written in one transaction, so a crash loses at most the run in progress.
//! Stores numbers; computes no statistics.

mod database;
mod error;
mod live;
mod postgres;
mod read;
mod schema;
mod sqlite;
mod write;

/// `targets.binary_source` of binaries downloaded from Maven Central (zonky's builds): reports
/// tell them from the system's, a bin/ path's and built binaries by it.
pub const ZONKY_BINARIES: &str = "zonky (Maven Central)";

/// `SettingRow::source` of a setting a url target applies to the lab's databases alone
/// (`ALTER DATABASE … SET`).
pub const SOURCE_PER_DATABASE: &str = "database";
/// `SettingRow::source` of a setting a url target sets server-wide for each of its runs and puts
/// back after it (PostgreSQL's ALTER SYSTEM, MariaDB's SET GLOBAL).
pub const SOURCE_AROUND_RUNS: &str = "set for each run, put back after it";

/// Whether a setting's recorded source says the lab configured it: a configuration file (the
/// profile or the spec's settings on a server the lab starts), or a url target's own.
pub fn configured_source(source: Option<&str>) -> bool {
    matches!(
        source,
        Some("configuration file" | SOURCE_PER_DATABASE | SOURCE_AROUND_RUNS)
    )
}

pub use database::Location;
use database::{Database, Row, Value};
pub use error::StoreError;
pub use live::{CellRow, LabState, LiveRun, LiveRunStart, LiveSecond, LiveTotals};
use stampede_base::error::Failure;
pub use stampede_base::sys::Machine;

pub struct Store {
    db: Box<dyn Database>,
}

/// One row of pg_settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingRow {
    pub name: String,
    pub setting: Option<String>,
    pub unit: Option<String>,
    pub source: Option<String>,
    /// `pg_settings.boot_val`: the server's compiled-in default (None for MariaDB/MySQL and
    /// results of older versions).
    pub boot_val: Option<String>,
    /// `pg_settings.context` (`internal` settings are fixed at build or initdb).
    pub context: Option<String>,
}

/// A target's captured configuration, as reports read it back.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSettings {
    pub target: String,
    /// `SELECT version()`; None when the results database holds none.
    pub server_version: Option<String>,
    pub settings: Vec<SettingRow>,
}

#[derive(Debug, Clone, Default)]
pub struct TargetRecord {
    pub name: String,
    /// The server as the spec gives it: its `postgres` or `mariadb` value (`system`, a bin/
    /// path, a version, a build).
    pub server: String,
    pub binary_source: String,
    pub bin_dir: String,
    pub server_version: String,
    pub pg_config: String,
    pub profile: String,
    pub restore_method: String,
    pub settings: Vec<SettingRow>,
    /// What identifies a server the lab did not start ("system identifier 7716…"): its
    /// runs' series are keyed by it. None for a server the lab started (its machine keys it).
    pub server_key: Option<String>,
    /// That server's machine as a metrics source describes it (node, CPUs, memory, kernel).
    pub server_machine: Option<String>,
}

/// A setting a run saw other than its target's record holds: the server was changed during
/// the lab by someone or something other than the lab.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettingChange {
    pub lab: i64,
    pub target: String,
    pub cell_key: String,
    pub repetition: u32,
    pub name: String,
    pub setting: Option<String>,
    pub recorded: Option<String>,
}

/// How a cell is stored whose workload brings its own clients and data (a replay: the captured
/// sessions on the capture's starting data): no scale and no client count of the spec's.
pub const OWN_SCALE: &str = "-";
pub const OWN_CLIENTS: i64 = 0;

#[derive(Debug, Clone)]
pub struct CellRecord {
    pub key: String,
    pub target: String,
    pub workload: String,
    pub script: String,
    pub scale: String,
    pub clients: usize,
    /// The workload's group for relative-throughput tables (e.g. read / write, point / range).
    pub family: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Completed,
    Failed,
    Interrupted,
}

impl RunStatus {
    /// The status as the results database keeps it.
    pub fn parse(text: &str) -> Option<RunStatus> {
        [
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Interrupted,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }

    fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// What a completed run measured, warmup excluded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub duration_s: f64,
    pub transactions: u64,
    pub failures: u64,
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub latency_stddev_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub client_cpu_us_per_txn: f64,
    /// The workload's own metrics, (name, value): TPROC-C's `nopm` and `tpm`.
    pub workload: Vec<(String, f64)>,
    /// How evenly the run served its clients; None when nothing committed.
    pub served: Option<ServedClients>,
}

/// Transactions per client over a run, and Jain's fairness index over them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServedClients {
    pub min: u64,
    pub median: f64,
    pub max: u64,
    pub jain_index: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRow {
    pub second: u64,
    pub tps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub failed: u64,
}

/// One pod's share of a run whose clients came from pods.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRow {
    pub pod: u64,
    pub clients: u64,
    pub threads: u64,
    pub transactions: u64,
    pub client_cpu_s: f64,
    pub cpu_busy: f64,
    pub cores: u64,
    pub clock_offset_ms: f64,
    pub start_skew_ms: f64,
}

/// A counter's value (cumulative) or change over a window, e.g. ("pg_stat_database",
/// "xact_commit", 1234).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterRow {
    pub source: String,
    pub name: String,
    pub value: f64,
}

/// Sessions of a run seen in one wait state during one second.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSample {
    pub second: u64,
    pub wait_event_type: String,
    pub wait_event: String,
    /// Sessions in this state, summed over the second's ticks.
    pub samples: u32,
    /// Ticks taken in that second.
    pub ticks: u32,
}

/// One statement of a run, from pg_stat_statements.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementRow {
    pub query: String,
    pub calls: i64,
    /// The columns a results database may hold as NULL stay None when read.
    pub mean_ms: Option<f64>,
    pub stddev_ms: Option<f64>,
    pub rows: Option<i64>,
    pub shared_blks_hit: Option<i64>,
    pub shared_blks_read: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct RunRecord {
    pub cell_key: String,
    pub repetition: u32,
    pub position: usize,
    pub status: RunStatus,
    pub error: Option<String>,
    pub started_unix_s: f64,
    pub ended_unix_s: f64,
    pub resolved_scale: Option<i64>,
    pub overhead_s: f64,
    pub metrics: Option<RunMetrics>,
    pub series: Vec<SeriesRow>,
    /// Each counter's change over the measured window.
    pub counters: Vec<CounterRow>,
    pub statements: Vec<StatementRow>,
    /// (second, a counter's change during it).
    pub counter_series: Vec<(u64, CounterRow)>,
    pub wait_events: Vec<WaitSample>,
    /// Each pod's share, when the run's clients came from pods.
    pub pods: Vec<PodRow>,
    /// The machine it ran on (`Store::record_machine`).
    /// The server's whole settings as the run saw them at its start, for a server others may
    /// change during the lab (None when the lab controls the server).
    pub settings: Option<Vec<SettingRow>>,
    pub machine_id: Option<i64>,
    /// Its shard, in a lab sharded over a fleet.
    pub shard: Option<u32>,
}

/// A stored run with its cell, for reports.
/// How a target's binaries were built, as the report compares them.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetBuild {
    pub target: String,
    /// Where the binaries came from (`targets.binary_source`).
    pub binary_source: String,
    /// The server's pg_config view as stored ("NAME = value" lines), when it was read.
    pub pg_config: Option<String>,
}

impl TargetBuild {
    /// A pg_config entry, e.g. "CFLAGS".
    pub fn pg_config_value(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name} = ");
        self.pg_config
            .as_deref()?
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub id: i64,
    pub target: String,
    pub workload: String,
    /// The workload's group (the workload's name in results stored before families existed).
    pub family: String,
    pub script: String,
    pub scale: String,
    pub clients: i64,
    pub repetition: u32,
    pub status: RunStatus,
    pub duration_s: Option<f64>,
    pub tps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub client_cpu_us_per_txn: Option<f64>,
    /// The server processes' CPU over the measured window per transaction (the `server`
    /// probe's counters; None without them).
    pub server_cpu_us_per_txn: Option<f64>,
    /// How evenly the run served its clients (stored from schema 10 on).
    pub served: Option<ServedClients>,
    /// The workload's own metrics (`RunMetrics::workload`); filled by `lab_runs` only.
    pub workload_metrics: Vec<(String, f64)>,
    /// In an auto lab, why the run's cell stopped (`precision`, `cap`, `budget`) and after how
    /// many rounds; None in a lab of fixed runs and while the cell goes on.
    pub stopped: Option<String>,
    pub rounds: Option<u32>,
    /// Its shard, in a lab sharded over a fleet.
    pub shard: Option<u32>,
    /// The machine it ran on (stored from schema 12 on).
    /// What identifies the server of a target the lab did not start (`TargetRecord::server_key`).
    pub server_key: Option<String>,
    pub machine: Option<RunMachine>,
    /// Its statements (pg_stat_statements' deltas over the run); empty unless a command that
    /// compares a statement's time loads them.
    pub statements: Vec<StatementRow>,
    /// The control target's value of the compared metric in the same invocation, cell and
    /// round; set only by a history or gate against a control.
    pub control: Option<f64>,
}

/// The machine a stored run ran on, as reports name and compare machines.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMachine {
    /// `Machine::key`: host, cores × CPU model (and limit).
    pub key: String,
    pub cpu_model: String,
    pub kernel: String,
}

impl StoredRun {
    pub fn workload_metric(&self, name: &str) -> Option<f64> {
        self.workload_metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// One cell's noise as `lab calibrate` measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    pub workload: String,
    pub script: String,
    pub scale: String,
    pub clients: i64,
    pub duration_s: f64,
    pub rounds: u32,
    pub log_ratio_sd: f64,
    pub run_cv: Option<f64>,
    pub measured_unix_s: f64,
}

/// The latest invocation of a spec, as `lab run` decides whether to continue it or start the
/// next.
#[derive(Debug, Clone, PartialEq)]
pub struct LatestInvocation {
    pub id: i64,
    pub seed: u64,
    /// The stored lab's name: the spec's, or "<spec> #k" for the k-th invocation.
    pub name: String,
    /// It ran to the end of its plan.
    pub ended: bool,
    /// Sharded over a fleet (`lab run --shards N`): N.
    pub shards: Option<usize>,
}

/// One `lab run` of a spec, with what a history keys and labels it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub id: i64,
    pub name: String,
    /// The spec's name: the invocations of one spec (on one machine) are a history.
    pub history: String,
    pub created_unix_s: f64,
    /// `Machine::key` (None for labs stored before histories).
    pub machine: Option<String>,
    pub kernel: Option<String>,
    pub cores: Option<i64>,
    pub ended: bool,
    pub tags: Vec<(String, String)>,
}

/// A completed run's headline numbers, for the end-of-lab table.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub cell_key: String,
    pub repetition: u32,
    pub tps: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The server processes' CPU µs per transaction (the `server` probe's counters).
    pub server_cpu_us_per_txn: Option<f64>,
}

/// The backends report text (their errors differ in type); at the store's API it is a failed run.
/// A statement's error as the run's failure, saying what was being read or written.
fn db_error(context: &str) -> impl Fn(StoreError) -> Failure + '_ {
    move |e| Failure::run(format!("results database: {context}: {e}"))
}

// Readers of NOT NULL columns (and of aggregates over them). A nullable column is read with
// `optional` so that a missing number stays None rather than becoming 0 or "".

fn optional(row: &Row, i: usize) -> Option<f64> {
    row.get(i).and_then(Value::as_f64)
}

fn int(row: &Row, i: usize) -> i64 {
    row.get(i).and_then(Value::as_i64).unwrap_or(0)
}

fn real(row: &Row, i: usize) -> f64 {
    row.get(i).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text(row: &Row, i: usize) -> String {
    row.get(i).and_then(Value::as_string).unwrap_or_default()
}

impl Store {
    /// Opens (creating if needed) the results database and brings its schema up to date. A
    /// results location that cannot be used is bad input: nothing ran yet.
    pub fn open(location: &Location) -> Result<Store, Failure> {
        Store::create_or_open(location).map_err(Failure::into_input)
    }

    fn create_or_open(location: &Location) -> Result<Store, Failure> {
        let db: Box<dyn Database> = match location {
            Location::Sqlite(path) => {
                Box::new(sqlite::Sqlite::open(path).map_err(StoreError::into_failure)?)
            }
            Location::Postgres(url) => {
                Box::new(postgres::Postgres::open(location, url).map_err(StoreError::into_failure)?)
            }
        };
        let mut store = Store { db };
        if let Location::Sqlite(_) = location {
            store.refuse_foreign(location)?;
        }
        store.migrate()?;
        Ok(store)
    }

    /// A SQLite file that holds tables but not stampede's is another program's database:
    /// refused before anything is written into it.
    fn refuse_foreign(&mut self, location: &Location) -> Result<(), Failure> {
        let rows = self
            .db
            .query(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                &[],
            )
            .map_err(db_error("tables"))?;
        let tables: Vec<String> = rows.iter().map(|r| text(r, 0)).collect();
        if tables.is_empty() || tables.iter().any(|t| t == "schema_version") {
            return Ok(());
        }
        let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
        Err(Failure::input(format!(
            "{location} is not a stampede results database (it holds other tables: {}); \
             stampede writes only into its own results or a new file",
            shown.join(", ")
        )))
    }

    /// Opens a results database that must exist already (for reading reports): a missing file,
    /// or one that is not a stampede results database, is an error rather than a new database.
    pub fn open_existing(location: &Location) -> Result<Store, Failure> {
        Store::open_stampede_database(location).map_err(Failure::into_input)
    }

    /// Opens a results database to read while others write it (a live page): its schema
    /// must be this stampede's, and the session refuses writes.
    pub fn open_read_only(location: &Location) -> Result<Store, Failure> {
        let mut store = Store::connect_existing(location).map_err(Failure::into_input)?;
        let version = store
            .db
            .query("SELECT coalesce(max(version), 0) FROM schema_version", &[])
            .map_err(db_error("schema version"))?
            .first()
            .map_or(0, |r| int(r, 0));
        if version as usize != schema::MIGRATIONS.len() {
            return Err(Failure::input(format!(
                "{location} has schema version {version}, this stampede reads {}: open it once \
                 with this stampede's `report` (which brings it up to date), or serve it with the \
                 stampede that wrote it",
                schema::MIGRATIONS.len()
            )));
        }
        let read_only = match location {
            Location::Sqlite(_) => "PRAGMA query_only = ON",
            Location::Postgres(_) => "SET default_transaction_read_only = on",
        };
        store
            .db
            .batch(read_only)
            .map_err(db_error("read-only session"))?;
        Ok(store)
    }

    fn open_stampede_database(location: &Location) -> Result<Store, Failure> {
        let mut store = Store::connect_existing(location)?;
        store.migrate()?;
        Ok(store)
    }

    /// A connection to an existing stampede results database, its schema as it is.
    fn connect_existing(location: &Location) -> Result<Store, Failure> {
        if let Location::Sqlite(path) = location {
            if !path.is_file() {
                return Err(Failure::input(format!(
                    "results database {location} does not exist"
                )));
            }
        }
        // A file SQLite cannot read as a database, or one without stampede's tables.
        let not_ours = || Failure::input(format!("{location} is not a stampede results database"));
        let db: Box<dyn Database> = match location {
            Location::Sqlite(path) => Box::new(sqlite::Sqlite::open(path).map_err(|_| not_ours())?),
            Location::Postgres(url) => {
                Box::new(postgres::Postgres::open(location, url).map_err(StoreError::into_failure)?)
            }
        };
        let mut store = Store { db };
        let schema = store
            .db
            .query("SELECT max(version) FROM schema_version", &[]);
        match schema {
            Err(StoreError::MissingTable(_)) => return Err(not_ours()),
            // SQLite reads the file only now: one that is not a database says so here.
            Err(_) if matches!(location, Location::Sqlite(_)) => return Err(not_ours()),
            Err(e) => return Err(db_error("schema version")(e)),
            Ok(_) => {}
        }
        Ok(store)
    }

    /// Runs `work` in one transaction: all of it lands, or none.
    fn transaction<T>(
        &mut self,
        context: &str,
        work: impl FnOnce(&mut dyn Database) -> Result<T, StoreError>,
    ) -> Result<T, Failure> {
        self.db.batch("BEGIN").map_err(db_error(context))?;
        match work(self.db.as_mut()) {
            Ok(value) => {
                self.db.batch("COMMIT").map_err(db_error(context))?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.db.batch("ROLLBACK");
                Err(db_error(context)(e))
            }
        }
    }

    fn migrate(&mut self) -> Result<(), Failure> {
        let create = self
            .db
            .dialect("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
        self.db.batch(&create).map_err(db_error("schema version"))?;
        let rows = self
            .db
            .query("SELECT coalesce(max(version), 0) FROM schema_version", &[])
            .map_err(db_error("schema version"))?;
        let current = rows.first().map_or(0, |r| int(r, 0));
        if current as usize > schema::MIGRATIONS.len() {
            return Err(Failure::run(format!(
                "results database has schema version {current}, newer than this stampede knows ({}); upgrade stampede",
                schema::MIGRATIONS.len()
            )));
        }
        // Every pending step in one transaction: a reader (a shard, a test watching the
        // results) sees the schema before the migration or after it, never half made.
        let pending: Vec<(usize, String)> = schema::MIGRATIONS
            .iter()
            .enumerate()
            .skip(current as usize)
            .map(|(index, sql)| (index, self.db.dialect(sql)))
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        self.transaction("migration", |db| {
            for (index, sql) in &pending {
                db.batch(sql)?;
                db.execute(
                    "INSERT INTO schema_version VALUES (?1)",
                    &[Value::Int(*index as i64 + 1)],
                )?;
            }
            Ok(())
        })
    }
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store() -> (Store, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!(
            "stampede-store-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&path);
        (Store::open(&Location::Sqlite(path.clone())).unwrap(), path)
    }

    #[test]
    fn runs_round_trip_and_interrupted_ones_are_unfinished() {
        let (mut store, path) = temp_store();
        let (lab, seed) = store.lab("l", "spec", 5).unwrap();
        assert_eq!(seed, 5);
        assert_eq!(
            store.lab("l", "spec", 9).unwrap(),
            (lab, 5),
            "seed kept on resume"
        );
        assert!(store.lab("l", "other spec", 5).is_err());
        let cell = CellRecord {
            key: "a/pgbench/select-only/1/1".into(),
            target: "a".into(),
            workload: "pgbench".into(),
            script: "select-only".into(),
            scale: "1".into(),
            clients: 1,
            family: "read".into(),
        };
        store.save_cells(lab, &[cell.clone(), cell]).unwrap();
        // Columns written as NULL come back as None, not as zeros.
        let statement = StatementRow {
            query: "SELECT 1".into(),
            calls: 10,
            mean_ms: Some(0.5),
            stddev_ms: None,
            rows: Some(10),
            shared_blks_hit: None,
            shared_blks_read: Some(0),
        };
        // Repetition 2 was stopped before its data was ready (no scale resolved).
        for (repetition, status, resolved_scale) in [
            (0, RunStatus::Completed, Some(1)),
            (1, RunStatus::Interrupted, Some(1)),
            (2, RunStatus::Interrupted, None),
        ] {
            store
                .record_run(
                    lab,
                    &RunRecord {
                        cell_key: "a/pgbench/select-only/1/1".into(),
                        repetition,
                        position: repetition as usize,
                        status,
                        error: None,
                        started_unix_s: 1.0,
                        ended_unix_s: 2.0,
                        resolved_scale,
                        overhead_s: 0.5,
                        metrics: Some(RunMetrics {
                            tps: 100.0,
                            ..RunMetrics::default()
                        }),
                        series: vec![SeriesRow {
                            second: 0,
                            tps: 100.0,
                            p50_ms: 1.0,
                            p99_ms: 2.0,
                            failed: 0,
                        }],
                        counters: vec![CounterRow {
                            source: "pg_stat_database".into(),
                            name: "xact_commit".into(),
                            value: 100.0,
                        }],
                        statements: vec![statement.clone()],
                        counter_series: vec![],
                        wait_events: vec![],
                        pods: vec![],
                        settings: None,
                        machine_id: None,
                        shard: None,
                    },
                )
                .unwrap();
        }
        let finished = store.finished_runs(lab).unwrap();
        assert_eq!(finished.len(), 1);
        assert!(finished.contains(&("a/pgbench/select-only/1/1".to_string(), 0)));
        let on_their_data = store.runs_interrupted_on_their_data(lab).unwrap();
        assert_eq!(
            on_their_data,
            std::collections::HashSet::from([("a/pgbench/select-only/1/1".to_string(), 1)])
        );
        assert_eq!(store.completed_runs(lab).unwrap().len(), 1);
        assert_eq!(store.mean_overhead_s(lab).unwrap(), Some(0.5));
        let statements = store.lab_statements(lab).unwrap();
        assert_eq!(statements.len(), 1, "only the completed run's");
        assert_eq!(statements[0].1, statement);
        drop(store);
        // Reopening applies no migration twice.
        Store::open(&Location::Sqlite(path.clone())).unwrap();
        let _ = std::fs::remove_file(path);
    }

    /// A database written before migration 6 keeps its targets' server text, under the new
    /// column name, and records the new version.
    #[test]
    fn version_5_targets_keep_their_server_under_its_new_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                .unwrap();
            for (index, sql) in schema::MIGRATIONS.iter().take(5).enumerate() {
                conn.execute_batch(sql).unwrap();
                conn.execute("INSERT INTO schema_version VALUES (?1)", [index + 1])
                    .unwrap();
            }
            conn.execute_batch(
                "INSERT INTO labs (id, name, spec, seed, created_unix_s) VALUES (1, 'l', 's', 1, 0);
                 INSERT INTO targets (lab_id, name, postgres, profile) VALUES (1, 'pg16', '16', 'tuned');",
            )
            .unwrap();
        }
        let mut store = Store::open(&Location::Sqlite(path.clone())).unwrap();
        let server = store
            .db
            .query("SELECT server FROM targets WHERE name = 'pg16'", &[])
            .unwrap();
        assert_eq!(text(&server[0], 0), "16");
        let version = store
            .db
            .query("SELECT max(version) FROM schema_version", &[])
            .unwrap();
        assert_eq!(int(&version[0], 0), schema::MIGRATIONS.len() as i64);
    }
}
