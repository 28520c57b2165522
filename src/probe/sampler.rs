//! A background sampler for the measured window: what the run's sessions wait on, from
//! pg_stat_activity ten times a second, and the operating system's counters per second. It
//! connects to another database than the run's, so its own queries do not count as the run's
//! transactions.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_postgres::SimpleQueryMessage;

use super::{delta, os};
use crate::server::target::ConnSpec;
use crate::store::{CounterRow, WaitSample};

pub const TICK: Duration = Duration::from_millis(100);
const TICKS_PER_SECOND: u64 = 10;

/// What the sampler collected.
#[derive(Debug, Default)]
pub struct Samples {
    pub wait_events: Vec<WaitSample>,
    /// (second, the counter's change during that second).
    pub os_series: Vec<(u64, CounterRow)>,
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Samples>>,
}

impl Sampler {
    /// Starts sampling the sessions of `database` through `admin` (a connection to another
    /// database of the same server) and the OS counters of the disk holding `data_dir`.
    pub fn start(admin: ConnSpec, database: String, data_dir: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || sample(&admin, &database, &data_dir, &flag));
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|handle| handle.join().ok())
            .unwrap_or_default()
    }
}

/// A sampler dropped without `finish` (the run failed) stops by itself.
impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn wait_query(database: &str) -> String {
    format!(
        "SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, 'CPU'), count(*)
         FROM pg_stat_activity
         WHERE datname = '{}' AND state <> 'idle' AND backend_type = 'client backend'
         GROUP BY 1, 2",
        database.replace('\'', "''")
    )
}

fn sample(
    admin: &ConnSpec,
    database: &str,
    data_dir: &std::path::Path,
    stop: &AtomicBool,
) -> Samples {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Samples::default();
    };
    runtime.block_on(async {
        let mut samples = Samples::default();
        let client = match admin.tokio_config().connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                Some(client)
            }
            // Without a connection the OS series is still worth having.
            Err(_) => None,
        };
        let query = wait_query(database);
        let mut counts: BTreeMap<(u64, String, String), u32> = BTreeMap::new();
        let mut previous_os = os::counters(data_dir);
        let start = Instant::now();
        let mut tick: u64 = 0;
        while !stop.load(Ordering::SeqCst) {
            let second = tick / TICKS_PER_SECOND;
            if let Some(client) = &client {
                if let Ok(messages) = client.simple_query(&query).await {
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
            }
            tick += 1;
            if tick.is_multiple_of(TICKS_PER_SECOND) {
                let now = os::counters(data_dir);
                samples.os_series.extend(
                    delta(&previous_os, &now)
                        .into_iter()
                        .map(|counter| (second, counter)),
                );
                previous_os = now;
            }
            let next = start + TICK * tick as u32;
            tokio::time::sleep_until(next.into()).await;
        }
        let ticks_taken = |second: u64| (tick - second * TICKS_PER_SECOND).min(TICKS_PER_SECOND);
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
