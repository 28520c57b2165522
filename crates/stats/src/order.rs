//! The median's confidence interval from order statistics (distribution-free): the sorted
//! values' k-th from each end, with k as large as the confidence allows. It holds the median
//! whatever the values' distribution, which a t interval of their mean does not.

/// An interval of the median and the probability that such an interval covers the true one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianInterval {
    pub low: f64,
    pub high: f64,
    /// 1 − 2·P(Binomial(n, ½) < k): the exact coverage of the k-th values from each end.
    pub coverage: f64,
}

/// The narrowest order-statistic interval whose coverage reaches `confidence`; with too few
/// values for that (5 or fewer at 95%), the whole range with the coverage it has. None for
/// fewer than two values.
pub fn median_interval(values: &[f64], confidence: f64) -> Option<MedianInterval> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    // tail(k) = P(Binomial(n, ½) ≤ k − 1): the chance that fewer than k values fall below
    // the median, the interval's miss on one side.
    let mut k = 1;
    let mut tail = half_binomial(n, 0);
    while k < n / 2 {
        let next_tail = tail + half_binomial(n, k);
        if 1.0 - 2.0 * next_tail < confidence {
            break;
        }
        tail = next_tail;
        k += 1;
    }
    Some(MedianInterval {
        low: sorted[k - 1],
        high: sorted[n - k],
        coverage: 1.0 - 2.0 * tail,
    })
}

/// P(Binomial(n, ½) = i), through logarithms so that large n does not overflow.
fn half_binomial(n: usize, i: usize) -> f64 {
    let ln_choose: f64 = (0..i)
        .map(|j| ((n - j) as f64).ln() - ((j + 1) as f64).ln())
        .sum();
    (ln_choose - n as f64 * std::f64::consts::LN_2).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::simulation::Random;

    #[test]
    fn the_interval_widens_to_the_range_when_the_values_are_few() {
        assert_eq!(median_interval(&[1.0], 0.95), None);
        let five = median_interval(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.95).unwrap();
        assert_eq!((five.low, five.high), (1.0, 5.0));
        assert!((five.coverage - (1.0 - 2.0 / 32.0)).abs() < 1e-12);
        // n = 10: P(B ≤ 1) = 11/1024, P(B ≤ 2) = 56/1024 > 2.5%: the 2nd from each end.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let interval = median_interval(&ten, 0.95).unwrap();
        assert_eq!((interval.low, interval.high), (2.0, 9.0));
        assert!((interval.coverage - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
    }

    /// Over many samples of a skewed distribution, the interval holds the true median at least
    /// as often as its stated coverage (never less than the confidence, from six values on).
    #[test]
    fn intervals_cover_the_true_median_as_often_as_they_say() {
        let mut random = Random(7);
        for n in [3, 6, 10, 25] {
            let trials = 4000;
            let mut covered = 0;
            let mut stated = 0.0;
            for _ in 0..trials {
                // Log-normal: the true median is exp(0) = 1.
                let values: Vec<f64> = (0..n).map(|_| random.normal().exp()).collect();
                let interval = median_interval(&values, 0.95).unwrap();
                stated = interval.coverage;
                if interval.low <= 1.0 && 1.0 <= interval.high {
                    covered += 1;
                }
            }
            let rate = covered as f64 / trials as f64;
            // Three standard errors of a proportion near 0.95 over 4000 trials: 0.01.
            assert!(
                rate > stated - 0.015,
                "n {n}: {rate} covered, {stated} stated"
            );
            if n >= 6 {
                assert!(stated >= 0.95, "n {n}: {stated}");
            }
        }
    }
}
