//! The default results database: one SQLite file, in WAL mode with foreign keys on.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use super::database::{Database, Row, Value};
use super::error::StoreError;

pub struct Sqlite {
    db: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        let db = Connection::open(path).map_err(|e| {
            StoreError::Unreachable(format!(
                "could not open results database {}: {e}",
                path.display()
            ))
        })?;
        db.pragma_update(None, "journal_mode", "WAL").map_err(|e| {
            classified(e).map_message(|m| format!("results database: journal mode: {m}"))
        })?;
        db.pragma_update(None, "foreign_keys", "ON").map_err(|e| {
            classified(e).map_message(|m| format!("results database: foreign keys: {m}"))
        })?;
        Ok(Sqlite { db })
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(r) => ToSqlOutput::Borrowed(ValueRef::Real(*r)),
            Value::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

fn value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into()),
    }
}

impl Database for Sqlite {
    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.db.execute_batch(sql).map_err(classified)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<(), StoreError> {
        let mut statement = self.db.prepare_cached(sql).map_err(classified)?;
        statement
            .execute(params_from_iter(params))
            .map(|_| ())
            .map_err(classified)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut statement = self.db.prepare_cached(sql).map_err(classified)?;
        let columns = statement.column_count();
        let rows = statement
            .query_map(params_from_iter(params), |row| {
                (0..columns)
                    .map(|i| row.get_ref(i).map(value))
                    .collect::<rusqlite::Result<Row>>()
            })
            .map_err(classified)?;
        rows.collect::<rusqlite::Result<Vec<Row>>>()
            .map_err(classified)
    }

    fn dialect(&self, schema_sql: &str) -> String {
        schema_sql.to_string()
    }
}

/// SQLite's error by what it means to the caller: a table the file does not have (SQLite says
/// "no such table"), a value of the wrong type, or another statement error.
fn classified(e: rusqlite::Error) -> StoreError {
    let message = e.to_string();
    match e {
        rusqlite::Error::InvalidColumnType(..) | rusqlite::Error::ToSqlConversionFailure(_) => {
            StoreError::Value(message)
        }
        _ if message.starts_with("no such table") => StoreError::MissingTable(message),
        _ => StoreError::Statement(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_kind_they_are() {
        let dir = std::env::temp_dir().join(format!("stampede-store-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A folder is no file SQLite can open.
        assert!(
            matches!(Sqlite::open(&dir), Err(StoreError::Unreachable(ref m)) if m.starts_with("could not open results database")),
        );
        let mut db = Sqlite::open(&dir.join("results.db")).unwrap();
        assert_eq!(
            db.query("SELECT * FROM missing", &[]).unwrap_err(),
            StoreError::MissingTable("no such table: missing".into())
        );
        assert!(matches!(
            db.batch("SELEKT 1"),
            Err(StoreError::Statement(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
