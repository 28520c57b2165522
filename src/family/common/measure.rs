//! What every lab workload does around the driver: keep the measured window's seconds (the
//! driver's last, partial interval left out), report each to the lab, and turn them into the
//! run's stored metrics and series.

use std::time::Duration;

use crate::driver::plan::RunPlan;
use crate::driver::{self, DriverEvent, IntervalReport, ScriptStats};
use crate::error::Failure;
use crate::family::api::{Measurement, RunObserver, RunRequest};
use crate::family::pgbench::run::summarize;
use crate::store::{RunMetrics, SeriesRow};

pub fn message(failure: Failure) -> String {
    match failure {
        Failure::Input(m) | Failure::Run(m) => m,
        Failure::Incomplete => "the run was aborted".into(),
    }
}

/// A run's random seed: from the clock, as sysbench and pgbench default to.
pub fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

pub fn check_aborted(aborted_clients: usize, when: &str) -> Result<(), String> {
    if aborted_clients == 0 {
        return Ok(());
    }
    let when = if when.is_empty() {
        String::new()
    } else {
        format!(" {when}")
    };
    Err(format!("{aborted_clients} client(s) aborted{when}"))
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
            observer.second(interval.index, interval.stats.latency.count as f64);
            self.measured.push((interval.index, interval.stats.clone()));
        }
    }

    /// The window's metrics; `client_cpu` is the driver's CPU over the measured run.
    pub fn measurement(&self, client_cpu: Duration) -> Measurement {
        let mut total = ScriptStats::default();
        self.measured
            .iter()
            .for_each(|(_, stats)| total.merge(stats));
        let latency = summarize(&total.latency);
        let transactions = total.latency.count;
        let duration_s = self.duration_s as f64;
        Measurement {
            metrics: RunMetrics {
                duration_s,
                transactions,
                failures: total.failures.total(),
                tps: transactions as f64 / duration_s,
                latency_avg_ms: latency.avg,
                latency_stddev_ms: latency.stddev,
                p50_ms: latency.p50,
                p90_ms: latency.p90,
                p95_ms: latency.p95,
                p99_ms: latency.p99,
                p999_ms: latency.p999,
                max_ms: latency.max,
                client_cpu_us_per_txn: client_cpu.as_secs_f64() * 1e6 / transactions.max(1) as f64,
                workload: Vec::new(),
            },
            series: self
                .measured
                .iter()
                .map(|(second, stats)| {
                    let summary = summarize(&stats.latency);
                    SeriesRow {
                        second: *second,
                        tps: stats.latency.count as f64,
                        p50_ms: summary.p50,
                        p99_ms: summary.p99,
                        failed: stats.failures.total(),
                    }
                })
                .collect(),
        }
    }
}

/// The warmup, as a run of its own whose sessions end before the measured one starts, then
/// the measured run; `plan_for(seconds)` gives the driver's plan for a run that long, to which
/// the request's threads, CPUs and stop flag are applied.
pub fn warmup_and_measure(
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
    plan_for: &dyn Fn(u64) -> Result<RunPlan, String>,
) -> Result<Measurement, String> {
    let planned = |seconds: u64| -> Result<RunPlan, String> {
        let mut plan = plan_for(seconds)?;
        plan.threads = request.threads.clamp(1, request.clients);
        plan.stop = Some(request.stop.clone());
        plan.cpu_affinity = request.client_cpus.map(<[usize]>::to_vec);
        Ok(plan)
    };
    let warmup_s = request.warmup.as_secs_f64().ceil() as u64;
    if warmup_s > 0 {
        let warmup = driver::run(planned(warmup_s)?, &mut |_| {})?;
        check_aborted(warmup.aborted_clients, "during the warmup")?;
    }
    observer.open_window();
    let duration_s = request.duration.as_secs_f64().ceil().max(1.0) as u64;
    let mut window = Window::new(duration_s);
    let result = driver::run(planned(duration_s)?, &mut |event| {
        if let DriverEvent::Interval(interval) = event {
            window.add(interval, observer);
        }
    })?;
    check_aborted(result.aborted_clients, "")?;
    Ok(window.measurement(result.client_cpu.total()))
}
