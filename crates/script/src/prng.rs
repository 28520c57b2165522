//! PostgreSQL's `pg_prng` (xoroshiro128** seeded through splitmix64), so that the same seed gives
//! the same numbers as pgbench.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgPrng {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut val = *state;
    val = (val ^ (val >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    val = (val ^ (val >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    val ^ (val >> 31)
}

impl PgPrng {
    pub fn seeded(seed: u64) -> PgPrng {
        let mut seed = seed;
        let s0 = splitmix64(&mut seed);
        let s1 = splitmix64(&mut seed);
        let mut prng = PgPrng { s0, s1 };
        // xoroshiro must never be all zeroes; pg_prng substitutes these constants.
        if prng.s0 == 0 && prng.s1 == 0 {
            prng.s0 = 0x5851_F42D_4C95_7F2D;
            prng.s1 = 0x1405_7B7E_F767_814F;
        }
        prng
    }

    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// Uniform in `[low, high]`, by bitmask rejection exactly as `pg_prng_uint64_range`.
    pub fn u64_in_range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        let range = high - low;
        let shift = range.leading_zeros();
        loop {
            let val = self.next_u64() >> shift;
            if val <= range {
                return low + val;
            }
        }
    }

    /// Uniform in `[0, 1)` with 52 random bits, as `pg_prng_double`.
    pub fn next_f64(&mut self) -> f64 {
        let bits = self.next_u64() >> 12;
        bits as f64 / (1u64 << 52) as f64
    }

    /// A standard normal variate by the basic Box-Muller transform, as `pg_prng_double_normal`.
    pub fn next_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = 1.0 - self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// pgbench's `getrand`: uniform integer in `[min, max]` (caller guarantees `min <= max`).
    pub fn int_in_range(&mut self, min: i64, max: i64) -> i64 {
        let span = max.wrapping_sub(min) as u64;
        min.wrapping_add(self.u64_in_range(0, span) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_stays_inside_bounds_and_covers_them() {
        let mut prng = PgPrng::seeded(42);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = prng.int_in_range(-2, 2);
            assert!((-2..=2).contains(&v));
            seen[(v + 2) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn same_seed_same_sequence() {
        let mut a = PgPrng::seeded(7);
        let mut b = PgPrng::seeded(7);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn doubles_are_in_unit_interval() {
        let mut prng = PgPrng::seeded(1);
        for _ in 0..1000 {
            let d = prng.next_f64();
            assert!((0.0..1.0).contains(&d));
        }
    }
}
