//! A pod's part in a spread run: who it is (from the environment the Job gives it), the
//! coordinator pod 0 runs besides its own share, and the worker every pod is.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use stampede_spread::coordinator::CoordinatorOptions;
use stampede_spread::worker::JoinOptions;
use stampede_spread::{Coordinator, CoordinatorEvent, PodOutcome, SpreadError, Worker};

use crate::driver::parts::{merge, IntervalPart, ResultPart};
use crate::driver::{merge_tallies, IntervalReport, RunResult, ScriptStats, Share, ShareMaker};
use stampede_base::error::Failure;

/// The environment the launcher gives every pod (JOB_COMPLETION_INDEX is Kubernetes').
pub const RUN_ENV: &str = "STAMPEDE_RUN";
pub const PODS_ENV: &str = "STAMPEDE_PODS";
pub const COORDINATOR_ENV: &str = "STAMPEDE_COORDINATOR";
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// How long a pod waits for the others (they may be scheduled and pull their image slowly).
const JOIN_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRole {
    pub run: String,
    pub index: usize,
    pub pods: usize,
    /// host:port of pod 0's coordinator.
    pub coordinator: String,
}

impl PodRole {
    /// This process's role, when it runs as a pod of a spread run.
    pub fn from_env() -> Result<Option<PodRole>, Failure> {
        let Ok(run) = std::env::var(RUN_ENV) else {
            return Ok(None);
        };
        let number = |name: &str| -> Result<usize, Failure> {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    Failure::input(format!("{RUN_ENV} is set but {name} is not a number"))
                })
        };
        let coordinator = std::env::var(COORDINATOR_ENV).map_err(|_| {
            Failure::input(format!("{RUN_ENV} is set but {COORDINATOR_ENV} is not"))
        })?;
        Ok(Some(PodRole {
            run,
            index: number(INDEX_ENV)?,
            pods: number(PODS_ENV)?,
            coordinator,
        }))
    }

    /// This pod's threads of the run's `threads`: as even as possible, the first pods taking
    /// the remainder (the launcher made sure every pod has one).
    pub fn threads(&self, threads: usize) -> Range<usize> {
        split(threads, self.pods, self.index)
    }

    /// Where pod 0 listens: the address the others dial when it is a loopback one (a
    /// single-node cluster on the host's network), every interface otherwise.
    fn bind_address(&self) -> String {
        let port = self.coordinator.rsplit_once(':').map_or("0", |(_, p)| p);
        let host = self.coordinator.rsplit_once(':').map_or("", |(h, _)| h);
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) if ip.is_loopback() => format!("{host}:{port}"),
            _ => format!("0.0.0.0:{port}"),
        }
    }
}

/// Part `index` of `count` parts of `total`: the first `total % count` parts take one more.
pub fn split(total: usize, count: usize, index: usize) -> Range<usize> {
    let base = total / count;
    let extra = total % count;
    let start = index * base + index.min(extra);
    start..start + base + usize::from(index < extra)
}

/// This pod's part of a run-wide budget (`--events`) that the run's `threads` share, for the
/// pod running `here` of them: in proportion, the parts adding up to `total` exactly.
pub fn share_of(total: u64, threads: usize, here: &Range<usize>) -> u64 {
    let upto = |thread: usize| (u128::from(total) * thread as u128 / threads.max(1) as u128) as u64;
    upto(here.end) - upto(here.start)
}

/// What a pod sends at the end: its share of the run's result (`part`, the workload's own
/// form) and what its row of the pods' table needs.
#[derive(Serialize, Deserialize)]
pub struct PodShare<T> {
    pub part: T,
    /// This pod's share of the run's clients and threads.
    pub clients: usize,
    pub threads: usize,
    pub transactions: u64,
    pub client_cpu_s: f64,
    /// This pod's measured window, in seconds.
    pub window_s: f64,
    /// Filled in by `PodRun::finish_share`.
    #[serde(default)]
    pub cores: usize,
}

/// One pod's row of the merged report.
#[derive(Debug, Clone, Serialize)]
pub struct PodSummary {
    pub pod: usize,
    pub clients: usize,
    pub threads: usize,
    pub transactions: u64,
    pub tps: f64,
    pub client_cpu_s: f64,
    pub client_cpu_per_transaction_us: f64,
    /// Client CPU over the pod's window and cores: near 1 means the client saturated.
    pub cpu_busy: f64,
    pub cores: usize,
    pub clock_offset_ms: f64,
    pub clock_rtt_ms: f64,
    pub start_skew_ms: f64,
}

/// What a spread run's report adds: each pod's share and what the coordination cost.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadSummary {
    pub pods: Vec<PodSummary>,
    /// CPU the coordinator's threads used in pod 0 over the whole run.
    pub coordinator_cpu_s: f64,
    /// The merged run's window, in seconds.
    pub window_s: f64,
}

impl SpreadSummary {
    /// The coordinator's CPU per second of each pod's run, in milliseconds.
    pub fn coordinator_ms_per_pod_second(&self) -> f64 {
        let pod_seconds = self.window_s * self.pods.len() as f64;
        if pod_seconds > 0.0 {
            self.coordinator_cpu_s * 1000.0 / pod_seconds
        } else {
            0.0
        }
    }
}

/// The merged run and each pod's share.
pub struct SpreadResult {
    pub merged: RunResult,
    pub summary: SpreadSummary,
}

/// Waits until every pod has reached the named point (`PodRun::barrier_handle`).
pub type Barrier = Box<dyn Fn(&str) -> Result<(), Failure> + Send>;

/// What hears each interval of every pod (None for a pod that ended before it).
pub type OnPodIntervals = Box<dyn FnMut(u64, &[Option<serde_json::Value>]) + Send>;

/// What pod 0's coordinator thread returns: the pods' outcomes and its own CPU seconds.
type CoordinatorResult = Result<(Vec<PodOutcome>, f64), SpreadError>;

/// One pod's side of a run: the worker, and on pod 0 the coordinator.
pub struct PodRun {
    pub role: PodRole,
    /// Pod 0: the pods that have joined, as the coordinator hears them.
    joined: Option<std::sync::mpsc::Receiver<usize>>,
    worker: Option<Arc<Mutex<Worker>>>,
    aborted: Arc<AtomicBool>,
    coordinator: Option<JoinHandle<CoordinatorResult>>,
    /// The threads of the last run a share was made for (a workload may choose its own).
    shared_threads: Arc<AtomicUsize>,
}

impl PodRun {
    /// On pod 0, starts the coordinator; `on_interval` gets every interval merged over the pods
    /// (for progress lines).
    pub fn start(
        role: PodRole,
        mut on_interval: Box<dyn FnMut(&IntervalReport) + Send>,
    ) -> Result<PodRun, Failure> {
        PodRun::start_with(
            role,
            Box::new(move |index, reports| on_interval(&merged_interval(index, reports))),
        )
    }

    /// `start` for a workload with its own interval form: `on_interval` gets each pod's
    /// report of an interval (None for a pod that ended before it).
    pub fn start_with(role: PodRole, mut on_interval: OnPodIntervals) -> Result<PodRun, Failure> {
        let (joined_sender, joined) = std::sync::mpsc::channel();
        let coordinator = if role.index == 0 {
            let options = CoordinatorOptions {
                run: role.run.clone(),
                pods: role.pods,
                join_timeout: JOIN_TIMEOUT,
                start_margin: Duration::from_millis(200),
                cancel: None,
            };
            let address = role.bind_address();
            let coordinator = Coordinator::bind(&address, options).map_err(|e| {
                Failure::run(format!(
                    "could not listen for the other pods on {address}: {e}"
                ))
            })?;
            let thread = std::thread::Builder::new().name("spread-coordinator".into());
            Some(
                thread
                    .spawn(move || {
                        let outcomes = coordinator.run(&mut |event| match event {
                            CoordinatorEvent::Interval { index, reports } => {
                                on_interval(index, reports)
                            }
                            CoordinatorEvent::PodJoined(pod) => {
                                let _ = joined_sender.send(pod);
                            }
                            CoordinatorEvent::Joined
                            | CoordinatorEvent::Starting { .. }
                            | CoordinatorEvent::Passing { .. } => {}
                        });
                        // Its threads are all alive still (the readers wait for the workers to hang up).
                        let cpu_s = crate::probe::os::threads_cpu_s(|name| {
                            name.starts_with("spread-") && !name.starts_with("spread-worker")
                        });
                        outcomes.map(|outcomes| (outcomes, cpu_s))
                    })
                    .map_err(|e| Failure::run(format!("could not start the coordinator: {e}")))?,
            )
        } else {
            None
        };
        Ok(PodRun {
            joined: (role.index == 0).then_some(joined),
            role,
            worker: None,
            aborted: Arc::new(AtomicBool::new(false)),
            coordinator,
            shared_threads: Arc::default(),
        })
    }

    /// A pod of a run whose coordinator is outside the Job (a lab's): every pod is a worker.
    pub fn worker(role: PodRole) -> PodRun {
        PodRun {
            joined: None,
            role,
            worker: None,
            aborted: Arc::new(AtomicBool::new(false)),
            coordinator: None,
            shared_threads: Arc::default(),
        }
    }

    /// This pod's share of each run of the driver a workload makes: its threads, starting
    /// together with the other pods' (`join` first).
    pub fn share_maker(&self) -> ShareMaker {
        let (role, worker) = (self.role.clone(), self.worker.clone());
        let worker = worker.expect("joined before the run");
        let shared_threads = self.shared_threads.clone();
        ShareMaker(Arc::new(move |threads| {
            shared_threads.store(threads, Ordering::Relaxed);
            let worker = worker.clone();
            Share {
                threads: role.threads(threads),
                start_gate: Arc::new(move || {
                    worker
                        .lock()
                        .expect("no thread panics holding this lock")
                        .start_together(JOIN_TIMEOUT)
                        .map_err(|e| Failure::run(e.0))
                }),
            }
        }))
    }

    /// (clients, threads) of this pod in the last run a share was made for, of `clients` in
    /// all spread over that run's threads as the driver spreads them.
    pub fn shared_size(&self, clients: usize) -> (usize, usize) {
        let threads = self
            .shared_threads
            .load(Ordering::Relaxed)
            .min(clients)
            .max(1);
        let here = self.role.threads(threads);
        let clients_here = here.clone().map(|t| split(clients, threads, t).len()).sum();
        (clients_here, here.len())
    }

    /// Pod 0: returns once every other pod has joined (each after its own setup), so that what
    /// pod 0 reads next comes after theirs. Other pods return at once.
    pub fn wait_for_others(&self) -> Result<(), Failure> {
        let Some(joined) = &self.joined else {
            return Ok(());
        };
        let mut missing: std::collections::BTreeSet<usize> = (1..self.role.pods).collect();
        while !missing.is_empty() {
            let pod = joined.recv_timeout(JOIN_TIMEOUT).map_err(|_| {
                let names: Vec<String> = missing.iter().map(|p| p.to_string()).collect();
                Failure::run(format!(
                    "pod(s) {} did not join the run within {} s",
                    names.join(", "),
                    JOIN_TIMEOUT.as_secs()
                ))
            })?;
            missing.remove(&pod);
        }
        Ok(())
    }

    /// Joins the run as a worker: returns once every pod has joined.
    pub fn join(&mut self) -> Result<(), Failure> {
        let worker = Worker::join(&JoinOptions {
            coordinator: &self.role.coordinator,
            run: &self.role.run,
            pod: self.role.index,
            pods: self.role.pods,
            timeout: JOIN_TIMEOUT,
        })
        .map_err(|e| Failure::run(e.0))?;
        self.aborted = worker.aborted();
        self.worker = Some(Arc::new(Mutex::new(worker)));
        Ok(())
    }

    /// Set when the coordinator aborts the run: the driver's stop flag.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.aborted.clone()
    }

    /// The driver's share: this pod's threads, and the start barrier.
    pub fn share(&self, threads: usize) -> Share {
        self.share_maker().share(threads)
    }

    /// Waits for the run's agreed start time (every pod calls it once, when ready to start).
    pub fn start_together(&self) -> Result<(), Failure> {
        let worker = self.worker.as_ref().expect("joined before the run");
        let mut worker = worker.lock().expect("no thread panics holding this lock");
        worker
            .start_together(JOIN_TIMEOUT)
            .map_err(|e| Failure::run(e.0))
    }

    /// Waits until every pod has reached the point named `phase` of its run.
    pub fn barrier(&self, phase: &str) -> Result<(), Failure> {
        self.barrier_handle()(phase)
    }

    /// `barrier` for another part of this pod (the driver's events, while the run holds it).
    pub fn barrier_handle(&self) -> Barrier {
        let worker = self.worker.clone();
        Box::new(move |phase| {
            let worker = worker
                .as_ref()
                .ok_or_else(|| Failure::run("the pod never joined the run"))?;
            let worker = worker.lock().expect("no thread panics holding this lock");
            worker
                .barrier(phase, JOIN_TIMEOUT)
                .map_err(|e| Failure::run(e.0))
        })
    }

    /// Passes one of this pod's closed intervals on to the coordinator.
    pub fn interval(&self, report: &IntervalReport) {
        let part =
            serde_json::to_value(IntervalPart::of(report)).expect("plain data serializes to JSON");
        self.interval_value(report.index, part);
    }

    /// `interval_value` for another thread of this pod.
    pub fn interval_sender(&self) -> impl Fn(u64, serde_json::Value) + Send + 'static {
        let worker = self.worker.clone();
        move |index, report| {
            if let Some(worker) = &worker {
                let _ = worker
                    .lock()
                    .expect("no thread panics holding this lock")
                    .interval(index, report);
            }
        }
    }

    /// `interval` for a workload with its own interval form.
    pub fn interval_value(&self, index: u64, report: serde_json::Value) {
        if let Some(worker) = &self.worker {
            let _ = worker
                .lock()
                .expect("no thread panics holding this lock")
                .interval(index, report);
        }
    }

    /// Ends this pod's part: sends its result (or its failure) and, on pod 0, waits for every
    /// pod's and merges them. Other pods get None.
    /// `clients` and `threads`: this pod's share of the run's.
    pub fn finish(
        self,
        result: Result<RunResult, Failure>,
        clients: usize,
        threads: usize,
    ) -> Result<Option<SpreadResult>, Failure> {
        let share = result.map(|result| PodShare {
            part: ResultPart::of(&result),
            clients,
            threads,
            transactions: result.total.latency.count,
            client_cpu_s: result.client_cpu.total().as_secs_f64(),
            window_s: result.bench_duration.as_secs_f64(),
            cores: 0,
        });
        let Some((parts, mut summary)) = self.finish_share(share)? else {
            return Ok(None);
        };
        let results: Vec<RunResult> = parts.iter().map(ResultPart::result).collect();
        let merged = merge(&results).ok_or_else(|| Failure::run("no pod sent a result"))?;
        summary.window_s = merged.bench_duration.as_secs_f64();
        Ok(Some(SpreadResult { merged, summary }))
    }

    /// `finish` for a workload with its own result form: on pod 0, every pod's part in pod
    /// order and the pods' table.
    pub fn finish_share<T: Serialize + DeserializeOwned>(
        self,
        share: Result<PodShare<T>, Failure>,
    ) -> Result<Option<(Vec<T>, SpreadSummary)>, Failure> {
        let worker = self
            .worker
            .as_ref()
            .map(|w| w.lock().expect("no thread panics holding this lock"));
        let outcome = match (share, worker) {
            (Err(failure), Some(worker)) => {
                worker.failed(failure.message());
                Err(failure)
            }
            (Err(failure), None) => Err(failure),
            (Ok(_), Some(worker)) if worker.abort_reason().is_some() => Err(Failure::run(format!(
                "the run was aborted: {}",
                worker.abort_reason().unwrap_or_default()
            ))),
            (Ok(mut share), Some(worker)) => {
                share.cores = stampede_base::cpu::cores();
                let report = serde_json::to_value(share).expect("plain data serializes to JSON");
                worker.done(report).map_err(|e| Failure::run(e.0))
            }
            (Ok(_), None) => Err(Failure::run("the pod never joined the run")),
        };
        // The connection closes with the worker: the coordinator then knows this pod is done.
        drop(self.worker);
        let Some(coordinator) = self.coordinator else {
            return outcome.map(|()| None);
        };
        let pods = coordinator
            .join()
            .map_err(|_| Failure::run("the coordinator failed"))?;
        // The coordinator's account names the pod that failed first.
        let (pods, coordinator_cpu_s) = pods.map_err(|e| Failure::run(e.0))?;
        outcome?;
        let (parts, mut summary) = pods_table(pods)?;
        summary.coordinator_cpu_s = coordinator_cpu_s;
        Ok(Some((parts, summary)))
    }
}

/// One interval of every pod (each an `IntervalPart`), as one run's, with each pod's share.
pub fn merged_interval(index: u64, reports: &[Option<serde_json::Value>]) -> IntervalReport {
    let mut stats = ScriptStats::default();
    let mut scripts = Vec::new();
    let mut by_pod = vec![0; reports.len()];
    for (pod, report) in reports.iter().enumerate() {
        let Some(part) = report
            .as_ref()
            .and_then(|r| serde_json::from_value::<IntervalPart>(r.clone()).ok())
        else {
            continue;
        };
        let report = part.report();
        stats.merge(&report.stats);
        merge_tallies(&mut scripts, &report.scripts);
        by_pod[pod] = report.stats.latency.count;
    }
    let end_unix_s =
        crate::driver::txlog::EpochClock::now().unix_us(std::time::Instant::now()) as f64 / 1e6;
    IntervalReport {
        index,
        stats,
        end_unix_s,
        scripts,
        by_pod,
    }
}

/// Each pod's part, and the pods' table from their shares and the coordinator's account.
pub fn pods_table<T: DeserializeOwned>(
    outcomes: Vec<PodOutcome>,
) -> Result<(Vec<T>, SpreadSummary), Failure> {
    let mut parts = Vec::new();
    let mut pods = Vec::new();
    let mut window_s: f64 = 0.0;
    for outcome in outcomes {
        let share: PodShare<T> = serde_json::from_value(outcome.report).map_err(|e| {
            Failure::run(format!(
                "pod {}'s result could not be read: {e}",
                outcome.pod
            ))
        })?;
        let per_second = |value: f64| {
            if share.window_s > 0.0 {
                value / share.window_s
            } else {
                0.0
            }
        };
        pods.push(PodSummary {
            pod: outcome.pod,
            clients: share.clients,
            threads: share.threads,
            transactions: share.transactions,
            tps: per_second(share.transactions as f64),
            client_cpu_s: share.client_cpu_s,
            client_cpu_per_transaction_us: share.client_cpu_s * 1e6
                / share.transactions.max(1) as f64,
            cpu_busy: per_second(share.client_cpu_s) / share.cores.max(1) as f64,
            cores: share.cores,
            clock_offset_ms: outcome.offset_us as f64 / 1000.0,
            clock_rtt_ms: outcome.rtt_us as f64 / 1000.0,
            start_skew_ms: outcome.start_skew_us as f64 / 1000.0,
        });
        window_s = window_s.max(share.window_s);
        parts.push(share.part);
    }
    if parts.is_empty() {
        return Err(Failure::run("no pod sent a result"));
    }
    Ok((
        parts,
        SpreadSummary {
            pods,
            coordinator_cpu_s: 0.0,
            window_s,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_split_evenly_the_first_pods_taking_the_remainder() {
        let parts: Vec<_> = (0..3).map(|i| split(7, 3, i)).collect();
        assert_eq!(parts, vec![0..3, 3..5, 5..7]);
        let parts: Vec<_> = (0..3).map(|i| split(6, 3, i)).collect();
        assert_eq!(parts, vec![0..2, 2..4, 4..6]);
    }

    #[test]
    fn a_budget_is_shared_in_proportion_and_adds_up() {
        let parts: Vec<u64> = (0..3).map(|i| share_of(1000, 7, &split(7, 3, i))).collect();
        assert_eq!(parts, vec![428, 286, 286]);
        assert_eq!(parts.iter().sum::<u64>(), 1000);
        assert_eq!(share_of(2, 4, &(3..4)), 1);
    }

    #[test]
    fn pod_zero_listens_where_the_others_dial_on_loopback_and_everywhere_otherwise() {
        let role = |coordinator: &str| PodRole {
            run: "r".into(),
            index: 0,
            pods: 2,
            coordinator: coordinator.into(),
        };
        assert_eq!(role("127.0.0.1:15950").bind_address(), "127.0.0.1:15950");
        assert_eq!(role("run-0.run:7710").bind_address(), "0.0.0.0:7710");
    }
}
