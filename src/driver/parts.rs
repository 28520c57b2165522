//! A spread run's parts: one process's `RunResult` (or one interval's stats) as JSON for the
//! coordinator, and the merge of the parts into the run's result. Histograms travel as their
//! non-empty buckets and are rebuilt bucket for bucket, so the merged histogram is the one a
//! single process recording every transaction would hold; sums travel as exact floats.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::stats::{LagStats, OtherClasses};
use super::{
    merge_tallies, CommandStats, FailureCounts, IntervalReport, LatencyStats, RunResult,
    ScriptStats, ScriptTally,
};
use stampede_base::cpu::CpuTimes;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct LatencyPart {
    /// (a value in the bucket, its count) for every non-empty bucket.
    buckets: Vec<(u64, u64)>,
    count: u64,
    sum_us: f64,
    sum_sq_us: f64,
    max_us: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatsPart {
    latency: LatencyPart,
    /// Serialization, deadlock, other.
    failures: [u64; 3],
    /// Of the other failures, by SQLSTATE class.
    #[serde(default)]
    failure_classes: Vec<(String, u64)>,
    /// Lag count, sum and maximum.
    lag: (u64, f64, f64),
    skipped: u64,
    late: u64,
    retried: u64,
    retries: u64,
    reconnects: u64,
    statements: u64,
}

/// One interval of one process: a spread run's pods send it as the interval closes, and keep
/// it in their result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalPart {
    index: u64,
    end_unix_s: f64,
    stats: StatsPart,
    /// By script: committed, serialization, deadlock and other failures, statements.
    #[serde(default)]
    scripts: Vec<[u64; 5]>,
    /// By script: the other failures by SQLSTATE class.
    #[serde(default)]
    script_classes: Vec<Vec<(String, u64)>>,
}

impl IntervalPart {
    pub fn of(report: &IntervalReport) -> IntervalPart {
        IntervalPart {
            index: report.index,
            end_unix_s: report.end_unix_s,
            stats: StatsPart::of(&report.stats),
            scripts: report
                .scripts
                .iter()
                .map(|t| {
                    let f = &t.failures;
                    [
                        t.committed,
                        f.serialization,
                        f.deadlock,
                        f.other,
                        t.statements,
                    ]
                })
                .collect(),
            script_classes: report
                .scripts
                .iter()
                .map(|t| classes_part(&t.failures.classes))
                .collect(),
        }
    }

    pub fn report(&self) -> IntervalReport {
        IntervalReport {
            index: self.index,
            stats: self.stats.stats(),
            end_unix_s: self.end_unix_s,
            scripts: self
                .scripts
                .iter()
                .enumerate()
                .map(
                    |(i, &[committed, serialization, deadlock, other, statements])| ScriptTally {
                        committed,
                        failures: FailureCounts {
                            serialization,
                            deadlock,
                            other,
                            classes: classes_of(self.script_classes.get(i)),
                        },
                        statements,
                    },
                )
                .collect(),
            by_pod: Vec::new(),
        }
    }
}

fn classes_part(classes: &OtherClasses) -> Vec<(String, u64)> {
    let named = classes
        .iter()
        .map(|(class, n)| (OtherClasses::name(class), n));
    named.collect()
}

fn classes_of(part: Option<&Vec<(String, u64)>>) -> OtherClasses {
    let mut classes = OtherClasses::default();
    for (name, count) in part.into_iter().flatten() {
        if let [a, b] = *name.as_bytes() {
            classes.add([a, b], *count);
        }
    }
    classes
}

/// One process's share of a run's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultPart {
    total: StatsPart,
    per_script: Vec<StatsPart>,
    bench_duration_us: u64,
    initial_connection_us: u64,
    reconnection_us: u64,
    reconnections: u64,
    aborted_clients: usize,
    intervals: Vec<IntervalPart>,
    cpu_user_us: u64,
    cpu_system_us: u64,
    /// Per script and command: count, summed µs, failures, retries.
    command_stats: Vec<Vec<(u64, f64, u64, u64)>>,
    /// The whole run's clients, zero for the other parts' ones.
    client_transactions: Vec<u64>,
    client_busy_us: Vec<f64>,
}

impl StatsPart {
    pub fn of(stats: &ScriptStats) -> StatsPart {
        let histogram = &stats.latency.histogram;
        StatsPart {
            latency: LatencyPart {
                buckets: histogram
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect(),
                count: stats.latency.count,
                sum_us: stats.latency.sum_us,
                sum_sq_us: stats.latency.sum_sq_us,
                max_us: stats.latency.max_us,
            },
            failures: [
                stats.failures.serialization,
                stats.failures.deadlock,
                stats.failures.other,
            ],
            failure_classes: classes_part(&stats.failures.classes),
            lag: (stats.lag.count, stats.lag.sum_us, stats.lag.max_us),
            skipped: stats.skipped,
            late: stats.late,
            retried: stats.retried,
            retries: stats.retries,
            reconnects: stats.reconnects,
            statements: stats.statements,
        }
    }

    pub fn stats(&self) -> ScriptStats {
        let mut latency = LatencyStats::default();
        fill(&mut latency.histogram, &self.latency.buckets);
        latency.count = self.latency.count;
        latency.sum_us = self.latency.sum_us;
        latency.sum_sq_us = self.latency.sum_sq_us;
        latency.max_us = self.latency.max_us;
        let [serialization, deadlock, other] = self.failures;
        ScriptStats {
            latency,
            failures: FailureCounts {
                serialization,
                deadlock,
                other,
                classes: classes_of(Some(&self.failure_classes)),
            },
            lag: LagStats {
                count: self.lag.0,
                sum_us: self.lag.1,
                max_us: self.lag.2,
            },
            skipped: self.skipped,
            late: self.late,
            retried: self.retried,
            retries: self.retries,
            reconnects: self.reconnects,
            statements: self.statements,
        }
    }
}

fn fill(histogram: &mut Histogram<u64>, buckets: &[(u64, u64)]) {
    for &(value, count) in buckets {
        // Every value came out of a histogram with the same bounds.
        let _ = histogram.record_n(value, count);
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl ResultPart {
    pub fn of(result: &RunResult) -> ResultPart {
        ResultPart {
            total: StatsPart::of(&result.total),
            per_script: result.per_script.iter().map(StatsPart::of).collect(),
            bench_duration_us: micros(result.bench_duration),
            initial_connection_us: micros(result.initial_connection_time),
            reconnection_us: micros(result.reconnection_time),
            reconnections: result.reconnections,
            aborted_clients: result.aborted_clients,
            intervals: result.intervals.iter().map(IntervalPart::of).collect(),
            cpu_user_us: micros(result.client_cpu.user),
            cpu_system_us: micros(result.client_cpu.system),
            command_stats: result
                .command_stats
                .iter()
                .map(|script| {
                    script
                        .iter()
                        .map(|c| (c.count, c.sum_us, c.failures, c.retries))
                        .collect()
                })
                .collect(),
            client_transactions: result.client_transactions.clone(),
            client_busy_us: result.client_busy_us.clone(),
        }
    }

    pub fn result(&self) -> RunResult {
        RunResult {
            total: self.total.stats(),
            per_script: self.per_script.iter().map(StatsPart::stats).collect(),
            bench_duration: Duration::from_micros(self.bench_duration_us),
            initial_connection_time: Duration::from_micros(self.initial_connection_us),
            reconnection_time: Duration::from_micros(self.reconnection_us),
            reconnections: self.reconnections,
            aborted_clients: self.aborted_clients,
            intervals: self.intervals.iter().map(IntervalPart::report).collect(),
            client_cpu: CpuTimes {
                user: Duration::from_micros(self.cpu_user_us),
                system: Duration::from_micros(self.cpu_system_us),
            },
            command_stats: self
                .command_stats
                .iter()
                .map(|script| {
                    script
                        .iter()
                        .map(|&(count, sum_us, failures, retries)| CommandStats {
                            count,
                            sum_us,
                            failures,
                            retries,
                        })
                        .collect()
                })
                .collect(),
            client_transactions: self.client_transactions.clone(),
            client_busy_us: self.client_busy_us.clone(),
        }
    }
}

/// The run's result from its parts: statistics and histograms added, per-client counts put
/// together, intervals added by index (they count from the one agreed start), the window the
/// longest part's, client CPU the sum of the parts'.
pub fn merge(parts: &[RunResult]) -> Option<RunResult> {
    let first = parts.first()?;
    let mut merged = RunResult {
        total: ScriptStats::default(),
        per_script: vec![ScriptStats::default(); first.per_script.len()],
        bench_duration: Duration::ZERO,
        initial_connection_time: Duration::ZERO,
        reconnection_time: Duration::ZERO,
        reconnections: 0,
        aborted_clients: 0,
        intervals: Vec::new(),
        client_cpu: CpuTimes::default(),
        command_stats: first
            .command_stats
            .iter()
            .map(|s| vec![CommandStats::default(); s.len()])
            .collect(),
        client_transactions: vec![0; first.client_transactions.len()],
        client_busy_us: vec![0.0; first.client_busy_us.len()],
    };
    let mut intervals: std::collections::BTreeMap<u64, IntervalReport> = Default::default();
    for part in parts {
        merged.total.merge(&part.total);
        merged
            .per_script
            .iter_mut()
            .zip(&part.per_script)
            .for_each(|(m, p)| m.merge(p));
        merged.bench_duration = merged.bench_duration.max(part.bench_duration);
        merged.initial_connection_time = merged
            .initial_connection_time
            .max(part.initial_connection_time);
        merged.reconnection_time += part.reconnection_time;
        merged.reconnections += part.reconnections;
        merged.aborted_clients += part.aborted_clients;
        merged.client_cpu.user += part.client_cpu.user;
        merged.client_cpu.system += part.client_cpu.system;
        for (script, part_script) in merged.command_stats.iter_mut().zip(&part.command_stats) {
            script
                .iter_mut()
                .zip(part_script)
                .for_each(|(m, p)| m.merge(p));
        }
        add_each(&mut merged.client_transactions, &part.client_transactions);
        for (m, p) in merged.client_busy_us.iter_mut().zip(&part.client_busy_us) {
            *m += p;
        }
        for interval in &part.intervals {
            let slot = intervals
                .entry(interval.index)
                .or_insert_with(|| IntervalReport {
                    index: interval.index,
                    stats: ScriptStats::default(),
                    end_unix_s: interval.end_unix_s,
                    scripts: Vec::new(),
                    by_pod: Vec::new(),
                });
            slot.stats.merge(&interval.stats);
            merge_tallies(&mut slot.scripts, &interval.scripts);
            slot.end_unix_s = slot.end_unix_s.max(interval.end_unix_s);
        }
    }
    merged.intervals = intervals.into_values().collect();
    Some(merged)
}

fn add_each(into: &mut [u64], from: &[u64]) {
    into.iter_mut().zip(from).for_each(|(m, p)| *m += p);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(latencies: &[f64]) -> ScriptStats {
        let mut stats = ScriptStats::default();
        latencies.iter().for_each(|l| stats.latency.record(*l));
        stats.failures.deadlock = 1;
        stats.statements = latencies.len() as u64;
        stats
    }

    fn result(latencies: &[f64], clients: Vec<u64>, seconds: u64) -> RunResult {
        let total = stats(latencies);
        RunResult {
            per_script: vec![total.clone()],
            intervals: vec![IntervalReport {
                index: 0,
                stats: total.clone(),
                end_unix_s: 100.0 + seconds as f64,
                scripts: Vec::new(),
                by_pod: Vec::new(),
            }],
            total,
            bench_duration: Duration::from_secs(seconds),
            initial_connection_time: Duration::from_millis(3),
            reconnection_time: Duration::ZERO,
            reconnections: 0,
            aborted_clients: 0,
            client_cpu: CpuTimes {
                user: Duration::from_millis(10),
                system: Duration::from_millis(5),
            },
            command_stats: vec![vec![CommandStats {
                count: latencies.len() as u64,
                sum_us: latencies.iter().sum(),
                failures: 0,
                retries: 0,
            }]],
            client_busy_us: clients.iter().map(|c| *c as f64).collect(),
            client_transactions: clients,
        }
    }

    #[test]
    fn a_part_survives_its_journey_exactly() {
        let latencies: Vec<f64> = (1..2000).map(|i| (i * i) as f64 / 7.3).collect();
        let original = result(&latencies, vec![3, 0, 4], 10);
        let json = serde_json::to_string(&ResultPart::of(&original)).unwrap();
        let back: ResultPart = serde_json::from_str(&json).unwrap();
        let back = back.result();
        assert_eq!(
            back.total.latency.histogram,
            original.total.latency.histogram
        );
        assert_eq!(back.total.latency.sum_us, original.total.latency.sum_us);
        assert_eq!(
            back.total.latency.sum_sq_us,
            original.total.latency.sum_sq_us
        );
        assert_eq!(back.total.failures, original.total.failures);
        assert_eq!(back.client_transactions, original.client_transactions);
        assert_eq!(back.bench_duration, original.bench_duration);
        assert_eq!(back.client_cpu, original.client_cpu);
        assert_eq!(back.command_stats[0][0], original.command_stats[0][0]);
        assert_eq!(back.intervals[0].stats.latency.count, 1999);
    }

    #[test]
    fn merged_percentiles_are_the_unions_not_an_average_of_the_parts() {
        // One fast part, one slow part: the union's median lies between them, where no
        // average of the parts' medians would put it.
        let fast: Vec<f64> = (0..900).map(|i| 100.0 + i as f64 / 10.0).collect();
        let slow: Vec<f64> = (0..100).map(|i| 10_000.0 + i as f64).collect();
        let parts = [result(&fast, vec![5, 0], 10), result(&slow, vec![0, 7], 11)];
        let merged = merge(&parts).unwrap();
        let mut union = LatencyStats::default();
        fast.iter().chain(&slow).for_each(|l| union.record(*l));
        for p in [50.0, 90.0, 95.0, 99.0, 99.9] {
            assert_eq!(
                merged.total.latency.percentile_us(p),
                union.percentile_us(p),
                "p{p}"
            );
        }
        assert_eq!(merged.total.latency.count, 1000);
        assert_eq!(merged.total.failures.deadlock, 2);
        assert_eq!(merged.client_transactions, vec![5, 7]);
        assert_eq!(merged.bench_duration, Duration::from_secs(11));
        assert_eq!(merged.client_cpu.total(), Duration::from_millis(30));
        assert_eq!(merged.intervals.len(), 1);
        assert_eq!(merged.intervals[0].stats.latency.count, 1000);
        assert_eq!(merged.intervals[0].end_unix_s, 111.0);
        assert_eq!(merged.command_stats[0][0].count, 1000);
    }
}
