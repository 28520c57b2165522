//! Statistics over stored results: medians, spreads, and (in `verdict`) confidence intervals
//! and verdicts. Computes; never renders or queries a server.

pub mod bisect;
pub mod calibration;
pub mod changepoint;
pub mod claim;
pub mod fairness;
pub mod order;
pub mod paired;
pub mod stopping;
pub mod student;
pub mod verdict;

/// The median (mean of the middle two for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let middle = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    })
}

/// How far `value` lies from the median of `values` in robust standard deviations (1.4826 ×
/// the median absolute deviation, at least `floor`): Iglewicz and Hoaglin's modified z-score,
/// which one wild value among a few cannot hide by inflating the spread. None when empty.
pub fn robust_z(value: f64, values: &[f64], floor: f64) -> Option<f64> {
    let center = median(values)?;
    let deviations: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    let spread = (1.4826 * median(&deviations)?).max(floor);
    Some((value - center).abs() / spread)
}

/// (min, max); None when empty.
pub fn range(values: &[f64]) -> Option<(f64, f64)> {
    let min = values.iter().copied().reduce(f64::min)?;
    let max = values.iter().copied().reduce(f64::max)?;
    Some((min, max))
}

/// Sample standard deviation over the mean; None with fewer than two values or a zero mean.
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean != 0.0).then(|| variance.sqrt() / mean.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(range(&[2.0, 5.0, 1.0]), Some((1.0, 5.0)));
        assert_eq!(coefficient_of_variation(&[1.0]), None);
        // mean 5, sample sd sqrt(32/7)
        let cv = coefficient_of_variation(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((cv - (32.0f64 / 7.0).sqrt() / 5.0).abs() < 1e-12);
    }
}
