//! Clock offsets between hosts, as NTP measures them: a worker sends its time, the coordinator
//! answers with its own, and the worker notes when the answer came. With the answer taken
//! halfway through the round trip, offset = coordinator − (sent + received) / 2, wrong by at most
//! half the round trip; of several probes the one with the shortest round trip is kept.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// This host's clock, in Unix microseconds.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// One probe's three readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub sent_us: i64,
    pub coordinator_us: i64,
    pub received_us: i64,
}

impl Probe {
    pub fn rtt_us(&self) -> i64 {
        self.received_us - self.sent_us
    }

    pub fn offset_us(&self) -> i64 {
        self.coordinator_us - (self.sent_us + self.received_us) / 2
    }
}

/// The offset (coordinator − worker) and round trip of the probe with the shortest round trip.
pub fn estimate(probes: &[Probe]) -> Option<(i64, i64)> {
    probes
        .iter()
        .min_by_key(|p| p.rtt_us())
        .map(|p| (p.offset_us(), p.rtt_us()))
}

/// Sleeps until this host's clock reads `local_us` (returns at once when it has passed).
/// Sleeps in steps so that a clock stepped meanwhile is noticed.
pub fn sleep_until(local_us: i64) {
    loop {
        let left = local_us - now_us();
        if left <= 0 {
            return;
        }
        std::thread::sleep(Duration::from_micros(left.min(100_000) as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_decides_the_offset() {
        // The worker's clock runs 5 ms behind; the second probe waited 40 ms on its way back.
        let probes = [
            Probe {
                sent_us: 1_000,
                coordinator_us: 6_100,
                received_us: 1_200,
            },
            Probe {
                sent_us: 2_000,
                coordinator_us: 7_050,
                received_us: 42_100,
            },
        ];
        assert_eq!(estimate(&probes), Some((5_000, 200)));
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn sleeping_until_a_time_returns_once_the_clock_has_passed_it() {
        let target = now_us() + 2_000;
        sleep_until(target);
        assert!(now_us() >= target);
        // A past time: returns (the test would hang otherwise).
        sleep_until(target - 1_000_000);
    }
}
