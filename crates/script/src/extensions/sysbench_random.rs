//! sysbench's random distributions and random strings (`sb_rand.c` of sysbench 1.0.20 and its
//! master branch), drawn from pgbench's PRNG: the same shapes, so that a workload touches the
//! same rows as often as under sysbench; the sequences themselves differ.

use crate::prng::PgPrng;

/// A uniform double in [0, 1).
fn unit(rng: &mut PgPrng) -> f64 {
    rng.next_f64()
}

/// Uniform in [a, b].
pub fn uniform(rng: &mut PgPrng, a: i64, b: i64) -> i64 {
    a + (unit(rng) * (b - a + 1) as f64) as i64
}

/// The mean of `iterations` uniform draws over [a, b]: bell-shaped around the middle.
pub fn gaussian(rng: &mut PgPrng, a: i64, b: i64, iterations: u32) -> i64 {
    let span = (b - a + 1) as f64;
    let sum: f64 = (0..iterations).map(|_| unit(rng) * span).sum();
    a + (sum / iterations as f64) as i64
}

/// sysbench's "special" distribution: `res_pct`% of the values fall uniformly into the
/// `pct`% of the range around its middle, the rest are gaussian over the whole range.
pub fn special(rng: &mut PgPrng, a: i64, b: i64, iterations: u32, pct: u32, res_pct: u32) -> i64 {
    let span = (b - a) as f64;
    let enlarged = span * 100.0 / (100.0 - res_pct as f64);
    let draw = unit(rng);
    if draw * enlarged < span {
        let sum: f64 = (0..iterations).map(|_| unit(rng)).sum();
        return a + (sum * span / iterations as f64) as i64;
    }
    let hot = span * pct as f64 / 100.0;
    let offset = draw * (hot + 1.0) + span / 2.0 - span * pct as f64 / 200.0;
    a + offset as i64
}

/// Pareto with shape `h` (sysbench's --rand-pareto-h, 0.2 by default): most values near `a`.
pub fn pareto(rng: &mut PgPrng, a: i64, b: i64, h: f64) -> i64 {
    let power = h.ln() / (1.0 - h).ln();
    a + ((b - a + 1) as f64 * unit(rng).powf(power)) as i64
}

/// Zipfian over [a, b] with exponent `exponent` ≥ 0 (sysbench's --rand-zipfian-exp, 0.8 by
/// default), by rejection-inversion (Hörmann and Derflinger), as sysbench samples it.
pub fn zipfian(rng: &mut PgPrng, a: i64, b: i64, exponent: f64) -> i64 {
    let n = (b - a + 1) as f64;
    let s = 2.0 - h_integral_inverse(h_integral(2.5, exponent) - h(2.0, exponent), exponent);
    let h_integral_x1 = h_integral(1.5, exponent) - 1.0;
    let h_integral_n = h_integral(n + 0.5, exponent);
    loop {
        let u = h_integral_n + unit(rng) * (h_integral_x1 - h_integral_n);
        let x = h_integral_inverse(u, exponent);
        let k = (x + 0.5).floor().clamp(1.0, n);
        if k - x <= s || u >= h_integral(k + 0.5, exponent) - h(k, exponent) {
            return a + k as i64 - 1;
        }
    }
}

/// H(x) = (x^(1-e) - 1) / (1 - e), log(x) when e = 1: the integral of `h`.
fn h_integral(x: f64, exponent: f64) -> f64 {
    let log_x = x.ln();
    exp_minus_one_over((1.0 - exponent) * log_x) * log_x
}

/// h(x) = x^-e.
fn h(x: f64, exponent: f64) -> f64 {
    (-exponent * x.ln()).exp()
}

fn h_integral_inverse(x: f64, exponent: f64) -> f64 {
    // Numerical error can push t below -1, where log1p is undefined.
    let t = (x * (1.0 - exponent)).max(-1.0);
    (log1p_over(t) * x).exp()
}

/// ln(1 + x) / x, by its series near 0.
fn log1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, by its series near 0.
fn exp_minus_one_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// `groups` groups of 11 random digits joined by '-': sysbench's `c` (10 groups, 119
/// characters) and `pad` (5 groups, 59 characters) values.
pub fn digit_groups(rng: &mut PgPrng, groups: usize) -> String {
    let mut text = String::with_capacity(groups * 12);
    for group in 0..groups {
        if group > 0 {
            text.push('-');
        }
        for _ in 0..11 {
            text.push((b'0' + uniform(rng, 0, 9) as u8) as char);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(draw: impl Fn(&mut PgPrng) -> i64, buckets: usize) -> Vec<usize> {
        let mut rng = PgPrng::seeded(42);
        let mut counts = vec![0; buckets];
        for _ in 0..100_000 {
            let value = draw(&mut rng);
            assert!((1..=buckets as i64).contains(&value), "{value}");
            counts[value as usize - 1] += 1;
        }
        counts
    }

    #[test]
    fn uniform_covers_the_range_evenly() {
        let counts = histogram(|r| uniform(r, 1, 10), 10);
        assert!(
            counts.iter().all(|c| (9_000..11_000).contains(c)),
            "{counts:?}"
        );
    }

    #[test]
    fn special_puts_three_quarters_in_the_middle_percent() {
        // 1% of 1..=10000 around the middle: values 4951..=5050 hold 75% plus the gaussian's share.
        let counts = histogram(|r| special(r, 1, 10_000, 12, 1, 75), 10_000);
        let middle: usize = counts[4950..5051].iter().sum();
        assert!((75_000..80_000).contains(&middle), "{middle}");
    }

    #[test]
    fn gaussian_is_centred() {
        let counts = histogram(|r| gaussian(r, 1, 100, 12), 100);
        let centre: usize = counts[40..60].iter().sum();
        assert!(centre > 60_000, "{centre}");
    }

    #[test]
    fn pareto_and_zipfian_favour_the_low_end() {
        let counts = histogram(|r| pareto(r, 1, 100, 0.2), 100);
        // h = 0.2: 80% of the draws fall in the first 20% of the range.
        let low: usize = counts[..20].iter().sum();
        assert!((78_000..82_000).contains(&low), "{low}");
        let counts = histogram(|r| zipfian(r, 1, 100, 0.8), 100);
        assert!(counts[0] > counts[1] && counts[1] > counts[9] && counts[9] > counts[99]);
        // P(1) / P(2) = 2^0.8.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2f64.powf(0.8)).abs() < 0.1, "{ratio}");
    }

    #[test]
    fn calls_are_never_folded_into_constants() {
        use crate::ast::{Expr, Function};
        use crate::Value;
        let call = Expr::Call(
            Function::SbUniform,
            vec![Expr::Constant(Value::Int(1)), Expr::Constant(Value::Int(9))],
        );
        assert!(matches!(crate::eval::fold_constants(call), Expr::Call(..)));
    }

    #[test]
    fn digit_groups_have_sysbench_layout() {
        let mut rng = PgPrng::seeded(1);
        let c = digit_groups(&mut rng, 10);
        assert_eq!(c.len(), 119);
        assert!(c
            .split('-')
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        assert_eq!(digit_groups(&mut rng, 5).len(), 59);
    }
}
