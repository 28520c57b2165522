//! What the lab and the reports read back. NULL columns stay None where a number may be
//! missing.

use std::collections::{HashMap, HashSet};

use super::database::{Row, Value};
use super::*;

/// The SQL of a run's server CPU µs per transaction (`runs r`), for `concat!`: user and
/// system time, or their sum where the source does not split them (a kubelet's `cpu_s`).
macro_rules! server_cpu_us_per_txn {
    () => {
        "(SELECT sum(k.value) FROM run_counters k WHERE k.run_id = r.id AND k.source = 'server'
            AND k.name IN ('cpu_user_s', 'cpu_system_s', 'cpu_s')) * 1000000.0 / nullif(r.transactions, 0)"
    };
}

impl Store {
    /// The settings runs of `labs` saw other than their targets' records, by run.
    pub fn run_setting_changes(&mut self, labs: &[i64]) -> Result<Vec<RunSettingChange>, Failure> {
        let mut changes = Vec::new();
        for lab in labs {
            let rows = self
                .db
                .query(
                    "SELECT c.target, c.key, r.repetition, s.name, s.setting, s.recorded
                     FROM run_settings s JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                     WHERE c.lab_id = ?1 ORDER BY r.position, s.name",
                    &[(*lab).into()],
                )
                .map_err(db_error("run_settings"))?;
            changes.extend(rows.iter().map(|r| RunSettingChange {
                lab: *lab,
                target: text(r, 0),
                cell_key: text(r, 1),
                repetition: int(r, 2) as u32,
                name: text(r, 3),
                setting: r.get(4).and_then(Value::as_string),
                recorded: r.get(5).and_then(Value::as_string),
            }));
        }
        Ok(changes)
    }

    /// (cell key, repetition) of runs that need no repeating: completed or failed. Interrupted
    /// runs are run again.
    pub fn finished_runs(&mut self, lab: i64) -> Result<HashSet<(String, u32)>, Failure> {
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

    /// (cell key, repetition) of runs a signal interrupted once their data was ready (their
    /// scale resolved: a copy made for them) and that have not been run again since: a
    /// sequence that resumes in place continues their data copy rather than making it anew.
    pub fn runs_interrupted_on_their_data(
        &mut self,
        lab: i64,
    ) -> Result<HashSet<(String, u32)>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT c.key, r.repetition FROM runs r JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'interrupted' AND r.resolved_scale IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM runs f WHERE f.cell_id = r.cell_id
                     AND f.repetition = r.repetition AND f.status IN ('completed', 'failed'))",
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows
            .iter()
            .map(|r| (text(r, 0), int(r, 1) as u32))
            .collect())
    }

    /// Per finished run (cell key, repetition): the identity of the machine it ran on (None
    /// for runs stored before machines were).
    pub fn finished_run_machines(
        &mut self,
        lab: i64,
    ) -> Result<Vec<(String, u32, Option<String>)>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT c.key, r.repetition, m.identity FROM runs r JOIN cells c ON c.id = r.cell_id
                 LEFT JOIN machines m ON m.id = r.machine_id
                 WHERE c.lab_id = ?1 AND r.status IN ('completed', 'failed')",
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows
            .iter()
            .map(|r| (text(r, 0), int(r, 1) as u32, r[2].as_string()))
            .collect())
    }

    /// Completed runs of the lab, in run order.
    pub fn completed_runs(&mut self, lab: i64) -> Result<Vec<RunSummary>, Failure> {
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT c.key, r.repetition, r.tps, r.p99_ms, {SERVER_CPU_US_PER_TXN}
                     FROM runs r JOIN cells c ON c.id = r.cell_id
                     WHERE c.lab_id = ?1 AND r.status = 'completed' ORDER BY r.position"
                ),
                &[lab.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows
            .iter()
            .map(|r| RunSummary {
                cell_key: text(r, 0),
                repetition: int(r, 1) as u32,
                tps: optional(r, 2),
                p99_ms: optional(r, 3),
                server_cpu_us_per_txn: optional(r, 4),
            })
            .collect())
    }

    /// Mean seconds a completed run spent beyond warmup and measuring.
    pub fn mean_overhead_s(&mut self, lab: i64) -> Result<Option<f64>, Failure> {
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
    pub fn labs(&mut self) -> Result<Vec<(i64, String)>, Failure> {
        let rows = self
            .db
            .query("SELECT id, name FROM labs ORDER BY id", &[])
            .map_err(db_error("labs"))?;
        Ok(rows.iter().map(|r| (int(r, 0), text(r, 1))).collect())
    }

    /// Every run of the lab with its cell, in run order.
    pub fn lab_runs(&mut self, lab: i64) -> Result<Vec<StoredRun>, Failure> {
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
        let mut runs: Vec<StoredRun> = rows.iter().map(stored_run).collect::<Result<_, _>>()?;
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
    /// Fills the statements of `runs` that are lab `lab`'s from its stored pg_stat_statements
    /// rows (other runs are left as they are).
    pub fn attach_statements<'r>(
        &mut self,
        lab: i64,
        runs: impl IntoIterator<Item = &'r mut StoredRun>,
    ) -> Result<(), Failure> {
        let mut by_id: std::collections::HashMap<i64, Vec<StatementRow>> = Default::default();
        for (run, row) in self.lab_statements(lab)? {
            by_id.entry(run.id).or_default().push(row);
        }
        for run in runs {
            if let Some(rows) = by_id.remove(&run.id) {
                run.statements = rows;
            }
        }
        Ok(())
    }

    pub fn lab_statements(&mut self, lab: i64) -> Result<Vec<(StoredRun, StatementRow)>, Failure> {
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
        rows.iter()
            .map(|r| {
                let statement = StatementRow {
                    query: text(r, RUN_COLUMN_COUNT),
                    calls: int(r, RUN_COLUMN_COUNT + 1),
                    mean_ms: r.get(RUN_COLUMN_COUNT + 2).and_then(Value::as_f64),
                    stddev_ms: r.get(RUN_COLUMN_COUNT + 3).and_then(Value::as_f64),
                    rows: r.get(RUN_COLUMN_COUNT + 4).and_then(Value::as_i64),
                    shared_blks_hit: r.get(RUN_COLUMN_COUNT + 5).and_then(Value::as_i64),
                    shared_blks_read: r.get(RUN_COLUMN_COUNT + 6).and_then(Value::as_i64),
                };
                Ok((stored_run(r)?, statement))
            })
            .collect()
    }

    /// Each completed run's counters divided by its transactions (`run_counters_per_txn`).
    pub fn lab_counters_per_txn(
        &mut self,
        lab: i64,
    ) -> Result<Vec<(StoredRun, CounterRow)>, Failure> {
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
        rows.iter()
            .map(|r| {
                let counter = CounterRow {
                    source: text(r, RUN_COLUMN_COUNT),
                    name: text(r, RUN_COLUMN_COUNT + 1),
                    value: real(r, RUN_COLUMN_COUNT + 2),
                };
                Ok((stored_run(r)?, counter))
            })
            .collect()
    }

    /// Each target's full pg_settings and server version: (target, version, settings).
    pub fn lab_target_settings(&mut self, lab: i64) -> Result<Vec<TargetSettings>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT t.name, t.server_version, s.name, s.setting, s.unit, s.source, s.boot_val, s.context
                 FROM targets t JOIN target_settings s ON s.target_id = t.id
                 WHERE t.lab_id = ?1 ORDER BY t.name, s.name",
                &[lab.into()],
            )
            .map_err(db_error("settings"))?;
        let mut out: Vec<TargetSettings> = Vec::new();
        for r in &rows {
            let setting = SettingRow {
                name: text(r, 2),
                setting: r.get(3).and_then(Value::as_string),
                unit: r.get(4).and_then(Value::as_string),
                source: r.get(5).and_then(Value::as_string),
                boot_val: r.get(6).and_then(Value::as_string),
                context: r.get(7).and_then(Value::as_string),
            };
            match out.last_mut() {
                Some(target) if target.target == text(r, 0) => target.settings.push(setting),
                _ => out.push(TargetSettings {
                    target: text(r, 0),
                    server_version: r.get(1).and_then(Value::as_string),
                    settings: vec![setting],
                }),
            }
        }
        Ok(out)
    }

    /// Stored plans: (target, dataset, query, plan).
    pub fn lab_plans(&mut self, lab: i64) -> Result<Vec<[String; 4]>, Failure> {
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
    pub fn lab_wait_events(&mut self, lab: i64) -> Result<Vec<(String, String, f64)>, Failure> {
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

    pub fn client_cores(&mut self, lab: i64) -> Result<Option<i64>, Failure> {
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

    /// The spec text the lab was started with (a results password masked).
    pub fn lab_spec(&mut self, lab: i64) -> Result<String, Failure> {
        let rows = self
            .db
            .query("SELECT spec FROM labs WHERE id = ?1", &[lab.into()])
            .map_err(db_error("labs"))?;
        Ok(rows.first().map(|r| text(r, 0)).unwrap_or_default())
    }

    /// The lab's targets in the spec's order.
    pub fn lab_target_names(&mut self, lab: i64) -> Result<Vec<String>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT name FROM targets WHERE lab_id = ?1 ORDER BY id",
                &[lab.into()],
            )
            .map_err(db_error("targets"))?;
        Ok(rows.iter().map(|r| text(r, 0)).collect())
    }

    /// Each target's binary provenance where it is known, with its pg_config.
    pub fn lab_builds(&mut self, lab: i64) -> Result<Vec<TargetBuild>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT name, binary_source, pg_config FROM targets
                 WHERE lab_id = ?1 AND binary_source IS NOT NULL ORDER BY name",
                &[lab.into()],
            )
            .map_err(db_error("targets"))?;
        Ok(rows
            .iter()
            .map(|r| TargetBuild {
                target: text(r, 0),
                binary_source: text(r, 1),
                pg_config: Some(text(r, 2)).filter(|config| !config.is_empty()),
            })
            .collect())
    }

    /// When a run started (its warmup's start), Unix seconds; None for a run not stored.
    pub fn run_started_unix_s(&mut self, run: i64) -> Result<Option<f64>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT started_unix_s FROM runs WHERE id = ?1",
                &[run.into()],
            )
            .map_err(db_error("runs"))?;
        Ok(rows.first().and_then(|r| optional(r, 0)))
    }

    /// A run's throughput per second: (second, tps).
    pub fn run_series(&mut self, run: i64) -> Result<Vec<(u64, f64)>, Failure> {
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
    ) -> Result<Vec<(i64, f64)>, Failure> {
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

    /// Per completed run of the lab, the seconds in which one per-second counter moved:
    /// (run id, second), in order.
    pub fn lab_counter_seconds(
        &mut self,
        lab: i64,
        source: &str,
        name: &str,
    ) -> Result<Vec<(i64, u64)>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT s.run_id, s.second FROM run_counter_series s
                 JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed' AND s.source = ?2 AND s.name = ?3
                   AND s.value > 0
                 ORDER BY s.run_id, s.second",
                &[lab.into(), source.into(), name.into()],
            )
            .map_err(db_error("counter series"))?;
        Ok(rows.iter().map(|r| (int(r, 0), int(r, 1) as u64)).collect())
    }

    /// Per completed run of the lab, the seconds of its measured window without a single
    /// transaction: (run id, second), in order.
    pub fn lab_stall_seconds(&mut self, lab: i64) -> Result<Vec<(i64, u64)>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT s.run_id, s.second FROM run_series s
                 JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed' AND s.tps = 0
                 ORDER BY s.run_id, s.second",
                &[lab.into()],
            )
            .map_err(db_error("series"))?;
        Ok(rows.iter().map(|r| (int(r, 0), int(r, 1) as u64)).collect())
    }

    /// Every completed run's throughput second by second: (run id, second, tps), in order.
    pub fn lab_series(&mut self, lab: i64) -> Result<Vec<(i64, u64, f64)>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT s.run_id, s.second, s.tps FROM run_series s
                 JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id
                 WHERE c.lab_id = ?1 AND r.status = 'completed'
                 ORDER BY s.run_id, s.second",
                &[lab.into()],
            )
            .map_err(db_error("series"))?;
        Ok(rows
            .iter()
            .map(|r| (int(r, 0), int(r, 1) as u64, real(r, 2)))
            .collect())
    }

    /// One counter of a run per second: (second, change during it).
    pub fn run_counter_series(
        &mut self,
        run: i64,
        source: &str,
        name: &str,
    ) -> Result<Vec<(u64, f64)>, Failure> {
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

    /// The calibration stored for a spec's name, cell by cell.
    pub fn calibrations(&mut self, lab_name: &str) -> Result<Vec<Calibration>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT workload, script, scale, clients, duration_s, rounds, log_ratio_sd, run_cv, measured_unix_s
                 FROM calibrations WHERE lab_name = ?1 ORDER BY workload, script, scale, clients",
                &[lab_name.into()],
            )
            .map_err(db_error("calibrations"))?;
        Ok(rows
            .iter()
            .map(|r| Calibration {
                workload: text(r, 0),
                script: text(r, 1),
                scale: text(r, 2),
                clients: int(r, 3),
                duration_s: real(r, 4),
                rounds: int(r, 5) as u32,
                log_ratio_sd: real(r, 6),
                run_cv: optional(r, 7),
                measured_unix_s: real(r, 8),
            })
            .collect())
    }

    /// The latest invocation of the spec named `name`: (id, seed).
    pub fn find_lab(&mut self, name: &str) -> Result<Option<(i64, u64)>, Failure> {
        Ok(self.latest_invocation(name)?.map(|lab| (lab.id, lab.seed)))
    }

    /// The latest invocation of the spec named `name`.
    pub fn latest_invocation(&mut self, name: &str) -> Result<Option<LatestInvocation>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT id, seed, name, ended_unix_s, shards FROM labs
                 WHERE coalesce(history, name) = ?1 ORDER BY id DESC LIMIT 1",
                &[name.into()],
            )
            .map_err(db_error("labs"))?;
        Ok(rows.first().map(|r| LatestInvocation {
            id: int(r, 0),
            seed: int(r, 1) as u64,
            name: text(r, 2),
            ended: optional(r, 3).is_some(),
            shards: r.get(4).and_then(Value::as_i64).map(|n| n as usize),
        }))
    }

    /// Every lab as an invocation of its spec, oldest first.
    pub fn invocations(&mut self) -> Result<Vec<Invocation>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT id, name, coalesce(history, name), created_unix_s, machine, kernel,
                        client_cores, ended_unix_s
                 FROM labs ORDER BY id",
                &[],
            )
            .map_err(db_error("labs"))?;
        let mut invocations: Vec<Invocation> = rows
            .iter()
            .map(|r| Invocation {
                id: int(r, 0),
                name: text(r, 1),
                history: text(r, 2),
                created_unix_s: real(r, 3),
                machine: r.get(4).and_then(Value::as_string),
                kernel: r.get(5).and_then(Value::as_string),
                cores: r.get(6).and_then(Value::as_i64),
                ended: optional(r, 7).is_some(),
                tags: Vec::new(),
            })
            .collect();
        let tags = self
            .db
            .query(
                "SELECT lab_id, key, value FROM lab_tags ORDER BY lab_id, key",
                &[],
            )
            .map_err(db_error("lab tags"))?;
        let index: HashMap<i64, usize> = invocations
            .iter()
            .enumerate()
            .map(|(i, lab)| (lab.id, i))
            .collect();
        for row in &tags {
            if let Some(&i) = index.get(&int(row, 0)) {
                invocations[i].tags.push((text(row, 1), text(row, 2)));
            }
        }
        Ok(invocations)
    }

    /// The runs of the given labs, each with its lab's id, in run order; one query for all.
    pub fn runs_of_labs(&mut self, labs: &[i64]) -> Result<Vec<(i64, StoredRun)>, Failure> {
        let wanted: HashSet<i64> = labs.iter().copied().collect();
        let rows = self
            .db
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS}, c.lab_id FROM runs r JOIN cells c ON c.id = r.cell_id
                     ORDER BY c.lab_id, r.position, r.id"
                ),
                &[],
            )
            .map_err(db_error("runs"))?;
        let mut runs = Vec::new();
        let mut index = HashMap::new();
        for row in &rows {
            let lab = int(row, RUN_COLUMN_COUNT);
            if wanted.contains(&lab) {
                let run = stored_run(row)?;
                index.insert(run.id, runs.len());
                runs.push((lab, run));
            }
        }
        let metrics = self
            .db
            .query(
                "SELECT run_id, name, value FROM run_metrics ORDER BY run_id, name",
                &[],
            )
            .map_err(db_error("run metrics"))?;
        for row in &metrics {
            if let Some(&i) = index.get(&int(row, 0)) {
                runs[i]
                    .1
                    .workload_metrics
                    .push((text(row, 1), real(row, 2)));
            }
        }
        Ok(runs)
    }
}

/// The columns `stored_run` reads, first in a query over `runs r JOIN cells c`; a query's own
/// columns follow from index `RUN_COLUMN_COUNT`.
const RUN_COLUMNS: &str = concat!(
    "r.id, c.target, c.workload, coalesce(c.family, c.workload), c.script, c.scale, c.clients,
     r.repetition, r.status, r.duration_s, r.tps, r.p50_ms, r.p95_ms, r.p99_ms, r.client_cpu_us_per_txn,
     c.stopped, c.rounds, r.client_txn_min, r.client_txn_median, r.client_txn_max, r.fairness_index,
     r.shard, (SELECT m.key FROM machines m WHERE m.id = r.machine_id),
     (SELECT m.cpu_model FROM machines m WHERE m.id = r.machine_id),
     (SELECT m.kernel FROM machines m WHERE m.id = r.machine_id), ",
    server_cpu_us_per_txn!(),
    ", (SELECT t.server_key FROM targets t WHERE t.lab_id = c.lab_id AND t.name = c.target)"
);

/// A run's server CPU µs per transaction: the `server` probe's CPU over its transactions.
const SERVER_CPU_US_PER_TXN: &str = server_cpu_us_per_txn!();
const RUN_COLUMN_COUNT: usize = 27;

/// The four columns of `ServedClients` from `first` on; None when the run stored none.
fn served_clients(r: &Row, first: usize) -> Option<ServedClients> {
    let count = |i: usize| r.get(first + i).and_then(Value::as_i64).map(|n| n as u64);
    Some(ServedClients {
        min: count(0)?,
        median: optional(r, first + 1)?,
        max: count(2)?,
        jain_index: optional(r, first + 3)?,
    })
}

fn stored_run(r: &Row) -> Result<StoredRun, Failure> {
    let number = |i: usize| optional(r, i);
    let status = text(r, 8);
    Ok(StoredRun {
        id: int(r, 0),
        target: text(r, 1),
        workload: text(r, 2),
        family: text(r, 3),
        script: text(r, 4),
        scale: text(r, 5),
        clients: int(r, 6),
        repetition: int(r, 7) as u32,
        status: RunStatus::parse(&status).ok_or_else(|| {
            Failure::run(format!(
                "results database: run {}: unknown status \"{status}\"",
                int(r, 0)
            ))
        })?,
        duration_s: number(9),
        tps: number(10),
        p50_ms: number(11),
        p95_ms: number(12),
        p99_ms: number(13),
        client_cpu_us_per_txn: number(14),
        served: served_clients(r, 17),
        workload_metrics: Vec::new(),
        stopped: r.get(15).and_then(Value::as_string),
        rounds: r
            .get(16)
            .and_then(Value::as_i64)
            .map(|rounds| rounds as u32),
        shard: r.get(21).and_then(Value::as_i64).map(|shard| shard as u32),
        machine: r.get(22).and_then(Value::as_string).map(|key| RunMachine {
            key,
            cpu_model: text(r, 23),
            kernel: text(r, 24),
        }),
        server_cpu_us_per_txn: optional(r, 25),
        server_key: r.get(26).and_then(Value::as_string),
        statements: Vec::new(),
        control: None,
    })
}
