//! What an A/A calibration says about a lab: two identical targets measured in paired rounds
//! give the noise the pairing leaves (the sd of the rounds' log ratios), and from it the
//! smallest change a lab of N rounds can detect and the rounds an auto lab needs to reach its
//! precision.

use super::stopping::MIN_ROUNDS;
use super::student;
use super::verdict::ALPHA;

/// The power the detectable change is stated at: a change this large is decided in 80% of labs.
pub const POWER: f64 = 0.8;

/// The smallest relative change (0.05 for 5%) that a lab of `rounds` paired rounds decides
/// with probability `POWER` at α = 0.05, for log ratios of standard deviation `log_ratio_sd`:
/// (t(1 − α/2) + t(power)) · sd / √n, with n − 1 degrees of freedom. None under 2 rounds.
pub fn detectable_change(log_ratio_sd: f64, rounds: usize) -> Option<f64> {
    if rounds < 2 {
        return None;
    }
    let df = (rounds - 1) as f64;
    let quantiles = student::quantile(1.0 - ALPHA / 2.0, df) + student::quantile(POWER, df);
    Some((quantiles * log_ratio_sd / (rounds as f64).sqrt()).exp() - 1.0)
}

/// The precision (relative half-width, the larger side) a lab of `rounds` rounds expects.
pub fn expected_precision(log_ratio_sd: f64, rounds: usize) -> Option<f64> {
    if rounds < 2 {
        return None;
    }
    let df = (rounds - 1) as f64;
    let half_width =
        student::quantile(1.0 - ALPHA / 2.0, df) * log_ratio_sd / (rounds as f64).sqrt();
    Some(half_width.exp() - 1.0)
}

/// The rounds an auto lab expects to need for `precision`, from `MIN_ROUNDS` on; None when
/// even `max_rounds` are not expected to reach it.
pub fn rounds_for_precision(log_ratio_sd: f64, precision: f64, max_rounds: usize) -> Option<usize> {
    (MIN_ROUNDS.max(2)..=max_rounds)
        .find(|&rounds| expected_precision(log_ratio_sd, rounds).is_some_and(|p| p <= precision))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detectable_change_and_rounds_follow_the_t_distribution() {
        // sd 0.078 (select-only on this machine), 10 rounds: (t(.975, 9) + t(.8, 9)) = 2.2622
        // + 0.8834 (scipy.stats.t.ppf) → exp(3.1456 · 0.078 / √10) − 1 = 8.07%.
        let change = detectable_change(0.078, 10).unwrap();
        assert!((change - 0.08068).abs() < 0.0001, "{change}");
        assert_eq!(detectable_change(0.078, 1), None);
        // ±3% needs t(.975, n−1) · 0.078 / √n ≤ ln 1.03 = 0.02956: n = 30 (0.02913; at 29,
        // 2.0484 · 0.078 / √29 = 0.02967).
        assert_eq!(rounds_for_precision(0.078, 0.03, 100), Some(30));
        assert_eq!(rounds_for_precision(0.078, 0.03, 15), None);
        // Quiet noise reaches it in the first rounds the rule trusts.
        assert_eq!(rounds_for_precision(0.001, 0.03, 15), Some(MIN_ROUNDS));
    }
}
