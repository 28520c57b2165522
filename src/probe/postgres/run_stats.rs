//! Server-side counters for one lab run, read over control connections (never from the
//! driver's): `pg_stat_database` deltas for the run's database and `pg_stat_statements` per
//! statement, reset at the start of the measured window.

use stampede_base::error::Failure;
use std::time::{Duration, Instant};

use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string, server_version_num, sql};
use stampede_store::{CounterRow, StatementRow};

/// pg_stat_database's counters that a run moves.
const DATABASE_COUNTERS: [&str; 13] = [
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "conflicts",
    "temp_files",
    "temp_bytes",
    "deadlocks",
];

/// The run database's counters now.
pub fn database_counters(conn: &ConnSpec) -> Result<Vec<CounterRow>, Failure> {
    let query = format!(
        "SELECT {} FROM pg_stat_database WHERE datname = current_database()",
        DATABASE_COUNTERS
            .map(|c| format!("{c}::float8::text"))
            .join(", ")
    );
    let rows = query_rows(conn, &query)?;
    let row = rows
        .first()
        .ok_or_else(|| Failure::run("pg_stat_database has no row for the database"))?;
    Ok(DATABASE_COUNTERS
        .iter()
        .zip(row)
        .map(|(name, value)| CounterRow {
            source: "pg_stat_database".into(),
            name: name.to_string(),
            value: value.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0.0),
        })
        .collect())
}

pub fn reset_statements(conn: &ConnSpec) -> Result<(), Failure> {
    sql(conn, "SELECT pg_stat_statements_reset()")
}

/// The run database's statements, busiest first. PostgreSQL 12 names the time columns
/// `mean_time`/`stddev_time`; 13 and later `mean_exec_time`/`stddev_exec_time`.
pub fn statements(conn: &ConnSpec) -> Result<Vec<StatementRow>, Failure> {
    let version = server_version_num(conn)?;
    let (mean, stddev) = if version >= 130000 {
        ("mean_exec_time", "stddev_exec_time")
    } else {
        ("mean_time", "stddev_time")
    };
    let rows = query_rows(
        conn,
        &format!(
            "SELECT query, calls::text, {mean}::text, {stddev}::text, rows::text, shared_blks_hit::text, shared_blks_read::text
             FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY calls DESC"
        ),
    )?;
    let number = |v: &Option<String>| {
        v.as_deref()
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok(rows
        .iter()
        .map(|r| StatementRow {
            query: r[0].clone().unwrap_or_default(),
            calls: number(&r[1]) as i64,
            mean_ms: Some(number(&r[2])),
            stddev_ms: Some(number(&r[3])),
            rows: Some(number(&r[4]) as i64),
            shared_blks_hit: Some(number(&r[5]) as i64),
            shared_blks_read: Some(number(&r[6]) as i64),
        })
        .collect())
}

/// Waits (up to `limit`) until no other session is connected to the database, so that the
/// run's backends have ended and flushed their statistics.
pub fn wait_for_sessions_to_end(conn: &ConnSpec, limit: Duration) {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        let others = query_string(
            conn,
            "SELECT count(*)::text FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        if others.is_ok_and(|n| n == "0") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
