//! The results database: every lab, target (with settings and binary provenance), cell, run and
//! per-second series. SQLite by default. Each run is written in one transaction, so a crash
//! loses at most the run in progress. Stores numbers; computes no statistics.

mod schema;

use std::collections::HashSet;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

pub struct Store {
    db: Connection,
}

/// One row of pg_settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingRow {
    pub name: String,
    pub setting: Option<String>,
    pub unit: Option<String>,
    pub source: Option<String>,
}

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

/// A completed run's headline numbers, for the end-of-lab table.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub cell_key: String,
    pub repetition: u32,
    pub tps: f64,
    pub p99_ms: f64,
}

fn db_error(context: &str) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| format!("results database: {context}: {e}")
}

impl Store {
    /// Opens (creating if needed) the SQLite file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, String> {
        let db = Connection::open(path)
            .map_err(|e| format!("could not open results database {}: {e}", path.display()))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_error("journal mode"))?;
        db.pragma_update(None, "foreign_keys", "ON")
            .map_err(db_error("foreign keys"))?;
        let mut store = Store { db };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<(), String> {
        self.db
            .execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            .map_err(db_error("schema version"))?;
        let current: i64 = self
            .db
            .query_row(
                "SELECT coalesce(max(version), 0) FROM schema_version",
                [],
                |r| r.get(0),
            )
            .map_err(db_error("schema version"))?;
        if current as usize > schema::MIGRATIONS.len() {
            return Err(format!(
                "results database has schema version {current}, newer than this stampede knows ({}); upgrade stampede",
                schema::MIGRATIONS.len()
            ));
        }
        for (index, sql) in schema::MIGRATIONS.iter().enumerate().skip(current as usize) {
            let tx = self.db.transaction().map_err(db_error("migration"))?;
            tx.execute_batch(sql).map_err(db_error("migration"))?;
            tx.execute("INSERT INTO schema_version VALUES (?1)", [index as i64 + 1])
                .map_err(db_error("migration"))?;
            tx.commit().map_err(db_error("migration"))?;
        }
        Ok(())
    }

    /// The lab's id and run-order seed: created on first use; on a resume the spec must be the
    /// one the lab started with.
    pub fn lab(&mut self, name: &str, spec: &str, seed: u64) -> Result<(i64, u64), String> {
        let existing: Option<(i64, String, i64)> = self
            .db
            .query_row(
                "SELECT id, spec, seed FROM labs WHERE name = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(db_error("labs"))?;
        match existing {
            Some((_, stored, _)) if stored != spec => Err(format!(
                "the results database already holds lab \"{name}\" started from a different spec; use another `results` file or restore the original spec"
            )),
            Some((id, _, seed)) => Ok((id, seed as u64)),
            None => {
                self.db
                    .execute(
                        "INSERT INTO labs (name, spec, seed, created_unix_s) VALUES (?1, ?2, ?3, ?4)",
                        params![name, spec, seed as i64, unix_now()],
                    )
                    .map_err(db_error("labs"))?;
                Ok((self.db.last_insert_rowid(), seed))
            }
        }
    }

    /// Records a target's provenance and full settings (replacing what was stored before).
    pub fn save_target(&mut self, lab: i64, target: &TargetRecord) -> Result<(), String> {
        let tx = self.db.transaction().map_err(db_error("targets"))?;
        tx.execute(
            "INSERT INTO targets (lab_id, name, postgres, binary_source, bin_dir, server_version, pg_config, profile, restore_method)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (lab_id, name) DO UPDATE SET postgres = excluded.postgres,
               binary_source = excluded.binary_source, bin_dir = excluded.bin_dir,
               server_version = excluded.server_version, pg_config = excluded.pg_config,
               profile = excluded.profile, restore_method = excluded.restore_method",
            params![
                lab,
                target.name,
                target.postgres,
                target.binary_source,
                target.bin_dir,
                target.server_version,
                target.pg_config,
                target.profile,
                target.restore_method
            ],
        )
        .map_err(db_error("targets"))?;
        let id: i64 = tx
            .query_row(
                "SELECT id FROM targets WHERE lab_id = ?1 AND name = ?2",
                params![lab, target.name],
                |r| r.get(0),
            )
            .map_err(db_error("targets"))?;
        tx.execute("DELETE FROM target_settings WHERE target_id = ?1", [id])
            .map_err(db_error("target settings"))?;
        {
            let mut insert = tx
                .prepare("INSERT INTO target_settings VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(db_error("target settings"))?;
            for s in &target.settings {
                insert
                    .execute(params![id, s.name, s.setting, s.unit, s.source])
                    .map_err(db_error("target settings"))?;
            }
        }
        tx.commit().map_err(db_error("targets"))
    }

    pub fn save_cells(&mut self, lab: i64, cells: &[CellRecord]) -> Result<(), String> {
        let tx = self.db.transaction().map_err(db_error("cells"))?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR IGNORE INTO cells (lab_id, key, target, workload, script, scale, clients)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(db_error("cells"))?;
            for c in cells {
                insert
                    .execute(params![
                        lab,
                        c.key,
                        c.target,
                        c.workload,
                        c.script,
                        c.scale,
                        c.clients as i64
                    ])
                    .map_err(db_error("cells"))?;
            }
        }
        tx.commit().map_err(db_error("cells"))
    }

    /// (cell key, repetition) of runs that need no repeating: completed or failed. Interrupted
    /// runs are run again.
    pub fn finished_runs(&self, lab: i64) -> Result<HashSet<(String, u32)>, String> {
        let mut query = self
            .db
            .prepare(
                "SELECT c.key, r.repetition FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status IN ('completed', 'failed')",
            )
            .map_err(db_error("runs"))?;
        let rows = query
            .query_map([lab], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))
            .map_err(db_error("runs"))?;
        rows.collect::<Result<_, _>>().map_err(db_error("runs"))
    }

    /// Writes one run and its series in one transaction.
    pub fn record_run(&mut self, lab: i64, run: &RunRecord) -> Result<(), String> {
        let tx = self.db.transaction().map_err(db_error("runs"))?;
        let cell: i64 = tx
            .query_row(
                "SELECT id FROM cells WHERE lab_id = ?1 AND key = ?2",
                params![lab, run.cell_key],
                |r| r.get(0),
            )
            .map_err(db_error("cells"))?;
        let m = run.metrics.clone();
        tx.execute(
            "INSERT INTO runs (cell_id, repetition, position, status, error, started_unix_s, ended_unix_s,
               resolved_scale, duration_s, transactions, failures, tps, latency_avg_ms, latency_stddev_ms,
               p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_us_per_txn, overhead_s)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            params![
                cell,
                run.repetition,
                run.position as i64,
                run.status.as_str(),
                run.error,
                run.started_unix_s,
                run.ended_unix_s,
                run.resolved_scale,
                m.as_ref().map(|m| m.duration_s),
                m.as_ref().map(|m| m.transactions as i64),
                m.as_ref().map(|m| m.failures as i64),
                m.as_ref().map(|m| m.tps),
                m.as_ref().map(|m| m.latency_avg_ms),
                m.as_ref().map(|m| m.latency_stddev_ms),
                m.as_ref().map(|m| m.p50_ms),
                m.as_ref().map(|m| m.p90_ms),
                m.as_ref().map(|m| m.p95_ms),
                m.as_ref().map(|m| m.p99_ms),
                m.as_ref().map(|m| m.p999_ms),
                m.as_ref().map(|m| m.max_ms),
                m.as_ref().map(|m| m.client_cpu_us_per_txn),
                run.overhead_s,
            ],
        )
        .map_err(db_error("runs"))?;
        let run_id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare("INSERT INTO run_series VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .map_err(db_error("series"))?;
            for point in &run.series {
                insert
                    .execute(params![
                        run_id,
                        point.second as i64,
                        point.tps,
                        point.p50_ms,
                        point.p99_ms,
                        point.failed as i64
                    ])
                    .map_err(db_error("series"))?;
            }
            let mut counter = tx
                .prepare("INSERT INTO run_counters VALUES (?1, ?2, ?3, ?4)")
                .map_err(db_error("counters"))?;
            for c in &run.counters {
                counter
                    .execute(params![run_id, c.source, c.name, c.value])
                    .map_err(db_error("counters"))?;
            }
            let mut statement = tx
                .prepare("INSERT INTO run_statements VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .map_err(db_error("statements"))?;
            for s in &run.statements {
                statement
                    .execute(params![
                        run_id,
                        s.query,
                        s.calls,
                        s.mean_ms,
                        s.stddev_ms,
                        s.rows,
                        s.shared_blks_hit,
                        s.shared_blks_read
                    ])
                    .map_err(db_error("statements"))?;
            }
            let mut series = tx
                .prepare("INSERT INTO run_counter_series VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(db_error("counter series"))?;
            for (second, c) in &run.counter_series {
                series
                    .execute(params![run_id, *second as i64, c.source, c.name, c.value])
                    .map_err(db_error("counter series"))?;
            }
            let mut wait = tx
                .prepare("INSERT INTO run_wait_events VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .map_err(db_error("wait events"))?;
            for w in &run.wait_events {
                wait.execute(params![
                    run_id,
                    w.second as i64,
                    w.wait_event_type,
                    w.wait_event,
                    w.samples,
                    w.ticks
                ])
                .map_err(db_error("wait events"))?;
            }
        }
        tx.commit().map_err(db_error("runs"))
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
                params![lab, target, dataset, query, plan],
            )
            .map(|_| ())
            .map_err(db_error("plans"))
    }

    /// Completed runs of the lab, in run order.
    pub fn completed_runs(&self, lab: i64) -> Result<Vec<RunSummary>, String> {
        let mut query = self
            .db
            .prepare(
                "SELECT c.key, r.repetition, r.tps, r.p99_ms FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed' ORDER BY r.position",
            )
            .map_err(db_error("runs"))?;
        let rows = query
            .query_map([lab], |r| {
                Ok(RunSummary {
                    cell_key: r.get(0)?,
                    repetition: r.get(1)?,
                    tps: r.get(2)?,
                    p99_ms: r.get(3)?,
                })
            })
            .map_err(db_error("runs"))?;
        rows.collect::<Result<_, _>>().map_err(db_error("runs"))
    }

    /// Mean seconds spent before measuring (restore, checkpoint, setup) over completed runs.
    pub fn mean_overhead_s(&self, lab: i64) -> Result<Option<f64>, String> {
        self.db
            .query_row(
                "SELECT avg(r.overhead_s) FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed'",
                [lab],
                |r| r.get(0),
            )
            .map_err(db_error("runs"))
    }

    /// The existing lab's id by name, without creating it.
    pub fn find_lab(&self, name: &str) -> Result<Option<(i64, u64)>, String> {
        self.db
            .query_row("SELECT id, seed FROM labs WHERE name = ?1", [name], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
            })
            .optional()
            .map_err(db_error("labs"))
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
        (Store::open(&path).unwrap(), path)
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
        Store::open(&path).unwrap();
        let _ = std::fs::remove_file(path);
    }
}
