//! A worker: one pod's side of a spread run. It joins the coordinator (retrying while the
//! coordinator's pod starts), measures its clock offset, waits at the barriers, reports its
//! intervals and its result. A reader thread watches for an abort, which sets the flag the
//! caller's run stops on.

use std::io::BufReader;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clock::{self, now_us, Probe};
use crate::message::{receive, send, ToCoordinator, ToWorker};
use crate::SpreadError;

/// Clock probes per worker: the shortest round trip of these decides the offset.
const PROBES: usize = 16;

pub struct Worker {
    pod: usize,
    writer: Arc<Mutex<TcpStream>>,
    inbound: Receiver<ToWorker>,
    offset_us: i64,
    rtt_us: i64,
    aborted: Arc<AtomicBool>,
    abort_reason: Arc<Mutex<Option<String>>>,
}

/// Who the worker is and where it goes.
pub struct JoinOptions<'a> {
    pub coordinator: &'a str,
    pub run: &'a str,
    pub pod: usize,
    pub pods: usize,
    /// How long to keep trying to reach the coordinator and to wait for the others.
    pub timeout: Duration,
}

impl Worker {
    /// Connects, measures the clock offset, says hello and waits until every pod has joined.
    pub fn join(options: &JoinOptions<'_>) -> Result<Worker, SpreadError> {
        let deadline = Instant::now() + options.timeout;
        let stream = connect(options.coordinator, deadline)?;
        let _ = stream.set_nodelay(true);
        let writer = Arc::new(Mutex::new(stream.try_clone().map_err(io_error)?));
        let (sender, inbound) = mpsc::channel();
        let aborted = Arc::new(AtomicBool::new(false));
        let abort_reason = Arc::new(Mutex::new(None));
        spawn_reader(stream, sender, aborted.clone(), abort_reason.clone());
        let mut worker = Worker {
            pod: options.pod,
            writer,
            inbound,
            offset_us: 0,
            rtt_us: 0,
            aborted,
            abort_reason,
        };
        worker.measure_clock(deadline)?;
        worker.send(&ToCoordinator::Hello {
            run: options.run.to_string(),
            pod: options.pod,
            pods: options.pods,
            offset_us: worker.offset_us,
            rtt_us: worker.rtt_us,
        })?;
        match worker.next(deadline)? {
            ToWorker::Welcome => Ok(worker),
            other => Err(unexpected(&other)),
        }
    }

    pub fn pod(&self) -> usize {
        self.pod
    }

    /// The coordinator's clock minus this host's, and the round trip that measured it.
    pub fn offset_us(&self) -> i64 {
        self.offset_us
    }

    pub fn rtt_us(&self) -> i64 {
        self.rtt_us
    }

    /// Set when the coordinator tells this worker to abort (another pod failed).
    pub fn aborted(&self) -> Arc<AtomicBool> {
        self.aborted.clone()
    }

    /// Why the coordinator aborted the run, once it did.
    pub fn abort_reason(&self) -> Option<String> {
        self.abort_reason
            .lock()
            .expect("no thread panics holding this lock")
            .clone()
    }

    /// Says the clients are connected, waits for the agreed start and returns when this host's
    /// clock reaches it (after telling the coordinator when that was).
    pub fn start_together(&mut self, timeout: Duration) -> Result<(), SpreadError> {
        self.send(&ToCoordinator::Ready)?;
        let at_us = match self.next(Instant::now() + timeout)? {
            ToWorker::Start { at_us } => at_us,
            other => return Err(unexpected(&other)),
        };
        clock::sleep_until(at_us - self.offset_us);
        let started = now_us() + self.offset_us;
        self.send(&ToCoordinator::Started { at_us: started })
    }

    /// Waits until every pod has reached the point named `phase` (a rampup's end, say), so
    /// that what one pod reads there is read with every pod at the same point.
    pub fn barrier(&self, phase: &str, timeout: Duration) -> Result<(), SpreadError> {
        self.send(&ToCoordinator::Arrived {
            phase: phase.to_string(),
        })?;
        match self.next(Instant::now() + timeout)? {
            ToWorker::Pass { phase: passed } if passed == phase => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    pub fn interval(&self, index: u64, report: Value) -> Result<(), SpreadError> {
        self.send(&ToCoordinator::Interval { index, report })
    }

    pub fn done(&self, report: Value) -> Result<(), SpreadError> {
        self.send(&ToCoordinator::Done { report })
    }

    pub fn failed(&self, message: &str) {
        let _ = self.send(&ToCoordinator::Failed {
            message: message.to_string(),
        });
    }

    fn measure_clock(&mut self, deadline: Instant) -> Result<(), SpreadError> {
        let mut probes = Vec::with_capacity(PROBES);
        for _ in 0..PROBES {
            let sent_us = now_us();
            self.send(&ToCoordinator::Probe { sent_us })?;
            match self.next(deadline)? {
                ToWorker::ProbeReply {
                    sent_us,
                    coordinator_us,
                } => probes.push(Probe {
                    sent_us,
                    coordinator_us,
                    received_us: now_us(),
                }),
                other => return Err(unexpected(&other)),
            }
        }
        (self.offset_us, self.rtt_us) = clock::estimate(&probes).expect("probes were taken");
        Ok(())
    }

    fn send(&self, message: &ToCoordinator) -> Result<(), SpreadError> {
        let mut out = self
            .writer
            .lock()
            .expect("no thread panics holding this lock");
        send(&mut *out, message)
            .map_err(|e| SpreadError::new(format!("lost the connection to the coordinator: {e}")))
    }

    fn next(&self, deadline: Instant) -> Result<ToWorker, SpreadError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.inbound.recv_timeout(wait) {
            Ok(ToWorker::Abort { reason }) => {
                Err(SpreadError::new(format!("the run was aborted: {reason}")))
            }
            Ok(message) => Ok(message),
            Err(RecvTimeoutError::Timeout) => Err(SpreadError::new(
                "the coordinator did not answer in time (are all pods running?)",
            )),
            Err(RecvTimeoutError::Disconnected) => match self.abort_reason() {
                Some(reason) => Err(SpreadError::new(format!("the run was aborted: {reason}"))),
                None => Err(SpreadError::new("the coordinator closed the connection")),
            },
        }
    }
}

/// Connects, trying again until the deadline: the coordinator's pod may start after this one.
fn connect(address: &str, deadline: Instant) -> Result<TcpStream, SpreadError> {
    loop {
        match TcpStream::connect(address) {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= deadline => {
                return Err(SpreadError::new(format!(
                    "could not reach the coordinator at {address}: {e}"
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn spawn_reader(
    stream: TcpStream,
    sender: mpsc::Sender<ToWorker>,
    aborted: Arc<AtomicBool>,
    reason: Arc<Mutex<Option<String>>>,
) {
    std::thread::Builder::new()
        .name("spread-worker-read".into())
        .spawn(move || {
            let mut reader = BufReader::new(stream);
            while let Ok(Some(message)) = receive::<ToWorker>(&mut reader) {
                if let ToWorker::Abort { reason: why } = &message {
                    *reason.lock().expect("no thread panics holding this lock") = Some(why.clone());
                    aborted.store(true, Ordering::SeqCst);
                }
                if sender.send(message).is_err() {
                    return;
                }
            }
        })
        .expect("a thread for the worker's reader");
}

impl Drop for Worker {
    /// Closes the connection for the reader thread too, so the coordinator sees this worker go.
    fn drop(&mut self) {
        if let Ok(stream) = self.writer.lock() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn unexpected(message: &ToWorker) -> SpreadError {
    SpreadError::new(format!(
        "the coordinator said something out of turn: {message:?}"
    ))
}

fn io_error(e: std::io::Error) -> SpreadError {
    SpreadError::new(format!("the connection to the coordinator failed: {e}"))
}
