//! Where a lab's step stands on its tables, so that a step a signal stopped resumes in place:
//! when a step starts, a row per table in `stampede_ibench_progress` records the table's
//! largest transactionid and the rows the step is to insert into it. A step that finds its own
//! rows there was stopped before: the rows it inserted are those above that mark (the deletes
//! take the oldest rows, so they have not reached the step's own while any row below the mark
//! is left), and it inserts only the rest — no row twice, none left out. l.x, resumed, drops the
//! secondary indexes it may have built and builds them all again, so its measurement is whole.
//!
//! The rows live in the step's data copy: a sequence started on a fresh copy starts with none.

use super::sql::{self, Dbms};
use super::steps::{create_tables, Plan, Step, StepKind};
use crate::family::common::sql_session::Session;
use stampede_base::error::Failure;

const TABLE: &str = "stampede_ibench_progress";

/// What a step starts from: per client, the rows it inserted before it was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub done: Vec<u64>,
    /// Whether the step was under way before (a resumed run).
    pub resumed: bool,
}

impl Start {
    /// Rows the step had inserted before this run, over all clients.
    pub fn resumed_rows(&self) -> u64 {
        self.done.iter().sum()
    }
}

/// Begins `step` on the tables: records where each starts, or reads where a stopped run of the
/// step left them. A fresh l.i0 creates the tables first.
pub async fn begin(
    session: &mut Session,
    plan: &Plan,
    step: &Step,
    dbms: Dbms,
) -> Result<Start, Failure> {
    session
        .execute(&format!(
            "create table if not exists {TABLE} (step varchar(64) not null, tbl varchar(64) not null, \
             start_max bigint not null, target bigint not null, primary key (step, tbl))"
        ))
        .await?;
    let marks = read_marks(session, &step.name).await?;
    let clients = plan.clients_of(step);
    if marks.is_empty() {
        mark_start(session, plan, step, dbms).await?;
        return Ok(Start {
            done: vec![0; clients as usize],
            resumed: false,
        });
    }
    let mut done = Vec::new();
    for client in 1..=clients {
        let table = plan.table(client);
        let (start_max, _) = marks.iter().find(|(t, _, _)| *t == table).map_or_else(
            || {
                Err(Failure::run(format!(
                    "step {}: {TABLE} has no row for table {table}; the lab's data copy is not the one the step began on",
                    step.name
                )))
            },
            |(_, start_max, target)| Ok((*start_max, *target)),
        )?;
        let deleting = plan.options(step, client, dbms).delete_per_insert;
        let inserted = inserted_since(session, &table, start_max, deleting, &step.name).await?;
        let sharing = (1..=clients).filter(|c| plan.table(*c) == table).count() as u64;
        let rank = (1..client).filter(|c| plan.table(*c) == table).count() as u64;
        // A shared table's rows are spread over its clients as evenly as they divide.
        done.push(inserted / sharing + u64::from(rank < inserted % sharing));
    }
    if step.kind == StepKind::Index {
        drop_secondary_indexes(session, plan, dbms).await?;
    } else if (1..=clients).all(|c| done[c as usize - 1] >= plan.options(step, c, dbms).max_rows) {
        return Err(Failure::run(format!(
            "step {} had inserted all its rows when it was stopped, and its measurement was lost with the signal; nothing is left to measure",
            step.name
        )));
    }
    Ok(Start {
        done,
        resumed: true,
    })
}

/// (table, start_max, target) of `step`'s rows.
async fn read_marks(session: &mut Session, step: &str) -> Result<Vec<(String, i64, i64)>, Failure> {
    let rows = session
        .query(&format!(
            "select tbl, start_max, target from {TABLE} where step = '{step}'"
        ))
        .await?
        .map_err(Failure::run)?;
    let number = |cell: &Option<String>| cell.as_deref().and_then(|t| t.parse().ok());
    rows.iter()
        .map(|row| match (&row[0], number(&row[1]), number(&row[2])) {
            (Some(table), Some(start_max), Some(target)) => Ok((table.clone(), start_max, target)),
            _ => Err(Failure::run(format!(
                "{TABLE}: an unreadable row for step {step}"
            ))),
        })
        .collect()
}

/// Records each table's largest transactionid and the rows the step inserts into it; l.i0
/// creates the tables (empty: its mark is 0).
async fn mark_start(
    session: &mut Session,
    plan: &Plan,
    step: &Step,
    dbms: Dbms,
) -> Result<(), Failure> {
    if step.kind == StepKind::Load {
        create_tables(plan, dbms, session).await?;
    }
    for table in plan.tables() {
        let start_max: i64 = match step.kind {
            StepKind::Load => 0,
            _ => session
                .value(&sql::max_transactionid(&table))
                .await?
                .unwrap_or(0),
        };
        let target: u64 = (1..=plan.clients_of(step))
            .filter(|c| plan.table(*c) == table)
            .map(|c| plan.options(step, c, dbms).max_rows)
            .sum();
        session
            .execute(&format!(
                "insert into {TABLE} (step, tbl, start_max, target) values ('{}', '{table}', {start_max}, {target})",
                step.name
            ))
            .await?;
    }
    Ok(())
}

/// Rows the step inserted into `table` above its mark; refused once the deletes have reached
/// them, since then the rows above the mark no longer count them all.
async fn inserted_since(
    session: &mut Session,
    table: &str,
    start_max: i64,
    deleting: bool,
    step: &str,
) -> Result<u64, Failure> {
    if deleting {
        let min: Option<i64> = session.value(&sql::min_transactionid(table)).await?;
        if min.is_some_and(|min| min > start_max) {
            return Err(Failure::run(format!(
                "step {step}: the deletes in {table} reached the rows the step inserted before it was stopped, so how many it inserted cannot be read from the table; run the lab again"
            )));
        }
    }
    Ok(session
        .value(&format!(
            "select count(*) from {table} where transactionid > {start_max}"
        ))
        .await?
        .unwrap_or(0))
}

/// l.x resumed: the secondary indexes a stopped run built, dropped so that all are built again.
async fn drop_secondary_indexes(
    session: &mut Session,
    plan: &Plan,
    dbms: Dbms,
) -> Result<(), Failure> {
    for table in plan.tables() {
        for (suffix, _) in sql::SECONDARY_INDEXES {
            let index = format!("{table}_{suffix}");
            match dbms {
                Dbms::Postgres => {
                    session
                        .execute(&format!("drop index if exists {index}"))
                        .await?
                }
                Dbms::Mysql => {
                    let there: Option<i64> = session
                        .value(&format!(
                            "select count(*) from information_schema.statistics where table_schema = database() and table_name = '{table}' and index_name = '{index}'"
                        ))
                        .await?;
                    if there.unwrap_or(0) > 0 {
                        session
                            .execute(&format!("alter table {table} drop index {index}"))
                            .await?;
                    }
                }
            }
        }
    }
    Ok(())
}
