//! Server-side counters read over a control connection.

use tokio_postgres::Client;

/// Committed and rolled-back transactions of the current database, from pg_stat_database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XactCounters {
    pub commits: i64,
    pub rollbacks: i64,
}

pub async fn xact_counters(client: &Client) -> Result<XactCounters, tokio_postgres::Error> {
    // The statistics snapshot is cached per transaction; clear it so the numbers are fresh.
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await?;
    let row = client
        .query_one(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?;
    Ok(XactCounters {
        commits: row.get(0),
        rollbacks: row.get(1),
    })
}
