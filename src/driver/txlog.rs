//! `-l`: pgbench's transaction log files, one per thread, in pgbench's exact layouts, so tools
//! that read pgbench logs read ours.
//!
//! Per transaction: `client_id transaction_no latency script_no epoch_s epoch_us [lag] [retries]`,
//! where latency (µs) is replaced by `skipped`, `failed` or, with `--failures-detailed`, the
//! failure kind. With `--aggregate-interval`: `interval_start count sum sum2 min max lag_sum
//! lag_sum2 lag_min lag_max skipped retried retries serialization_failures deadlock_failures
//! other_sql_failures`, as pgbench 19 writes it (15–18 had no `other_sql_failures` column; the
//! failure columns are zeros without `--failures-detailed`).
//!
//! Each thread writes its own buffered file from its own runtime, so logging adds no
//! cross-thread traffic to the transaction path.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::plan::{RunPlan, TxnLogSpec};
use super::stats::FailureKind;
use stampede_script::prng::PgPrng;

/// How a logged transaction ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoggedOutcome {
    Committed { latency_us: f64, lag_us: f64 },
    Failed(FailureKind),
    Skipped,
}

#[derive(Debug, Clone, Copy)]
pub struct LogEntry {
    pub client_id: usize,
    /// The client's count of processed transactions (committed, failed and skipped), from 1.
    pub transaction_no: u64,
    pub script: usize,
    pub outcome: LoggedOutcome,
    pub tries: u32,
    pub at: Instant,
}

/// Converts monotonic instants to Unix time, from one reading of both clocks.
#[derive(Debug, Clone, Copy)]
pub struct EpochClock {
    instant: Instant,
    unix_us: i64,
}

impl EpochClock {
    pub fn now() -> EpochClock {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        EpochClock {
            instant: Instant::now(),
            unix_us: unix.as_micros() as i64,
        }
    }

    pub fn unix_us(&self, at: Instant) -> i64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.unix_us + after.as_micros() as i64,
            None => self.unix_us - (self.instant - at).as_micros() as i64,
        }
    }
}

/// pgbench's SimpleStats: count, min, max, sum and sum of squares.
#[derive(Debug, Clone, Copy, Default)]
struct SimpleStats {
    count: u64,
    min: f64,
    max: f64,
    sum: f64,
    sum2: f64,
}

impl SimpleStats {
    fn add(&mut self, value: f64) {
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        if self.count == 0 || value > self.max {
            self.max = value;
        }
        self.count += 1;
        self.sum += value;
        self.sum2 += value * value;
    }
}

/// One `--aggregate-interval` line's worth of transactions.
#[derive(Debug, Clone, Copy, Default)]
struct Aggregate {
    start_us: i64,
    committed: u64,
    latency: SimpleStats,
    lag: SimpleStats,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
    other: u64,
}

/// Which optional fields the run's options switch on, as pgbench decides them.
#[derive(Debug, Clone, Copy)]
struct Fields {
    throttled: bool,
    latency_limited: bool,
    retries: bool,
    failures_detailed: bool,
}

pub struct TxnLog {
    path: String,
    out: BufWriter<File>,
    fields: Fields,
    clock: EpochClock,
    sampling_rate: Option<f64>,
    sampler: PgPrng,
    interval_us: Option<i64>,
    aggregate: Aggregate,
}

/// A log file that could not be opened or written (a bad directory, a full disk): the run
/// ends, naming the file, in pgbench's words for the opening.
#[derive(Debug)]
pub struct LogError {
    pub path: String,
    pub opening: bool,
    pub source: std::io::Error,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, source) = (&self.path, &self.source);
        if self.opening {
            write!(f, "could not open logfile \"{path}\": {source}")
        } else {
            write!(
                f,
                "could not write the transaction log \"{path}\": {source}"
            )
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl TxnLog {
    /// Creates the thread's log file (pgbench opens it before connecting).
    pub fn create(
        plan: &RunPlan,
        spec: &TxnLogSpec,
        thread: usize,
        sampler: PgPrng,
        clock: EpochClock,
    ) -> Result<TxnLog, LogError> {
        let path = spec.path(thread);
        let file = File::create(&path).map_err(|source| LogError {
            path: path.clone(),
            opening: true,
            source,
        })?;
        Ok(TxnLog {
            path,
            out: BufWriter::with_capacity(64 * 1024, file),
            fields: Fields {
                throttled: plan.rate.is_some(),
                latency_limited: plan.latency_limit.is_some(),
                retries: plan.errors.max_tries != 1,
                failures_detailed: spec.failures_detailed,
            },
            clock,
            sampling_rate: spec.sampling_rate,
            sampler,
            interval_us: spec.aggregate_interval.map(|s| s as i64 * 1_000_000),
            aggregate: Aggregate::default(),
        })
    }

    /// The first aggregate starts at the whole Unix second in which the thread started.
    pub fn start(&mut self, at: Instant) {
        self.aggregate.start_us = self.clock.unix_us(at) / 1_000_000 * 1_000_000;
    }

    /// Logs one transaction; a write that fails (a full disk) is an error naming the file.
    pub fn record(&mut self, entry: &LogEntry) -> Result<(), LogError> {
        if let Some(rate) = self.sampling_rate {
            if self.sampler.next_f64() > rate {
                return Ok(());
            }
        }
        let now_us = self.clock.unix_us(entry.at);
        let written = match self.interval_us {
            Some(interval) => {
                let flushed = self.flush_intervals_before(now_us, interval);
                self.accumulate(entry);
                flushed
            }
            None => self.write_transaction(entry, now_us),
        };
        written.map_err(|e| self.write_error(e))
    }

    /// Writes the intervals that ended by `at` and closes the file. As in pgbench, the last,
    /// incomplete interval is not written.
    pub fn finish(mut self, at: Instant) -> Result<(), LogError> {
        let mut written = Ok(());
        if let Some(interval) = self.interval_us {
            let now_us = self.clock.unix_us(at);
            written = self.flush_intervals_before(now_us, interval);
        }
        written
            .and_then(|()| self.out.flush())
            .map_err(|e| self.write_error(e))
    }

    fn write_error(&self, source: std::io::Error) -> LogError {
        LogError {
            path: self.path.clone(),
            opening: false,
            source,
        }
    }

    fn write_transaction(&mut self, entry: &LogEntry, now_us: i64) -> std::io::Result<()> {
        let fields = self.fields;
        let out = &mut self.out;
        let (latency, lag) = match entry.outcome {
            LoggedOutcome::Committed { latency_us, lag_us } => (format!("{latency_us:.0}"), lag_us),
            LoggedOutcome::Skipped => ("skipped".to_string(), 0.0),
            LoggedOutcome::Failed(kind) if fields.failures_detailed => {
                (kind.log_name().to_string(), 0.0)
            }
            LoggedOutcome::Failed(_) => ("failed".to_string(), 0.0),
        };
        write!(
            out,
            "{} {} {latency} {} {} {}",
            entry.client_id,
            entry.transaction_no,
            entry.script,
            now_us.div_euclid(1_000_000),
            now_us.rem_euclid(1_000_000)
        )?;
        if fields.throttled {
            write!(out, " {lag:.0}")?;
        }
        if fields.retries {
            write!(out, " {}", entry.tries.saturating_sub(1))?;
        }
        out.write_all(b"\n")
    }

    /// pgbench's accumStats.
    fn accumulate(&mut self, entry: &LogEntry) {
        let agg = &mut self.aggregate;
        if entry.outcome == LoggedOutcome::Skipped {
            agg.skipped += 1;
            return;
        }
        if entry.tries > 1 {
            agg.retried += 1;
            agg.retries += u64::from(entry.tries - 1);
        }
        match entry.outcome {
            LoggedOutcome::Committed { latency_us, lag_us } => {
                agg.committed += 1;
                agg.latency.add(latency_us);
                if self.fields.throttled {
                    agg.lag.add(lag_us);
                }
            }
            LoggedOutcome::Failed(FailureKind::Serialization) => agg.serialization += 1,
            LoggedOutcome::Failed(FailureKind::Deadlock) => agg.deadlock += 1,
            LoggedOutcome::Failed(FailureKind::Other) => agg.other += 1,
            LoggedOutcome::Skipped => unreachable!("handled above"),
        }
    }

    /// Writes every interval that ended by `now_us`, empty ones included.
    fn flush_intervals_before(&mut self, now_us: i64, interval_us: i64) -> std::io::Result<()> {
        while self.aggregate.start_us + interval_us <= now_us {
            self.write_aggregate()?;
            self.aggregate = Aggregate {
                start_us: self.aggregate.start_us + interval_us,
                ..Aggregate::default()
            };
        }
        Ok(())
    }

    fn write_aggregate(&mut self) -> std::io::Result<()> {
        let agg = &self.aggregate;
        let fields = self.fields;
        let (lag, skipped) = (
            if fields.throttled {
                agg.lag
            } else {
                SimpleStats::default()
            },
            if fields.latency_limited {
                agg.skipped
            } else {
                0
            },
        );
        let (retried, retries) = if fields.retries {
            (agg.retried, agg.retries)
        } else {
            (0, 0)
        };
        let (serialization, deadlock, other) = if fields.failures_detailed {
            (agg.serialization, agg.deadlock, agg.other)
        } else {
            (0, 0, 0)
        };
        write!(
            self.out,
            "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {skipped} {retried} {retries} {serialization} {deadlock}",
            agg.start_us / 1_000_000,
            agg.committed,
            agg.latency.sum,
            agg.latency.sum2,
            agg.latency.min,
            agg.latency.max,
            lag.sum,
            lag.sum2,
            lag.min,
            lag.max,
        )?;
        writeln!(self.out, " {other}")
    }
}
