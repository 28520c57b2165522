//! Paired analysis of interleaved rounds. A lab measures every cell once per round on every
//! target, back to back, so the runs of one round share the machine's condition of that moment;
//! the ratio of a round's two runs cancels whatever slow drift the machine went through between
//! rounds. The change is estimated from the within-round log ratios d_i = ln(other_i / base_i):
//! their mean with a Student t interval, transformed back (so the ratio is the geometric mean
//! of the rounds' ratios, and the interval is not symmetric around it).
//!
//! Why a t interval on log ratios: it is exact for normal log ratios and, in the simulation in
//! `stopping.rs` (this machine's fitted noise, heavy tails and stalls), keeps its coverage at
//! the stopping time (94.4–94.8%); a 20% trimmed mean lost it (89–91%). Logs make a 2× and a
//! 0.5× change symmetric, which they are to a user.
//!
//! Verdicts are benchstat's words: `Better`/`Worse` when the t test rejects at α (the interval
//! excludes 1), `NoDifference` when it does not and the interval lies within ±`EQUIVALENCE`,
//! `Inconclusive` otherwise.

use super::student;
use super::verdict::{decide, Direction, Verdict, ALPHA, EQUIVALENCE};

/// Fewer pairs than this give no verdict: a t interval on one or two differences is too
/// dependent on how far apart two numbers happened to fall.
pub const MIN_PAIRS: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct PairedComparison {
    /// Pairs with both values positive (the ones analysed).
    pub pairs: usize,
    /// exp(mean of ln(other / base)): the geometric mean of the rounds' ratios.
    pub ratio: f64,
    /// 95% interval of the ratio; None with fewer than two pairs.
    pub interval: Option<(f64, f64)>,
    /// The paired t test's two-sided p-value.
    pub p_value: f64,
    /// Sample standard deviation of the log ratios: the noise that pairing leaves.
    pub log_ratio_sd: Option<f64>,
    pub verdict: Verdict,
}

impl PairedComparison {
    /// How far the interval reaches from the ratio, relative to it (the larger side): the
    /// precision the comparison was decided to. None without an interval.
    pub fn precision(&self) -> Option<f64> {
        let (low, high) = self.interval?;
        Some((high / self.ratio - 1.0).max(1.0 - low / self.ratio))
    }
}

/// The most rounds `rounds_to_decide` looks for.
pub const MAX_ROUNDS_TO_DECIDE: usize = 1000;

/// The rounds in all that would decide a paired comparison measured at `ratio` with log-ratio
/// sd `log_sd`, if both stayed as measured: its 95% t interval clear of 1 (faster or slower),
/// or inside ±`EQUIVALENCE` (no detectable difference), whichever comes first. None when that
/// takes over `MAX_ROUNDS_TO_DECIDE` (a ratio on the equivalence boundary).
pub fn rounds_to_decide(ratio: f64, log_sd: f64) -> Option<usize> {
    let mean = ratio.ln();
    let to_change = mean.abs();
    let to_equivalence = ((1.0 + EQUIVALENCE).ln() - mean).min(mean - (1.0 - EQUIVALENCE).ln());
    let reach = to_change.max(to_equivalence);
    if reach <= 0.0 || !reach.is_finite() || !log_sd.is_finite() {
        return None;
    }
    (MIN_PAIRS..=MAX_ROUNDS_TO_DECIDE).find(|&n| {
        let n = n as f64;
        student::quantile(1.0 - ALPHA / 2.0, n - 1.0) * log_sd / n.sqrt() < reach
    })
}

/// The (1 − `alpha`) t interval of the ratio from the same log ratios `compare_paired` reads;
/// None with fewer than two usable pairs. A claim's interim looks use a stricter level than
/// the reported 95% (`claim`).
pub fn interval_at(pairs: &[(f64, f64)], alpha: f64) -> Option<(f64, f64)> {
    LogRatios::of(pairs)?.interval(alpha)
}

/// The log ratios ln(other / base) of the pairs whose values are both positive: their count,
/// mean and sample standard deviation (None for one).
struct LogRatios {
    n: usize,
    mean: f64,
    sd: Option<f64>,
}

impl LogRatios {
    fn of(pairs: &[(f64, f64)]) -> Option<LogRatios> {
        let logs: Vec<f64> = pairs
            .iter()
            .filter(|(base, other)| *base > 0.0 && *other > 0.0)
            .map(|(base, other)| (other / base).ln())
            .collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.len() >= 2)
            .then(|| (logs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
        (!logs.is_empty()).then_some(LogRatios {
            n: logs.len(),
            mean,
            sd,
        })
    }

    fn standard_error(&self) -> Option<f64> {
        Some(self.sd? / (self.n as f64).sqrt())
    }

    fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        let df = self.n as f64 - 1.0;
        let half_width = student::quantile(1.0 - alpha / 2.0, df) * self.standard_error()?;
        Some((
            (self.mean - half_width).exp(),
            (self.mean + half_width).exp(),
        ))
    }

    /// The paired t test's two-sided p-value.
    fn p_value(&self) -> f64 {
        match self.standard_error() {
            Some(se) if se > 0.0 => student::two_sided_p(self.mean / se, self.n as f64 - 1.0),
            _ if self.mean == 0.0 => 1.0,
            Some(_) => 0.0,
            None => 1.0,
        }
    }
}

/// Compares `other` to `base` over rounds given as (base, other) pairs; None without a pair
/// whose values are both positive.
pub fn compare_paired(pairs: &[(f64, f64)], direction: Direction) -> Option<PairedComparison> {
    let logs = LogRatios::of(pairs)?;
    let interval = logs.interval(ALPHA);
    let p_value = logs.p_value();
    let verdict = match interval {
        Some((low, high)) if logs.n >= MIN_PAIRS => decide(p_value, low, high, direction),
        _ => Verdict::NeedRuns(MIN_PAIRS),
    };
    Some(PairedComparison {
        pairs: logs.n,
        ratio: logs.mean.exp(),
        interval,
        p_value,
        log_ratio_sd: logs.sd,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIGHER: Direction = Direction::HigherIsBetter;

    #[test]
    fn drift_between_rounds_cancels() {
        // The machine halves its speed in round 3 and doubles it in round 5; within each round
        // the other target is 10% faster. Unpaired, the runs overlap; paired, it is decided.
        let pairs = [
            (100.0, 110.0),
            (98.0, 108.5),
            (50.0, 54.8),
            (101.0, 111.2),
            (200.0, 219.0),
        ];
        let c = compare_paired(&pairs, HIGHER).unwrap();
        assert_eq!(c.verdict, Verdict::Better, "{c:?}");
        let (low, high) = c.interval.unwrap();
        assert!(low > 1.08 && high < 1.12, "{low} {high}");
        assert!(c.precision().unwrap() < 0.02);
        let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let other: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let unpaired = super::super::verdict::compare(&base, &other, HIGHER).unwrap();
        assert_ne!(unpaired.verdict, Verdict::Better);
    }

    #[test]
    fn the_interval_is_the_t_interval_of_the_log_ratios() {
        // ln ratios 0.1, 0.0, 0.2: mean 0.1, sd 0.1, t(0.975, 2) = 4.302652729749462.
        let pairs = [(1.0, 0.1f64.exp()), (1.0, 1.0), (1.0, 0.2f64.exp())];
        let c = compare_paired(&pairs, HIGHER).unwrap();
        let half = 4.302652729749462 * 0.1 / 3f64.sqrt();
        let (low, high) = c.interval.unwrap();
        assert!((low - (0.1 - half).exp()).abs() < 1e-9);
        assert!((high - (0.1 + half).exp()).abs() < 1e-9);
        assert!((c.ratio - 0.1f64.exp()).abs() < 1e-12);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!((c.log_ratio_sd.unwrap() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn identical_targets_show_no_difference() {
        let pairs = [
            (100.0, 100.5),
            (90.0, 89.8),
            (120.0, 119.0),
            (101.0, 102.0),
            (95.0, 95.2),
        ];
        assert_eq!(
            compare_paired(&pairs, HIGHER).unwrap().verdict,
            Verdict::NoDifference
        );
    }

    #[test]
    fn too_few_pairs_or_values_that_cannot_be_logged() {
        assert_eq!(
            compare_paired(&[(1.0, 2.0), (1.0, 2.1)], HIGHER)
                .unwrap()
                .verdict,
            Verdict::NeedRuns(MIN_PAIRS)
        );
        assert_eq!(compare_paired(&[(0.0, 2.0)], HIGHER), None);
        let lower = compare_paired(
            &[(2.0, 1.0), (2.0, 1.01), (2.0, 0.99)],
            Direction::LowerIsBetter,
        )
        .unwrap();
        assert_eq!(lower.verdict, Verdict::Better);
    }

    #[test]
    fn rounds_to_decide_are_those_whose_interval_clears_one_or_fits_the_equivalence_band() {
        // 1.10 at sd 0.10: t(.975, n−1) · 0.10 / √n < ln 1.10 = 0.09531 first at n = 7
        // (2.4469 · 0.10 / √7 = 0.09248; at 6, 2.5706 · 0.10 / √6 = 0.10494).
        assert_eq!(rounds_to_decide(1.10, 0.10), Some(7));
        // A ratio of 1 is decided as no difference: the half-width under ln 1.05 = 0.04879,
        // at sd 0.05 first at n = 7 (2.4469 · 0.05 / √7 = 0.04624; at 6, 0.05247).
        assert_eq!(rounds_to_decide(1.0, 0.05), Some(7));
        // On the equivalence boundary, at great noise, not within the rounds it looks at
        // (t · 1.0 / √n < ln 1.05 needs about 1,600).
        assert_eq!(rounds_to_decide(1.05, 1.0), None);
        // Quiet noise decides in the fewest rounds a verdict takes.
        assert_eq!(rounds_to_decide(1.5, 0.001), Some(MIN_PAIRS));
    }
}
