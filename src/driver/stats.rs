//! Latency accounting: an HDR histogram plus exact sums (pgbench's average and stddev come from
//! sums, not from histogram buckets). Everything merges, so threads never share state.

use hdrhistogram::Histogram;
pub use stampede_wire::FailureKind;

/// Longest latency the histograms hold exactly: one hour, in microseconds. Longer ones are
/// clamped to it (and still counted in the sums exactly).
const MAX_TRACKED_US: u64 = 3_600_000_000;

#[derive(Debug, Clone)]
pub struct LatencyStats {
    pub histogram: Histogram<u64>,
    pub count: u64,
    pub sum_us: f64,
    pub sum_sq_us: f64,
    pub max_us: f64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            histogram: Histogram::new_with_bounds(1, MAX_TRACKED_US, 3)
                .expect("valid histogram bounds"),
            count: 0,
            sum_us: 0.0,
            sum_sq_us: 0.0,
            max_us: 0.0,
        }
    }
}

impl LatencyStats {
    pub fn record(&mut self, latency_us: f64) {
        let clamped = (latency_us.round() as u64).clamp(1, MAX_TRACKED_US);
        self.histogram
            .record(clamped)
            .expect("value clamped into bounds");
        self.count += 1;
        self.sum_us += latency_us;
        self.sum_sq_us += latency_us * latency_us;
        if latency_us > self.max_us {
            self.max_us = latency_us;
        }
    }

    /// `count` transactions of one latency (a coarser histogram's bucket read into this one).
    pub fn record_n(&mut self, latency_us: f64, count: u64) {
        let clamped = (latency_us.round() as u64).clamp(1, MAX_TRACKED_US);
        self.histogram
            .record_n(clamped, count)
            .expect("value clamped into bounds");
        self.count += count;
        self.sum_us += latency_us * count as f64;
        self.sum_sq_us += latency_us * latency_us * count as f64;
        if count > 0 && latency_us > self.max_us {
            self.max_us = latency_us;
        }
    }

    pub fn merge(&mut self, other: &LatencyStats) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms share bounds");
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.sum_sq_us += other.sum_sq_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_us / self.count as f64
        }
    }

    /// Population standard deviation, as pgbench computes it.
    pub fn stddev_us(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let mean = self.mean_us();
        (self.sum_sq_us / self.count as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }

    pub fn percentile_us(&self, percentile: f64) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            // A bucket's upper bound can pass the exact maximum.
            (self.histogram.value_at_quantile(percentile / 100.0) as f64).min(self.max_us)
        }
    }
}

/// Failures pgbench counts instead of aborting the client: serialization and deadlock failures
/// that were not (or no longer) retried, and with `--continue-on-error` any other SQL error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCounts {
    pub serialization: u64,
    pub deadlock: u64,
    pub other: u64,
    /// Of `other`, those whose SQLSTATE is known, by class.
    pub classes: OtherClasses,
}

impl FailureCounts {
    pub fn total(&self) -> u64 {
        self.serialization + self.deadlock + self.other
    }

    pub fn merge(&mut self, other: &FailureCounts) {
        self.serialization += other.serialization;
        self.deadlock += other.deadlock;
        self.other += other.other;
        self.classes.merge(&other.classes);
    }

    /// A failure of `kind`; an other one with its SQLSTATE's class when it has one.
    pub fn count(&mut self, kind: FailureKind, class: Option<SqlClass>) {
        match kind {
            FailureKind::Serialization => self.serialization += 1,
            FailureKind::Deadlock => self.deadlock += 1,
            FailureKind::Other => {
                self.other += 1;
                if let Some(class) = class {
                    self.classes.add(class, 1);
                }
            }
        }
    }
}

/// A SQLSTATE's class: its first two characters ("23": integrity constraint violation).
pub type SqlClass = [u8; 2];

/// The class of a SQLSTATE code (five digits or capitals), None for anything else.
pub fn sqlstate_class(sqlstate: &str) -> Option<SqlClass> {
    let code = sqlstate.as_bytes();
    let character = |c: &u8| c.is_ascii_digit() || c.is_ascii_uppercase();
    (code.len() == 5 && code.iter().all(character)).then(|| [code[0], code[1]])
}

/// Other failures by SQLSTATE class: the first `CLASSES` classes a run meets (its errors fall
/// in one or two), counted without an allocation; the rest stay in `other` alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OtherClasses {
    counts: [(SqlClass, u64); OtherClasses::CLASSES],
    len: usize,
}

impl OtherClasses {
    const CLASSES: usize = 4;

    pub fn add(&mut self, class: SqlClass, count: u64) {
        let held = &mut self.counts[..self.len];
        if let Some(entry) = held.iter_mut().find(|(c, _)| *c == class) {
            entry.1 += count;
        } else if self.len < Self::CLASSES {
            self.counts[self.len] = (class, count);
            self.len += 1;
        }
    }

    pub fn merge(&mut self, other: &OtherClasses) {
        other
            .iter()
            .for_each(|(class, count)| self.add(class, count));
    }

    /// (class, count), in the order first met.
    pub fn iter(&self) -> impl Iterator<Item = (SqlClass, u64)> + '_ {
        self.counts[..self.len].iter().copied()
    }

    /// The class as text ("23").
    pub fn name(class: SqlClass) -> String {
        String::from_utf8_lossy(&class).into_owned()
    }
}

/// `-r`: one script command's time (successful executions only), and the failures and retries
/// that started at it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommandStats {
    pub count: u64,
    pub sum_us: f64,
    pub failures: u64,
    pub retries: u64,
}

impl CommandStats {
    pub fn merge(&mut self, other: &CommandStats) {
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.failures += other.failures;
        self.retries += other.retries;
    }

    pub fn mean_ms(&self) -> f64 {
        self.mean_us() / 1000.0
    }

    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_us / self.count as f64
        }
    }
}

/// With `-R`: how late transactions started against their Poisson schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LagStats {
    pub count: u64,
    pub sum_us: f64,
    pub max_us: f64,
}

impl LagStats {
    pub fn record(&mut self, lag_us: f64) {
        self.count += 1;
        self.sum_us += lag_us;
        self.max_us = self.max_us.max(lag_us);
    }

    pub fn merge(&mut self, other: &LagStats) {
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_us / self.count as f64
        }
    }
}

/// One script's counts within one interval: the per-second series by script (a live scrape's
/// `script` label, TPC-C's new orders) without a histogram per script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptTally {
    pub committed: u64,
    pub failures: FailureCounts,
    pub statements: u64,
}

impl ScriptTally {
    pub fn merge(&mut self, other: &ScriptTally) {
        self.committed += other.committed;
        self.failures.merge(&other.failures);
        self.statements += other.statements;
    }
}

/// Adds `from` into `into` script by script, growing `into` to `from`'s length.
pub fn merge_tallies(into: &mut Vec<ScriptTally>, from: &[ScriptTally]) {
    if into.len() < from.len() {
        into.resize(from.len(), ScriptTally::default());
    }
    into.iter_mut().zip(from).for_each(|(i, f)| i.merge(f));
}

/// What one script accumulated: latency of successful transactions, failures, and with `-R`
/// / `-L` the schedule lag, skipped and late transactions.
#[derive(Debug, Clone, Default)]
pub struct ScriptStats {
    pub latency: LatencyStats,
    pub failures: FailureCounts,
    pub lag: LagStats,
    /// `-R` with `-L`: transactions not sent because they were already later than the limit.
    pub skipped: u64,
    /// `-L`: successful transactions whose latency exceeded the limit.
    pub late: u64,
    /// `--max-tries`: transactions that needed more than one try (successful or not), and the
    /// retries they made in all.
    pub retried: u64,
    pub retries: u64,
    /// Connections re-established after the server dropped one (`ErrorPolicy::reconnect`).
    pub reconnects: u64,
    /// SQL statements that completed, in transactions and in the closing script.
    pub statements: u64,
}

impl ScriptStats {
    pub fn merge(&mut self, other: &ScriptStats) {
        self.latency.merge(&other.latency);
        self.failures.merge(&other.failures);
        self.lag.merge(&other.lag);
        self.skipped += other.skipped;
        self.late += other.late;
        self.retried += other.retried;
        self.retries += other.retries;
        self.reconnects += other.reconnects;
        self.statements += other.statements;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_failures_keep_their_first_classes_and_merge_by_class() {
        let mut counts = FailureCounts::default();
        for code in [
            "23505", "22012", "23503", "40001", "XX000", "42P01", "53100",
        ] {
            let class = sqlstate_class(code);
            counts.count(FailureKind::of_sqlstate(code), class);
        }
        counts.count(FailureKind::Other, None);
        assert_eq!((counts.serialization, counts.other), (1, 7));
        let named: Vec<(String, u64)> = counts
            .classes
            .iter()
            .map(|(class, n)| (OtherClasses::name(class), n))
            .collect();
        // Four classes are kept; 53 comes fifth and is counted in `other` alone.
        let expected = [("23", 2), ("22", 1), ("XX", 1), ("42", 1)];
        assert_eq!(named, expected.map(|(c, n)| (c.to_string(), n)));
        let mut merged = counts;
        merged.merge(&counts);
        assert_eq!(merged.classes.iter().next(), Some((*b"23", 4)));
        assert_eq!(sqlstate_class("5701"), None);
        assert_eq!(sqlstate_class("error"), None);
        assert_eq!(sqlstate_class("HV00R"), Some(*b"HV"));
    }

    #[test]
    fn mean_and_stddev_are_exact() {
        let mut stats = LatencyStats::default();
        for v in [100.0, 200.0, 300.0] {
            stats.record(v);
        }
        assert_eq!(stats.mean_us(), 200.0);
        assert!((stats.stddev_us() - 81.6496580927726).abs() < 1e-9);
        assert_eq!(stats.max_us, 300.0);
    }

    #[test]
    fn merging_adds_counts_and_percentiles() {
        let mut a = LatencyStats::default();
        let mut b = LatencyStats::default();
        (1..=50).for_each(|v| a.record(v as f64 * 10.0));
        (51..=100).for_each(|v| b.record(v as f64 * 10.0));
        a.merge(&b);
        assert_eq!(a.count, 100);
        let p50 = a.percentile_us(50.0);
        assert!((495.0..=505.0).contains(&p50), "{p50}");
        assert!((a.percentile_us(100.0) - 1000.0).abs() <= 1.0);
    }
}
