//! What a build left in a MariaDB/MySQL database (its tables, the marker's warehouse count and
//! C_LAST constant), the server's counters NOPM and TPM come from, and `tpcc drop`.

use super::procedures;
use crate::family::tpcc::schema::{MARKER, TABLES};
use stampede_base::error::Failure;
use stampede_control::mysql::ControlSession;

/// The TPROC-C tables (and the marker) that exist, in the schema's order.
pub fn existing_tables(session: &mut ControlSession) -> Result<Vec<String>, Failure> {
    let names: Vec<&str> = TABLES
        .iter()
        .map(|(name, _)| *name)
        .chain([MARKER])
        .collect();
    let found: Vec<String> = session
        .rows("SHOW TABLES")?
        .rows
        .into_iter()
        .filter_map(|row| row.into_iter().next()?)
        .collect();
    Ok(names
        .into_iter()
        .filter(|name| found.iter().any(|table| table == name))
        .map(String::from)
        .collect())
}

/// (warehouses, the load's C_LAST) as `build` recorded them.
pub fn marker(session: &mut ControlSession) -> Result<(i64, Option<i64>), Failure> {
    if !existing_tables(session)?.iter().any(|t| t == MARKER) {
        return Err(Failure::input(
            "no TPROC-C database here (or its build did not finish); run `stampede tpcc build` first",
        ));
    }
    let rows = session.rows(&format!("SELECT warehouses, c_last_load FROM {MARKER}"))?;
    let value = |i: usize| -> Option<i64> { rows.rows.first()?.get(i)?.as_deref()?.parse().ok() };
    let warehouses =
        value(0).ok_or_else(|| Failure::run(format!("{MARKER} holds no warehouse count")))?;
    Ok((warehouses, value(1)))
}

/// (sum(d_next_o_id), Com_commit + Com_rollback): HammerDB's NOPM and TPM counters on
/// MariaDB. Both move as the transactions commit, so they need no settling.
pub fn counters(session: &mut ControlSession) -> Result<(i64, i64), Failure> {
    let orders = session.rows("SELECT CAST(SUM(d_next_o_id) AS SIGNED) FROM district")?;
    let next_order_ids = orders
        .rows
        .first()
        .and_then(|row| row.first()?.as_deref()?.parse().ok())
        .unwrap_or(0);
    let transactions = session
        .pairs("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')")?
        .iter()
        .filter_map(|(_, value)| value.parse::<i64>().ok())
        .sum();
    Ok((next_order_ids, transactions))
}

/// Drops the tables and procedures; the tables dropped.
pub fn drop_all(session: &mut ControlSession) -> Result<Vec<String>, Failure> {
    let tables = existing_tables(session)?;
    for table in &tables {
        session.execute(&format!("DROP TABLE {table}"))?;
    }
    for statement in procedures::drops() {
        session.execute(&statement)?;
    }
    Ok(tables)
}
