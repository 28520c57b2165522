//! PostgreSQL's control sessions: connecting for setup and probes (tokio-postgres), error text
//! as PostgreSQL's tools print it, the tables a loader may not overwrite; `queries`: one-call
//! SQL in a session of its own; `system_settings`: ALTER SYSTEM changes put back as they were;
//! `setting_value`: a value as written against the one `pg_settings` reports.

pub mod queries;
pub mod setting_value;
pub mod system_settings;

use tokio_postgres::Client;

use stampede_base::error::Failure;
use stampede_conn::postgres::{connect_error_detail, ConnSpec, ConnectError};

/// A control session: connected, with notices below warnings silenced. A failure is a run
/// failure; callers for which the target is the user's input say so (`Failure::into_input`).
pub async fn connect_quietly(spec: &ConnSpec) -> Result<Client, Failure> {
    let (client, connection) = spec
        .connect_control()
        .await
        .map_err(|e| connection_error(spec, e))?;
    tokio::spawn(connection);
    client
        .batch_execute("SET client_min_messages = warning")
        .await
        .map_err(|e| sql_error("setup", e))?;
    Ok(client)
}

/// A statement that failed, as one line naming what it was for; the server's error is kept as
/// the source (its SQLSTATE decides retries and hints).
pub fn sql_error(context: &str, error: tokio_postgres::Error) -> Failure {
    let detail = error
        .as_db_error()
        .map(|db| db.message().to_string())
        .unwrap_or_else(|| error.to_string());
    Failure::run(format!("query failed: {detail} (while running: {context})")).caused_by(error)
}

pub fn connection_error(spec: &ConnSpec, error: ConnectError) -> Failure {
    match error {
        ConnectError::Server(error) => {
            let detail = connect_error_detail(&error);
            Failure::run(format!("connection to server ({spec}) failed: {detail}")).caused_by(error)
        }
        // Each host's line names its host already.
        ConnectError::NoHost(reasons) => Failure::run(reasons.join("\n")),
        ConnectError::TimedOut => Failure::run(format!(
            "connection to server ({spec}) failed: timeout expired"
        )),
    }
}

/// The tables (plain or partitioned) visible on the search path whose names match `pattern`, a
/// regular expression, by name: what a loader refuses to overwrite and a cleanup drops.
pub async fn visible_tables(client: &Client, pattern: &str) -> Result<Vec<String>, Failure> {
    let rows = client
        .query(
            "SELECT c.relname::text FROM pg_class c
             WHERE c.relkind IN ('r', 'p') AND c.relname ~ $1
               AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1",
            &[&pattern],
        )
        .await
        .map_err(|e| sql_error(&format!("looking for tables matching {pattern}"), e))?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}
