//! MariaDB/MySQL's counterparts of the PostgreSQL probes: `SHOW GLOBAL STATUS` for the
//! cumulative counters (statements by command, InnoDB rows, buffer pool reads and hits, log
//! writes, deadlocks), `performance_schema`'s statement digests for pg_stat_statements (when
//! the server runs with it), and the processlist's thread states, sampled ten times a second,
//! for the wait-event panel.
//!
//! MariaDB 10.11 leaves prepared statements' executions (COM_STMT_EXECUTE) out of the digest
//! table, so a prepared run's statements show only in the `Com_stmt_*` counters.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::probe::sampler::{thread_cpu_s, Sampler, Samples, TICK};
use crate::probe::{delta, os};
use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_control::mysql::ControlSession;
use stampede_store::{CounterRow, StatementRow, WaitSample};

/// `counters.source` of `SHOW GLOBAL STATUS`.
pub const STATUS_SOURCE: &str = "global_status";

/// Status variables that count events (whose change over a window means something); the rest
/// are gauges (threads connected, free pages) or sizes.
const COUNTING_PREFIXES: [&str; 14] = [
    "Com_",
    "Innodb_rows_",
    "Innodb_buffer_pool_read",
    "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_data_",
    "Innodb_log_write",
    "Innodb_os_log_",
    "Innodb_deadlocks",
    "Innodb_row_lock_",
    "Handler_",
    "Bytes_",
    "Questions",
    "Created_tmp_",
];

/// Gauges among the counting prefixes.
const GAUGES: [&str; 4] = [
    "Innodb_data_pending_reads",
    "Innodb_data_pending_writes",
    "Innodb_row_lock_current_waits",
    "Innodb_os_log_pending_writes",
];

/// The session the probes use: the server's, without a default schema, so that its own
/// statements are not counted in the run's database.
fn session(run: &MysqlSpec) -> Result<ControlSession, Failure> {
    ControlSession::connect(&run.with_database(""))
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// Every counting status variable now.
pub fn global_status(run: &MysqlSpec) -> Result<Vec<CounterRow>, Failure> {
    let pairs = session(run)?.pairs("SHOW GLOBAL STATUS")?;
    Ok(counting(pairs))
}

fn counting(pairs: Vec<(String, String)>) -> Vec<CounterRow> {
    pairs
        .into_iter()
        .filter(|(name, _)| {
            COUNTING_PREFIXES.iter().any(|p| name.starts_with(p))
                && !GAUGES.contains(&name.as_str())
        })
        .filter_map(|(name, value)| {
            Some(CounterRow {
                source: STATUS_SOURCE.into(),
                value: value.parse().ok()?,
                name,
            })
        })
        .collect()
}

fn performance_schema_on(session: &mut ControlSession) -> bool {
    session
        .rows("SELECT @@performance_schema")
        .ok()
        .and_then(|rows| rows.rows.first()?.first()?.clone())
        .is_some_and(|on| on == "1")
}

/// Empties the digest table, when performance_schema is on.
pub fn reset_statements(run: &MysqlSpec) -> Result<(), Failure> {
    let mut session = session(run)?;
    if performance_schema_on(&mut session) {
        session.execute("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")?;
    }
    Ok(())
}

/// The run database's statements by digest (normalised text), busiest first: calls, mean time,
/// rows. Empty when performance_schema is off.
pub fn statements(run: &MysqlSpec) -> Result<Vec<StatementRow>, Failure> {
    let mut session = session(run)?;
    if !performance_schema_on(&mut session) {
        return Ok(Vec::new());
    }
    let rows = session.rows(&format!(
        "SELECT DIGEST_TEXT, COUNT_STAR, AVG_TIMER_WAIT / 1e9, SUM_ROWS_SENT + SUM_ROWS_AFFECTED \
         FROM performance_schema.events_statements_summary_by_digest \
         WHERE SCHEMA_NAME = {} AND DIGEST_TEXT IS NOT NULL ORDER BY COUNT_STAR DESC",
        quoted(&run.database)
    ))?;
    Ok(rows
        .rows
        .into_iter()
        .filter_map(|row| {
            let number = |i: usize| row.get(i)?.as_deref()?.parse::<f64>().ok();
            Some(StatementRow {
                query: row.first()?.clone()?,
                calls: number(1)? as i64,
                mean_ms: number(2),
                stddev_ms: None,
                rows: number(3).map(|n| n as i64),
                shared_blks_hit: None,
                shared_blks_read: None,
            })
        })
        .collect())
}

/// Other sessions on the run's database.
fn sessions_on(session: &mut ControlSession, database: &str) -> Option<u64> {
    let rows = session
        .rows(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = {} AND ID <> CONNECTION_ID()",
            quoted(database)
        ))
        .ok()?;
    rows.rows.first()?.first()?.as_deref()?.parse().ok()
}

/// Waits (at most `limit`) for the run's sessions to disconnect, so that their last statements
/// are counted.
pub fn wait_for_sessions_to_end(run: &MysqlSpec, limit: Duration) {
    let Ok(mut session) = session(run) else {
        return;
    };
    let started = Instant::now();
    while sessions_on(&mut session, &run.database).is_some_and(|n| n > 0)
        && started.elapsed() < limit
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Samples the run's threads by command and state ten times a second, and the machine's and
/// the server's counters each second, until finished.
pub fn start_sampler(run: MysqlSpec, data_dir: Option<PathBuf>) -> Sampler {
    Sampler::spawn(move |stop| sample(&run, data_dir.as_deref(), stop))
}

/// Status counters worth a per-second series beside the OS's.
const SERIES: [&str; 4] = [
    "Innodb_buffer_pool_reads",
    "Innodb_os_log_written",
    "Innodb_data_fsyncs",
    "Innodb_rows_read",
];

fn per_second_counters(
    session: Option<&mut ControlSession>,
    data_dir: Option<&std::path::Path>,
) -> Vec<CounterRow> {
    let mut counters = data_dir.map(os::counters).unwrap_or_default();
    if let Some(pairs) = session.and_then(|s| s.pairs("SHOW GLOBAL STATUS").ok()) {
        counters.extend(
            counting(pairs)
                .into_iter()
                .filter(|c| SERIES.contains(&c.name.as_str())),
        );
    }
    counters
}

fn sample(run: &MysqlSpec, data_dir: Option<&std::path::Path>, stop: &AtomicBool) -> Samples {
    let mut samples = Samples::default();
    let mut session = session(run).ok();
    let cpu_before = thread_cpu_s();
    let states = format!(
        "SELECT COMMAND, COALESCE(NULLIF(STATE, ''), COMMAND), COUNT(*) FROM information_schema.PROCESSLIST \
         WHERE DB = {} AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID() GROUP BY 1, 2",
        quoted(&run.database)
    );
    const TICKS_PER_SECOND: u64 = 10;
    let mut counts: BTreeMap<(u64, String, String), u32> = BTreeMap::new();
    let mut previous = per_second_counters(session.as_mut(), data_dir);
    let start = Instant::now();
    let mut tick: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        let second = tick / TICKS_PER_SECOND;
        if let Some(rows) = session.as_mut().and_then(|s| s.rows(&states).ok()) {
            for row in rows.rows {
                let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
                let threads: u32 = text(2).parse().unwrap_or(0);
                *counts.entry((second, text(0), text(1))).or_default() += threads;
            }
        }
        tick += 1;
        if tick.is_multiple_of(TICKS_PER_SECOND) {
            let now = per_second_counters(session.as_mut(), data_dir);
            samples
                .counter_series
                .extend(delta(&previous, &now).into_iter().map(|c| (second, c)));
            previous = now;
        }
        let next = start + TICK * tick as u32;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    samples.own_cost.push(CounterRow {
        source: "probe".into(),
        name: "sampler_cpu_s".into(),
        value: thread_cpu_s() - cpu_before,
    });
    samples.wait_events = counts
        .into_iter()
        .map(|((second, command, state), count)| WaitSample {
            second,
            wait_event_type: command,
            wait_event: state,
            samples: count,
            ticks: (tick - second * TICKS_PER_SECOND).min(TICKS_PER_SECOND) as u32,
        })
        .collect();
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_counting_status_variables_are_kept() {
        let pairs = [
            ("Com_select", "12"),
            ("Innodb_rows_read", "40"),
            ("Threads_connected", "3"),
            ("Innodb_row_lock_current_waits", "1"),
            ("Innodb_buffer_pool_read_requests", "99"),
            ("Com_show_status", "x"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .to_vec();
        let names: Vec<String> = counting(pairs).into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Com_select",
                "Innodb_rows_read",
                "Innodb_buffer_pool_read_requests"
            ]
        );
    }
}
