//! A background sampler for the measured window, whatever the engine: a thread of its own that
//! samples until told to finish, then hands its samples over; each engine's probes say what it
//! samples (`postgres::sampler::start`, `mysql::start_sampler`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use stampede_store::{CounterRow, WaitSample};

/// How often a sampler looks: ten times a second.
pub const TICK: Duration = Duration::from_millis(100);

/// What the sampler collected.
#[derive(Debug, Default)]
pub struct Samples {
    pub wait_events: Vec<WaitSample>,
    /// (second, the counter's change during that second).
    pub counter_series: Vec<(u64, CounterRow)>,
    /// What sampling cost: CPU seconds of the sampler's thread and of its server backend.
    pub own_cost: Vec<CounterRow>,
}

/// A sampling thread: it samples until told to finish, then hands its samples over.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Samples>>,
}

impl Sampler {
    /// Runs `sample` on a thread of its own; it returns when the flag it is given is set.
    pub fn spawn(sample: impl FnOnce(&AtomicBool) -> Samples + Send + 'static) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || sample(&flag));
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|handle| handle.join().ok())
            .unwrap_or_default()
    }
}

/// A sampler dropped without `finish` (the run failed) stops by itself.
impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// CPU seconds of the calling thread.
pub fn thread_cpu_s() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0.0, |time| {
        time.tv_sec() as f64 + time.tv_nsec() as f64 / 1e9
    })
}
