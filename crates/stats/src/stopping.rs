//! When an auto lab stops measuring a cell: after each round, the paired interval of every
//! target against the base is looked at, and the cell stops once all of them are within the
//! precision the user asked for (`Stop::Precise`), or at the cap (`Stop::Cap`). The rule looks
//! at the interval's width only, never at significance: stopping when a test first rejects
//! would make "faster"/"slower" come out of pure noise far more often than α (the optional
//! stopping problem). The simulation below checks the error rates at the stopping time.

use super::paired::{compare_paired, PairedComparison};
use super::verdict::Direction;

/// Rounds before the width is trusted: with fewer, two or three differences that happen to
/// fall close give a narrow interval by chance, and stopping on it loses coverage (with 5, the
/// simulation below measures 94.4–94.8% at ±3% and a cap of 15).
pub const MIN_ROUNDS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoppingRule {
    /// The half-width the ratio's 95% interval must reach, relative (0.03 for ±3%).
    pub precision: f64,
    /// Rounds after which the cell stops, decided or not.
    pub max_rounds: usize,
}

/// Why a cell stopped, or that it goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every comparison reached the precision.
    Precise,
    /// The cap on rounds came first.
    Cap,
    /// The lab's time budget ran out first.
    Budget,
    /// The cell's claims were decided (`claim::decided_at_look`) before its precision.
    Claim,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Precise => "precision",
            Stop::Cap => "cap",
            Stop::Budget => "budget",
            Stop::Claim => "claim",
        }
    }

    pub fn parse(name: &str) -> Option<Stop> {
        [Stop::Precise, Stop::Cap, Stop::Budget, Stop::Claim]
            .into_iter()
            .find(|stop| stop.name() == name)
    }
}

/// Whether a cell stops after the rounds in `comparisons` (per target other than the base,
/// its (base, other) pairs in round order); None while it goes on.
pub fn should_stop(comparisons: &[Vec<(f64, f64)>], rule: &StoppingRule) -> Option<Stop> {
    let rounds = rounds(comparisons);
    let precise = rounds >= MIN_ROUNDS
        && widest_precision(comparisons).is_some_and(|reached| reached <= rule.precision);
    if precise {
        Some(Stop::Precise)
    } else if rounds >= rule.max_rounds {
        Some(Stop::Cap)
    } else {
        None
    }
}

/// The rounds every comparison has a pair for; 0 without a comparison.
pub fn rounds(comparisons: &[Vec<(f64, f64)>]) -> usize {
    comparisons.iter().map(Vec::len).min().unwrap_or(0)
}

/// The widest relative half-width among the comparisons' intervals: the precision the cell has
/// reached. None without a comparison, or while one of them has no interval yet.
pub fn widest_precision(comparisons: &[Vec<(f64, f64)>]) -> Option<f64> {
    comparisons
        .iter()
        .map(|pairs| {
            compare_paired(pairs, Direction::HigherIsBetter)
                .as_ref()
                .and_then(PairedComparison::precision)
        })
        .try_fold(None, |widest: Option<f64>, reached| {
            let reached = reached?;
            Some(Some(widest.map_or(reached, |w| w.max(reached))))
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: StoppingRule = StoppingRule {
        precision: 0.03,
        max_rounds: 8,
    };

    #[test]
    fn a_cell_stops_on_width_from_the_fifth_round_or_at_the_cap() {
        // Log ratios alternating ±0.01: precise from the first round, but trusted from round 5.
        let tight: Vec<(f64, f64)> = (0..6)
            .map(|i| (100.0, 100.0 * if i % 2 == 0 { 1.01 } else { 0.99 }))
            .collect();
        assert_eq!(should_stop(&[tight[..4].to_vec()], &RULE), None);
        assert_eq!(
            should_stop(&[tight[..5].to_vec()], &RULE),
            Some(Stop::Precise)
        );
        // Two targets against the base: the wider one decides.
        let wide: Vec<(f64, f64)> = (0..8)
            .map(|i| (100.0, 100.0 * if i % 2 == 0 { 1.2 } else { 0.8 }))
            .collect();
        let both = [tight[..5].to_vec(), wide[..5].to_vec()];
        assert_eq!(should_stop(&both, &RULE), None);
        assert!(widest_precision(&both).unwrap() > 0.1);
        assert_eq!(should_stop(&[wide], &RULE), Some(Stop::Cap));
        // A lone target: nothing to compare, only the cap stops it.
        assert_eq!(widest_precision(&[]), None);
        assert_eq!(should_stop(&[], &RULE), None);
    }
}

#[cfg(test)]
pub(crate) mod simulation {
    //! Simulated auto labs under a noise model fitted to this machine.
    use super::*;
    use crate::verdict::Verdict;

    /// A run's metric is true_value × exp(drift + noise), stalls aside:
    /// - `drift`: shared by the runs of one round (the machine's state at that moment), normal;
    /// - `noise`: each run's own, Student t with 4 degrees of freedom scaled to `run_sd` (heavy
    ///   tails: the real runs' log values have an excess kurtosis well above a normal's);
    /// - a stall: with probability `stall_probability` a run loses `stall_loss` of its value
    ///   (a checkpoint or another process inside its window).
    #[derive(Clone, Copy)]
    pub(crate) struct NoiseModel {
        pub(crate) drift_sd: f64,
        run_sd: f64,
        stall_probability: f64,
        stall_loss: f64,
    }

    pub(crate) struct Random(pub(crate) u64);

    impl Random {
        pub(crate) fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        pub(crate) fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }

        /// Student t with 4 degrees of freedom, scaled to unit variance (its variance is 2).
        fn heavy(&mut self) -> f64 {
            let chi2: f64 = (0..4).map(|_| self.normal().powi(2)).sum();
            self.normal() / (chi2 / 4.0).sqrt() / 2f64.sqrt()
        }
    }

    impl NoiseModel {
        pub(crate) fn run(&self, random: &mut Random, true_value: f64, drift: f64) -> f64 {
            let value = true_value * (drift + self.run_sd * random.heavy()).exp();
            if random.uniform() < self.stall_probability {
                value * (1.0 - self.stall_loss)
            } else {
                value
            }
        }
    }

    struct Outcome {
        verdict: Verdict,
        covered: bool,
        rounds: usize,
    }

    fn simulate_lab(
        model: NoiseModel,
        true_ratio: f64,
        rule: &StoppingRule,
        random: &mut Random,
    ) -> Outcome {
        let mut pairs = vec![Vec::new()];
        loop {
            let drift = model.drift_sd * random.normal();
            let base = model.run(random, 1000.0, drift);
            let other = model.run(random, 1000.0 * true_ratio, drift);
            pairs[0].push((base, other));
            if should_stop(&pairs, rule).is_some() {
                break;
            }
        }
        let comparison = compare_paired(&pairs[0], Direction::HigherIsBetter).unwrap();
        let (low, high) = comparison.interval.unwrap();
        Outcome {
            verdict: comparison.verdict,
            covered: low <= true_ratio && true_ratio <= high,
            rounds: pairs[0].len(),
        }
    }

    /// (share of labs with each verdict kind, coverage, mean rounds) over `labs` labs.
    fn scenario(model: NoiseModel, true_ratio: f64, rule: StoppingRule, labs: usize) -> Summary {
        let mut random = Random(0x1ab5_eed5 ^ (true_ratio.to_bits()));
        let mut summary = Summary::default();
        for _ in 0..labs {
            let outcome = simulate_lab(model, true_ratio, &rule, &mut random);
            match outcome.verdict {
                Verdict::Better => summary.faster += 1.0,
                Verdict::Worse => summary.slower += 1.0,
                _ => {}
            }
            summary.covered += f64::from(u8::from(outcome.covered));
            summary.rounds += outcome.rounds as f64;
        }
        for share in [
            &mut summary.faster,
            &mut summary.slower,
            &mut summary.covered,
            &mut summary.rounds,
        ] {
            *share /= labs as f64;
        }
        summary
    }

    #[derive(Default, Debug)]
    struct Summary {
        faster: f64,
        slower: f64,
        covered: f64,
        rounds: f64,
    }

    /// Fitted to this machine with bench/noise_model.py (an A/A lab of two identical
    /// PostgreSQL 15 clusters, fsync off, pgbench select-only and tpcb-like at 1 client,
    /// 10 interleaved rounds of 5 s, 2026-11-26): select-only run_sd 0.055, drift_sd 0.169;
    /// tpcb-like run_sd 0.099, drift_sd 0.127 (the round-to-round drift is the larger part:
    /// select-only went from 7,605 to 14,199 tps over the lab). The model takes run_sd 0.08,
    /// drift_sd 0.15, Student t(4) tails, and a stall (30% lost) in 1% of runs: none showed in
    /// the quiet lab, several in one run beside a compile.
    pub(crate) const MACHINE: NoiseModel = NoiseModel {
        drift_sd: 0.15,
        run_sd: 0.08,
        stall_probability: 0.01,
        stall_loss: 0.3,
    };

    /// "10% run-to-run noise": a run's total log sd 0.10, split between drift and the run's
    /// own noise as the fitted lab split it (the run's own share of the variance: 10% for
    /// select-only, 38% for tpcb-like; 25% here), with the same tails and stalls.
    pub(crate) const TEN_PERCENT: NoiseModel = NoiseModel {
        drift_sd: 0.0866,
        run_sd: 0.05,
        stall_probability: 0.01,
        stall_loss: 0.3,
    };

    const LABS: usize = 10_000;

    #[test]
    fn auto_labs_keep_their_error_rates() {
        let rule = StoppingRule {
            precision: 0.03,
            max_rounds: 15,
        };
        let same = scenario(MACHINE, 1.0, rule, LABS);
        let changed = scenario(TEN_PERCENT, 0.95, rule, LABS);
        println!(
            "A/A (this machine's noise), ±3%, cap 15: faster {:.2}%, slower {:.2}%, interval covers 1 in {:.2}%, mean rounds {:.1}",
            same.faster * 100.0,
            same.slower * 100.0,
            same.covered * 100.0,
            same.rounds
        );
        println!(
            "5% slower at 10% run-to-run noise, ±3%, cap 15: decided slower {:.2}%, faster {:.2}%, interval covers 0.95 in {:.2}%, mean rounds {:.1}",
            changed.slower * 100.0,
            changed.faster * 100.0,
            changed.covered * 100.0,
            changed.rounds
        );
        // Held: the interval covers the true ratio at the stopping time, and no lab calls a
        // slower target faster.
        assert!(same.covered >= 0.93, "{same:?}");
        assert!(changed.covered >= 0.93, "{changed:?}");
        assert!(changed.faster <= 0.001, "{changed:?}");
        // Not held by the paired t interval: false verdicts in the A/A labs are 5.2% here
        // (5.09% over 100,000 labs, 1.3 standard errors above 5%: the t test's own level
        // under t(4) tails and stalls, since the labs mostly reach the cap), and a 5% change
        // is decided in 67% of labs within 15 rounds (goal ≥ 80%). That goal is out of any
        // test's reach under this model: the paired log ratios' sd is √2 · 0.05 = 0.0707, and
        // even for normal noise a t test on 15 pairs has 74.3% power (scipy's noncentral t;
        // 80% needs an sd ≤ 0.066). Only a lower paired noise reaches it, and the design that
        // lowers it (both targets at once, bench/duet_noise.py) measures another operating
        // point. A 20% trimmed mean raised the power to 76% but lost coverage (89–91%) and
        // doubled the false verdicts; the Wilcoxon signed-rank test reached 73.7% (bench/
        // README.md). These bounds keep what is reached from getting worse.
        assert!(same.faster + same.slower <= 0.055, "{same:?}");
        assert!(changed.slower >= 0.65, "{changed:?}");
    }
}
