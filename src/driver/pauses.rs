//! Closed-loop terminals' pauses, TPC-C's keying and think times (clause 5.2.5): a client
//! waits before each transaction (keying) and after it (thinking), outside the transaction's
//! latency. Thousands of such clients are cheap: a pausing client is a sleeping task.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::plan::{Pauses, WeightedScript};
use crate::script::prng::PgPrng;

/// How long a pause sleeps at most before it looks at the stop flag again.
const STOP_CHECK: Duration = Duration::from_secs(1);

/// Sleeps for `length`; false when the run ended (deadline or stop flag) before that.
pub async fn pause(length: Duration, deadline: Option<Instant>, stop: Option<&AtomicBool>) -> bool {
    let until = Instant::now() + length;
    loop {
        let stopped = stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if stopped || deadline.is_some_and(|end| until.min(Instant::now()) >= end) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        let mut wake = until.min(now + STOP_CHECK);
        if let Some(end) = deadline {
            wake = wake.min(end);
        }
        tokio::time::sleep_until(wake.into()).await;
    }
}

/// Clause 5.2.5.4: Tt = -ln(r) × μ with r uniform in (0, 1], truncated at 10 μ.
pub fn think_time(mean: Duration, random: &mut PgPrng) -> Duration {
    let uniform = 1.0 - random.next_f64();
    mean.mul_f64((-uniform.ln()).min(10.0))
}

/// A first wait, uniform over one mean cycle (keying plus thinking, weighted by the mix), so
/// that clients started together do not key in lockstep and the rate is steady from the start.
pub fn stagger(pauses: &[Pauses], scripts: &[WeightedScript], random: &mut PgPrng) -> Duration {
    let total_weight: f64 = scripts.iter().map(|s| f64::from(s.weight)).sum();
    if total_weight == 0.0 {
        return Duration::ZERO;
    }
    let mean_cycle_s: f64 = pauses
        .iter()
        .zip(scripts)
        .map(|(p, s)| f64::from(s.weight) * (p.keying + p.mean_think).as_secs_f64())
        .sum::<f64>()
        / total_weight;
    Duration::from_secs_f64(mean_cycle_s * random.next_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_are_exponential_and_truncated() {
        let mut random = PgPrng::seeded(3);
        let mean = Duration::from_secs(12);
        let draws: Vec<f64> = (0..100_000)
            .map(|_| think_time(mean, &mut random).as_secs_f64())
            .collect();
        let average = draws.iter().sum::<f64>() / draws.len() as f64;
        // The truncation at 10 μ removes e^-10 of the mass: the mean stays within 0.1%.
        assert!((average - 12.0).abs() < 0.12, "{average}");
        assert!(draws.iter().all(|d| *d <= 120.0));
        let over_mean = draws.iter().filter(|d| **d > 12.0).count() as f64 / draws.len() as f64;
        assert!((over_mean - (-1.0f64).exp()).abs() < 0.01, "{over_mean}");
    }
}
