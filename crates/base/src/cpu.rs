//! CPU time of this process (all threads), from getrusage, and the cores it may run on.

use std::time::Duration;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTimes {
    pub fn total(&self) -> Duration {
        self.user + self.system
    }

    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

fn timeval(tv: nix::sys::time::TimeVal) -> Duration {
    Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
}

pub fn process_cpu() -> CpuTimes {
    use nix::sys::resource::{getrusage, UsageWho};
    // RUSAGE_SELF cannot fail; zero is what a failure would leave anyway.
    getrusage(UsageWho::RUSAGE_SELF).map_or_else(
        |_| CpuTimes::default(),
        |usage| CpuTimes {
            user: timeval(usage.user_time()),
            system: timeval(usage.system_time()),
        },
    )
}

/// The CPUs this process may run on (what "the client's cores" means for a driver warning).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter moves with busy work. Judged by work, not by the wall clock: the suite's
    /// other programs share the cores, so 50 ms of wall clock may hold far less CPU.
    #[test]
    fn busy_work_shows_up_as_cpu() {
        let before = process_cpu();
        let mut x = 0u64;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while process_cpu().since(&before).total() < Duration::from_millis(20) {
            assert!(
                std::time::Instant::now() < deadline,
                "30 s of busy work never showed 20 ms of CPU: {:?} {x}",
                process_cpu().since(&before)
            );
            for _ in 0..100_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
        }
    }
}
