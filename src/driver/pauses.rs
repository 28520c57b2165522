//! Closed-loop terminals' pauses, TPC-C's keying and think times (clause 5.2.5): a client
//! waits before each transaction (keying) and after it (thinking), outside the transaction's
//! latency. Thousands of such clients are cheap: a pausing client is a sleeping task.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::plan::{Pauses, WeightedScript};
use stampede_script::prng::PgPrng;

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

/// Where a client enters its cycle, so that clients started together are already spread as
/// in the steady state and the rate holds from the first second (a closed system started in
/// lockstep takes about a cycle to settle, which would bias a short measured run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FirstStep {
    /// In the middle of keying for this script: this much of it is left.
    Keying { script: usize, remaining: Duration },
    /// Thinking after a transaction: this long, then the next transaction as usual.
    Thinking(Duration),
}

/// A uniform instant of the steady cycle: script i with probability proportional to its weight
/// times its keying plus mean think time; keying with probability keying / (keying + think),
/// its remainder uniform, else thinking, whose remainder is exponential with the same mean
/// (memoryless). Response times are left out: they are short against the pauses.
pub fn steady_state_start(
    pauses: &[Pauses],
    scripts: &[WeightedScript],
    random: &mut PgPrng,
) -> FirstStep {
    let cycle = |(p, s): (&Pauses, &WeightedScript)| {
        f64::from(s.weight) * (p.keying + p.mean_think).as_secs_f64()
    };
    let total: f64 = pauses.iter().zip(scripts).map(cycle).sum();
    if total <= 0.0 {
        return FirstStep::Thinking(Duration::ZERO);
    }
    let mut point = random.next_f64() * total;
    for (script, entry) in pauses.iter().zip(scripts).enumerate() {
        let share = cycle(entry);
        if point < share || script == pauses.len() - 1 {
            let pause = entry.0;
            let keying_share =
                pause.keying.as_secs_f64() / (pause.keying + pause.mean_think).as_secs_f64();
            return if random.next_f64() < keying_share {
                FirstStep::Keying {
                    script,
                    remaining: pause.keying.mul_f64(random.next_f64()),
                }
            } else {
                FirstStep::Thinking(think_time(pause.mean_think, random))
            };
        }
        point -= share;
    }
    unreachable!("the loop returns at the last script")
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_script::Script;

    #[test]
    fn clients_start_where_a_steady_cycle_would_find_them() {
        // Script 0: weight 1, keying 10 s, think 10 s; script 1: weight 3, keying 2 s, think 8 s.
        // A steady cycle spends 10 + 10 s in script 0 for every 3 x (2 + 8) s in script 1.
        let pause = |keying, think| Pauses {
            keying: Duration::from_secs(keying),
            mean_think: Duration::from_secs(think),
        };
        let pauses = [pause(10, 10), pause(2, 8)];
        let scripts: Vec<WeightedScript> = [1, 3]
            .into_iter()
            .map(|weight| WeightedScript {
                script: Script {
                    description: String::new(),
                    commands: Vec::new(),
                },
                weight,
            })
            .collect();
        let mut random = PgPrng::seeded(5);
        let draws = 100_000;
        let (mut keying_0, mut keying_1, mut thinking) = (0.0, 0.0, 0.0);
        for _ in 0..draws {
            match steady_state_start(&pauses, &scripts, &mut random) {
                FirstStep::Keying {
                    script: 0,
                    remaining,
                } => {
                    assert!(remaining <= Duration::from_secs(10));
                    keying_0 += 1.0;
                }
                FirstStep::Keying { remaining, .. } => {
                    assert!(remaining <= Duration::from_secs(2));
                    keying_1 += 1.0;
                }
                FirstStep::Thinking(_) => thinking += 1.0,
            }
        }
        let share = |count: f64| count / f64::from(draws);
        assert!((share(keying_0) - 10.0 / 50.0).abs() < 0.01);
        assert!((share(keying_1) - 6.0 / 50.0).abs() < 0.01);
        assert!((share(thinking) - 34.0 / 50.0).abs() < 0.01);
    }

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
