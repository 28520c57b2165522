//! Claims: a study's stated expectation of a ratio ("2x faster", "+20%", ">= 1.8x", "within
//! 2%"), checked against the paired interval of the measured ratio other / base.
//!
//! An expectation is a region of the ratio. The verdict compares the region with the ratio's
//! 95% interval: **reproduced** when the interval lies inside the region, **contradicted** when
//! it lies wholly outside, **undecided** when it straddles a boundary. A claim is never decided
//! from the ratio alone.
//!
//! Auto labs look at a claim after every round (`decided_at_look`), which is the optional
//! stopping problem again: looking up to ten times at 95% would decide a false verdict far more
//! often than 5%. The interim looks use a 99% interval (`INTERIM_ALPHA`, Pocock's constant
//! level for ten looks is 0.0106), from `MIN_ROUNDS` on; the report's verdict is the 95% one at
//! the round the cell stopped. The simulation below measures the resulting false-verdict rate.

use super::paired::interval_at;
use super::stopping::MIN_ROUNDS;
use super::student;
use super::verdict::{Direction, ALPHA};

/// The level of an auto lab's interim looks at a claim.
pub const INTERIM_ALPHA: f64 = 0.01;

/// The tolerance of a point claim ("2x", "+20%") that names none.
const DEFAULT_TOLERANCE: f64 = 0.05;

/// The ratios (other / base) a claim expects: `low` ≤ ratio ≤ `high`; 0 and ∞ for open sides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expectation {
    pub low: f64,
    pub high: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimVerdict {
    Reproduced,
    Contradicted,
    Undecided,
}

impl ClaimVerdict {
    pub fn name(self) -> &'static str {
        match self {
            ClaimVerdict::Reproduced => "reproduced",
            ClaimVerdict::Contradicted => "contradicted",
            ClaimVerdict::Undecided => "undecided",
        }
    }
}

/// How a comparator bounds the ratio.
#[derive(Clone, Copy, PartialEq)]
enum Bound {
    AtLeast,
    AtMost,
}

/// A change as written: a signed percentage or a factor.
#[derive(Clone, Copy)]
enum Magnitude {
    Percent(f64),
    Factor(f64),
}

impl Expectation {
    /// Reads an expectation about a metric whose better side is `direction`:
    /// - `"+20%"`, `"-5%"`, `"2x"` (a ratio of 2), each with an optional tolerance `"±5%"`
    ///   (percentage points for a percentage, relative for a factor; 5% when left out);
    /// - the same followed by `faster`/`better` or `slower`/`worse`, unsigned: the change in
    ///   that direction of the metric (`"20% slower"` is a tps ratio of 0.8 and a latency
    ///   ratio of 1.2; `"2x faster"` a tps ratio of 2 and a latency ratio of 0.5);
    /// - a comparator before either (`">= 1.8x"`, `"<= -5%"`, `">= 2x slower"`): a bound on the
    ///   change as said (at least twice as slow);
    /// - `"within 2%"`: no change beyond ±2%.
    pub fn parse(text: &str, direction: Direction) -> Result<Expectation, String> {
        let lowered = text.trim().to_lowercase();
        if let Some(rest) = lowered.strip_prefix("within ") {
            let percent = parse_percent(rest)
                .filter(|p| (0.0..1.0).contains(p))
                .ok_or_else(|| {
                    format!(
                        "\"{text}\": \"within\" takes a percentage below 100%, as \"within 2%\""
                    )
                })?;
            return Ok(Expectation {
                low: 1.0 - percent,
                high: 1.0 + percent,
            });
        }
        let (bound, rest) = comparator(&lowered);
        let (rest, tolerance) = match rest.split_once('±').or_else(|| rest.split_once("+-")) {
            Some((head, tolerance)) => {
                let tolerance =
                    parse_percent(tolerance)
                        .filter(|t| *t >= 0.0)
                        .ok_or_else(|| {
                            format!("\"{text}\": the tolerance is a percentage, as \"±5%\"")
                        })?;
                (head.trim(), Some(tolerance))
            }
            None => (rest.trim(), None),
        };
        if bound.is_some() && tolerance.is_some() {
            return Err(format!("\"{text}\": a bound (>=, <=) takes no tolerance"));
        }
        let (magnitude, word) = magnitude(rest)
            .ok_or_else(|| format!("\"{text}\" is not an expectation; write \"2x\", \"+20%\", \"20% slower ±5%\", \">= 1.8x\", \"<= -5%\" or \"within 2%\""))?;
        let (ratio, increasing) =
            to_ratio(magnitude, word, direction).map_err(|why| format!("\"{text}\": {why}"))?;
        let expectation = match (bound, increasing) {
            (Some(Bound::AtLeast), true) | (Some(Bound::AtMost), false) => Expectation {
                low: ratio,
                high: f64::INFINITY,
            },
            (Some(Bound::AtMost), true) | (Some(Bound::AtLeast), false) => Expectation {
                low: 0.0,
                high: ratio,
            },
            (None, _) => around(ratio, magnitude, tolerance.unwrap_or(DEFAULT_TOLERANCE)),
        };
        if expectation.low <= 0.0 && expectation.high.is_infinite() || expectation.high <= 0.0 {
            return Err(format!("\"{text}\" expects no ratio a run could show"));
        }
        Ok(expectation)
    }

    /// "ratio ≥ 1.800", "ratio ≤ 0.950", "ratio in [0.980, 1.020]".
    pub fn describe(&self) -> String {
        if self.high.is_infinite() {
            format!("ratio ≥ {:.3}", self.low)
        } else if self.low <= 0.0 {
            format!("ratio ≤ {:.3}", self.high)
        } else {
            format!("ratio in [{:.3}, {:.3}]", self.low, self.high)
        }
    }

    /// The verdict of an interval of the ratio.
    pub fn judge(&self, (low, high): (f64, f64)) -> ClaimVerdict {
        if low >= self.low && high <= self.high {
            ClaimVerdict::Reproduced
        } else if high < self.low || low > self.high {
            ClaimVerdict::Contradicted
        } else {
            ClaimVerdict::Undecided
        }
    }

    /// The rounds a paired comparison of log-ratio sd `log_sd` needs for its 95% interval to
    /// leave the boundary nearest its ratio (decided one way or the other, if the ratio stays
    /// where it is); None when the ratio sits on a boundary or it would take over 1,000.
    pub fn rounds_to_decide(&self, ratio: f64, log_sd: f64) -> Option<usize> {
        let distance = self
            .boundaries()
            .map(|boundary| (ratio.ln() - boundary.ln()).abs())
            .fold(f64::INFINITY, f64::min);
        if distance <= 0.0 || !distance.is_finite() {
            return None;
        }
        (2..=1000).find(|&n| {
            let n = n as f64;
            student::quantile(1.0 - ALPHA / 2.0, n - 1.0) * log_sd / n.sqrt() < distance
        })
    }

    fn boundaries(&self) -> impl Iterator<Item = f64> {
        [self.low, self.high]
            .into_iter()
            .filter(|b| *b > 0.0 && b.is_finite())
    }
}

/// Whether an auto lab's interim look after the rounds in `pairs` (base, other) decides the
/// claim: from `MIN_ROUNDS` on, the 99% interval inside or wholly outside the region.
pub fn decided_at_look(expectation: &Expectation, pairs: &[(f64, f64)]) -> bool {
    pairs.len() >= MIN_ROUNDS
        && interval_at(pairs, INTERIM_ALPHA)
            .is_some_and(|interval| expectation.judge(interval) != ClaimVerdict::Undecided)
}

/// A point claim's region: ± points around a percentage, ± relative around a factor.
fn around(ratio: f64, magnitude: Magnitude, tolerance: f64) -> Expectation {
    match magnitude {
        Magnitude::Percent(_) => Expectation {
            low: (ratio - tolerance).max(0.0),
            high: ratio + tolerance,
        },
        Magnitude::Factor(_) => Expectation {
            low: ratio * (1.0 - tolerance).max(0.0),
            high: ratio * (1.0 + tolerance),
        },
    }
}

fn comparator(text: &str) -> (Option<Bound>, &str) {
    for (prefix, bound) in [
        (">=", Bound::AtLeast),
        ("≥", Bound::AtLeast),
        (">", Bound::AtLeast),
        ("<=", Bound::AtMost),
        ("≤", Bound::AtMost),
        ("<", Bound::AtMost),
    ] {
        if let Some(rest) = text.strip_prefix(prefix) {
            return (Some(bound), rest.trim());
        }
    }
    (None, text)
}

/// Better or worse, as a claim's word says.
#[derive(Clone, Copy, PartialEq)]
enum Word {
    Better,
    Worse,
}

/// "20%", "+20%", "2x", "2×", each optionally followed by a word.
fn magnitude(text: &str) -> Option<(Magnitude, Option<Word>)> {
    let (number, word) = match text.rsplit_once(' ') {
        Some((number, word)) => {
            let word = match word {
                "faster" | "better" => Word::Better,
                "slower" | "worse" => Word::Worse,
                _ => return None,
            };
            (number.trim(), Some(word))
        }
        None => (text, None),
    };
    let magnitude = if let Some(p) = parse_percent(number) {
        Magnitude::Percent(p)
    } else {
        let factor = number
            .strip_suffix('x')
            .or_else(|| number.strip_suffix('×'))?;
        Magnitude::Factor(
            factor
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())?,
        )
    };
    if word.is_some() && number.starts_with(['+', '-']) {
        return None;
    }
    Some((magnitude, word))
}

/// "20%" → 0.2; "-5%" → -0.05; "2.5 %" → 0.025 (a spec's precision is read so too).
pub fn parse_percent(text: &str) -> Option<f64> {
    let number = text.trim().strip_suffix('%')?.trim();
    number
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
        .map(|p| p / 100.0)
}

/// The ratio other / base a change means, and whether the ratio grows with the change as said
/// (a comparator on a change that shrinks the ratio bounds it from the other side).
fn to_ratio(
    magnitude: Magnitude,
    word: Option<Word>,
    direction: Direction,
) -> Result<(f64, bool), &'static str> {
    let raises = match word {
        None => return plain_ratio(magnitude).map(|ratio| (ratio, true)),
        Some(word) => (word == Word::Better) == (direction == Direction::HigherIsBetter),
    };
    let ratio = match (magnitude, raises) {
        (Magnitude::Percent(p), true) => 1.0 + p,
        (Magnitude::Percent(p), false) => 1.0 - p,
        (Magnitude::Factor(f), _) if f < 1.0 => {
            return Err("a factor with faster or slower is at least 1 (\"2x slower\")")
        }
        (Magnitude::Factor(f), true) => f,
        (Magnitude::Factor(f), false) => 1.0 / f,
    };
    if ratio <= 0.0 {
        return Err("that change leaves no ratio above 0");
    }
    Ok((ratio, raises))
}

fn plain_ratio(magnitude: Magnitude) -> Result<f64, &'static str> {
    let ratio = match magnitude {
        Magnitude::Percent(p) => 1.0 + p,
        Magnitude::Factor(f) => f,
    };
    if ratio <= 0.0 {
        return Err("that change leaves no ratio above 0");
    }
    Ok(ratio)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TPS: Direction = Direction::HigherIsBetter;
    const LATENCY: Direction = Direction::LowerIsBetter;

    fn region(text: &str, direction: Direction) -> (f64, f64) {
        let e = Expectation::parse(text, direction).unwrap();
        ((e.low * 1e6).round() / 1e6, (e.high * 1e6).round() / 1e6)
    }

    #[test]
    fn expectations_read_as_regions_of_the_ratio() {
        let inf = f64::INFINITY;
        assert_eq!(region("2x", TPS), (1.9, 2.1));
        assert_eq!(region("2× ±10%", TPS), (1.8, 2.2));
        assert_eq!(region("+20%", TPS), (1.15, 1.25));
        assert_eq!(region("+20% ±2%", LATENCY), (1.18, 1.22));
        assert_eq!(region("-5% +-1%", TPS), (0.94, 0.96));
        assert_eq!(region(">= 1.8x", TPS), (1.8, inf));
        assert_eq!(region("<= -5%", TPS), (0.0, 0.95));
        assert_eq!(region("within 2%", TPS), (0.98, 1.02));
        // Words turn with the metric: slower is a lower tps and a higher latency.
        assert_eq!(region("20% slower", TPS), (0.75, 0.85));
        assert_eq!(region("20% slower", LATENCY), (1.15, 1.25));
        assert_eq!(region("2x faster", LATENCY), (0.475, 0.525));
        assert_eq!(region(">= 2x slower", LATENCY), (2.0, inf));
        assert_eq!(region(">= 2x slower", TPS), (0.0, 0.5));
        assert_eq!(region(">= 20% slower", TPS), (0.0, 0.8));
        assert_eq!(region("<= 10% slower", LATENCY), (0.0, 1.1));
    }

    #[test]
    fn bad_expectations_say_what_to_write() {
        let error = |text: &str| Expectation::parse(text, TPS).unwrap_err();
        assert!(error("faster").contains("is not an expectation; write \"2x\""));
        assert_eq!(
            error("within lots"),
            "\"within lots\": \"within\" takes a percentage below 100%, as \"within 2%\""
        );
        assert_eq!(
            error(">= 2x ±5%"),
            "\">= 2x ±5%\": a bound (>=, <=) takes no tolerance"
        );
        assert_eq!(
            error("0.5x slower"),
            "\"0.5x slower\": a factor with faster or slower is at least 1 (\"2x slower\")"
        );
        assert_eq!(
            error("100% slower"),
            "\"100% slower\": that change leaves no ratio above 0"
        );
        assert!(error("+20% slower").contains("is not an expectation"));
        assert_eq!(
            error("2x ±x"),
            "\"2x ±x\": the tolerance is a percentage, as \"±5%\""
        );
    }

    #[test]
    fn an_interval_is_inside_outside_or_across_the_region() {
        let e = Expectation::parse(">= 1.8x", TPS).unwrap();
        assert_eq!(e.judge((1.9, 2.2)), ClaimVerdict::Reproduced);
        assert_eq!(e.judge((1.1, 1.3)), ClaimVerdict::Contradicted);
        assert_eq!(e.judge((1.7, 2.0)), ClaimVerdict::Undecided);
        assert_eq!(e.describe(), "ratio ≥ 1.800");
        let within = Expectation::parse("within 2%", TPS).unwrap();
        assert_eq!(within.describe(), "ratio in [0.980, 1.020]");
        assert_eq!(within.judge((1.03, 1.05)), ClaimVerdict::Contradicted);
    }

    #[test]
    fn rounds_to_decide_grow_as_the_ratio_nears_a_boundary() {
        let e = Expectation::parse(">= 1.8x", TPS).unwrap();
        // ln(2 / 1.8) = 0.1054; sd 0.1: t(0.975, n-1) · 0.1 / √n is 0.1049 at n = 6.
        assert_eq!(e.rounds_to_decide(2.0, 0.1), Some(6));
        assert!(e.rounds_to_decide(1.85, 0.1).unwrap() > 20);
        assert_eq!(e.rounds_to_decide(1.8, 0.1), None);
    }
}

#[cfg(test)]
mod simulation {
    //! Auto labs that stop a claimed cell at its first decided interim look, under this
    //! machine's fitted noise (`stopping::simulation`): the share of labs whose 95% verdict at
    //! the stop is false, and the rounds they took.
    use super::*;
    use crate::stopping::simulation::{NoiseModel, Random, MACHINE, TEN_PERCENT};
    use crate::stopping::{should_stop, StoppingRule};

    const RULE: StoppingRule = StoppingRule {
        precision: 0.03,
        max_rounds: 15,
    };
    const LABS: usize = 10_000;

    /// (verdict shares [reproduced, contradicted, undecided], mean rounds).
    fn scenario(
        model: NoiseModel,
        true_ratio: f64,
        claim: &str,
        stop_on_claim: bool,
    ) -> ([f64; 3], f64) {
        let expectation = Expectation::parse(claim, TPS_DIRECTION).unwrap();
        let mut random = Random(0xc1a1_5eed ^ true_ratio.to_bits());
        let (mut shares, mut rounds) = ([0.0; 3], 0.0);
        for _ in 0..LABS {
            let mut pairs = vec![Vec::new()];
            loop {
                let drift = model.drift_sd * random.normal();
                let base = model.run(&mut random, 1000.0, drift);
                let other = model.run(&mut random, 1000.0 * true_ratio, drift);
                pairs[0].push((base, other));
                let claimed = stop_on_claim && decided_at_look(&expectation, &pairs[0]);
                if claimed || should_stop(&pairs, &RULE).is_some() {
                    break;
                }
            }
            let verdict = interval_at(&pairs[0], ALPHA)
                .map_or(ClaimVerdict::Undecided, |i| expectation.judge(i));
            shares[verdict as usize] += 1.0 / LABS as f64;
            rounds += pairs[0].len() as f64 / LABS as f64;
        }
        (shares, rounds)
    }

    const TPS_DIRECTION: Direction = Direction::HigherIsBetter;

    #[test]
    fn claim_stopping_keeps_false_verdicts_at_the_nominal_rate() {
        let show = |name: &str, (shares, rounds): ([f64; 3], f64)| {
            println!(
                "{name}: reproduced {:.2}%, contradicted {:.2}%, undecided {:.2}%, mean rounds {rounds:.1}",
                shares[0] * 100.0,
                shares[1] * 100.0,
                shares[2] * 100.0
            );
            shares
        };
        let aa = show(
            "A/A against \"within 2%\" (this machine)",
            scenario(MACHINE, 1.0, "within 2%", true),
        );
        let change = show(
            "+5% against \">= +3%\" (10% noise)",
            scenario(TEN_PERCENT, 1.05, ">= +3%", true),
        );
        let edge = show(
            "+3% against \">= +3%\" (10% noise, on the boundary)",
            scenario(TEN_PERCENT, 1.03, ">= +3%", true),
        );
        let clear = scenario(MACHINE, 2.0, ">= 1.8x", true);
        let precision = scenario(MACHINE, 2.0, ">= 1.8x", false);
        show(
            "2x against \">= 1.8x\" (this machine), stopping on the claim",
            clear,
        );
        show("the same, stopping on precision ±3% alone", precision);
        // A true claim is contradicted in at most 5% of labs, even on its boundary.
        assert!(aa[1] <= 0.05, "{aa:?}");
        assert!(change[1] <= 0.05, "{change:?}");
        assert!(edge[1] <= 0.05, "{edge:?}");
        // A clear claim is decided as often as at the precision stop, and sooner: 2x against
        // 1.8x is ln 1.11 = 0.105 away from the boundary, which this machine's paired noise
        // (log sd ≈ 0.13 with its tails) reaches in about ten rounds.
        assert!(
            clear.0[0] >= precision.0[0] - 0.01,
            "{clear:?} {precision:?}"
        );
        assert!(clear.1 < precision.1, "{clear:?} {precision:?}");
    }
}
