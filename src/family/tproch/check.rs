//! `stampede tproch check`: every table's rows against dbgen's count at the database's scale
//! factor (lineitem's counted order by order from dbgen's line-count stream, with the update
//! sets applied so far), an index on every table, and HammerDB's consistency check 4 (each
//! order's total equals its lines' discounted, taxed prices, truncated as dbgen sums them).

use super::data;
use super::refresh::{self, NewOrders};
use super::run;
use super::schema::TABLES;
use super::session::Dialect;
use crate::family::common::sql_session::Session;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use tpchgen::generators::OrderGenerator;

/// Lines of the base orders with indexes `first..first + count` (1-based), from dbgen's
/// line-count stream alone.
pub fn base_lines(first: i64, count: i64) -> i64 {
    let mut stream = OrderGenerator::create_line_count_random();
    stream.advance_rows(first - 1);
    (0..count)
        .map(|_| {
            let lines = stream.next_value() as i64;
            stream.row_finished();
            lines
        })
        .sum()
}

/// lineitem's rows once `applied` update sets have run both refresh functions.
pub fn expected_lines(scale_factor: f64, applied: i64) -> i64 {
    let mut lines = base_lines(1, data::base_rows("orders", scale_factor));
    for set in 1..=applied {
        let indexes = refresh::set_indexes(set, scale_factor);
        lines -= base_lines(*indexes.start(), refresh::orders_per_set(scale_factor));
        lines += NewOrders::of_set(set, scale_factor)
            .map(|new| new.lines.len() as i64)
            .sum::<i64>();
    }
    lines
}

/// The database's scale factor, from its suppliers (10,000 per unit, as HammerDB reads it).
pub async fn scale_factor(session: &mut Session, dialect: Dialect) -> Result<f64, Failure> {
    let suppliers = count(session, &dialect.table("supplier")).await?;
    if suppliers == 0 {
        return Err(Failure::input(
            "supplier is empty: the TPROC-H build did not finish",
        ));
    }
    Ok(suppliers as f64 / 10_000.0)
}

async fn count(session: &mut Session, table: &str) -> Result<i64, Failure> {
    Ok(session
        .value(&format!("SELECT count(*) FROM {table}"))
        .await?
        .unwrap_or(0))
}

/// Runs the checks, printing one line each; an error names the first that failed.
pub async fn check(endpoint: &Endpoint) -> Result<(), Failure> {
    let dialect = Dialect::of(endpoint);
    let mut session = Session::connect(endpoint)
        .await
        .map_err(Failure::into_input)?;
    let sf = scale_factor(&mut session, dialect).await?;
    let applied = run::next_update_set(endpoint, dialect, sf).await? - 1;
    println!("scale factor {sf} (from supplier's rows), {applied} update set(s) applied");
    let mut failures = Vec::new();
    for table in TABLES.iter().map(|t| t.name) {
        let rows = count(&mut session, &dialect.table(table)).await?;
        let expected = match table {
            "lineitem" => expected_lines(sf, applied),
            other => data::base_rows(other, sf),
        };
        let verdict = if rows == expected { "ok" } else { "WRONG" };
        println!("{table}: {rows} rows, dbgen's {expected}: {verdict}");
        if rows != expected {
            failures.push(format!(
                "{table} has {rows} rows, dbgen's count is {expected}"
            ));
        }
        if indexes(&mut session, dialect, table).await? == 0 {
            failures.push(format!("{table} has no index"));
        }
    }
    let wrong_totals = wrong_order_totals(&mut session, dialect).await?;
    println!("orders whose total differs from their lines': {wrong_totals}");
    if wrong_totals > 0 {
        failures.push(format!(
            "{wrong_totals} order(s) whose total differs from their lines'"
        ));
    }
    match failures.first() {
        None => Ok(()),
        Some(first) => Err(Failure::run(format!("TPROC-H check failed: {first}"))),
    }
}

async fn indexes(session: &mut Session, dialect: Dialect, table: &str) -> Result<i64, Failure> {
    let statement = match dialect {
        Dialect::Postgres => format!(
            "SELECT count(*) FROM pg_indexes WHERE tablename = '{table}' AND schemaname = current_schema()"
        ),
        Dialect::Mysql => format!(
            "SELECT count(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{}'",
            dialect.table(table)
        ),
    };
    Ok(session.value(&statement).await?.unwrap_or(0))
}

/// HammerDB's consistency check 4 (its `truncate` is PostgreSQL's trunc, MariaDB's TRUNCATE).
async fn wrong_order_totals(session: &mut Session, dialect: Dialect) -> Result<i64, Failure> {
    let truncate = match dialect {
        Dialect::Postgres => "trunc",
        Dialect::Mysql => "truncate",
    };
    let statement = format!(
        "SELECT count(*) FROM (SELECT o_orderkey, o_totalprice - sum({truncate}({truncate}(l_extendedprice * (1 - l_discount), 2) * (1 + l_tax), 2)) AS part_res FROM {orders}, {lineitem} WHERE o_orderkey = l_orderkey GROUP BY o_orderkey, o_totalprice) temp WHERE part_res <> 0",
        orders = dialect.table("orders"),
        lineitem = dialect.table("lineitem")
    );
    Ok(session.value(&statement).await?.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineitem_s_count_comes_from_the_line_count_stream() {
        // dbgen's SF 0.01 lineitem: 60,175 lines.
        assert_eq!(expected_lines(0.01, 0), 60_175);
        let one_set = expected_lines(0.01, 1);
        let new: i64 = NewOrders::of_set(1, 0.01)
            .map(|n| n.lines.len() as i64)
            .sum();
        assert_eq!(one_set, 60_175 - base_lines(1, 10) + new);
    }
}
