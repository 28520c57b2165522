//! The results database: every lab, target (with settings and binary provenance), cell, run and
//! per-second series. SQLite by default, or a shared PostgreSQL database with the same schema.
//! Each run is written in one transaction, so a crash loses at most the run in progress.
//! Stores numbers; computes no statistics.

mod database;
mod postgres;
mod schema;
mod sqlite;

use std::collections::HashSet;

pub use database::Location;
use database::{Database, Row, Value};

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
}

/// `targets.binary_source` of binaries downloaded from Maven Central (zonky's builds).
pub const ZONKY_BINARIES: &str = "zonky (Maven Central)";

#[derive(Debug, Clone, Default)]
pub struct TargetRecord {
    pub name: String,
    pub postgres: String,
    pub binary_source: String,
    pub bin_dir: String,
    pub server_version: String,
    pub pg_config: String,
    pub profile: String,
    pub restore_method: String,
    pub settings: Vec<SettingRow>,
}

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRow {
    pub second: u64,
    pub tps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub failed: u64,
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
    pub mean_ms: f64,
    pub stddev_ms: f64,
    pub rows: i64,
    pub shared_blks_hit: i64,
    pub shared_blks_read: i64,
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
}

/// A stored run with its cell, for reports.
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
    pub status: String,
    pub duration_s: Option<f64>,
    pub tps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub client_cpu_us_per_txn: Option<f64>,
    /// The workload's own metrics (`RunMetrics::workload`); filled by `lab_runs` only.
    pub workload_metrics: Vec<(String, f64)>,
}

impl StoredRun {
    pub fn workload_metric(&self, name: &str) -> Option<f64> {
        self.workload_metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// A completed run's headline numbers, for the end-of-lab table.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub cell_key: String,
    pub repetition: u32,
    pub tps: f64,
    pub p99_ms: f64,
}

fn db_error(context: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("results database: {context}: {e}")
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
    /// Opens (creating if needed) the results database and brings its schema up to date.
    pub fn open(location: &Location) -> Result<Store, String> {
        let db: Box<dyn Database> = match location {
            Location::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            Location::Postgres(url) => Box::new(postgres::Postgres::open(location, url)?),
        };
        let mut store = Store { db };
        store.migrate()?;
        Ok(store)
    }

    /// Opens a results database that must exist already (for reading reports): a missing file,
    /// or one that is not a stampede results database, is an error rather than a new database.
    pub fn open_existing(location: &Location) -> Result<Store, String> {
        if let Location::Sqlite(path) = location {
            if !path.is_file() {
                return Err(format!("results database {location} does not exist"));
            }
        }
        let not_ours = |_| format!("{location} is not a stampede results database");
        let db: Box<dyn Database> = match location {
            Location::Sqlite(path) => Box::new(sqlite::Sqlite::open(path).map_err(not_ours)?),
            Location::Postgres(url) => Box::new(postgres::Postgres::open(location, url)?),
        };
        let mut store = Store { db };
        store
            .db
            .query("SELECT max(version) FROM schema_version", &[])
            .map_err(not_ours)?;
        store.migrate()?;
        Ok(store)
    }

    /// Runs `work` in one transaction: all of it lands, or none.
    fn transaction<T>(
        &mut self,
        context: &str,
        work: impl FnOnce(&mut dyn Database) -> Result<T, String>,
    ) -> Result<T, String> {
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

    fn migrate(&mut self) -> Result<(), String> {
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
            return Err(format!(
                "results database has schema version {current}, newer than this stampede knows ({}); upgrade stampede",
                schema::MIGRATIONS.len()
            ));
        }
        for (index, sql) in schema::MIGRATIONS.iter().enumerate().skip(current as usize) {
            let sql = self.db.dialect(sql);
            self.transaction("migration", |db| {
                db.batch(&sql)?;
                db.execute(
                    "INSERT INTO schema_version VALUES (?1)",
                    &[Value::Int(index as i64 + 1)],
                )
            })?;
        }
        Ok(())
    }

    /// The lab's id and run-order seed: created on first use; on a resume the spec must be the
    /// one the lab started with.
    pub fn lab(&mut self, name: &str, spec: &str, seed: u64) -> Result<(i64, u64), String> {
        let existing = self
            .db
            .query(
                "SELECT id, spec, seed FROM labs WHERE name = ?1",
                &[name.into()],
            )
            .map_err(db_error("labs"))?;
        match existing.first() {
            Some(row) if text(row, 1) != spec => Err(format!(
                "the results database already holds lab \"{name}\" started from a different spec; use another `results` file or restore the original spec"
            )),
            Some(row) => Ok((int(row, 0), int(row, 2) as u64)),
            None => {
                let rows = self
                    .db
                    .query(
                        "INSERT INTO labs (name, spec, seed, created_unix_s) VALUES (?1, ?2, ?3, ?4) RETURNING id",
                        &[name.into(), spec.into(), Value::Int(seed as i64), unix_now().into()],
                    )
                    .map_err(db_error("labs"))?;
                Ok((rows.first().map_or(0, |r| int(r, 0)), seed))
            }
        }
    }

    /// Records a target's provenance and full settings (replacing what was stored before).
    pub fn save_target(&mut self, lab: i64, target: &TargetRecord) -> Result<(), String> {
        self.transaction("targets", |db| {
            let rows = db.query(
                "INSERT INTO targets (lab_id, name, postgres, binary_source, bin_dir, server_version, pg_config, profile, restore_method)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (lab_id, name) DO UPDATE SET postgres = excluded.postgres,
                   binary_source = excluded.binary_source, bin_dir = excluded.bin_dir,
                   server_version = excluded.server_version, pg_config = excluded.pg_config,
                   profile = excluded.profile, restore_method = excluded.restore_method
                 RETURNING id",
                &[
                    lab.into(),
                    (&target.name).into(),
                    (&target.postgres).into(),
                    (&target.binary_source).into(),
                    (&target.bin_dir).into(),
                    (&target.server_version).into(),
                    (&target.pg_config).into(),
                    (&target.profile).into(),
                    (&target.restore_method).into(),
                ],
            )?;
            let id = rows.first().map_or(0, |r| int(r, 0));
            db.execute("DELETE FROM target_settings WHERE target_id = ?1", &[id.into()])?;
            for s in &target.settings {
                db.execute(
                    "INSERT INTO target_settings VALUES (?1, ?2, ?3, ?4, ?5)",
                    &[
                        id.into(),
                        (&s.name).into(),
                        s.setting.as_ref().into(),
                        s.unit.as_ref().into(),
                        s.source.as_ref().into(),
                    ],
                )?;
            }
            Ok(())
        })
    }

    pub fn save_cells(&mut self, lab: i64, cells: &[CellRecord]) -> Result<(), String> {
        self.transaction("cells", |db| {
            for c in cells {
                db.execute(
                    "INSERT INTO cells (lab_id, key, target, workload, script, scale, clients, family)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (lab_id, key) DO NOTHING",
                    &[
                        lab.into(),
                        (&c.key).into(),
                        (&c.target).into(),
                        (&c.workload).into(),
                        (&c.script).into(),
                        (&c.scale).into(),
                        Value::Int(c.clients as i64),
                        (&c.family).into(),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// (cell key, repetition) of runs that need no repeating: completed or failed. Interrupted
    /// runs are run again.
    pub fn finished_runs(&mut self, lab: i64) -> Result<HashSet<(String, u32)>, String> {
        let rows = self
            .db
            .query(
                "SELECT c.key, r.repetition FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status IN ('completed', 'failed')",
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows
            .iter()
            .map(|r| (text(r, 0), int(r, 1) as u32))
            .collect())
    }

    /// Writes one run with its series, counters, statements and samples in one transaction.
    pub fn record_run(&mut self, lab: i64, run: &RunRecord) -> Result<(), String> {
        self.transaction("runs", |db| {
            let cell = db.query(
                "SELECT id FROM cells WHERE lab_id = ?1 AND key = ?2",
                &[lab.into(), (&run.cell_key).into()],
            )?;
            let cell = cell
                .first()
                .map(|r| int(r, 0))
                .ok_or_else(|| format!("no cell {}", run.cell_key))?;
            let run_id = insert_run(db, cell, run)?;
            insert_details(db, run_id, run)
        })
    }

    /// Removes the runs of a cell's repetition with everything recorded about them: a step of
    /// a sequence whose later steps were interrupted is run again with them.
    pub fn delete_runs(&mut self, lab: i64, cell_key: &str, repetition: u32) -> Result<(), String> {
        self.transaction("runs", |db| {
            let runs = "SELECT r.id FROM runs r JOIN cells c ON c.id = r.cell_id
                        WHERE c.lab_id = ?1 AND c.key = ?2 AND r.repetition = ?3";
            let params = [lab.into(), cell_key.into(), Value::Int(repetition.into())];
            for table in [
                "run_metrics",
                "run_series",
                "run_counters",
                "run_statements",
                "run_counter_series",
                "run_wait_events",
            ] {
                db.execute(
                    &format!("DELETE FROM {table} WHERE run_id IN ({runs})"),
                    &params,
                )?;
            }
            db.execute(&format!("DELETE FROM runs WHERE id IN ({runs})"), &params)?;
            Ok(())
        })
    }

    /// Records (or replaces) the plan of a statement on a target.
    pub fn save_plan(
        &mut self,
        lab: i64,
        target: &str,
        dataset: &str,
        query: &str,
        plan: &str,
    ) -> Result<(), String> {
        self.db
            .execute(
                "INSERT INTO plans (target_id, dataset, query, plan)
                 SELECT id, ?3, ?4, ?5 FROM targets WHERE lab_id = ?1 AND name = ?2
                 ON CONFLICT (target_id, dataset, query) DO UPDATE SET plan = excluded.plan",
                &[
                    lab.into(),
                    target.into(),
                    dataset.into(),
                    query.into(),
                    plan.into(),
                ],
            )
            .map_err(db_error("plans"))
    }

    /// Completed runs of the lab, in run order.
    pub fn completed_runs(&mut self, lab: i64) -> Result<Vec<RunSummary>, String> {
        let rows = self
            .db
            .query(
                "SELECT c.key, r.repetition, r.tps, r.p99_ms FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed' ORDER BY r.position",
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows
            .iter()
            .map(|r| RunSummary {
                cell_key: text(r, 0),
                repetition: int(r, 1) as u32,
                tps: real(r, 2),
                p99_ms: real(r, 3),
            })
            .collect())
    }

    /// Mean seconds a completed run spent beyond warmup and measuring.
    pub fn mean_overhead_s(&mut self, lab: i64) -> Result<Option<f64>, String> {
        let rows = self
            .db
            .query(
                "SELECT avg(r.overhead_s) FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed'",
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows.first().and_then(|r| r.first()?.as_f64()))
    }

    /// Every lab: (id, name), oldest first.
    pub fn labs(&mut self) -> Result<Vec<(i64, String)>, String> {
        let rows = self
            .db
            .query("SELECT id, name FROM labs ORDER BY id", &[])
            .map_err(db_error("labs"))?;
        Ok(rows.iter().map(|r| (int(r, 0), text(r, 1))).collect())
    }

    /// Every run of the lab with its cell, in run order.
    pub fn lab_runs(&mut self, lab: i64) -> Result<Vec<StoredRun>, String> {
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r JOIN cells c ON c.id = r.cell_id
                     WHERE c.lab_id = ?1 ORDER BY r.position, r.id"
                ),
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        let mut runs: Vec<StoredRun> = rows.iter().map(stored_run).collect();
        let metrics = self
            .db
            .query(
                "SELECT m.run_id, m.name, m.value FROM run_metrics m JOIN runs r ON r.id = m.run_id
                 JOIN cells c ON c.id = r.cell_id WHERE c.lab_id = ?1 ORDER BY m.run_id, m.name",
                &[lab.into()],
            )
            .map_err(db_error("run metrics"))?;
        for row in &metrics {
            if let Some(run) = runs.iter_mut().find(|run| run.id == int(row, 0)) {
                run.workload_metrics.push((text(row, 1), real(row, 2)));
            }
        }
        Ok(runs)
    }

    /// The statements of the lab's completed runs, each with its run's target and cell.
    pub fn lab_statements(&mut self, lab: i64) -> Result<Vec<(StoredRun, StatementRow)>, String> {
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS}, s.query, s.calls, s.mean_ms, s.stddev_ms, s.rows, s.shared_blks_hit, s.shared_blks_read
                     FROM run_statements s JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                     WHERE c.lab_id = ?1 AND r.status = 'completed' ORDER BY r.position, s.query"
                ),
                &[lab.into()],
            )
            .map_err(db_error("statements"))?;
        Ok(rows
            .iter()
            .map(|r| {
                let statement = StatementRow {
                    query: text(r, RUN_COLUMN_COUNT),
                    calls: int(r, RUN_COLUMN_COUNT + 1),
                    mean_ms: real(r, RUN_COLUMN_COUNT + 2),
                    stddev_ms: real(r, RUN_COLUMN_COUNT + 3),
                    rows: int(r, RUN_COLUMN_COUNT + 4),
                    shared_blks_hit: int(r, RUN_COLUMN_COUNT + 5),
                    shared_blks_read: int(r, RUN_COLUMN_COUNT + 6),
                };
                (stored_run(r), statement)
            })
            .collect())
    }

    /// Each completed run's counters divided by its transactions (`run_counters_per_txn`).
    pub fn lab_counters_per_txn(
        &mut self,
        lab: i64,
    ) -> Result<Vec<(StoredRun, CounterRow)>, String> {
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS}, v.source, v.name, v.per_txn
                     FROM run_counters_per_txn v JOIN runs r ON r.id = v.run_id JOIN cells c ON c.id = r.cell_id
                     WHERE c.lab_id = ?1 AND r.status = 'completed' ORDER BY r.position"
                ),
                &[lab.into()],
            )
            .map_err(db_error("counters"))?;
        Ok(rows
            .iter()
            .map(|r| {
                let counter = CounterRow {
                    source: text(r, RUN_COLUMN_COUNT),
                    name: text(r, RUN_COLUMN_COUNT + 1),
                    value: real(r, RUN_COLUMN_COUNT + 2),
                };
                (stored_run(r), counter)
            })
            .collect())
    }

    /// Each target's full pg_settings and server version: (target, version, settings).
    pub fn lab_target_settings(
        &mut self,
        lab: i64,
    ) -> Result<Vec<(String, String, Vec<SettingRow>)>, String> {
        let rows = self
            .db
            .query(
                "SELECT t.name, t.server_version, s.name, s.setting, s.unit, s.source
                 FROM targets t JOIN target_settings s ON s.target_id = t.id
                 WHERE t.lab_id = ?1 ORDER BY t.name, s.name",
                &[lab.into()],
            )
            .map_err(db_error("settings"))?;
        let mut out: Vec<(String, String, Vec<SettingRow>)> = Vec::new();
        for r in &rows {
            let setting = SettingRow {
                name: text(r, 2),
                setting: r.get(3).and_then(Value::as_string),
                unit: r.get(4).and_then(Value::as_string),
                source: r.get(5).and_then(Value::as_string),
            };
            match out.last_mut() {
                Some((target, _, settings)) if *target == text(r, 0) => settings.push(setting),
                _ => out.push((text(r, 0), text(r, 1), vec![setting])),
            }
        }
        Ok(out)
    }

    /// Stored plans: (target, dataset, query, plan).
    pub fn lab_plans(&mut self, lab: i64) -> Result<Vec<[String; 4]>, String> {
        let rows = self
            .db
            .query(
                "SELECT t.name, p.dataset, p.query, p.plan FROM plans p JOIN targets t ON t.id = p.target_id
                 WHERE t.lab_id = ?1 ORDER BY t.name, p.dataset, p.query",
                &[lab.into()],
            )
            .map_err(db_error("plans"))?;
        Ok(rows
            .iter()
            .map(|r| [text(r, 0), text(r, 1), text(r, 2), text(r, 3)])
            .collect())
    }

    /// Per target and wait state: the average number of the runs' sessions in it over every
    /// sampled tick of completed runs.
    pub fn lab_wait_events(&mut self, lab: i64) -> Result<Vec<(String, String, f64)>, String> {
        let rows = self
            .db
            .query(
                "WITH sampled AS (
                   SELECT c.target, w.run_id, w.second, w.wait_event_type || ':' || w.wait_event AS state,
                          w.samples, w.ticks
                   FROM run_wait_events w JOIN runs r ON r.id = w.run_id JOIN cells c ON c.id = r.cell_id
                   WHERE c.lab_id = ?1 AND r.status = 'completed'),
                 ticks AS (
                   SELECT target, sum(ticks) AS total FROM
                     (SELECT target, run_id, second, max(ticks) AS ticks FROM sampled GROUP BY target, run_id, second) s
                   GROUP BY target)
                 SELECT s.target, s.state, sum(s.samples) * 1.0 / max(t.total)
                 FROM sampled s JOIN ticks t ON t.target = s.target
                 GROUP BY s.target, s.state ORDER BY s.target, 3 DESC",
                &[lab.into()],
            )
            .map_err(db_error("wait events"))?;
        Ok(rows
            .iter()
            .map(|r| (text(r, 0), text(r, 1), real(r, 2)))
            .collect())
    }

    /// Records the CPUs of the machine the lab's driver runs on, once: the first machine's.
    pub fn record_client_cores(&mut self, lab: i64, cores: usize) -> Result<(), String> {
        self.db
            .execute(
                "UPDATE labs SET client_cores = ?2 WHERE id = ?1 AND client_cores IS NULL",
                &[lab.into(), Value::Int(cores as i64)],
            )
            .map_err(db_error("labs"))
    }

    pub fn client_cores(&mut self, lab: i64) -> Result<Option<i64>, String> {
        let rows = self
            .db
            .query("SELECT client_cores FROM labs WHERE id = ?1", &[lab.into()])
            .map_err(db_error("labs"))?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(Value::as_f64)
            .map(|v| v as i64))
    }

    /// Each target's binary provenance: (target, binary source).
    pub fn lab_binary_sources(&mut self, lab: i64) -> Result<Vec<(String, String)>, String> {
        let rows = self
            .db
            .query(
                "SELECT name, coalesce(binary_source, '') FROM targets WHERE lab_id = ?1 ORDER BY name",
                &[lab.into()],
            )
            .map_err(db_error("targets"))?;
        Ok(rows.iter().map(|r| (text(r, 0), text(r, 1))).collect())
    }

    /// A run's throughput per second: (second, tps).
    pub fn run_series(&mut self, run: i64) -> Result<Vec<(u64, f64)>, String> {
        let rows = self
            .db
            .query(
                "SELECT second, tps FROM run_series WHERE run_id = ?1 ORDER BY second",
                &[run.into()],
            )
            .map_err(db_error("series"))?;
        Ok(rows
            .iter()
            .map(|r| (int(r, 0) as u64, real(r, 1)))
            .collect())
    }

    /// Per completed run of the lab, the sum of one per-second counter: (run id, sum).
    pub fn lab_counter_series_sums(
        &mut self,
        lab: i64,
        source: &str,
        name: &str,
    ) -> Result<Vec<(i64, f64)>, String> {
        let rows = self
            .db
            .query(
                "SELECT s.run_id, sum(s.value) FROM run_counter_series s
                 JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed' AND s.source = ?2 AND s.name = ?3
                 GROUP BY s.run_id",
                &[lab.into(), source.into(), name.into()],
            )
            .map_err(db_error("counter series"))?;
        Ok(rows.iter().map(|r| (int(r, 0), real(r, 1))).collect())
    }

    /// One counter of a run per second: (second, change during it).
    pub fn run_counter_series(
        &mut self,
        run: i64,
        source: &str,
        name: &str,
    ) -> Result<Vec<(u64, f64)>, String> {
        let rows = self
            .db
            .query(
                "SELECT second, value FROM run_counter_series
                 WHERE run_id = ?1 AND source = ?2 AND name = ?3 ORDER BY second",
                &[run.into(), source.into(), name.into()],
            )
            .map_err(db_error("counter series"))?;
        Ok(rows
            .iter()
            .map(|r| (int(r, 0) as u64, real(r, 1)))
            .collect())
    }

    pub fn find_lab(&mut self, name: &str) -> Result<Option<(i64, u64)>, String> {
        let rows = self
            .db
            .query("SELECT id, seed FROM labs WHERE name = ?1", &[name.into()])
            .map_err(db_error("labs"))?;
        Ok(rows.first().map(|r| (int(r, 0), int(r, 1) as u64)))
    }
}

/// The columns `stored_run` reads, first in a query over `runs r JOIN cells c`; a query's own
/// columns follow from index `RUN_COLUMN_COUNT`.
const RUN_COLUMNS: &str = "r.id, c.target, c.workload, coalesce(c.family, c.workload), c.script, c.scale, c.clients,
     r.repetition, r.status, r.duration_s, r.tps, r.p50_ms, r.p95_ms, r.p99_ms, r.client_cpu_us_per_txn";
const RUN_COLUMN_COUNT: usize = 15;

fn stored_run(r: &Row) -> StoredRun {
    let number = |i: usize| r.get(i).and_then(Value::as_f64);
    StoredRun {
        id: int(r, 0),
        target: text(r, 1),
        workload: text(r, 2),
        family: text(r, 3),
        script: text(r, 4),
        scale: text(r, 5),
        clients: int(r, 6),
        repetition: int(r, 7) as u32,
        status: text(r, 8),
        duration_s: number(9),
        tps: number(10),
        p50_ms: number(11),
        p95_ms: number(12),
        p99_ms: number(13),
        client_cpu_us_per_txn: number(14),
        workload_metrics: Vec::new(),
    }
}

fn insert_run(db: &mut dyn Database, cell: i64, run: &RunRecord) -> Result<i64, String> {
    let m = run.metrics.as_ref();
    let metric = |f: fn(&RunMetrics) -> f64| Value::from(m.map(f));
    let rows = db.query(
        "INSERT INTO runs (cell_id, repetition, position, status, error, started_unix_s, ended_unix_s,
           resolved_scale, duration_s, transactions, failures, tps, latency_avg_ms, latency_stddev_ms,
           p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_us_per_txn, overhead_s)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)
         RETURNING id",
        &[
            cell.into(),
            run.repetition.into(),
            Value::Int(run.position as i64),
            run.status.as_str().into(),
            run.error.as_ref().into(),
            run.started_unix_s.into(),
            run.ended_unix_s.into(),
            run.resolved_scale.into(),
            metric(|m| m.duration_s),
            m.map(|m| m.transactions as i64).into(),
            m.map(|m| m.failures as i64).into(),
            metric(|m| m.tps),
            metric(|m| m.latency_avg_ms),
            metric(|m| m.latency_stddev_ms),
            metric(|m| m.p50_ms),
            metric(|m| m.p90_ms),
            metric(|m| m.p95_ms),
            metric(|m| m.p99_ms),
            metric(|m| m.p999_ms),
            metric(|m| m.max_ms),
            metric(|m| m.client_cpu_us_per_txn),
            run.overhead_s.into(),
        ],
    )?;
    rows.first()
        .map(|r| int(r, 0))
        .ok_or_else(|| "no run id returned".to_string())
}

fn insert_details(db: &mut dyn Database, run_id: i64, run: &RunRecord) -> Result<(), String> {
    let id = Value::Int(run_id);
    for p in &run.series {
        db.execute(
            "INSERT INTO run_series VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                id.clone(),
                Value::Int(p.second as i64),
                p.tps.into(),
                p.p50_ms.into(),
                p.p99_ms.into(),
                Value::Int(p.failed as i64),
            ],
        )?;
    }
    for (name, value) in run.metrics.iter().flat_map(|m| &m.workload) {
        db.execute(
            "INSERT INTO run_metrics VALUES (?1, ?2, ?3)",
            &[id.clone(), name.into(), (*value).into()],
        )?;
    }
    for c in &run.counters {
        db.execute(
            "INSERT INTO run_counters VALUES (?1, ?2, ?3, ?4)",
            &[
                id.clone(),
                (&c.source).into(),
                (&c.name).into(),
                c.value.into(),
            ],
        )?;
    }
    for s in &run.statements {
        db.execute(
            "INSERT INTO run_statements VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                id.clone(),
                (&s.query).into(),
                s.calls.into(),
                s.mean_ms.into(),
                s.stddev_ms.into(),
                s.rows.into(),
                s.shared_blks_hit.into(),
                s.shared_blks_read.into(),
            ],
        )?;
    }
    for (second, c) in &run.counter_series {
        db.execute(
            "INSERT INTO run_counter_series VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                id.clone(),
                Value::Int(*second as i64),
                (&c.source).into(),
                (&c.name).into(),
                c.value.into(),
            ],
        )?;
    }
    for w in &run.wait_events {
        db.execute(
            "INSERT INTO run_wait_events VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                id.clone(),
                Value::Int(w.second as i64),
                (&w.wait_event_type).into(),
                (&w.wait_event).into(),
                w.samples.into(),
                w.ticks.into(),
            ],
        )?;
    }
    Ok(())
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
        for (repetition, status) in [(0, RunStatus::Completed), (1, RunStatus::Interrupted)] {
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
                        resolved_scale: Some(1),
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
                        statements: vec![],
                        counter_series: vec![],
                        wait_events: vec![],
                    },
                )
                .unwrap();
        }
        let finished = store.finished_runs(lab).unwrap();
        assert_eq!(finished.len(), 1);
        assert!(finished.contains(&("a/pgbench/select-only/1/1".to_string(), 0)));
        assert_eq!(store.completed_runs(lab).unwrap().len(), 1);
        assert_eq!(store.mean_overhead_s(lab).unwrap(), Some(0.5));
        drop(store);
        // Reopening applies no migration twice.
        Store::open(&Location::Sqlite(path.clone())).unwrap();
        let _ = std::fs::remove_file(path);
    }
}
