//! Cluster-wide cumulative statistics of the views the server's major version has: the
//! background writer (all), the checkpointer (17+), WAL (14+) and I/O by backend type, object
//! and context (16+). Every numeric column is a counter; read before and after a run.

use stampede_base::error::Failure;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::named_rows;
use stampede_store::CounterRow;

/// (view, first major that has it, columns that identify a row rather than count).
const VIEWS: [(&str, i64, &[&str]); 4] = [
    ("pg_stat_bgwriter", 0, &[]),
    ("pg_stat_checkpointer", 170000, &[]),
    ("pg_stat_wal", 140000, &[]),
    ("pg_stat_io", 160000, &["backend_type", "object", "context"]),
];

/// The counters now. A row of a keyed view (pg_stat_io) names its counters
/// `backend_type/object/context/column`.
pub fn counters(conn: &ConnSpec, version_num: i64) -> Result<Vec<CounterRow>, Failure> {
    let mut all = Vec::new();
    for (view, since, keys) in VIEWS {
        if version_num < since {
            continue;
        }
        for row in named_rows(conn, &format!("SELECT * FROM {view}"))? {
            let prefix: Vec<&str> = keys
                .iter()
                .filter_map(|key| row.iter().find(|(name, _)| name == key))
                .map(|(_, value)| value.as_deref().unwrap_or(""))
                .collect();
            for (column, value) in &row {
                // Timestamps (stats_reset) and key columns do not parse as numbers.
                let Some(number) = value.as_deref().and_then(|v| v.parse::<f64>().ok()) else {
                    continue;
                };
                let name = if prefix.is_empty() {
                    column.clone()
                } else {
                    format!("{}/{column}", prefix.join("/"))
                };
                all.push(CounterRow {
                    source: view.to_string(),
                    name,
                    value: number,
                });
            }
        }
    }
    Ok(all)
}

/// Checkpoints completed and buffers they wrote, cumulative: sampled each second so that a
/// report can mark when checkpoints happened in a run's throughput series.
pub fn checkpoint_query(version_num: i64) -> &'static str {
    if version_num >= 170000 {
        "SELECT num_done, buffers_written FROM pg_stat_checkpointer"
    } else {
        "SELECT checkpoints_timed + checkpoints_req, buffers_checkpoint FROM pg_stat_bgwriter"
    }
}

/// The names under which the sampler stores `checkpoint_query`'s columns per second.
pub const CHECKPOINT_SERIES: (&str, [&str; 2]) =
    ("checkpointer", ["checkpoints", "buffers_written"]);
