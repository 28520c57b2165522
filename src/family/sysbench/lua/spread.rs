//! A script's run spread over the pods of a Kubernetes Indexed Job (`--pods=N`): the launch
//! (the script shipped in a ConfigMap), and a pod's part of the run — its threads with their
//! run-wide numbers, the start together, each second's counters and latency histogram sent
//! to pod 0, which prints sysbench's intermediate lines and its final report of the union.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::context::{Script, Shared};
use super::control::RunControl;
use super::stats::{LogHistogram, COUNTERS};
use super::sysbench_cmdline::CommandLine;
use crate::family::sysbench::layout::{Stat, Timer};
use crate::family::sysbench::spread::{require_named_server, PodLine};
use crate::pods::role::share_of;
use crate::pods::{KubeArgs, PodRole, PodRun, PodShare, SpreadSummary};
use stampede_base::error::{CommandResult, Failure};

/// The launcher's side: the script's options are checked (it was loaded to read them).
pub fn launch(shared: &Shared, line: &CommandLine, kube: &KubeArgs) -> CommandResult {
    let options = shared.options();
    if options.given("report_checkpoints") {
        return Err(Failure::input(
            "--report-checkpoints is not supported with --pods: the pods report every second \
             and the whole run",
        ));
    }
    let driver = options.string("db_driver");
    let host_given = match driver.as_str() {
        "pgsql" => options.given("pgsql_host") || std::env::var_os("PGHOST").is_some(),
        _ => options.given("mysql_host") && options.string("mysql_host") != "localhost",
    };
    require_named_server(&driver, host_given, options.given("mysql_socket"))?;
    let script = match &shared.script {
        Script::File(path) => Some((
            line.test.clone().unwrap_or_default(),
            std::path::PathBuf::from(path),
        )),
        // A script stampede carries is found in the pods as here.
        Script::Module(_) => None,
        Script::Stdin(_) => {
            return Err(Failure::input(
                "--pods needs the script as a file (the pods cannot read this terminal)",
            ))
        }
    };
    PodLine {
        kube,
        threads: options.int("threads").max(1) as usize,
        seed: shared.seed,
        json: options.raw("json").filter(|p| !p.is_empty()),
        script,
        db_driver: driver,
    }
    .launch()
}

/// A run's totals as one pod (or the merged run) has them.
#[derive(Serialize, Deserialize)]
pub struct Totals {
    pub counts: [u64; COUNTERS],
    /// Every thread of the run's (those of other pods empty).
    pub timers: Vec<Timer>,
    /// The latency histogram's non-empty buckets.
    pub buckets: Vec<(usize, u64)>,
    pub total_s: f64,
}

impl Totals {
    pub fn of(control: &RunControl, total_s: f64) -> Totals {
        let (counts, timers, histogram) = control.stats.cumulative_counts(false);
        Totals {
            counts,
            timers,
            buckets: histogram.buckets(),
            total_s,
        }
    }

    pub fn histogram(&self) -> LogHistogram {
        let mut histogram = LogHistogram::latency();
        histogram.add_buckets(&self.buckets);
        histogram
    }

    /// The pods' totals as one run's: their sums, each thread's timer from its pod, the
    /// longest window.
    fn merge(parts: Vec<Totals>) -> Totals {
        let threads = parts.iter().map(|p| p.timers.len()).max().unwrap_or(0);
        let mut merged = Totals {
            counts: [0; COUNTERS],
            timers: vec![Timer::default(); threads],
            buckets: Vec::new(),
            total_s: 0.0,
        };
        let mut histogram = LogHistogram::latency();
        for part in parts {
            for (sum, count) in merged.counts.iter_mut().zip(part.counts) {
                *sum += count;
            }
            for (timer, theirs) in merged.timers.iter_mut().zip(&part.timers) {
                timer.merge(theirs);
            }
            histogram.add_buckets(&part.buckets);
            merged.total_s = merged.total_s.max(part.total_s);
        }
        merged.buckets = histogram.buckets();
        merged
    }
}

/// One second of one pod's run.
#[derive(Serialize, Deserialize)]
struct IntervalPart {
    counts: [u64; COUNTERS],
    buckets: Vec<(usize, u64)>,
    running: u32,
}

/// One pod's side of a script's spread run.
pub struct LuaPod {
    pod: PodRun,
}

impl LuaPod {
    /// Joins the run; on pod 0 the coordinator's merged seconds become sysbench's intermediate
    /// lines every `report_interval` seconds (sent to `lines`, printed by the caller's thread).
    pub fn start(
        role: PodRole,
        report_interval: u64,
        percentile: u32,
        lines: Sender<Stat>,
    ) -> Result<LuaPod, Failure> {
        let mut pending = Pending::default();
        let mut pod = PodRun::start_with(
            role,
            Box::new(move |index, reports| {
                if let Some(stat) = pending.add(index, reports, report_interval, percentile) {
                    let _ = lines.send(stat);
                }
            }),
        )?;
        pod.join()?;
        Ok(LuaPod { pod })
    }

    pub fn first(&self) -> bool {
        self.pod.role.index == 0
    }

    /// This pod's threads of the run's.
    pub fn threads(&self, threads: usize) -> Range<usize> {
        self.pod.role.threads(threads)
    }

    /// This pod's part of `--events` (0: no limit) and of `--rate` (0: none).
    pub fn share(&self, total: u64, threads: usize) -> u64 {
        share_of(total, threads, &self.threads(threads))
    }

    pub fn start_together(&self) -> Result<(), Failure> {
        self.pod.start_together()
    }

    /// The coordinator's abort: stops this pod's workers.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.pod.stop_flag()
    }

    /// Sends each second's counters and histogram until the run has `finished`, then the
    /// seconds the run completed since the last one sent.
    pub fn start_reporter(
        &self,
        control: &Arc<RunControl>,
        finished: &Arc<AtomicBool>,
    ) -> JoinHandle<()> {
        let (control, finished) = (control.clone(), finished.clone());
        let pod = self.pod.interval_sender();
        std::thread::spawn(move || {
            let mut next = 0u64;
            // The threads running at the last look within the second (at the run's end, as
            // its threads stop, fewer are).
            let mut running = control.running.load(Ordering::Relaxed);
            loop {
                let done = finished.load(Ordering::Relaxed);
                let elapsed = control.elapsed();
                if elapsed < (next + 1) as f64 {
                    running = control.running.load(Ordering::Relaxed);
                }
                while elapsed >= (next + 1) as f64 {
                    let (counts, histogram) = control.stats.intermediate_counts();
                    let part = IntervalPart {
                        counts,
                        buckets: histogram.buckets(),
                        running,
                    };
                    pod(
                        next,
                        serde_json::to_value(part).expect("plain data serializes to JSON"),
                    );
                    next += 1;
                }
                if done {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    }

    /// Sends this pod's totals (or its failure); on pod 0, the merged run and the pods' table.
    pub fn finish(
        self,
        totals: Result<(Totals, f64), Failure>,
        threads: usize,
    ) -> Result<Option<(Totals, SpreadSummary)>, Failure> {
        let share = totals.map(|(totals, client_cpu_s)| PodShare {
            clients: threads,
            threads,
            transactions: totals.counts[0],
            client_cpu_s,
            window_s: totals.total_s,
            cores: 0,
            part: totals,
        });
        let Some((parts, summary)) = self.pod.finish_share(share)? else {
            return Ok(None);
        };
        Ok(Some((Totals::merge(parts), summary)))
    }
}

/// Pod 0's seconds not yet reported.
#[derive(Default)]
struct Pending {
    counts: [u64; COUNTERS],
    histogram: Option<LogHistogram>,
}

impl Pending {
    /// Adds second `index` of every pod; the intermediate line's numbers when a report is due.
    fn add(
        &mut self,
        index: u64,
        reports: &[Option<serde_json::Value>],
        every: u64,
        percentile: u32,
    ) -> Option<Stat> {
        let histogram = self.histogram.get_or_insert_with(LogHistogram::latency);
        let mut running = 0;
        for report in reports.iter().flatten() {
            let Ok(part) = serde_json::from_value::<IntervalPart>(report.clone()) else {
                continue;
            };
            for (sum, count) in self.counts.iter_mut().zip(part.counts) {
                *sum += count;
            }
            histogram.add_buckets(&part.buckets);
            running += part.running;
        }
        if every == 0 || !(index + 1).is_multiple_of(every) {
            return None;
        }
        let mut stat = Stat::of_counts(&std::mem::take(&mut self.counts));
        stat.latency_pct = histogram.percentile(percentile as f64) / 1000.0;
        histogram.clear();
        stat.time_total = (index + 1) as f64;
        stat.time_interval = every as f64;
        stat.threads_running = running;
        Some(stat)
    }
}
