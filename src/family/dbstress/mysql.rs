//! dbSTRESS's tables on MariaDB/MySQL, its original engine: the same DDL and rows as on
//! PostgreSQL (InnoDB, the server's default engine), generated on the server in ranges of
//! objects over `threads` sessions, then the indexes, `ANALYZE TABLE` and the marker.

use super::statements::{self, MARKER, MYSQL_OBJECTS_PER_INSERT};
use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_control::mysql::ControlSession;

/// Creates and fills `sets` sets of `objects` objects; refuses a database that has them.
pub fn prepare(
    spec: &MysqlSpec,
    objects: i64,
    sets: u32,
    threads: usize,
    history_unique: bool,
) -> Result<(), Failure> {
    let mut session = ControlSession::connect(spec).map_err(Failure::into_input)?;
    if !existing_tables(&mut session)?.is_empty() {
        return Err(Failure::input(
            "dbSTRESS tables exist here; run `stampede dbstress cleanup` first",
        ));
    }
    for set in 1..=sets {
        for statement in statements::create_tables(set)
            .into_iter()
            .chain(statements::load_reference_tables_mysql(set))
        {
            session.execute(&statement)?;
        }
    }
    let mut inserts = Vec::new();
    for set in 1..=sets {
        let mut first = 0;
        while first < objects {
            let last = (first + MYSQL_OBJECTS_PER_INSERT).min(objects) - 1;
            // An object range's two inserts stay together, in order.
            inserts.push(statements::load_objects_mysql(set, first, last).join(";\n"));
            first = last + 1;
        }
    }
    in_parallel(spec, inserts, threads)?;
    let indexes: Vec<String> = (1..=sets)
        .flat_map(|set| statements::indexes(set, history_unique))
        .collect();
    in_parallel(spec, indexes, threads)?;
    let analyze: Vec<String> = (1..=sets)
        .flat_map(statements::table_names)
        .map(|table| format!("ANALYZE TABLE {table}"))
        .collect();
    in_parallel(spec, analyze, threads)?;
    session.execute(&format!(
        "CREATE TABLE {MARKER} AS SELECT CAST({objects} AS SIGNED) AS objects, {sets} AS sets"
    ))
}

/// The statements dealt out over `threads` sessions of their own, run at once.
fn in_parallel(spec: &MysqlSpec, statements: Vec<String>, threads: usize) -> Result<(), Failure> {
    let lists = threads.clamp(1, statements.len().max(1));
    let mut dealt = vec![Vec::new(); lists];
    for (index, statement) in statements.into_iter().enumerate() {
        dealt[index % lists].push(statement);
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = dealt
            .iter()
            .map(|list| {
                scope.spawn(move || {
                    let mut session = ControlSession::connect(spec)?;
                    list.iter()
                        .try_for_each(|statement| run_statements(&mut session, statement))
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|worker| worker.join().expect("a loader thread panicked"))
    })
}

/// One statement, or a range's `;`-joined pair, one at a time (no multi-statement packets).
fn run_statements(session: &mut ControlSession, text: &str) -> Result<(), Failure> {
    text.split(";\n")
        .try_for_each(|statement| session.execute(statement))
}

/// (objects, sets) that `prepare` recorded, if it finished here.
pub fn prepared_size(spec: &MysqlSpec) -> Result<Option<(i64, u32)>, Failure> {
    let mut session = ControlSession::connect(spec).map_err(Failure::into_input)?;
    let Ok(rows) = session.try_rows(&format!("SELECT objects, sets FROM {MARKER}"))? else {
        return Ok(None);
    };
    let number =
        |row: &[Option<String>], i: usize| -> Option<i64> { row.get(i)?.as_deref()?.parse().ok() };
    Ok(rows
        .rows
        .first()
        .and_then(|row| Some((number(row, 0)?, number(row, 1)? as u32))))
}

/// dbSTRESS's tables of any set, and the marker.
pub fn existing_tables(session: &mut ControlSession) -> Result<Vec<String>, Failure> {
    let rows = session.rows("SHOW TABLES")?;
    Ok(rows
        .rows
        .iter()
        .filter_map(|row| row.first()?.clone())
        .filter(|name| is_dbstress_table(name))
        .collect())
}

fn is_dbstress_table(name: &str) -> bool {
    if name == MARKER {
        return true;
    }
    ["zone", "section", "stat", "object", "history"]
        .iter()
        .filter_map(|prefix| name.strip_prefix(prefix))
        .any(|set| !set.is_empty() && set.bytes().all(|b| b.is_ascii_digit()))
}

/// Drops the tables; says how many.
pub fn cleanup(spec: &MysqlSpec) -> Result<usize, Failure> {
    let mut session = ControlSession::connect(spec).map_err(Failure::into_input)?;
    let tables = existing_tables(&mut session)?;
    for table in &tables {
        session.execute(&format!("DROP TABLE {table}"))?;
    }
    Ok(tables.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dbstress_tables_are_recognised() {
        for name in ["zone1", "history12", "dbstress_info"] {
            assert!(is_dbstress_table(name), "{name}");
        }
        for name in ["zone", "stats1", "sbtest1", "history1a"] {
            assert!(!is_dbstress_table(name), "{name}");
        }
    }
}
