//! TPC-H's metrics (clause 5.4) computed from a run's timings: Power@Size, Throughput@Size and
//! their geometric mean QphH@Size. Derived from TPC-H's formulas, never an audited result.

/// Power@Size = 3600 × SF / (∏ QI(i,0) × ∏ RI(j,0))^(1/24), with the 22 query intervals and the
/// two refresh intervals of the power test in seconds. An interval under 1/1000 of the longest
/// counts as 1/1000 of it (clause 5.4.1.4).
pub fn power_at_size(scale_factor: f64, queries: &[f64], refreshes: &[f64]) -> f64 {
    let all: Vec<f64> = queries.iter().chain(refreshes).copied().collect();
    let longest = all.iter().copied().fold(0.0, f64::max);
    let floor = longest / 1000.0;
    let log_sum: f64 = all.iter().map(|&t| t.max(floor).ln()).sum();
    3600.0 * scale_factor / (log_sum / all.len() as f64).exp()
}

/// Throughput@Size = (S × 22 × 3600 / Ts) × SF, Ts the throughput test's elapsed seconds.
pub fn throughput_at_size(scale_factor: f64, streams: usize, elapsed_s: f64) -> f64 {
    streams as f64 * 22.0 * 3600.0 / elapsed_s * scale_factor
}

/// QphH@Size = √(Power@Size × Throughput@Size).
pub fn qphh_at_size(power: f64, throughput: f64) -> f64 {
    (power * throughput).sqrt()
}

/// The fewest query streams TPC-H allows in the throughput test at a scale factor (clause
/// 5.3.4).
pub fn minimum_streams(scale_factor: f64) -> usize {
    match scale_factor {
        sf if sf < 10.0 => 2,
        sf if sf < 30.0 => 3,
        sf if sf < 100.0 => 4,
        sf if sf < 300.0 => 5,
        sf if sf < 1000.0 => 6,
        sf if sf < 3000.0 => 7,
        sf if sf < 10000.0 => 8,
        sf if sf < 30000.0 => 9,
        sf if sf < 100000.0 => 10,
        _ => 11,
    }
}

/// The geometric mean of `times` (HammerDB's gmean, over the queries that returned rows).
pub fn geometric_mean(times: &[f64]) -> Option<f64> {
    if times.is_empty() || times.iter().any(|&t| t <= 0.0) {
        return None;
    }
    Some((times.iter().map(|t| t.ln()).sum::<f64>() / times.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_is_3600_sf_over_the_geometric_mean_of_24_intervals() {
        let power = power_at_size(10.0, &[2.0; 22], &[2.0; 2]);
        assert!((power - 18_000.0).abs() < 1e-6);
        // A 1 ms query beside a 100 s one counts as 0.1 s.
        let mut queries = [1.0; 22];
        queries[0] = 100.0;
        queries[1] = 0.001;
        let mut floored = queries;
        floored[1] = 0.1;
        let a = power_at_size(1.0, &queries, &[1.0, 1.0]);
        let b = power_at_size(1.0, &floored, &[1.0, 1.0]);
        assert!((a - b).abs() < 1e-9, "{a} {b}");
    }

    #[test]
    fn throughput_and_the_composite_follow_the_formulas() {
        assert!((throughput_at_size(1.0, 2, 3600.0) - 44.0).abs() < 1e-9);
        assert!((qphh_at_size(100.0, 25.0) - 50.0).abs() < 1e-9);
        assert_eq!(minimum_streams(1.0), 2);
        assert_eq!(minimum_streams(100.0), 5);
        assert_eq!(geometric_mean(&[1.0, 4.0]), Some(2.0));
        assert_eq!(geometric_mean(&[]), None);
    }
}
