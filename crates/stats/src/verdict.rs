//! Is one target faster than another for a cell? Two independent tests must agree before a
//! difference is claimed, as benchstat does it:
//!
//! - the Mann-Whitney U test (two-sided, α = 0.05): exact when there are no ties and at most 40
//!   runs in all, else the normal approximation with tie and continuity corrections. With too
//!   few runs even the most extreme ordering cannot reach α (3 vs 3 runs: p = 0.1), and the
//!   verdict says how many runs are needed instead of a number it cannot support;
//! - a 95% percentile-bootstrap confidence interval of the ratio of medians (other / base;
//!   10,000 resamples of each side, a fixed seed so reports are reproducible).
//!
//! Verdicts: `Faster`/`Slower` when U rejects and the interval excludes 1; `NoDifference` when
//! U does not reject and the interval lies within ±`EQUIVALENCE` of 1; `Inconclusive`
//! otherwise (noisy runs: the interval is too wide to rule out a relevant difference).

use super::median;

pub const ALPHA: f64 = 0.05;
/// Differences within ±5% count as "no detectable difference" when the interval fits inside.
pub const EQUIVALENCE: f64 = 0.05;
const RESAMPLES: usize = 10_000;
const SEED: u64 = 0x5eed_5eed;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Throughput: a larger value is better.
    HigherIsBetter,
    /// Latency: a smaller value is better.
    LowerIsBetter,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Better,
    Worse,
    NoDifference,
    Inconclusive,
    /// Too few runs for the test to ever reject at α: at least this many per side.
    NeedRuns(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub base_median: f64,
    pub other_median: f64,
    /// other / base.
    pub ratio: f64,
    /// 95% bootstrap interval of the ratio; None with fewer than two runs on a side.
    pub interval: Option<(f64, f64)>,
    pub p_value: f64,
    pub verdict: Verdict,
}

/// Compares `other` to `base`; None when either side has no runs.
pub fn compare(base: &[f64], other: &[f64], direction: Direction) -> Option<Comparison> {
    let base_median = median(base)?;
    let other_median = median(other)?;
    let ratio = other_median / base_median;
    let p_value = mann_whitney_p(base, other);
    let interval = (base.len() >= 2 && other.len() >= 2)
        .then(|| bootstrap_ratio(base, other))
        .flatten();
    let verdict = match (runs_needed(base.len(), other.len()), interval) {
        (Some(n), _) => Verdict::NeedRuns(n),
        (None, None) => Verdict::Inconclusive,
        (None, Some((low, high))) => decide(p_value, low, high, direction),
    };
    Some(Comparison {
        base_median,
        other_median,
        ratio,
        interval,
        p_value,
        verdict,
    })
}

/// The verdict from a test's p-value and the interval of the ratio (shared with `paired`).
pub(crate) fn decide(p_value: f64, low: f64, high: f64, direction: Direction) -> Verdict {
    let excludes_one = low > 1.0 || high < 1.0;
    if p_value < ALPHA && excludes_one {
        let higher = low > 1.0;
        return match (higher, direction) {
            (true, Direction::HigherIsBetter) | (false, Direction::LowerIsBetter) => {
                Verdict::Better
            }
            _ => Verdict::Worse,
        };
    }
    if p_value >= ALPHA && low >= 1.0 - EQUIVALENCE && high <= 1.0 + EQUIVALENCE {
        return Verdict::NoDifference;
    }
    Verdict::Inconclusive
}

/// The smallest equal run count per side whose most extreme ordering reaches α, when the
/// given counts cannot.
pub fn runs_needed(base: usize, other: usize) -> Option<usize> {
    if smallest_p(base, other) < ALPHA {
        return None;
    }
    (base.max(other).max(1)..)
        .find(|&n| smallest_p(n, n) < ALPHA)
        .or(Some(4))
}

/// The two-sided p-value of complete separation: 2 / C(n1 + n2, n1).
fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let mut orderings = 1.0;
    for i in 0..n1 {
        orderings = orderings * (n2 + i + 1) as f64 / (i + 1) as f64;
    }
    (2.0 / orderings).min(1.0)
}

/// Two-sided Mann-Whitney U p-value.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (rank_sum_a, tie_groups) = rank_sum(a, b);
    let u = rank_sum_a - (n1 * (n1 + 1)) as f64 / 2.0;
    let u = u.min((n1 * n2) as f64 - u);
    if tie_groups.is_empty() && n1 + n2 <= 40 {
        return (2.0 * exact_cdf(n1, n2, u.round() as usize)).min(1.0);
    }
    normal_p(n1, n2, u, &tie_groups)
}

/// Sum of `a`'s ranks in the pooled sample (ties get their mean rank) and the sizes of the
/// tied groups.
fn rank_sum(a: &[f64], b: &[f64]) -> (f64, Vec<usize>) {
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut sum = 0.0;
    let mut ties = Vec::new();
    let mut start = 0;
    while start < pooled.len() {
        let end = (start..pooled.len())
            .find(|&j| pooled[j].0 != pooled[start].0)
            .unwrap_or(pooled.len());
        let mean_rank = (start + 1 + end) as f64 / 2.0;
        sum += mean_rank * pooled[start..end].iter().filter(|p| p.1).count() as f64;
        if end - start > 1 {
            ties.push(end - start);
        }
        start = end;
    }
    (sum, ties)
}

/// P(U ≤ u) without ties: the number of orderings with U = k, by the recurrence
/// f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k), over all C(m + n, m) orderings.
fn exact_cdf(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[m][n] is a vector over k; built up row by row.
    let mut previous: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for m in 1..=n1 {
        let mut current: Vec<Vec<f64>> = vec![vec![1.0]];
        for n in 1..=n2 {
            let mut counts = vec![0.0; m * n + 1];
            for (k, count) in previous[n].iter().enumerate() {
                counts[k + n] += count;
            }
            for (k, count) in current[n - 1].iter().enumerate() {
                counts[k] += count;
            }
            current.push(counts);
        }
        previous = current;
    }
    let counts = &previous[n2];
    let total: f64 = counts.iter().sum();
    counts[..=u.min(max_u)].iter().sum::<f64>() / total
}

fn normal_p(n1: usize, n2: usize, u: f64, tie_groups: &[usize]) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let tie_term: f64 = tie_groups
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum();
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * (1.0 - standard_normal_cdf(z))).min(1.0)
}

/// Φ(z) from the complementary error function (Numerical Recipes' erfc, |error| < 1.2e-7).
fn standard_normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398
                                + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    1.0 - erfc / 2.0
}

/// splitmix64: a small deterministic generator for resampling.
struct Resampler(u64);

impl Resampler {
    fn next_index(&mut self, len: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64 * len as f64) as usize
    }

    fn resample(&mut self, values: &[f64], into: &mut Vec<f64>) {
        into.clear();
        into.extend((0..values.len()).map(|_| values[self.next_index(values.len())]));
    }
}

/// None when no resample gives a finite ratio (a base whose values are all zero).
fn bootstrap_ratio(base: &[f64], other: &[f64]) -> Option<(f64, f64)> {
    let mut rng = Resampler(SEED);
    let (mut base_sample, mut other_sample) = (Vec::new(), Vec::new());
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            rng.resample(base, &mut base_sample);
            rng.resample(other, &mut other_sample);
            Some(median(&other_sample)? / median(&base_sample)?)
        })
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return None;
    }
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIGHER: Direction = Direction::HigherIsBetter;

    #[test]
    fn clearly_faster_and_slower() {
        let base = [100.0, 101.0, 99.0, 100.5, 102.0];
        let other = [120.0, 121.0, 119.0, 122.0, 120.5];
        let c = compare(&base, &other, HIGHER).unwrap();
        assert_eq!(c.verdict, Verdict::Better);
        let (low, high) = c.interval.unwrap();
        assert!(low > 1.15 && high < 1.25, "{low} {high}");
        assert!((c.ratio - 120.5 / 100.5).abs() < 1e-12);
        // 5 vs 5 completely separated: p = 2 / C(10, 5) = 2 / 252.
        assert!((c.p_value - 2.0 / 252.0).abs() < 1e-12, "{}", c.p_value);
        assert_eq!(
            compare(&other, &base, HIGHER).unwrap().verdict,
            Verdict::Worse
        );
        assert_eq!(
            compare(&base, &other, Direction::LowerIsBetter)
                .unwrap()
                .verdict,
            Verdict::Worse
        );
    }

    #[test]
    fn identical_runs_show_no_difference() {
        let base = [100.0, 101.0, 99.0, 100.0, 100.5];
        let other = [100.2, 100.8, 99.1, 99.9, 100.4];
        let c = compare(&base, &other, HIGHER).unwrap();
        assert_eq!(c.verdict, Verdict::NoDifference, "{c:?}");
        assert!(c.p_value > 0.5);
    }

    #[test]
    fn too_few_runs_name_the_runs_needed() {
        let c = compare(&[100.0, 101.0, 99.0], &[150.0, 151.0, 149.0], HIGHER).unwrap();
        assert_eq!(c.verdict, Verdict::NeedRuns(4));
        assert_eq!(runs_needed(1, 1), Some(4));
        assert_eq!(runs_needed(4, 4), None);
        // 3 vs 5 can reach 2 / C(8, 3) = 0.036.
        assert_eq!(runs_needed(3, 5), None);
    }

    #[test]
    fn a_base_of_zeros_is_inconclusive_not_a_panic() {
        let c = compare(&[0.0; 5], &[1.0, 2.0, 3.0, 4.0, 5.0], HIGHER).unwrap();
        assert_eq!(c.interval, None);
        assert_eq!(c.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn noisy_runs_are_inconclusive() {
        let base = [100.0, 60.0, 140.0, 90.0, 110.0];
        let other = [105.0, 50.0, 150.0, 95.0, 120.0];
        assert_eq!(
            compare(&base, &other, HIGHER).unwrap().verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn exact_and_normal_p_values_agree_with_known_values() {
        // Both orderings of 1 vs 1: U = 0 has probability 1/2, two-sided 1.
        assert_eq!(mann_whitney_p(&[1.0], &[2.0]), 1.0);
        // 4 vs 4 separated: 2 / 70.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // Reference values from scipy.stats.mannwhitneyu: with ties (method="asymptotic",
        // continuity- and tie-corrected) 0.03637858037213116; without ties, 7 vs 8,
        // method="exact": 0.0721056721056721.
        let p = mann_whitney_p(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        );
        assert!((p - 0.03637858037213116).abs() < 1e-6, "{p}");
        let p = mann_whitney_p(
            &[1.5, 2.5, 3.1, 7.2, 8.8, 9.9, 10.1],
            &[4.4, 5.5, 6.6, 11.2, 12.3, 13.4, 14.5, 15.6],
        );
        assert!((p - 0.0721056721056721).abs() < 1e-12, "{p}");
        assert!((standard_normal_cdf(1.959964) - 0.975).abs() < 1e-6);
    }
}
