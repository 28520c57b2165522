//! The coordinator: accepts the run's workers, holds the barriers, names the start time, lines
//! up interval reports and collects final ones. One thread per worker reads its messages (and
//! answers clock probes at once); the caller's thread decides.

use std::io::BufReader;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clock::now_us;
use crate::intervals::IntervalLine;
use crate::message::{receive, send, ToCoordinator, ToWorker};
use crate::SpreadError;

/// What one pod's worker contributed.
#[derive(Debug, Clone)]
pub struct PodOutcome {
    pub pod: usize,
    /// Its clock's offset from the coordinator's, and the round trip that measured it.
    pub offset_us: i64,
    pub rtt_us: i64,
    /// How late it started after the agreed time (coordinator's clock; negative: early).
    pub start_skew_us: i64,
    pub report: Value,
}

/// What the caller hears while the run goes on.
pub enum CoordinatorEvent<'a> {
    /// This pod's worker joined.
    PodJoined(usize),
    /// Every worker joined.
    Joined,
    /// Every worker's clients are connected; the run starts at this coordinator time.
    Starting { at_us: i64 },
    /// Every pod reached the named barrier; they pass once the caller returns (a coordinator
    /// outside the pods acts there: a lab opens its measuring window).
    Passing { phase: &'a str },
    /// Interval `index` closed on every pod: the pods' reports (None for a pod that ended).
    Interval {
        index: u64,
        reports: &'a [Option<Value>],
    },
}

/// How long the coordinator waits, and where.
pub struct CoordinatorOptions {
    pub run: String,
    pub pods: usize,
    /// For every worker to join (pods are scheduled, pull their image, start).
    pub join_timeout: Duration,
    /// Between the agreed start and the time it is sent: every worker must hear it before it
    /// comes (at least this long, and four of the slowest round trips).
    pub start_margin: Duration,
    /// Set by the caller to give up (the pods' Job failed): `run` returns at once.
    pub cancel: Option<Arc<AtomicBool>>,
}

pub struct Coordinator {
    listener: TcpListener,
    options: CoordinatorOptions,
}

enum Inbound {
    Connected(Connection),
    Message(usize, ToCoordinator),
    Closed(usize),
}

struct Connection {
    slot: usize,
    writer: Arc<Mutex<TcpStream>>,
}

struct Pod {
    writer: Arc<Mutex<TcpStream>>,
    offset_us: i64,
    rtt_us: i64,
    ready: bool,
    started_us: Option<i64>,
    report: Option<Value>,
}

impl Coordinator {
    pub fn bind(address: impl ToSocketAddrs, options: CoordinatorOptions) -> std::io::Result<Self> {
        Ok(Coordinator {
            listener: TcpListener::bind(address)?,
            options,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Runs the whole coordination; the pods' outcomes in pod order, or why the run failed
    /// (every worker still connected is told to abort).
    pub fn run(
        self,
        on_event: &mut dyn FnMut(CoordinatorEvent<'_>),
    ) -> Result<Vec<PodOutcome>, SpreadError> {
        let (sender, inbound) = mpsc::channel();
        let accepting = Accepting::start(self.listener, sender);
        let mut session = Session {
            options: &self.options,
            pods: (0..self.options.pods).map(|_| None).collect(),
            slots: Vec::new(),
            intervals: IntervalLine::new(self.options.pods),
            start_at: None,
            phases: Default::default(),
        };
        let result = session.coordinate(&inbound, on_event);
        if let Err(error) = &result {
            session.abort_all(&error.0);
        }
        accepting.stop();
        result
    }
}

/// The listener's thread, accepting workers until the coordination ends; then it closes the
/// listener, so that the next run of the same process may listen on the same port (a lab's
/// runs from pods, one after another).
struct Accepting {
    stop: Arc<AtomicBool>,
    /// Where a connection wakes the thread from `accept`.
    wake: Option<std::net::SocketAddr>,
    thread: std::thread::JoinHandle<()>,
}

impl Accepting {
    fn start(listener: TcpListener, sender: Sender<Inbound>) -> Accepting {
        let stop = Arc::new(AtomicBool::new(false));
        let wake = listener.local_addr().ok().map(|mut address| {
            if address.ip().is_unspecified() {
                address.set_ip(match address {
                    std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            address
        });
        let thread = accept_in_background(listener, sender, stop.clone());
        Accepting { stop, wake, thread }
    }

    /// Ends the thread: the flag, then a connection of its own to wake `accept`.
    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let woken = self.wake.is_some_and(|address| {
            TcpStream::connect_timeout(&address, std::time::Duration::from_secs(5)).is_ok()
        });
        // Without a wake-up the thread would wait for the next connection: not joined then.
        if woken {
            let _ = self.thread.join();
        }
    }
}

fn accept_in_background(
    listener: TcpListener,
    sender: Sender<Inbound>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("spread-accept".into())
        .spawn(move || {
            for (slot, stream) in listener.incoming().enumerate() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let _ = stream.set_nodelay(true);
                let Ok(write_half) = stream.try_clone() else {
                    continue;
                };
                let writer = Arc::new(Mutex::new(write_half));
                let connection = Connection {
                    slot,
                    writer: writer.clone(),
                };
                if sender.send(Inbound::Connected(connection)).is_err() {
                    return;
                }
                let sender = sender.clone();
                let _ = std::thread::Builder::new()
                    .name(format!("spread-read-{slot}"))
                    .spawn(move || read_worker(slot, stream, writer, sender));
            }
        })
        .expect("a thread for the coordinator's listener")
}

/// Reads one worker's messages; probes are answered here, at once, so that the time a reply
/// waits behind the coordinator's other work does not enter the round trip.
fn read_worker(
    slot: usize,
    stream: TcpStream,
    writer: Arc<Mutex<TcpStream>>,
    sender: Sender<Inbound>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        match receive::<ToCoordinator>(&mut reader) {
            Ok(Some(ToCoordinator::Probe { sent_us })) => {
                let reply = ToWorker::ProbeReply {
                    sent_us,
                    coordinator_us: now_us(),
                };
                let mut out = writer.lock().expect("no thread panics holding this lock");
                if send(&mut *out, &reply).is_err() {
                    break;
                }
            }
            Ok(Some(message)) => {
                if sender.send(Inbound::Message(slot, message)).is_err() {
                    return;
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    let _ = sender.send(Inbound::Closed(slot));
}

struct Session<'a> {
    options: &'a CoordinatorOptions,
    pods: Vec<Option<Pod>>,
    /// Which pod each connection is, once it said hello.
    slots: Vec<(Option<usize>, Arc<Mutex<TcpStream>>)>,
    intervals: IntervalLine<Value>,
    start_at: Option<i64>,
    /// Per named phase, the pods that reached it.
    phases: std::collections::BTreeMap<String, Vec<bool>>,
}

impl Session<'_> {
    fn coordinate(
        &mut self,
        inbound: &Receiver<Inbound>,
        on_event: &mut dyn FnMut(CoordinatorEvent<'_>),
    ) -> Result<Vec<PodOutcome>, SpreadError> {
        let join_deadline = Instant::now() + self.options.join_timeout;
        loop {
            if let Some(cancel) = &self.options.cancel {
                if cancel.load(Ordering::SeqCst) {
                    return Err(SpreadError::new("the run was given up"));
                }
            }
            let wait = if self.all_joined() {
                Duration::from_secs(3600)
            } else {
                join_deadline.saturating_duration_since(Instant::now())
            };
            // A caller that may give up is looked at every 200 ms.
            let poll = match &self.options.cancel {
                Some(_) => wait.min(Duration::from_millis(200)),
                None => wait,
            };
            let next = match inbound.recv_timeout(poll) {
                Ok(next) => next,
                Err(RecvTimeoutError::Timeout) if poll < wait => continue,
                Err(RecvTimeoutError::Timeout) => return Err(self.join_timed_out()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(SpreadError::new("the coordinator's listener ended"))
                }
            };
            match next {
                Inbound::Connected(connection) => {
                    debug_assert_eq!(connection.slot, self.slots.len());
                    self.slots.push((None, connection.writer));
                }
                Inbound::Message(slot, message) => {
                    if self.handle(slot, message, on_event)? {
                        return Ok(self.outcomes());
                    }
                }
                Inbound::Closed(slot) => {
                    if let Some(pod) = self.slots[slot].0 {
                        if self.pods[pod].as_ref().is_some_and(|p| p.report.is_none()) {
                            return Err(SpreadError::new(format!(
                                "pod {pod} closed its connection before sending its result \
                                 (its process ended or its network went away)"
                            )));
                        }
                    }
                }
            }
        }
    }

    /// Handles one message; true when every pod has sent its final report.
    fn handle(
        &mut self,
        slot: usize,
        message: ToCoordinator,
        on_event: &mut dyn FnMut(CoordinatorEvent<'_>),
    ) -> Result<bool, SpreadError> {
        if let ToCoordinator::Hello {
            run,
            pod,
            pods,
            offset_us,
            rtt_us,
        } = message
        {
            self.hello(slot, &run, pod, pods, offset_us, rtt_us)?;
            on_event(CoordinatorEvent::PodJoined(pod));
            if self.all_joined() {
                on_event(CoordinatorEvent::Joined);
                self.broadcast(&ToWorker::Welcome);
            }
            return Ok(false);
        }
        let Some(pod) = self.slots[slot].0 else {
            return Err(SpreadError::new(
                "a worker spoke before saying which pod it is",
            ));
        };
        match message {
            ToCoordinator::Ready => {
                self.pod_mut(pod).ready = true;
                if self.pods.iter().flatten().filter(|p| p.ready).count() == self.options.pods {
                    let at_us = now_us() + self.start_margin_us();
                    self.start_at = Some(at_us);
                    on_event(CoordinatorEvent::Starting { at_us });
                    self.broadcast(&ToWorker::Start { at_us });
                    // The next run of the same pods (a lab's measured run after its warmup)
                    // starts together again.
                    self.pods.iter_mut().flatten().for_each(|p| p.ready = false);
                }
            }
            ToCoordinator::Started { at_us } => self.pod_mut(pod).started_us = Some(at_us),
            ToCoordinator::Arrived { phase } => {
                let pods = self.options.pods;
                let arrived = self
                    .phases
                    .entry(phase.clone())
                    .or_insert(vec![false; pods]);
                arrived[pod] = true;
                if arrived.iter().all(|a| *a) {
                    self.phases.remove(&phase);
                    on_event(CoordinatorEvent::Passing { phase: &phase });
                    self.broadcast(&ToWorker::Pass { phase });
                }
            }
            ToCoordinator::Interval { index, report } => {
                for (index, reports) in self.intervals.add(pod, index, report) {
                    on_event(CoordinatorEvent::Interval {
                        index,
                        reports: &reports,
                    });
                }
            }
            ToCoordinator::Done { report } => {
                self.pod_mut(pod).report = Some(report);
                for (index, reports) in self.intervals.finish(pod) {
                    on_event(CoordinatorEvent::Interval {
                        index,
                        reports: &reports,
                    });
                }
                return Ok(
                    self.pods.iter().flatten().all(|p| p.report.is_some()) && self.all_joined()
                );
            }
            ToCoordinator::Failed { message } => {
                return Err(SpreadError::new(format!("pod {pod}: {message}")));
            }
            ToCoordinator::Probe { .. } | ToCoordinator::Hello { .. } => {}
        }
        Ok(false)
    }

    fn hello(
        &mut self,
        slot: usize,
        run: &str,
        pod: usize,
        pods: usize,
        offset_us: i64,
        rtt_us: i64,
    ) -> Result<(), SpreadError> {
        if run != self.options.run || pods != self.options.pods || pod >= pods {
            return Err(SpreadError::new(format!(
                "a worker of another run joined (run {run}, pod {pod} of {pods}; this is run {} \
                 of {} pods)",
                self.options.run, self.options.pods
            )));
        }
        if self.pods[pod].is_some() {
            return Err(SpreadError::new(format!(
                "pod {pod} joined twice (was it restarted? a restarted pod cannot rejoin a run)"
            )));
        }
        self.slots[slot].0 = Some(pod);
        self.pods[pod] = Some(Pod {
            writer: self.slots[slot].1.clone(),
            offset_us,
            rtt_us,
            ready: false,
            started_us: None,
            report: None,
        });
        Ok(())
    }

    fn pod_mut(&mut self, pod: usize) -> &mut Pod {
        self.pods[pod].as_mut().expect("a pod that said hello")
    }

    fn all_joined(&self) -> bool {
        self.pods.iter().all(Option::is_some)
    }

    fn join_timed_out(&self) -> SpreadError {
        let missing: Vec<String> = (0..self.options.pods)
            .filter(|p| self.pods[*p].is_none())
            .map(|p| p.to_string())
            .collect();
        SpreadError::new(format!(
            "pod(s) {} did not join the run within {} s",
            missing.join(", "),
            self.options.join_timeout.as_secs()
        ))
    }

    fn start_margin_us(&self) -> i64 {
        let slowest = self
            .pods
            .iter()
            .flatten()
            .map(|p| p.rtt_us)
            .max()
            .unwrap_or(0);
        (self.options.start_margin.as_micros() as i64).max(4 * slowest)
    }

    fn broadcast(&self, message: &ToWorker) {
        for pod in self.pods.iter().flatten() {
            let mut out = pod
                .writer
                .lock()
                .expect("no thread panics holding this lock");
            let _ = send(&mut *out, message);
        }
    }

    fn abort_all(&self, reason: &str) {
        let abort = ToWorker::Abort {
            reason: reason.to_string(),
        };
        for (_, writer) in &self.slots {
            let mut out = writer.lock().expect("no thread panics holding this lock");
            let _ = send(&mut *out, &abort);
        }
    }

    fn outcomes(&mut self) -> Vec<PodOutcome> {
        let start_at = self.start_at.unwrap_or(0);
        self.pods
            .iter_mut()
            .enumerate()
            .map(|(index, pod)| {
                let pod = pod
                    .as_mut()
                    .expect("outcomes are read after every pod joined");
                PodOutcome {
                    pod: index,
                    offset_us: pod.offset_us,
                    rtt_us: pod.rtt_us,
                    start_skew_us: pod.started_us.map_or(0, |at| at - start_at),
                    report: pod.report.take().unwrap_or(Value::Null),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::{JoinOptions, Worker};
    use serde_json::json;

    fn coordinator(pods: usize) -> (Coordinator, String) {
        let options = CoordinatorOptions {
            run: "r1".into(),
            pods,
            join_timeout: Duration::from_secs(20),
            start_margin: Duration::from_millis(50),
            cancel: None,
        };
        let coordinator = Coordinator::bind("127.0.0.1:0", options).unwrap();
        let address = coordinator.local_addr().unwrap().to_string();
        (coordinator, address)
    }

    fn join(address: &str, pod: usize, pods: usize) -> Result<Worker, SpreadError> {
        Worker::join(&JoinOptions {
            coordinator: address,
            run: "r1",
            pod,
            pods,
            timeout: Duration::from_secs(20),
        })
    }

    #[test]
    fn three_workers_start_together_and_their_reports_come_back_in_pod_order() {
        let (coordinator, address) = coordinator(3);
        let workers: Vec<_> = (0..3)
            .map(|pod| {
                let address = address.clone();
                std::thread::spawn(move || {
                    let mut worker = join(&address, pod, 3).unwrap();
                    worker.start_together(Duration::from_secs(20)).unwrap();
                    for index in 0..2 {
                        worker
                            .interval(index, json!(pod * 10 + index as usize))
                            .unwrap();
                    }
                    worker.done(json!({"pod": pod})).unwrap();
                })
            })
            .collect();
        let mut seen = Vec::new();
        let mut order = Vec::new();
        let outcomes = coordinator
            .run(&mut |event| match event {
                CoordinatorEvent::PodJoined(_) => {}
                CoordinatorEvent::Joined => order.push("joined"),
                CoordinatorEvent::Starting { .. } => order.push("starting"),
                CoordinatorEvent::Interval { index, reports } => {
                    seen.push((index, reports.to_vec()));
                }
                CoordinatorEvent::Passing { .. } => order.push("passing"),
            })
            .unwrap();
        workers.into_iter().for_each(|w| w.join().unwrap());
        assert_eq!(order, ["joined", "starting"]);
        assert_eq!(outcomes.len(), 3);
        for (pod, outcome) in outcomes.iter().enumerate() {
            assert_eq!(outcome.pod, pod);
            assert_eq!(outcome.report, json!({"pod": pod}));
            // One host's clock: the offset is within the round trip, the skew small.
            assert!(
                outcome.offset_us.abs() <= outcome.rtt_us.max(1000),
                "{outcome:?}"
            );
            assert!(outcome.start_skew_us >= 0, "{outcome:?}");
        }
        assert_eq!(
            seen,
            vec![
                (0, vec![Some(json!(0)), Some(json!(10)), Some(json!(20))]),
                (1, vec![Some(json!(1)), Some(json!(11)), Some(json!(21))]),
            ]
        );
    }

    #[test]
    fn no_worker_passes_a_phase_before_every_pod_has_reached_it() {
        let (coordinator, address) = coordinator(3);
        let arrivals = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..3)
            .map(|pod| {
                let (address, arrivals) = (address.clone(), arrivals.clone());
                std::thread::spawn(move || {
                    let mut worker = join(&address, pod, 3).unwrap();
                    worker.start_together(Duration::from_secs(20)).unwrap();
                    // Whoever arrives last, nobody may pass before it has arrived.
                    arrivals.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    worker
                        .barrier("warmup-ended", Duration::from_secs(20))
                        .unwrap();
                    let seen = arrivals.load(std::sync::atomic::Ordering::SeqCst);
                    worker
                        .barrier("warmup-counted", Duration::from_secs(20))
                        .unwrap();
                    worker.done(json!(seen)).unwrap();
                })
            })
            .collect();
        let outcomes = coordinator.run(&mut |_| {}).unwrap();
        workers.into_iter().for_each(|w| w.join().unwrap());
        for outcome in outcomes {
            assert_eq!(outcome.report, json!(3), "pod {} passed early", outcome.pod);
        }
    }

    #[test]
    fn the_same_pods_start_together_again_and_the_caller_acts_before_a_barrier_passes() {
        let (coordinator, address) = coordinator(2);
        let acted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|pod| {
                let (address, acted) = (address.clone(), acted.clone());
                std::thread::spawn(move || {
                    let mut worker = join(&address, pod, 2).unwrap();
                    worker.start_together(Duration::from_secs(20)).unwrap();
                    worker.barrier("window", Duration::from_secs(20)).unwrap();
                    let seen = acted.load(std::sync::atomic::Ordering::SeqCst);
                    worker.start_together(Duration::from_secs(20)).unwrap();
                    worker.done(json!(seen)).unwrap();
                })
            })
            .collect();
        let mut starts = 0;
        let outcomes = coordinator
            .run(&mut |event| match event {
                CoordinatorEvent::Starting { .. } => starts += 1,
                CoordinatorEvent::Passing { phase } => {
                    assert_eq!(phase, "window");
                    acted.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                _ => {}
            })
            .unwrap();
        workers.into_iter().for_each(|w| w.join().unwrap());
        assert_eq!(starts, 2);
        for outcome in outcomes {
            assert_eq!(
                outcome.report,
                json!(true),
                "pod {} passed first",
                outcome.pod
            );
        }
    }

    #[test]
    fn a_cancelled_coordinator_returns_while_pods_are_missing() {
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let options = CoordinatorOptions {
            run: "r1".into(),
            pods: 2,
            join_timeout: Duration::from_secs(600),
            start_margin: Duration::from_millis(50),
            cancel: Some(cancel.clone()),
        };
        let coordinator = Coordinator::bind("127.0.0.1:0", options).unwrap();
        cancel.store(true, Ordering::SeqCst);
        let error = coordinator.run(&mut |_| {}).unwrap_err();
        assert_eq!(error.0, "the run was given up");
    }

    #[test]
    fn a_failed_worker_aborts_the_others_and_the_run() {
        let (coordinator, address) = coordinator(2);
        let address2 = address.clone();
        let survivor = std::thread::spawn(move || {
            let mut worker = join(&address2, 0, 2).unwrap();
            let aborted = worker.aborted();
            let result = worker.start_together(Duration::from_secs(20));
            (result, aborted.load(std::sync::atomic::Ordering::SeqCst))
        });
        let failing = std::thread::spawn(move || {
            let worker = join(&address, 1, 2).unwrap();
            worker.failed("could not create connection for client 3: refused");
        });
        let error = coordinator.run(&mut |_| {}).unwrap_err();
        assert_eq!(
            error.0,
            "pod 1: could not create connection for client 3: refused"
        );
        failing.join().unwrap();
        let (result, aborted) = survivor.join().unwrap();
        assert!(aborted);
        assert_eq!(
            result.unwrap_err().0,
            "the run was aborted: pod 1: could not create connection for client 3: refused"
        );
    }

    #[test]
    fn a_worker_that_disconnects_before_its_result_fails_the_run() {
        let (coordinator, address) = coordinator(1);
        let worker = std::thread::spawn(move || {
            let mut worker = join(&address, 0, 1).unwrap();
            worker.start_together(Duration::from_secs(20)).unwrap();
            drop(worker);
        });
        let error = coordinator.run(&mut |_| {}).unwrap_err();
        worker.join().unwrap();
        assert!(
            error.0.starts_with("pod 0 closed its connection"),
            "{error}"
        );
    }

    #[test]
    fn the_port_is_free_again_once_the_run_is_over() {
        let (coordinator, address) = coordinator(1);
        let worker = std::thread::spawn(move || {
            let mut worker = join(&address, 0, 1).unwrap();
            worker.start_together(Duration::from_secs(20)).unwrap();
            worker.done(json!({"transactions": 1}))
        });
        let port = coordinator.local_addr().unwrap().port();
        coordinator.run(&mut |_| {}).unwrap();
        worker.join().unwrap().unwrap();
        // The next run of the process listens on the same port.
        TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
    }

    #[test]
    fn a_pod_that_never_joins_times_out_naming_it() {
        let options = CoordinatorOptions {
            run: "r1".into(),
            pods: 2,
            join_timeout: Duration::from_millis(300),
            start_margin: Duration::from_millis(50),
            cancel: None,
        };
        let coordinator = Coordinator::bind("127.0.0.1:0", options).unwrap();
        let address = coordinator.local_addr().unwrap().to_string();
        let worker = std::thread::spawn(move || join(&address, 0, 2).map(|_| ()));
        let error = coordinator.run(&mut |_| {}).unwrap_err();
        assert_eq!(error.0, "pod(s) 1 did not join the run within 0 s");
        assert!(worker.join().unwrap().is_err());
    }

    #[test]
    fn a_worker_of_another_run_is_refused() {
        let (coordinator, address) = coordinator(1);
        let stranger = std::thread::spawn(move || {
            Worker::join(&JoinOptions {
                coordinator: &address,
                run: "other",
                pod: 0,
                pods: 1,
                timeout: Duration::from_secs(5),
            })
            .map(|_| ())
        });
        let error = coordinator.run(&mut |_| {}).unwrap_err();
        assert!(
            error.0.starts_with("a worker of another run joined"),
            "{error}"
        );
        assert!(stranger.join().unwrap().is_err());
    }
}
