//! What every lab workload does around the driver: keep the measured window's seconds (the
//! driver's last, partial interval left out), report each to the lab, and turn them into the
//! run's stored metrics and series.

use std::time::Duration;

use serde::Serialize;

use crate::driver::plan::RunPlan;
use crate::driver::{self, DriverEvent, IntervalReport, LatencyStats, ScriptStats};
use crate::family::api::{Measurement, RunObserver, RunRequest, WorkloadMetric};
use stampede_base::error::Failure;
use stampede_stats::fairness::Fairness;
use stampede_stats::verdict::Direction;
use stampede_store::{RunMetrics, SeriesRow, ServedClients};

/// Statements per second (sysbench's queries per second), stored for every run the common
/// measurement takes; the workloads that count statements declare it.
pub const QPS: WorkloadMetric = WorkloadMetric {
    name: "qps",
    direction: Direction::HigherIsBetter,
    from_server: false,
};

/// A run's random seed: from the clock, as sysbench and pgbench default to.
pub fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

/// An error when any client aborted: "N client(s) aborted during the warmup", with `what` the
/// workload's word for its clients.
pub fn check_aborted(aborted_clients: usize, what: &str, when: &str) -> Result<(), Failure> {
    if aborted_clients == 0 {
        return Ok(());
    }
    let when = if when.is_empty() {
        String::new()
    } else {
        format!(" {when}")
    };
    Err(Failure::run(format!(
        "{aborted_clients} {what}(s) aborted{when}"
    )))
}

/// Latency of successful transactions, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub avg: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencySummary {
    /// A run's stored metrics with these latencies over `transactions` in `duration_s` (tps
    /// 0 for a run of no time); the rest left for the workload to fill in.
    pub fn run_metrics(&self, duration_s: f64, transactions: u64) -> RunMetrics {
        RunMetrics {
            duration_s,
            transactions,
            tps: if duration_s > 0.0 {
                transactions as f64 / duration_s
            } else {
                0.0
            },
            latency_avg_ms: self.avg,
            latency_stddev_ms: self.stddev,
            p50_ms: self.p50,
            p90_ms: self.p90,
            p95_ms: self.p95,
            p99_ms: self.p99,
            p999_ms: self.p999,
            max_ms: self.max,
            ..RunMetrics::default()
        }
    }

    pub fn of(stats: &LatencyStats) -> LatencySummary {
        let ms = |us: f64| us / 1000.0;
        LatencySummary {
            count: stats.count,
            avg: ms(stats.mean_us()),
            stddev: ms(stats.stddev_us()),
            p50: ms(stats.percentile_us(50.0)),
            p90: ms(stats.percentile_us(90.0)),
            p95: ms(stats.percentile_us(95.0)),
            p99: ms(stats.percentile_us(99.0)),
            p999: ms(stats.percentile_us(99.9)),
            max: ms(stats.max_us),
        }
    }
}

/// How evenly a run served its clients, as the summary, `--json` and the results database
/// show it: committed transactions per client (by client id) and their spread.
#[derive(Debug, Clone, Serialize)]
pub struct ClientFairness {
    pub min: u64,
    pub median: f64,
    pub max: u64,
    /// Jain's index: 1 when every client ran as many transactions, 1/clients when one ran all.
    pub jain_index: f64,
    pub per_client: Vec<u64>,
}

impl ClientFairness {
    /// None when nothing committed.
    pub fn of(per_client: &[u64]) -> Option<ClientFairness> {
        let fairness = Fairness::of(per_client)?;
        Some(ClientFairness {
            min: fairness.min,
            median: fairness.median,
            max: fairness.max,
            jain_index: fairness.jain_index,
            per_client: per_client.to_vec(),
        })
    }

    fn fairness(&self) -> Fairness {
        Fairness {
            clients: self.per_client.len(),
            min: self.min,
            median: self.median,
            max: self.max,
            jain_index: self.jain_index,
        }
    }

    /// The summary's line after the latency percentiles.
    pub fn summary_line(&self) -> String {
        self.fairness().summary_line()
    }

    pub fn served(&self) -> ServedClients {
        ServedClients {
            min: self.min,
            median: self.median,
            max: self.max,
            jain_index: self.jain_index,
        }
    }
}

/// The measured window's seconds.
pub struct Window {
    duration_s: u64,
    measured: Vec<(u64, ScriptStats)>,
}

impl Window {
    pub fn new(duration_s: u64) -> Window {
        Window {
            duration_s,
            measured: Vec::new(),
        }
    }

    pub fn add(&mut self, interval: &IntervalReport, observer: &mut dyn RunObserver) {
        if interval.index < self.duration_s {
            observer.interval(interval);
            observer.second(interval.index, interval.stats.latency.count as f64);
            self.measured.push((interval.index, interval.stats.clone()));
        }
    }

    /// The window's metrics (`qps` among the workload's); `client_cpu` is the driver's CPU over the measured run, and
    /// `client_transactions` each client's committed transactions in it.
    pub fn measurement(&self, client_cpu: Duration, client_transactions: &[u64]) -> Measurement {
        let mut total = ScriptStats::default();
        self.measured
            .iter()
            .for_each(|(_, stats)| total.merge(stats));
        let latency = LatencySummary::of(&total.latency);
        let transactions = total.latency.count;
        let duration_s = self.duration_s as f64;
        Measurement {
            metrics: RunMetrics {
                failures: total.failures.total(),
                client_cpu_us_per_txn: client_cpu.as_secs_f64() * 1e6 / transactions.max(1) as f64,
                // sysbench's queries per second: every statement the clients completed.
                workload: vec![(QPS.name.into(), total.statements as f64 / duration_s)],
                served: ClientFairness::of(client_transactions).map(|f| f.served()),
                ..latency.run_metrics(duration_s, transactions)
            },
            series: self
                .measured
                .iter()
                .map(|(second, stats)| {
                    let summary = LatencySummary::of(&stats.latency);
                    SeriesRow {
                        second: *second,
                        tps: stats.latency.count as f64,
                        p50_ms: summary.p50,
                        p99_ms: summary.p99,
                        failed: stats.failures.total(),
                    }
                })
                .collect(),
            pods: Vec::new(),
        }
    }
}

/// What one run of a workload tells the measuring: how many clients aborted and the client CPU
/// it took.
pub struct RunOutcome {
    pub aborted_clients: usize,
    pub client_cpu: Duration,
    /// Committed transactions per client.
    pub client_transactions: Vec<u64>,
}

/// Runs the workload for the given seconds, passing the driver's events on.
pub type TimedRun<'a> =
    dyn FnMut(u64, &mut dyn FnMut(DriverEvent<'_>)) -> Result<RunOutcome, Failure> + 'a;

/// The one way a lab run is measured: the warmup, as a run of its own whose sessions end before
/// the measured one starts (so the server's statistics, flushed when sessions end, exclude it
/// exactly), the observer's window opened between them, then the measured run's seconds.
pub fn measure_after_warmup(
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
    run_for: &mut TimedRun<'_>,
) -> Result<Measurement, Failure> {
    let warmup_s = request.warmup.as_secs_f64().ceil() as u64;
    if warmup_s > 0 {
        let warmup = run_for(warmup_s, &mut |_| {})?;
        check_aborted(warmup.aborted_clients, "client", "during the warmup")?;
    }
    observer.open_window();
    let duration_s = request.duration.as_secs_f64().ceil().max(1.0) as u64;
    let mut window = Window::new(duration_s);
    let measured = run_for(duration_s, &mut |event| {
        if let DriverEvent::Interval(interval) = event {
            window.add(interval, observer);
        }
    })?;
    check_aborted(measured.aborted_clients, "client", "")?;
    observer.measured(measured.client_cpu, &measured.client_transactions);
    Ok(window.measurement(measured.client_cpu, &measured.client_transactions))
}

/// `measure_after_warmup` for a workload that runs on the driver: `plan_for(seconds)` gives the
/// driver's plan for a run that long, to which the request's threads, CPUs and stop flag are
/// applied.
pub fn warmup_and_measure(
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
    plan_for: &dyn Fn(u64) -> Result<RunPlan, Failure>,
) -> Result<Measurement, Failure> {
    measure_after_warmup(request, observer, &mut |seconds, on_event| {
        let mut plan = plan_for(seconds)?;
        plan.threads = request.threads.clamp(1, request.clients);
        plan.stop = Some(request.stop.clone());
        plan.stall_timeout = request.stall_timeout;
        plan.cpu_affinity = request.client_cpus.map(<[usize]>::to_vec);
        plan.share = request.share.as_ref().map(|make| make.share(plan.threads));
        let result = driver::run(plan, on_event)?;
        Ok(RunOutcome {
            aborted_clients: result.aborted_clients,
            client_cpu: result.client_cpu.total(),
            client_transactions: result.client_transactions,
        })
    })
}
