//! Server-side counters read over a control connection. Every probe query is one
//! simple-protocol statement, i.e. exactly one server transaction, so the probe can subtract its
//! own commits from the counters it reads.

use std::time::{Duration, Instant};

use tokio_postgres::{Client, SimpleQueryMessage};

/// Committed and rolled-back transactions of the current database, from pg_stat_database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XactCounters {
    pub commits: i64,
    pub rollbacks: i64,
}

/// Reads pg_stat_database for the control connection's database.
pub struct XactProbe {
    read_sql: &'static str,
    /// Whether the counts are exact: from PG 15 each probe statement flushes its own backend's
    /// statistics; before 15 the statistics collector lags and the numbers are approximate.
    pub exact: bool,
}

// One statement each: every simple Query is its own transaction, so the statistics snapshot is
// fresh and the probe's commits can be counted one per read.
const READ_FLUSHING: &str = "SELECT xact_commit, xact_rollback, pg_stat_force_next_flush() FROM pg_stat_database WHERE datname = current_database()";
const READ_PLAIN: &str =
    "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()";

async fn first_row(client: &Client, sql: &str) -> Result<Vec<i64>, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    let row = messages.iter().rev().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    });
    Ok(row
        .map(|row| {
            (0..row.len())
                .map(|i| row.get(i).and_then(|v| v.parse().ok()).unwrap_or(0))
                .collect()
        })
        .unwrap_or_default())
}

impl XactProbe {
    pub async fn new(client: &Client) -> Result<XactProbe, tokio_postgres::Error> {
        let version =
            first_row(client, "SELECT current_setting('server_version_num')::int").await?;
        let exact = version.first().copied().unwrap_or(0) >= 150000;
        if exact {
            // Earlier statements of this connection may still be unflushed; push them out now so
            // that they land before the first reading instead of inside the measured window.
            first_row(client, "SELECT pg_stat_force_next_flush()").await?;
        }
        Ok(XactProbe {
            read_sql: if exact { READ_FLUSHING } else { READ_PLAIN },
            exact,
        })
    }

    pub async fn read(&self, client: &Client) -> Result<XactCounters, tokio_postgres::Error> {
        let values = first_row(client, self.read_sql).await?;
        Ok(XactCounters {
            commits: values.first().copied().unwrap_or(0),
            rollbacks: values.get(1).copied().unwrap_or(0),
        })
    }

    /// The counters after a run, less this probe's own transactions since `read` was called
    /// before the run (that read's commit included).
    ///
    /// Waits (at most `limit`) until no session named `application_name` is left in this
    /// database and the commit counter stays still: a backend leaves pg_stat_activity before it
    /// flushes its statistics on exit.
    pub async fn read_settled(
        &self,
        client: &Client,
        application_name: &str,
        limit: Duration,
    ) -> Result<XactCounters, tokio_postgres::Error> {
        const QUIET_READS: u32 = 2;
        let deadline = Instant::now() + limit;
        let pause = Duration::from_millis(100);
        // The "before" read committed once, after taking its snapshot.
        let mut own_commits = 1;
        let sessions = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = '{}'",
            application_name.replace('\'', "''")
        );
        loop {
            let remaining = first_row(client, &sessions).await?;
            own_commits += 1;
            if remaining.first().copied().unwrap_or(0) == 0 || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(pause).await;
        }
        let mut last = self.read(client).await?;
        own_commits += 1;
        let mut quiet_reads = 0;
        loop {
            tokio::time::sleep(pause).await;
            let now = self.read(client).await?;
            // Between two reads only the earlier read's own commit may appear.
            quiet_reads = if now.commits - last.commits <= 1 {
                quiet_reads + 1
            } else {
                0
            };
            if quiet_reads >= QUIET_READS || Instant::now() >= deadline {
                return Ok(XactCounters {
                    commits: now.commits - own_commits,
                    rollbacks: now.rollbacks,
                });
            }
            own_commits += 1;
            last = now;
        }
    }
}
