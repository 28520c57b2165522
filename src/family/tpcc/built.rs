//! What a build left in a database: the TPROC-C tables that exist, and what the marker
//! records (the warehouse count, the load's C_LAST constant). Read by `check`, `run`, `drop`
//! and the lab before they touch anything.

use crate::family::common::connection::positive;
use crate::family::tpcc::schema;
use stampede_base::error::Failure;
use stampede_control::postgres::{sql_error, visible_tables};

/// The TPROC-C tables (and the marker) that exist in the database, in the schema's order.
pub async fn existing_tables(client: &tokio_postgres::Client) -> Result<Vec<String>, Failure> {
    let names: Vec<&str> = schema::TABLES
        .iter()
        .map(|(name, _)| *name)
        .chain([schema::MARKER])
        .collect();
    let mut found = visible_tables(client, &format!("^({})$", names.join("|"))).await?;
    found.sort_by_key(|table| names.iter().position(|name| name == table));
    Ok(found)
}
/// The warehouse count `build` recorded.
async fn built_warehouses(client: &tokio_postgres::Client) -> Result<i64, Failure> {
    let existing = existing_tables(client).await?;
    if !existing.iter().any(|t| t == schema::MARKER) {
        return Err(Failure::input(
            "no TPROC-C database here (or its build did not finish); run `stampede tpcc build` first",
        ));
    }
    let row = client
        .query_one(&format!("SELECT warehouses FROM {}", schema::MARKER), &[])
        .await
        .map_err(|e| sql_error(schema::MARKER, e))?;
    Ok(i64::from(row.get::<_, i32>(0)))
}

/// The load's C_LAST constant, which `build` records (none in databases built before it did).
pub async fn load_c_last(client: &tokio_postgres::Client) -> Option<i64> {
    let sql = format!("SELECT c_last_load FROM {}", schema::MARKER);
    let row = client.query_one(&sql, &[]).await.ok()?;
    row.get::<_, Option<i32>>(0).map(i64::from)
}

/// The built warehouse count, refusing a database built with another count than `asked`.
pub async fn checked_warehouses(
    client: &tokio_postgres::Client,
    asked: Option<i64>,
) -> Result<i64, Failure> {
    same_warehouses(built_warehouses(client).await?, asked)
}

/// `built`, unless `asked` is another count.
pub fn same_warehouses(built: i64, asked: Option<i64>) -> Result<i64, Failure> {
    if let Some(asked) = asked {
        positive::<i64>(asked, "warehouses")?;
        if asked != built {
            return Err(Failure::input(format!(
                "the database was built with {built} warehouse(s), not {asked}"
            )));
        }
    }
    Ok(built)
}
