//! What a replay measured, per session and merged: each statement shape's latencies, the
//! schedule lag, errors by SQLSTATE against the capture's, and statements not sent.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

/// A statement sent later than this after its captured time is late.
pub const LATE_US: u64 = 10_000;

/// A session could not keep up when more than this share of its statements was late.
pub const BEHIND_SHARE: f64 = 0.10;

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("constant bounds: low 1, high above 2 * low, 3 digits")
}

#[derive(Debug)]
pub struct Outcome {
    /// Latency in µs per statement shape (index into the plan's shapes).
    pub latency: BTreeMap<u32, Histogram<u64>>,
    /// Errors per shape.
    pub shape_errors: BTreeMap<u32, u64>,
    /// How late each statement was sent against its captured time, µs (none at speed 0).
    pub lag: Histogram<u64>,
    pub late: u64,
    /// Statements sent and answered.
    pub replayed: u64,
    /// Statements not sent: the session could not connect, lost its connection, or stopped.
    pub not_sent: u64,
    /// SQLSTATE → errors the replay met.
    pub errors: BTreeMap<String, u64>,
    /// Statements that failed in the replay but not in the capture, and the reverse.
    pub new_errors: u64,
    pub gone_errors: u64,
    /// Transactions that ended (a statement after which the session was idle again).
    pub transactions: u64,
    /// Transactions that ended in each second of the replay.
    pub per_second: Vec<u64>,
    /// The latency of the statements answered in each second, µs.
    pub per_second_latency: Vec<Histogram<u64>>,
    pub sessions: u64,
    /// Sessions more than BEHIND_SHARE of whose statements were late.
    pub behind: u64,
    /// Sessions that could not connect or lost their connection, with the first reason.
    pub failed_sessions: u64,
    pub first_failure: Option<String>,
    /// The first error a statement met that the capture's did not, with its statement.
    pub first_new_error: Option<String>,
    pub client_cpu: Duration,
}

impl Default for Outcome {
    fn default() -> Outcome {
        Outcome {
            latency: BTreeMap::new(),
            shape_errors: BTreeMap::new(),
            lag: histogram(),
            late: 0,
            replayed: 0,
            not_sent: 0,
            errors: BTreeMap::new(),
            new_errors: 0,
            gone_errors: 0,
            transactions: 0,
            per_second: Vec::new(),
            per_second_latency: Vec::new(),
            sessions: 0,
            behind: 0,
            failed_sessions: 0,
            first_failure: None,
            first_new_error: None,
            client_cpu: Duration::ZERO,
        }
    }
}

impl Outcome {
    /// A statement of `shape` answered after `micros`, in second `second` of the replay.
    pub fn record_latency(&mut self, shape: u32, micros: u64, second: usize) {
        self.latency
            .entry(shape)
            .or_insert_with(histogram)
            .saturating_record(micros.max(1));
        while self.per_second_latency.len() <= second {
            self.per_second_latency.push(histogram());
        }
        self.per_second_latency[second].saturating_record(micros.max(1));
    }

    /// Every statement's latency together.
    pub fn all_latency(&self) -> Histogram<u64> {
        let mut all = histogram();
        for h in self.latency.values() {
            all.add(h)
                .expect("a replay's histograms all have the same bounds");
        }
        all
    }

    pub fn record_lag(&mut self, micros: u64) {
        self.lag.saturating_record(micros.max(1));
        if micros > LATE_US {
            self.late += 1;
        }
    }

    pub fn transaction_at(&mut self, second: usize) {
        self.transactions += 1;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += 1;
    }

    /// Adds another session's (or thread's) outcome.
    pub fn merge(&mut self, other: Outcome) {
        for (shape, histogram) in other.latency {
            let mine = self.latency.entry(shape).or_insert_with(self::histogram);
            mine.add(&histogram)
                .expect("a replay's histograms all have the same bounds");
        }
        for (shape, n) in other.shape_errors {
            *self.shape_errors.entry(shape).or_default() += n;
        }
        self.lag
            .add(&other.lag)
            .expect("a replay's histograms all have the same bounds");
        self.late += other.late;
        self.replayed += other.replayed;
        self.not_sent += other.not_sent;
        for (code, n) in other.errors {
            *self.errors.entry(code).or_default() += n;
        }
        self.new_errors += other.new_errors;
        self.gone_errors += other.gone_errors;
        self.transactions += other.transactions;
        if self.per_second.len() < other.per_second.len() {
            self.per_second.resize(other.per_second.len(), 0);
        }
        for (mine, theirs) in self.per_second.iter_mut().zip(other.per_second) {
            *mine += theirs;
        }
        for (second, theirs) in other.per_second_latency.into_iter().enumerate() {
            if self.per_second_latency.len() <= second {
                self.per_second_latency.push(theirs);
            } else {
                self.per_second_latency[second]
                    .add(&theirs)
                    .expect("a replay's histograms all have the same bounds");
            }
        }
        self.sessions += other.sessions;
        self.behind += other.behind;
        self.failed_sessions += other.failed_sessions;
        self.first_failure = self.first_failure.take().or(other.first_failure);
        self.first_new_error = self.first_new_error.take().or(other.first_new_error);
        self.client_cpu += other.client_cpu;
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Errors by SQLSTATE class (its first two characters), as the fidelity summary names
    /// them: "22 (data exception) 3".
    pub fn error_classes(&self) -> BTreeMap<String, u64> {
        let mut classes = BTreeMap::new();
        for (code, n) in &self.errors {
            let class = code.get(..2).unwrap_or(code).to_string();
            *classes.entry(class).or_default() += n;
        }
        classes
    }
}

/// The name of a SQLSTATE class (PostgreSQL's Appendix A), for the ones a replay meets.
pub fn class_name(class: &str) -> &'static str {
    match class {
        "08" => "connection exception",
        "0A" => "feature not supported",
        "21" => "cardinality violation",
        "22" => "data exception",
        "23" => "integrity constraint violation",
        "25" => "invalid transaction state",
        "26" => "invalid SQL statement name",
        "28" => "invalid authorization",
        "2B" => "dependent privilege descriptors still exist",
        "34" => "invalid cursor name",
        "3D" => "invalid catalog name",
        "3F" => "invalid schema name",
        "40" => "transaction rollback",
        "42" => "syntax error or access rule violation",
        "53" => "insufficient resources",
        "54" => "program limit exceeded",
        "55" => "object not in prerequisite state",
        "57" => "operator intervention",
        "58" => "system error",
        "P0" => "PL/pgSQL error",
        "XX" => "internal error",
        _ => "other",
    }
}
