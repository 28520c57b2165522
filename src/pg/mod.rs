//! The control-plane client: connecting for setup and probes, error text as PostgreSQL's tools
//! print it, and the runtime that control work runs on. The measured path has its own
//! connection in `driver/`.

pub mod control;

use tokio_postgres::{Client, NoTls};

use crate::server::target::ConnSpec;

/// A control session: connected, with notices below warnings silenced.
pub async fn connect_quietly(spec: &ConnSpec) -> Result<Client, String> {
    let (client, connection) = spec
        .tokio_config()
        .connect(NoTls)
        .await
        .map_err(|e| connection_error(spec, &e))?;
    tokio::spawn(connection);
    client
        .batch_execute("SET client_min_messages = warning")
        .await
        .map_err(|e| sql_error("setup", &e))?;
    Ok(client)
}

pub fn sql_error(context: &str, error: &tokio_postgres::Error) -> String {
    let detail = error
        .as_db_error()
        .map(|db| db.message().to_string())
        .unwrap_or_else(|| error.to_string());
    format!("query failed: {detail} (while running: {context})")
}

pub fn connection_error(spec: &ConnSpec, error: &tokio_postgres::Error) -> String {
    let detail = error
        .as_db_error()
        .map(|db| db.message().to_string())
        .unwrap_or_else(|| {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            text
        });
    format!("connection to server ({spec}) failed: {detail}")
}

/// A small tokio runtime for control-plane work (setup queries, the loaders).
pub fn control_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()
        .expect("tokio runtime")
}
