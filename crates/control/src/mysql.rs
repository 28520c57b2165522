//! MySQL's/MariaDB's control session (DDL, loading, variables, probes): the wire's MySQL
//! connection, driven to completion on the shared control runtime.

use std::time::Duration;

use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_wire::mysql::MyConn;
use stampede_wire::reply::{ConnError, DbError};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

pub use stampede_wire::mysql::Rows;

pub struct ControlSession {
    conn: Option<MyConn>,
    spec: MysqlSpec,
}

impl ControlSession {
    pub fn connect(spec: &MysqlSpec) -> Result<ControlSession, Failure> {
        let conn = block_on(MyConn::connect(spec, CONNECT_TIMEOUT)).map_err(|e| {
            Failure::input(format!(
                "could not connect to MySQL/MariaDB at {}: {e}",
                spec.describe()
            ))
        })?;
        Ok(ControlSession {
            conn: Some(conn),
            spec: spec.clone(),
        })
    }

    pub fn server_version(&self) -> &str {
        self.conn().server_version()
    }

    fn conn(&self) -> &MyConn {
        self.conn.as_ref().expect("open until dropped")
    }

    /// Runs a statement; a server error fails with the statement's text.
    pub fn execute(&mut self, sql: &str) -> Result<(), Failure> {
        self.rows(sql).map(|_| ())
    }

    /// Runs a statement and keeps every row of its last result.
    pub fn rows(&mut self, sql: &str) -> Result<Rows, Failure> {
        self.try_rows(sql)?.map_err(|e| sql_failure(sql, &e))
    }

    /// As `rows`, with a server error handed back rather than turned into a failure.
    pub fn try_rows(&mut self, sql: &str) -> Result<Result<Rows, DbError>, Failure> {
        let conn = self.conn.as_mut().expect("open until dropped");
        block_on(conn.query_all(sql)).map_err(|e| self.lost(e))
    }

    /// Name/value pairs of a two-column statement such as `SHOW GLOBAL VARIABLES`.
    pub fn pairs(&mut self, sql: &str) -> Result<Vec<(String, String)>, Failure> {
        Ok(self
            .rows(sql)?
            .rows
            .into_iter()
            .filter_map(|row| {
                let mut values = row.into_iter();
                Some((values.next()??, values.next()?.unwrap_or_default()))
            })
            .collect())
    }

    fn lost(&self, error: ConnError) -> Failure {
        Failure::run(format!(
            "lost the connection to {}: {error}",
            self.spec.describe()
        ))
    }
}

impl Drop for ControlSession {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            block_on(conn.close());
        }
    }
}

pub fn sql_failure(sql: &str, error: &DbError) -> Failure {
    let shown: String = sql.chars().take(200).collect();
    Failure::run(format!("{} (in: {shown})", error.render(None)))
}

/// Runs a future to completion on the control runtime from synchronous code (never from a
/// task of that runtime).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    stampede_conn::control_runtime().block_on(future)
}
