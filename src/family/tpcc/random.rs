//! TPC-C's value rules (clause 4.3.2): uniform integers, NURand, random a-strings and
//! n-strings, customer last names from syllables, zip codes, and "ORIGINAL" in 10% of the item
//! and stock data.

use super::rules::Rules;
use stampede_script::prng::PgPrng;

const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// NURand's run-time constant C for one field (clause 2.1.6): chosen once per run or load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NurandConstants {
    /// For C_LAST (A = 255).
    pub c_last: i64,
    /// For C_ID (A = 1023).
    pub c_id: i64,
    /// For OL_I_ID (A = 8191).
    pub ol_i_id: i64,
}

impl NurandConstants {
    pub fn draw(random: &mut PgPrng) -> NurandConstants {
        NurandConstants {
            c_last: random.int_in_range(0, 255),
            c_id: random.int_in_range(0, 1023),
            ol_i_id: random.int_in_range(0, 8191),
        }
    }

    /// A run's constants, when the load's C_LAST is known: under TPC-C's rules C_LAST is drawn
    /// until it differs from the load's by 65..=119 but neither 96 nor 112 (clause 2.1.6.1);
    /// under HammerDB's it is the load's (HammerDB draws names with C = 123 at load and run).
    pub fn for_run(random: &mut PgPrng, load_c_last: Option<i64>, rules: Rules) -> NurandConstants {
        let mut constants = NurandConstants::draw(random);
        if let Some(load) = load_c_last {
            match rules {
                Rules::HammerDb => constants.c_last = load,
                Rules::TpcC => {
                    while !valid_c_last_delta((constants.c_last - load).abs()) {
                        constants.c_last = random.int_in_range(0, 255);
                    }
                }
            }
        }
        constants
    }
}

fn valid_c_last_delta(delta: i64) -> bool {
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// The random source of a loader or a virtual user, with TPC-C's helpers.
pub struct TpccRandom {
    pub prng: PgPrng,
}

impl TpccRandom {
    pub fn seeded(seed: u64) -> TpccRandom {
        TpccRandom {
            prng: PgPrng::seeded(seed),
        }
    }

    /// random(x, y): uniform over [x, y].
    pub fn uniform(&mut self, low: i64, high: i64) -> i64 {
        self.prng.int_in_range(low, high)
    }

    /// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
    pub fn nurand(&mut self, a: i64, low: i64, high: i64, c: i64) -> i64 {
        (((self.uniform(0, a) | self.uniform(low, high)) + c) % (high - low + 1)) + low
    }

    /// An a-string of length random(min, max).
    pub fn alphanumeric(&mut self, min: usize, max: usize) -> String {
        let mut text = vec![0; self.length(min, max)];
        self.fill_alphanumeric(&mut text);
        String::from_utf8(text).expect("the generator writes ASCII only")
    }

    /// random(min, max) as a length.
    pub fn length(&mut self, min: usize, max: usize) -> usize {
        self.uniform(min as i64, max as i64) as usize
    }

    /// Random letters and digits over `out`: eight per 64-bit draw (62^8 is 2^47.6, so the
    /// draw's remainder bias is below 10^-5), the loader's main cost otherwise.
    pub fn fill_alphanumeric(&mut self, out: &mut [u8]) {
        fill_from_draws(&mut self.prng, out, ALPHANUMERIC, 8);
    }

    /// Random digits over `out`, twelve per draw.
    pub fn fill_digits(&mut self, out: &mut [u8]) {
        fill_from_draws(&mut self.prng, out, b"0123456789", 12);
    }

    /// An n-string of exactly `length` digits.
    pub fn digits(&mut self, length: usize) -> String {
        let mut text = vec![0; length];
        self.fill_digits(&mut text);
        String::from_utf8(text).expect("the generator writes ASCII only")
    }

    /// Zip code: four random digits and "11111".
    pub fn zip(&mut self) -> String {
        let mut zip = self.digits(4);
        zip.push_str("11111");
        zip
    }

    /// Two random upper-case letters.
    pub fn state(&mut self) -> String {
        (0..2)
            .map(|_| char::from(b'A' + self.uniform(0, 25) as u8))
            .collect()
    }

    /// I_DATA / S_DATA: an a-string of 26 to 50, with "ORIGINAL" at a random place in 10% of
    /// the rows.
    pub fn data_with_original(&mut self) -> String {
        let mut data = vec![0; self.length(26, 50)];
        self.fill_data_with_original(&mut data);
        String::from_utf8(data).expect("the generator writes ASCII only")
    }

    /// `data_with_original` over `out` (26 to 50 bytes).
    pub fn fill_data_with_original(&mut self, out: &mut [u8]) {
        self.fill_alphanumeric(out);
        if self.uniform(1, 10) == 1 {
            let at = self.uniform(0, out.len() as i64 - 8) as usize;
            out[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
    }

    /// A fixed-point amount in [low, high] hundredths (or ten-thousandths): the unscaled integer.
    pub fn amount(&mut self, low: i64, high: i64) -> i64 {
        self.uniform(low, high)
    }
}

/// Fills `out` with symbols of `alphabet`, `per_draw` from each 64-bit draw.
fn fill_from_draws(prng: &mut PgPrng, out: &mut [u8], alphabet: &[u8], per_draw: usize) {
    let base = alphabet.len() as u64;
    for chunk in out.chunks_mut(per_draw) {
        let mut draw = prng.next_u64();
        for byte in chunk {
            *byte = alphabet[(draw % base) as usize];
            draw /= base;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_c_last_keeps_its_distance_from_the_load() {
        let mut random = PgPrng::seeded(11);
        for load in [0, 100, 255] {
            for _ in 0..200 {
                let run = NurandConstants::for_run(&mut random, Some(load), Rules::TpcC).c_last;
                assert!((0..=255).contains(&run));
                assert!(valid_c_last_delta((run - load).abs()), "{load} {run}");
            }
        }
    }

    #[test]
    fn nurand_and_strings_stay_in_range() {
        let mut random = TpccRandom::seeded(7);
        for _ in 0..10_000 {
            let n = random.nurand(255, 0, 999, 123);
            assert!((0..=999).contains(&n));
            let s = random.alphanumeric(8, 16);
            assert!((8..=16).contains(&s.len()));
        }
        let originals = (0..10_000)
            .filter(|_| random.data_with_original().contains("ORIGINAL"))
            .count();
        assert!((800..1200).contains(&originals), "{originals}");
        let mut counts = [0u32; 62];
        for byte in random.alphanumeric(62_000, 62_000).bytes() {
            counts[ALPHANUMERIC.iter().position(|c| *c == byte).unwrap()] += 1;
        }
        // Each symbol about 1,000 times (binomial sd about 31).
        assert!(counts.iter().all(|c| (850..1150).contains(c)), "{counts:?}");
        assert_eq!(random.zip().len(), 9);
        assert!(random.zip().ends_with("11111"));
    }
}
