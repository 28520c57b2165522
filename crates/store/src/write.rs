//! What the lab writes: the lab, its targets, cells and runs, each run in one transaction.

use std::collections::HashMap;

use super::database::{Database, Value};
use super::*;

impl Store {
    /// The lab's id and run-order seed: created on first use; on a resume the spec must be the
    /// one the lab started with.
    pub fn lab(&mut self, name: &str, spec: &str, seed: u64) -> Result<(i64, u64), Failure> {
        let existing = self
            .db
            .query(
                "SELECT id, spec, seed FROM labs WHERE name = ?1",
                &[name.into()],
            )
            .map_err(db_error("labs"))?;
        match existing.first() {
            Some(row) if text(row, 1) != spec => Err(Failure::input(format!(
                "the results database already holds lab \"{name}\" started from a different spec; use another `results` file or restore the original spec"
            ))),
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

    /// The next invocation of the spec named `name`: a new lab, named `name` when no lab has
    /// that name yet, else "<name> #k" for the k-th invocation.
    pub fn next_invocation(
        &mut self,
        name: &str,
        spec: &str,
        seed: u64,
    ) -> Result<(i64, u64), Failure> {
        let rows = self
            .db
            .query(
                "SELECT count(*) FROM labs WHERE coalesce(history, name) = ?1",
                &[name.into()],
            )
            .map_err(db_error("labs"))?;
        let earlier = rows.first().map_or(0, |r| int(r, 0));
        let mut number = earlier + 1;
        loop {
            let candidate = if number == 1 {
                name.to_string()
            } else {
                format!("{name} #{number}")
            };
            let taken = self
                .db
                .query("SELECT 1 FROM labs WHERE name = ?1", &[(&candidate).into()])
                .map_err(db_error("labs"))?;
            if taken.is_empty() {
                let (id, seed) = self.lab(&candidate, spec, seed)?;
                self.db
                    .execute(
                        "UPDATE labs SET history = ?2 WHERE id = ?1",
                        &[id.into(), name.into()],
                    )
                    .map_err(db_error("labs"))?;
                return Ok((id, seed));
            }
            number += 1;
        }
    }

    /// Where and as what the invocation ran: its history (the spec's name), the machine,
    /// and its tags (when given, replacing those stored before).
    pub fn describe_invocation(
        &mut self,
        lab: i64,
        history: &str,
        machine: &Machine,
        tags: &[(String, String)],
    ) -> Result<(), Failure> {
        self.transaction("labs", |db| {
            db.execute(
                "UPDATE labs SET history = coalesce(history, ?2), machine = ?3, kernel = ?4
                 WHERE id = ?1",
                &[
                    lab.into(),
                    history.into(),
                    (&machine.key()).into(),
                    (&machine.kernel).into(),
                ],
            )?;
            // `resume` gives none: the tags of the `run` stay.
            if tags.is_empty() {
                return Ok(());
            }
            db.execute("DELETE FROM lab_tags WHERE lab_id = ?1", &[lab.into()])?;
            for (key, value) in tags {
                db.execute(
                    "INSERT INTO lab_tags (lab_id, key, value) VALUES (?1, ?2, ?3)",
                    &[lab.into(), key.into(), value.into()],
                )?;
            }
            Ok(())
        })
    }

    /// The lab ran to the end of its plan: the next `lab run` of its spec starts a new
    /// invocation.
    pub fn end_lab(&mut self, lab: i64) -> Result<(), Failure> {
        self.db
            .execute(
                "UPDATE labs SET ended_unix_s = ?2 WHERE id = ?1",
                &[lab.into(), unix_now().into()],
            )
            .map_err(db_error("labs"))?;
        Ok(())
    }

    /// Records a target's provenance and full settings (replacing what was stored before).
    pub fn save_target(&mut self, lab: i64, target: &TargetRecord) -> Result<(), Failure> {
        self.transaction("targets", |db| {
            let rows = db.query(
                "INSERT INTO targets (lab_id, name, server, binary_source, bin_dir, server_version, pg_config, profile, restore_method, server_key, server_machine)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT (lab_id, name) DO UPDATE SET server = excluded.server,
                   binary_source = excluded.binary_source, bin_dir = excluded.bin_dir,
                   server_version = excluded.server_version, pg_config = excluded.pg_config,
                   profile = excluded.profile, restore_method = excluded.restore_method,
                   server_key = excluded.server_key, server_machine = excluded.server_machine
                 RETURNING id",
                &[
                    lab.into(),
                    (&target.name).into(),
                    (&target.server).into(),
                    (&target.binary_source).into(),
                    (&target.bin_dir).into(),
                    (&target.server_version).into(),
                    (&target.pg_config).into(),
                    (&target.profile).into(),
                    (&target.restore_method).into(),
                    target.server_key.as_ref().into(),
                    target.server_machine.as_ref().into(),
                ],
            )?;
            let id = rows.first().map_or(0, |r| int(r, 0));
            db.execute("DELETE FROM target_settings WHERE target_id = ?1", &[id.into()])?;
            for s in &target.settings {
                db.execute(
                    "INSERT INTO target_settings (target_id, name, setting, unit, source, boot_val, context)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    &[
                        id.into(),
                        (&s.name).into(),
                        s.setting.as_ref().into(),
                        s.unit.as_ref().into(),
                        s.source.as_ref().into(),
                        s.boot_val.as_ref().into(),
                        s.context.as_ref().into(),
                    ],
                )?;
            }
            Ok(())
        })
    }

    pub fn save_cells(&mut self, lab: i64, cells: &[CellRecord]) -> Result<(), Failure> {
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

    /// An auto lab's cell stopped: why (`precision`, `cap`, `budget`) and after how many rounds.
    pub fn record_stop(
        &mut self,
        lab: i64,
        cell_key: &str,
        stopped: &str,
        rounds: u32,
    ) -> Result<(), Failure> {
        self.transaction("cells", |db| {
            db.execute(
                "UPDATE cells SET stopped = ?3, rounds = ?4 WHERE lab_id = ?1 AND key = ?2",
                &[
                    lab.into(),
                    cell_key.into(),
                    stopped.into(),
                    Value::Int(rounds.into()),
                ],
            )?;
            Ok(())
        })
    }

    /// A spec's calibration, replacing the one before it cell by cell.
    pub fn record_calibration(
        &mut self,
        lab_name: &str,
        cells: &[Calibration],
    ) -> Result<(), Failure> {
        self.transaction("calibrations", |db| {
            for c in cells {
                let key = [
                    lab_name.into(),
                    (&c.workload).into(),
                    (&c.script).into(),
                    (&c.scale).into(),
                    c.clients.into(),
                ];
                db.execute(
                    "DELETE FROM calibrations WHERE lab_name = ?1 AND workload = ?2 AND script = ?3 AND scale = ?4 AND clients = ?5",
                    &key,
                )?;
                let mut values = key.to_vec();
                values.extend([
                    Value::Real(c.duration_s),
                    Value::Int(c.rounds.into()),
                    Value::Real(c.log_ratio_sd),
                    c.run_cv.map_or(Value::Null, Value::Real),
                    Value::Real(c.measured_unix_s),
                ]);
                db.execute(
                    "INSERT INTO calibrations (lab_name, workload, script, scale, clients, duration_s, rounds, log_ratio_sd, run_cv, measured_unix_s)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    &values,
                )?;
            }
            Ok(())
        })
    }

    /// Writes one run with its series, counters, statements and samples in one transaction.
    pub fn record_run(&mut self, lab: i64, run: &RunRecord) -> Result<(), Failure> {
        self.transaction("runs", |db| {
            let cell = live::cell_id(db, lab, &run.cell_key)?;
            // The run's live row gives way to it: what it measured is now the run's.
            live::delete_live(db, cell, run.repetition)?;
            let run_id = insert_run(db, cell, run)?;
            insert_details(db, run_id, run)?;
            match &run.settings {
                Some(settings) => insert_settings(db, lab, run_id, settings),
                None => Ok(()),
            }
        })
    }

    /// Removes the runs of a cell's repetition with everything recorded about them: a step of
    /// a sequence whose later steps were interrupted is run again with them.
    pub fn delete_runs(
        &mut self,
        lab: i64,
        cell_key: &str,
        repetition: u32,
    ) -> Result<(), Failure> {
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
                "run_pods",
                "run_settings",
            ] {
                db.execute(
                    &format!("DELETE FROM {table} WHERE run_id IN ({runs})"),
                    &params,
                )?;
            }
            db.execute(&format!("DELETE FROM runs WHERE id IN ({runs})"), &params)?;
            let cell = live::cell_id(db, lab, cell_key)?;
            live::delete_live(db, cell, repetition)?;
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
    ) -> Result<(), Failure> {
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

    /// The machine's row (made the first time it is seen, by any lab): its id for runs.
    pub fn record_machine(&mut self, machine: &Machine) -> Result<i64, Failure> {
        self.transaction("machines", |db| {
            db.execute(
                "INSERT INTO machines (identity, key, host, cores, cpu_model, memory_bytes, kernel, cpu_limit)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (identity) DO NOTHING",
                &[
                    (&machine.identity()).into(),
                    (&machine.key()).into(),
                    (&machine.host).into(),
                    Value::Int(machine.cores as i64),
                    (&machine.cpu_model).into(),
                    Value::Int(machine.memory_bytes as i64),
                    (&machine.kernel).into(),
                    machine.cpu_limit.into(),
                ],
            )?;
            let rows = db.query(
                "SELECT id FROM machines WHERE identity = ?1",
                &[(&machine.identity()).into()],
            )?;
            rows.first()
                .map(|r| int(r, 0))
                .ok_or_else(|| StoreError::Statement("no machine id returned".into()))
        })
    }

    /// A lab sharded over a fleet: how many shards its runs are spread over, and the fleet as
    /// its history's machine (each run names its own machine).
    pub fn record_shards(&mut self, lab: i64, shards: usize, fleet: &str) -> Result<(), Failure> {
        self.db
            .execute(
                "UPDATE labs SET shards = ?2, machine = ?3, kernel = NULL WHERE id = ?1",
                &[lab.into(), Value::Int(shards as i64), fleet.into()],
            )
            .map_err(db_error("labs"))
    }

    /// Records the CPUs of the machine the lab's driver runs on, once: the first machine's.
    pub fn record_client_cores(&mut self, lab: i64, cores: usize) -> Result<(), Failure> {
        self.db
            .execute(
                "UPDATE labs SET client_cores = ?2 WHERE id = ?1 AND client_cores IS NULL",
                &[lab.into(), Value::Int(cores as i64)],
            )
            .map_err(db_error("labs"))
    }
}

fn insert_run(db: &mut dyn Database, cell: i64, run: &RunRecord) -> Result<i64, StoreError> {
    let m = run.metrics.as_ref();
    let metric = |f: fn(&RunMetrics) -> f64| Value::from(m.map(f));
    let served = m.and_then(|m| m.served);
    let rows = db.query(
        "INSERT INTO runs (cell_id, repetition, position, status, error, started_unix_s, ended_unix_s,
           resolved_scale, duration_s, transactions, failures, tps, latency_avg_ms, latency_stddev_ms,
           p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, client_cpu_us_per_txn, overhead_s,
           client_txn_min, client_txn_median, client_txn_max, fairness_index, machine_id, shard)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
           ?23, ?24, ?25, ?26, ?27, ?28)
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
            served.map(|s| s.min as i64).into(),
            served.map(|s| s.median).into(),
            served.map(|s| s.max as i64).into(),
            served.map(|s| s.jain_index).into(),
            run.machine_id.into(),
            run.shard.map(i64::from).into(),
        ],
    )?;
    rows.first()
        .map(|r| int(r, 0))
        .ok_or_else(|| StoreError::Statement("no run id returned".into()))
}

/// The settings a run saw that differ from its target's record, and how many it read.
fn insert_settings(
    db: &mut dyn Database,
    lab: i64,
    run_id: i64,
    settings: &[SettingRow],
) -> Result<(), StoreError> {
    let recorded: HashMap<String, Option<String>> = db
        .query(
            "SELECT s.name, s.setting FROM target_settings s
             JOIN targets t ON t.id = s.target_id
             JOIN cells c ON c.lab_id = t.lab_id AND c.target = t.name
             JOIN runs r ON r.cell_id = c.id
             WHERE t.lab_id = ?1 AND r.id = ?2",
            &[lab.into(), Value::Int(run_id)],
        )?
        .iter()
        .map(|r| (text(r, 0), r.get(1).and_then(Value::as_string)))
        .collect();
    for setting in settings {
        let before = recorded.get(&setting.name).cloned().flatten();
        if before == setting.setting {
            continue;
        }
        db.execute(
            "INSERT INTO run_settings VALUES (?1, ?2, ?3, ?4)",
            &[
                Value::Int(run_id),
                (&setting.name).into(),
                setting.setting.as_ref().into(),
                before.as_ref().into(),
            ],
        )?;
    }
    db.execute(
        "UPDATE runs SET settings_read = ?2 WHERE id = ?1",
        &[Value::Int(run_id), Value::Int(settings.len() as i64)],
    )?;
    Ok(())
}

fn insert_details(db: &mut dyn Database, run_id: i64, run: &RunRecord) -> Result<(), StoreError> {
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
    for p in &run.pods {
        db.execute(
            "INSERT INTO run_pods VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            &[
                id.clone(),
                Value::Int(p.pod as i64),
                Value::Int(p.clients as i64),
                Value::Int(p.threads as i64),
                Value::Int(p.transactions as i64),
                p.client_cpu_s.into(),
                p.cpu_busy.into(),
                Value::Int(p.cores as i64),
                p.clock_offset_ms.into(),
                p.start_skew_ms.into(),
            ],
        )?;
    }
    Ok(())
}
