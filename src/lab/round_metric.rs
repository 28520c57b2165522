//! The number an auto lab's rounds and a bisection's steps are judged on: tps, p99 or the
//! server's CPU per transaction, read from each completed run's summary.

use crate::report::comparison::Metric;
use stampede_stats::verdict::Direction;
use stampede_store::RunSummary;

/// The number a round's judgement reads from each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMetric {
    Tps,
    /// The 99th percentile latency, in ms.
    P99,
    /// The server processes' CPU µs per transaction: the work itself, which a busy neighbour
    /// moves less than throughput (bench/metric_noise.py).
    ServerCpu,
}

/// A name rounds cannot be decided on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRoundMetric(pub String);

impl std::fmt::Display for UnknownRoundMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown metric \"{}\"; rounds are decided on tps, p99 or server_cpu",
            self.0
        )
    }
}

impl From<UnknownRoundMetric> for stampede_base::error::Failure {
    /// The user's `--metric` or `decide_on` to fix.
    fn from(error: UnknownRoundMetric) -> stampede_base::error::Failure {
        stampede_base::error::Failure::input(error.to_string())
    }
}

impl RoundMetric {
    /// What `decide_on` and `bisect --metric` take.
    pub fn parse(name: &str) -> Result<RoundMetric, UnknownRoundMetric> {
        match name {
            "tps" => Ok(RoundMetric::Tps),
            "p99" => Ok(RoundMetric::P99),
            "server_cpu" => Ok(RoundMetric::ServerCpu),
            other => Err(UnknownRoundMetric(other.into())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RoundMetric::Tps => "tps",
            RoundMetric::P99 => "p99",
            RoundMetric::ServerCpu => "server_cpu",
        }
    }

    /// The round metric of a report metric, for those a round's judgement reads.
    pub fn of_metric(metric: &Metric) -> Option<RoundMetric> {
        match metric {
            Metric::Tps => Some(RoundMetric::Tps),
            Metric::P99 => Some(RoundMetric::P99),
            Metric::ServerCpu => Some(RoundMetric::ServerCpu),
            _ => None,
        }
    }

    pub fn of(self, run: &RunSummary) -> Option<f64> {
        match self {
            RoundMetric::Tps => run.tps,
            RoundMetric::P99 => run.p99_ms,
            RoundMetric::ServerCpu => run.server_cpu_us_per_txn,
        }
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            RoundMetric::Tps => Direction::HigherIsBetter,
            RoundMetric::P99 | RoundMetric::ServerCpu => Direction::LowerIsBetter,
        }
    }
}
