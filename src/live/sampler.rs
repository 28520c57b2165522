//! The registry's feed for runs the driver does not run — TPROC-H's query streams, the Insert
//! Benchmark's clients, a replay, a sysbench Lua script: their engines record each operation as
//! it ends (a `Tally`) or keep counters of their own (a `Source` of their making), and a sampler
//! thread hands what each second gathered to the run's feed as the driver's intervals do.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::endpoint::RunFeed;
use super::metrics::add_each;
use crate::driver::stats::sqlstate_class;
use crate::driver::{merge_tallies, IntervalReport, ScriptStats, ScriptTally};
use stampede_wire::reply::FailureKind;

/// What a source gathered since it was last taken.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Over all scripts: committed operations' latency, failures, retries, statements.
    pub stats: ScriptStats,
    pub scripts: Vec<ScriptTally>,
    /// Rows inserted or deleted, by script (where the run counts rows).
    pub rows: Vec<u64>,
}

impl Gathered {
    fn merge(&mut self, other: Gathered) {
        self.stats.merge(&other.stats);
        merge_tallies(&mut self.scripts, &other.scripts);
        add_each(&mut self.rows, &other.rows);
    }
}

/// Where a sampler reads a run: what happened since the last call.
pub trait Source: Send + 'static {
    fn take(&mut self) -> Gathered;
}

/// Operations recorded as they end, in slots (a thread or a stream each, so that writers
/// rarely wait for one another); taken and emptied once a second.
pub struct Tally {
    slots: Vec<Mutex<Gathered>>,
}

impl Tally {
    pub fn new(slots: usize) -> Arc<Tally> {
        Arc::new(Tally {
            slots: (0..slots.max(1))
                .map(|_| Mutex::new(Gathered::default()))
                .collect(),
        })
    }

    fn with(&self, slot: usize, script: usize, apply: impl FnOnce(&mut Gathered)) {
        let mut gathered = self.slots[slot % self.slots.len()]
            .lock()
            .expect("no thread panics holding a tally");
        if gathered.scripts.len() <= script {
            gathered.scripts.resize(script + 1, ScriptTally::default());
        }
        apply(&mut gathered);
    }

    /// An operation of `script` committed after `latency`, having run `statements`.
    pub fn committed(&self, slot: usize, script: usize, latency: Duration, statements: u64) {
        self.with(slot, script, |g| {
            g.stats.latency.record(latency.as_secs_f64() * 1e6);
            g.stats.statements += statements;
            g.scripts[script].committed += 1;
            g.scripts[script].statements += statements;
        });
    }

    /// A statement of `script` answered without error (a transaction's are counted by
    /// `committed` when it ends).
    pub fn answered(&self, slot: usize, script: usize) {
        self.with(slot, script, |g| {
            g.stats.statements += 1;
            g.scripts[script].statements += 1;
        });
    }

    /// An operation sent `lag_us` later than its schedule (a capture's time, or `-R`'s).
    pub fn lagged(&self, slot: usize, lag_us: f64) {
        self.with(slot, 0, |g| g.stats.lag.record(lag_us));
    }

    /// Rows an operation of `script` inserted or deleted.
    pub fn rows(&self, slot: usize, script: usize, rows: u64) {
        self.with(slot, script, |g| {
            if g.rows.len() <= script {
                g.rows.resize(script + 1, 0);
            }
            g.rows[script] += rows;
        });
    }

    /// An operation of `script` failed with `sqlstate` (None: no code, as a lost connection),
    /// having run `statements` before it.
    pub fn failed(&self, slot: usize, script: usize, sqlstate: Option<&str>, statements: u64) {
        self.with(slot, script, |g| {
            g.stats.statements += statements;
            g.scripts[script].statements += statements;
            let kind = FailureKind::of_sqlstate(sqlstate.unwrap_or(""));
            let class = sqlstate.and_then(sqlstate_class);
            g.stats.failures.count(kind, class);
            g.scripts[script].failures.count(kind, class);
        });
    }
}

impl Source for Arc<Tally> {
    fn take(&mut self) -> Gathered {
        let mut all = Gathered::default();
        for slot in &self.slots {
            let taken =
                std::mem::take(&mut *slot.lock().expect("no thread panics holding a tally"));
            all.merge(taken);
        }
        all
    }
}

/// A run's sampler: its series start when it starts, take the source once a second, and end
/// (with what the last part of a second gathered) when it finishes.
pub struct Sampler {
    done: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    feed: RunFeed,
}

/// How the run's series are described when they start.
pub struct Described {
    /// The run's scripts (operations), in the order the source's tallies index them.
    pub scripts: Vec<String>,
    pub clients: usize,
    /// Operations follow a schedule: their lag behind it is a series.
    pub scheduled: bool,
    /// The first `rows` scripts count rows: their row series start at zero.
    pub rows: usize,
}

impl Sampler {
    pub fn start(feed: RunFeed, described: Described, mut source: impl Source) -> Sampler {
        feed.start_described(described.scripts, described.clients, described.scheduled);
        if described.rows > 0 {
            feed.rows(&vec![0; described.rows]);
        }
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let (done, feed) = (done.clone(), feed.clone());
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut index = 0;
                loop {
                    let next = started + Duration::from_secs(index + 1);
                    let finished = wait_until(&done, next);
                    pass_on(&feed, index, source.take());
                    if finished {
                        return;
                    }
                    index += 1;
                }
            })
        };
        Sampler {
            done,
            thread: Some(thread),
            feed,
        }
    }

    /// The run ended: the last numbers are passed on, then the run's end.
    pub fn finish(mut self, failed: bool) {
        self.stop();
        self.feed.end(failed);
    }

    fn stop(&mut self) {
        let (lock, wake) = &*self.done;
        *lock.lock().expect("no thread panics holding it") = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Sampler {
    /// A run that returned early (an error) still stops its thread; its series end failed.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop();
            self.feed.end(true);
        }
    }
}

/// Sleeps until `next` or until told the run is done; whether it is.
fn wait_until(done: &(Mutex<bool>, Condvar), next: Instant) -> bool {
    let (lock, wake) = done;
    let mut finished = lock.lock().expect("no thread panics holding it");
    while !*finished {
        let now = Instant::now();
        if now >= next {
            return false;
        }
        finished = wake
            .wait_timeout(finished, next - now)
            .expect("no thread panics holding it")
            .0;
    }
    true
}

fn pass_on(feed: &RunFeed, index: u64, gathered: Gathered) {
    let end_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    feed.rows(&gathered.rows);
    feed.interval(&IntervalReport {
        index,
        stats: gathered.stats,
        end_unix_s,
        scripts: gathered.scripts,
        by_pod: Vec::new(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_keeps_failures_by_kind_and_sqlstate_class() {
        let tally = Tally::new(2);
        tally.committed(0, 1, Duration::from_millis(3), 2);
        tally.failed(1, 1, Some("40001"), 1);
        tally.failed(1, 0, Some("23505"), 0);
        tally.failed(0, 0, Some("23503"), 0);
        tally.failed(0, 0, None, 0);
        tally.rows(1, 0, 50);
        let mut source = tally.clone();
        let gathered = source.take();
        assert_eq!(gathered.stats.latency.count, 1);
        assert_eq!(gathered.stats.statements, 3);
        assert_eq!(gathered.scripts[1].failures.serialization, 1);
        let other = &gathered.scripts[0].failures;
        assert_eq!(other.other, 3);
        assert_eq!(other.classes.iter().collect::<Vec<_>>(), [(*b"23", 2)]);
        assert_eq!(
            gathered.scripts[1].failures.classes.iter().count(),
            0,
            "40001 is a kind"
        );
        assert_eq!(gathered.rows, vec![50]);
        assert_eq!(source.take().stats.latency.count, 0, "taken once");
    }
}
