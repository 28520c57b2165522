//! PostgreSQL's sampler for the measured window (`probe::sampler` runs it): what the run's sessions wait on, from
//! pg_stat_activity ten times a second; the operating system's counters and the checkpointer's
//! (checkpoints done, buffers written) per second. It
//! connects to another database than the run's, so its own queries do not count as the run's
//! transactions.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio_postgres::SimpleQueryMessage;

use super::cluster_stats::CHECKPOINT_SERIES;
use crate::probe::sampler::{thread_cpu_s, Sampler, Samples, TICK};
use crate::probe::{delta, os};

const TICKS_PER_SECOND: u64 = 10;
use stampede_conn::ConnSpec;
use stampede_store::{CounterRow, WaitSample};

/// Starts sampling the sessions of `database` through `admin` (a connection to another
/// database of the same server), the checkpointer's counters, and the OS counters of the
/// disk holding `data_dir` when the server runs on this machine; the queries follow the
/// server's version.
pub fn start(
    admin: ConnSpec,
    database: String,
    data_dir: Option<PathBuf>,
    server_version_num: i64,
) -> Sampler {
    Sampler::spawn(move |stop| {
        let sources = Sources {
            database: &database,
            data_dir: data_dir.as_deref(),
            checkpoint_query: super::cluster_stats::checkpoint_query(server_version_num),
            server_version_num,
        };
        sample(&admin, &sources, stop)
    })
}

/// Active sessions of `database` by wait event. Before 10 pg_stat_activity has no
/// backend_type, and shows client backends only.
fn wait_query(database: &str, server_version_num: i64) -> String {
    let client_backends = if server_version_num >= 100000 {
        " AND backend_type = 'client backend'"
    } else {
        ""
    };
    format!(
        "SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, 'CPU'), count(*)
         FROM pg_stat_activity
         WHERE datname = '{}' AND state <> 'idle'{client_backends}
         GROUP BY 1, 2",
        database.replace('\'', "''")
    )
}

/// What the sampler reads besides pg_stat_activity.
struct Sources<'a> {
    database: &'a str,
    data_dir: Option<&'a std::path::Path>,
    checkpoint_query: &'static str,
    server_version_num: i64,
}

/// The cumulative counters read once a second: the machine's and the checkpointer's.
async fn per_second_counters(
    client: Option<&tokio_postgres::Client>,
    sources: &Sources<'_>,
) -> Vec<CounterRow> {
    let mut counters = sources.data_dir.map(os::counters).unwrap_or_default();
    let Some(client) = client else {
        return counters;
    };
    let Ok(messages) = client.simple_query(sources.checkpoint_query).await else {
        return counters;
    };
    let (source, names) = CHECKPOINT_SERIES;
    for row in messages.iter().filter_map(|m| match m {
        SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    }) {
        for (index, name) in names.iter().enumerate() {
            if let Some(value) = row.get(index).and_then(|v| v.parse::<f64>().ok()) {
                counters.push(CounterRow {
                    source: source.into(),
                    name: (*name).into(),
                    value,
                });
            }
        }
    }
    counters
}

fn sample(admin: &ConnSpec, sources: &Sources<'_>, stop: &AtomicBool) -> Samples {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Samples::default();
    };
    runtime.block_on(async {
        let mut samples = Samples::default();
        let client = match admin.connect_control().await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                Some(client)
            }
            // Without a connection the OS series is still worth having.
            Err(_) => None,
        };
        let thread_cpu_before = thread_cpu_s();
        let backend = match &client {
            Some(client) => backend_pid(client).await,
            None => None,
        };
        let backend_cpu_before = backend.and_then(process_cpu_s);
        let query = wait_query(sources.database, sources.server_version_num);
        let mut counts: BTreeMap<(u64, String, String), u32> = BTreeMap::new();
        let mut previous = per_second_counters(client.as_ref(), sources).await;
        let start = Instant::now();
        let mut tick: u64 = 0;
        while !stop.load(Ordering::SeqCst) {
            let second = tick / TICKS_PER_SECOND;
            if let Some(client) = &client {
                match unless_stopped(stop, client.simple_query(&query)).await {
                    Some(Ok(messages)) => count_waits(&mut counts, second, &messages),
                    Some(Err(_)) => {}
                    // The server stopped answering and the run has ended: nothing more to ask.
                    None => break,
                }
            }
            tick += 1;
            if tick.is_multiple_of(TICKS_PER_SECOND) {
                let counters = per_second_counters(client.as_ref(), sources);
                let Some(now) = unless_stopped(stop, counters).await else {
                    break;
                };
                samples.counter_series.extend(
                    delta(&previous, &now)
                        .into_iter()
                        .map(|counter| (second, counter)),
                );
                previous = now;
            }
            let next = start + TICK * tick as u32;
            tokio::time::sleep_until(next.into()).await;
        }
        let ticks_taken = |second: u64| (tick - second * TICKS_PER_SECOND).min(TICKS_PER_SECOND);
        samples
            .own_cost
            .push(cost("sampler_cpu_s", thread_cpu_s() - thread_cpu_before));
        if let (Some(before), Some(after)) = (backend_cpu_before, backend.and_then(process_cpu_s)) {
            samples
                .own_cost
                .push(cost("sampler_backend_cpu_s", after - before));
        }
        samples.wait_events = counts
            .into_iter()
            .map(
                |((second, wait_event_type, wait_event), count)| WaitSample {
                    second,
                    wait_event_type,
                    wait_event,
                    samples: count,
                    ticks: ticks_taken(second) as u32,
                },
            )
            .collect();
        samples
    })
}

/// Adds one sample of the sessions' waits (wait type, event, session count per row).
fn count_waits(
    counts: &mut BTreeMap<(u64, String, String), u32>,
    second: u64,
    messages: &[SimpleQueryMessage],
) {
    for row in messages.iter().filter_map(|m| match m {
        SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    }) {
        let sessions: u32 = row.get(2).and_then(|v| v.parse().ok()).unwrap_or(0);
        let key = (
            second,
            row.get(0).unwrap_or("").to_string(),
            row.get(1).unwrap_or("").to_string(),
        );
        *counts.entry(key).or_default() += sessions;
    }
}

/// How often a query that has not answered looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

/// A server query, given up when the sampler is told to stop: a server that stops answering
/// (hung, stopped) must not hold the end of the run, and the lab's restart of it, hostage.
async fn unless_stopped<T>(
    stop: &AtomicBool,
    query: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::pin!(query);
    loop {
        tokio::select! {
            value = &mut query => return Some(value),
            () = tokio::time::sleep(STOP_POLL) => {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
            }
        }
    }
}

fn cost(name: &str, value: f64) -> CounterRow {
    CounterRow {
        source: "probe".into(),
        name: name.into(),
        value,
    }
}

async fn backend_pid(client: &tokio_postgres::Client) -> Option<i32> {
    let messages = client.simple_query("SELECT pg_backend_pid()").await.ok()?;
    messages.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
        _ => None,
    })
}

/// User + system CPU seconds of a process (a server backend on this machine), from
/// /proc/<pid>/stat; None when it cannot be read (a remote or foreign server).
fn process_cpu_s(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesized command name; utime and stime are the 14th and 15th.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / os::clock_ticks_per_second())
}
