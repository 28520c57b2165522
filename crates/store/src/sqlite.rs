//! The default results database: one SQLite file, in WAL mode with foreign keys on.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use super::database::{Database, Row, Value};

pub struct Sqlite {
    db: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let db = Connection::open(path)
            .map_err(|e| format!("could not open results database {}: {e}", path.display()))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| format!("results database: journal mode: {e}"))?;
        db.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| format!("results database: foreign keys: {e}"))?;
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
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.db.execute_batch(sql).map_err(|e| e.to_string())
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<(), String> {
        let mut statement = self.db.prepare_cached(sql).map_err(|e| e.to_string())?;
        statement
            .execute(params_from_iter(params))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, String> {
        let mut statement = self.db.prepare_cached(sql).map_err(|e| e.to_string())?;
        let columns = statement.column_count();
        let rows = statement
            .query_map(params_from_iter(params), |row| {
                (0..columns)
                    .map(|i| row.get_ref(i).map(value))
                    .collect::<rusqlite::Result<Row>>()
            })
            .map_err(|e| e.to_string())?;
        rows.collect::<rusqlite::Result<Vec<Row>>>()
            .map_err(|e| e.to_string())
    }

    fn dialect(&self, schema_sql: &str) -> String {
        schema_sql.to_string()
    }
}
