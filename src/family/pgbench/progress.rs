//! pgbench's `-P N` progress lines, from the driver's 1-second intervals.

use super::report::{progress_line, ProgressExtras};
use super::spec::RunSpec;
use crate::driver::{DriverEvent, ScriptStats};
use crate::family::common::measure::LatencySummary;

/// Aggregates 1-second intervals into pgbench's `-P N` progress lines.
pub struct ProgressPrinter {
    every: Option<u64>,
    /// With `-T`, the partial interval after the end is not a progress report.
    duration: Option<u64>,
    throttled: bool,
    limited: bool,
    retrying: bool,
    /// `--progress-timestamp`: Unix time instead of elapsed seconds.
    timestamps: bool,
    pending: ScriptStats,
}

impl ProgressPrinter {
    pub fn new(spec: &RunSpec) -> Self {
        ProgressPrinter {
            every: spec.progress_secs,
            duration: spec.duration_secs,
            throttled: spec.rate.is_some(),
            limited: spec.latency_limit_ms.is_some(),
            retrying: spec.errors.max_tries != 1,
            timestamps: spec.progress_timestamp,
            pending: ScriptStats::default(),
        }
    }

    pub fn observe(&mut self, event: &DriverEvent<'_>) {
        let (Some(every), DriverEvent::Interval(report)) = (self.every, event) else {
            return;
        };
        self.pending.merge(&report.stats);
        let elapsed = report.index + 1;
        if elapsed % every == 0 && self.duration.is_none_or(|d| elapsed <= d) {
            let stats = std::mem::take(&mut self.pending);
            let at = if self.timestamps {
                format!("{:.3} s", report.end_unix_s)
            } else {
                format!("{:.1} s", elapsed as f64)
            };
            eprintln!(
                "{}",
                progress_line(
                    &at,
                    stats.latency.count as f64 / every as f64,
                    &LatencySummary::of(&stats.latency),
                    stats.failures.total(),
                    ProgressExtras {
                        lag_ms: self.throttled.then(|| stats.lag.mean_us() / 1000.0),
                        skipped: (self.throttled && self.limited).then_some(stats.skipped),
                        retried: self.retrying.then_some((stats.retried, stats.retries)),
                    },
                )
            );
        }
    }
}
