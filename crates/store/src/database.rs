//! The two results databases behind one small interface: statements with `?N` parameters,
//! rows of loosely typed values. Both bind the parameters; PostgreSQL converts each to the type
//! its server inferred from where it stands, as SQLite's column affinity does.

use crate::error::StoreError;
use std::fmt;
use std::path::PathBuf;

/// Where results go: a SQLite file, or a PostgreSQL database given by URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// Whether the results may already be there without creating anything: a SQLite file that
    /// exists, or any PostgreSQL database (which only connecting would tell).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(path) => path.exists(),
            Location::Postgres(_) => true,
        }
    }

    /// `postgres://` and `postgresql://` URLs name a PostgreSQL database; anything else is a
    /// SQLite file (relative paths against `base`).
    pub fn parse(text: &str, base: &std::path::Path) -> Location {
        if text.starts_with("postgresql://") || text.starts_with("postgres://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(base.join(text))
        }
    }

    /// The URL's password, if it has one (to keep it out of everything stampede writes).
    pub fn password(&self) -> Option<&str> {
        let Location::Postgres(url) = self else {
            return None;
        };
        let authority = url.split_once("://")?.1.split(['/', '?']).next()?;
        let credentials = authority.rsplit_once('@')?.0;
        let password = credentials.split_once(':')?.1;
        (!password.is_empty()).then_some(password)
    }
}

/// Shows a URL without its password.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => {
                let url = match self.password() {
                    Some(password) => url.replacen(&format!(":{password}@"), "@", 1),
                    None => url.clone(),
                };
                write!(f, "{}", without_password_parameter(&url))
            }
        }
    }
}

/// The URL without a `password=` parameter in its query (how a shard's pod is given one).
fn without_password_parameter(url: &str) -> String {
    let Some((address, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|parameter| !parameter.starts_with("password="))
        .collect();
    if kept.is_empty() {
        address.to_string()
    } else {
        format!("{address}?{}", kept.join("&"))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    /// PostgreSQL returns every value as text; SQLite returns it typed. Both read alike here.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(r) => Some(*r as i64),
            Value::Text(t) => t.parse().ok(),
            Value::Null => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Text(t) => t.parse().ok(),
            Value::Null => None,
        }
    }

    pub fn as_string(&self) -> Option<String> {
        match self {
            Value::Int(i) => Some(i.to_string()),
            Value::Real(r) => Some(r.to_string()),
            Value::Text(t) => Some(t.clone()),
            Value::Null => None,
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

pub type Row = Vec<Value>;

pub trait Database {
    /// Statements without parameters, run in order.
    fn batch(&mut self, sql: &str) -> Result<(), StoreError>;
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<(), StoreError>;
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;
    /// The schema's SQL in this database's dialect.
    fn dialect(&self, schema_sql: &str) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        let base = std::path::Path::new("/x");
        let url = Location::parse(
            "postgresql://bob:s3cret@db.example:5432/results?sslmode=require",
            base,
        );
        assert_eq!(url.password(), Some("s3cret"));
        assert_eq!(
            url.to_string(),
            "postgresql://bob@db.example:5432/results?sslmode=require"
        );
        let plain = Location::parse("postgres://bob@db/results", base);
        assert_eq!(plain.password(), None);
        // A shard's pod gets its password as a parameter.
        for (given, shown) in [
            (
                "postgresql://bob@db/r?password=x%40y",
                "postgresql://bob@db/r",
            ),
            (
                "postgresql://bob@db/r?sslmode=require&password=x",
                "postgresql://bob@db/r?sslmode=require",
            ),
        ] {
            assert_eq!(Location::parse(given, base).to_string(), shown);
        }
        assert_eq!(
            Location::parse("r.db", base),
            Location::Sqlite("/x/r.db".into())
        );
    }
}
