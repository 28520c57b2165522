//! Runs as they progress (`live_runs`, `live_series`): what the lab writes while a run is
//! measured, and what a live page reads back. A live row is replaced by the run's `runs` row
//! when the run ends (`record_run`); one left behind is an unfinished run.

use super::database::{Database, Row, Value};
use super::*;

/// A run whose measuring starts.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRunStart {
    pub cell_key: String,
    pub repetition: u32,
    pub position: usize,
    pub shard: Option<u32>,
    pub started_unix_s: f64,
}

/// One measured second of a run in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSecond {
    pub second: u64,
    pub tps: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub failed: u64,
    pub lag_ms: Option<f64>,
}

/// A run in progress as far as it has come.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveTotals {
    pub seconds: u64,
    pub transactions: u64,
    pub failures: u64,
    /// A spread run's committed transactions by pod (empty on one host).
    pub pods: Vec<u64>,
}

/// A live row as a page reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRun {
    pub id: i64,
    pub cell_key: String,
    pub target: String,
    pub repetition: u32,
    pub position: usize,
    pub shard: Option<u32>,
    pub started_unix_s: f64,
    pub updated_unix_s: f64,
    pub totals: LiveTotals,
}

/// A lab's cell as the plan made it, with where an auto lab stopped it.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRow {
    pub key: String,
    pub target: String,
    pub workload: String,
    pub script: String,
    pub scale: String,
    pub clients: i64,
    pub stopped: Option<String>,
    pub rounds: Option<u32>,
}

/// What a page says of a lab besides its cells and runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LabState {
    pub name: String,
    pub created_unix_s: f64,
    pub ended: bool,
    pub planned_rounds: Option<u32>,
    pub shards: Option<usize>,
}

impl Store {
    /// Opens the live row of a run about to be measured, replacing what an earlier attempt at
    /// the same round left.
    pub fn begin_live_run(&mut self, lab: i64, run: &LiveRunStart) -> Result<i64, Failure> {
        self.transaction("live runs", |db| {
            let cell = cell_id(db, lab, &run.cell_key)?;
            delete_live(db, cell, run.repetition)?;
            let rows = db.query(
                "INSERT INTO live_runs (cell_id, repetition, position, shard, started_unix_s,
                   updated_unix_s, seconds, transactions, failures)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, 0, 0) RETURNING id",
                &[
                    cell.into(),
                    run.repetition.into(),
                    Value::Int(run.position as i64),
                    run.shard.map(i64::from).into(),
                    run.started_unix_s.into(),
                ],
            )?;
            Ok(rows.first().map_or(0, |r| int(r, 0)))
        })
    }

    /// Adds a run's latest seconds and its totals so far, in one transaction.
    pub fn append_live_seconds(
        &mut self,
        live: i64,
        seconds: &[LiveSecond],
        totals: &LiveTotals,
    ) -> Result<(), Failure> {
        self.transaction("live runs", |db| {
            for second in seconds {
                db.execute(
                    "INSERT INTO live_series (live_id, second, tps, p50_ms, p99_ms, failed, lag_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (live_id, second) DO NOTHING",
                    &[
                        live.into(),
                        Value::Int(second.second as i64),
                        second.tps.into(),
                        second.p50_ms.into(),
                        second.p99_ms.into(),
                        Value::Int(second.failed as i64),
                        second.lag_ms.into(),
                    ],
                )?;
            }
            let pods = (!totals.pods.is_empty()).then(|| {
                let counts: Vec<String> = totals.pods.iter().map(u64::to_string).collect();
                counts.join(",")
            });
            db.execute(
                "UPDATE live_runs SET updated_unix_s = ?2, seconds = ?3, transactions = ?4,
                   failures = ?5, pods = ?6 WHERE id = ?1",
                &[
                    live.into(),
                    unix_now().into(),
                    Value::Int(totals.seconds as i64),
                    Value::Int(totals.transactions as i64),
                    Value::Int(totals.failures as i64),
                    pods.as_ref().into(),
                ],
            )
        })
    }

    /// Says how many rounds each cell of the lab was planned.
    pub fn record_planned_rounds(&mut self, lab: i64, rounds: u32) -> Result<(), Failure> {
        self.db
            .execute(
                "UPDATE labs SET planned_rounds = ?2 WHERE id = ?1",
                &[lab.into(), rounds.into()],
            )
            .map_err(db_error("labs"))
    }

    /// The lab's live rows: runs in progress, and runs a killed lab left unfinished.
    pub fn live_runs(&mut self, lab: i64) -> Result<Vec<LiveRun>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT l.id, c.key, c.target, l.repetition, l.position, l.shard, l.started_unix_s,
                   l.updated_unix_s, l.seconds, l.transactions, l.failures, l.pods
                 FROM live_runs l JOIN cells c ON c.id = l.cell_id
                 WHERE c.lab_id = ?1 ORDER BY l.position",
                &[lab.into()],
            )
            .map_err(db_error("live runs"))?;
        Ok(rows.iter().map(live_run).collect())
    }

    /// A live run's seconds, in order.
    pub fn live_series(&mut self, live: i64) -> Result<Vec<LiveSecond>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT second, tps, p50_ms, p99_ms, failed, lag_ms FROM live_series
                 WHERE live_id = ?1 ORDER BY second",
                &[live.into()],
            )
            .map_err(db_error("live series"))?;
        Ok(rows
            .iter()
            .map(|r| LiveSecond {
                second: int(r, 0) as u64,
                tps: real(r, 1),
                p50_ms: optional(r, 2),
                p99_ms: optional(r, 3),
                failed: int(r, 4) as u64,
                lag_ms: optional(r, 5),
            })
            .collect())
    }

    /// The lab's cells in the order the plan made them.
    pub fn lab_cells(&mut self, lab: i64) -> Result<Vec<CellRow>, Failure> {
        let rows = self
            .db
            .query(
                "SELECT key, target, workload, script, scale, clients, stopped, rounds
                 FROM cells WHERE lab_id = ?1 ORDER BY id",
                &[lab.into()],
            )
            .map_err(db_error("cells"))?;
        Ok(rows
            .iter()
            .map(|r| CellRow {
                key: text(r, 0),
                target: text(r, 1),
                workload: text(r, 2),
                script: text(r, 3),
                scale: text(r, 4),
                clients: int(r, 5),
                stopped: r.get(6).and_then(Value::as_string),
                rounds: r.get(7).and_then(Value::as_i64).map(|n| n as u32),
            })
            .collect())
    }

    /// The lab's name, start, whether it ended, its planned rounds and shards.
    pub fn lab_state(&mut self, lab: i64) -> Result<LabState, Failure> {
        let rows = self
            .db
            .query(
                "SELECT name, created_unix_s, ended_unix_s, planned_rounds, shards
                 FROM labs WHERE id = ?1",
                &[lab.into()],
            )
            .map_err(db_error("labs"))?;
        let row = rows
            .first()
            .ok_or_else(|| Failure::input(format!("no lab {lab} in the results database")))?;
        Ok(LabState {
            name: text(row, 0),
            created_unix_s: real(row, 1),
            ended: row.get(2).and_then(Value::as_f64).is_some(),
            planned_rounds: row.get(3).and_then(Value::as_i64).map(|n| n as u32),
            shards: row.get(4).and_then(Value::as_i64).map(|n| n as usize),
        })
    }
}

fn live_run(r: &Row) -> LiveRun {
    let pods = r
        .get(11)
        .and_then(Value::as_string)
        .map(|text| text.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    LiveRun {
        id: int(r, 0),
        cell_key: text(r, 1),
        target: text(r, 2),
        repetition: int(r, 3) as u32,
        position: int(r, 4) as usize,
        shard: r.get(5).and_then(Value::as_i64).map(|n| n as u32),
        started_unix_s: real(r, 6),
        updated_unix_s: real(r, 7),
        totals: LiveTotals {
            seconds: int(r, 8) as u64,
            transactions: int(r, 9) as u64,
            failures: int(r, 10) as u64,
            pods,
        },
    }
}

pub(crate) fn cell_id(db: &mut dyn Database, lab: i64, key: &str) -> Result<i64, StoreError> {
    let cell = db.query(
        "SELECT id FROM cells WHERE lab_id = ?1 AND key = ?2",
        &[lab.into(), key.into()],
    )?;
    cell.first()
        .map(|r| int(r, 0))
        .ok_or_else(|| StoreError::Statement(format!("no cell {key}")))
}

/// Removes a round's live row: its run has ended (or starts again).
pub(crate) fn delete_live(
    db: &mut dyn Database,
    cell: i64,
    repetition: u32,
) -> Result<(), StoreError> {
    let params = [cell.into(), repetition.into()];
    db.execute(
        "DELETE FROM live_series WHERE live_id IN
           (SELECT id FROM live_runs WHERE cell_id = ?1 AND repetition = ?2)",
        &params,
    )?;
    db.execute(
        "DELETE FROM live_runs WHERE cell_id = ?1 AND repetition = ?2",
        &params,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(second: u64, tps: f64) -> LiveSecond {
        LiveSecond {
            second,
            tps,
            p50_ms: Some(1.0),
            p99_ms: Some(2.5),
            failed: 0,
            lag_ms: None,
        }
    }

    fn run(repetition: u32, status: RunStatus) -> RunRecord {
        RunRecord {
            cell_key: "a/pgbench/select-only/1/1".into(),
            repetition,
            position: repetition as usize,
            status,
            error: None,
            started_unix_s: 1.0,
            ended_unix_s: 2.0,
            resolved_scale: Some(1),
            overhead_s: 0.0,
            metrics: None,
            series: vec![],
            counters: vec![],
            statements: vec![],
            counter_series: vec![],
            wait_events: vec![],
            pods: vec![],
            settings: None,
            machine_id: None,
            shard: None,
        }
    }

    /// Seconds land as they come; the run's row replaces its live row when it ends, and a live
    /// row no run replaced stays (unfinished) until its round starts again.
    #[test]
    fn live_rows_grow_then_give_way_to_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&Location::Sqlite(dir.path().join("r.db"))).unwrap();
        let (lab, _) = store.lab("l", "spec", 1).unwrap();
        let cell = CellRecord {
            key: "a/pgbench/select-only/1/1".into(),
            target: "a".into(),
            workload: "pgbench".into(),
            script: "select-only".into(),
            scale: "1".into(),
            clients: 1,
            family: "read".into(),
        };
        store.save_cells(lab, &[cell]).unwrap();
        store.record_planned_rounds(lab, 3).unwrap();
        let start = |repetition| LiveRunStart {
            cell_key: "a/pgbench/select-only/1/1".into(),
            repetition,
            position: repetition as usize,
            shard: Some(1),
            started_unix_s: 10.0,
        };
        let live = store.begin_live_run(lab, &start(0)).unwrap();
        let totals = LiveTotals {
            seconds: 2,
            transactions: 30,
            failures: 1,
            pods: vec![10, 20],
        };
        store
            .append_live_seconds(live, &[second(0, 10.0), second(1, 20.0)], &totals)
            .unwrap();
        let rows = store.live_runs(lab).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].target.as_str(), rows[0].shard), ("a", Some(1)));
        assert_eq!(rows[0].totals, totals);
        let series = store.live_series(live).unwrap();
        assert_eq!(series, [second(0, 10.0), second(1, 20.0)]);

        store
            .record_run(lab, &run(0, RunStatus::Completed))
            .unwrap();
        assert!(store.live_runs(lab).unwrap().is_empty());
        assert!(store.live_series(live).unwrap().is_empty());

        // A killed lab's round stays unfinished; starting it again replaces it.
        let killed = store.begin_live_run(lab, &start(1)).unwrap();
        store
            .append_live_seconds(killed, &[second(0, 5.0)], &LiveTotals::default())
            .unwrap();
        assert_eq!(store.live_runs(lab).unwrap().len(), 1);
        let again = store.begin_live_run(lab, &start(1)).unwrap();
        assert_eq!(store.live_runs(lab).unwrap()[0].id, again);
        assert!(store.live_series(killed).unwrap().is_empty());
        assert_eq!(
            store.completed_runs(lab).unwrap().len(),
            1,
            "live rows are no runs"
        );

        let state = store.lab_state(lab).unwrap();
        assert_eq!((state.planned_rounds, state.ended), (Some(3), false));
        assert_eq!(store.lab_cells(lab).unwrap()[0].clients, 1);
    }
}
