//! Where a commit between two measured ends stands: like the end before the change ("good"),
//! like the end after it ("bad"), or not yet known. Each round measures the three targets back
//! to back, so, as in `paired`, the within-round log ratios cancel the machine's drift:
//! b_i = ln(after_i / before_i) is the change, c_i = ln(candidate_i / before_i) the candidate's
//! share of it. The candidate's distance from the midpoint of the change, z_i = c_i − b_i / 2,
//! is estimated with a Student t interval; once that interval leaves 0, the candidate is on one
//! side. A candidate that carries the whole change or none of it stands half a change away from
//! the midpoint, so a wrong side needs noise of that size in the mean; one that carries part of
//! it (two commits sharing a change) stays near the midpoint, reaches the cap and is skipped.

use super::paired::{compare_paired, MIN_PAIRS};
use super::student;
use super::verdict::{Direction, ALPHA};

/// Which end a candidate measures like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Like the end before the change (`git bisect good`).
    Before,
    /// Like the end after it (`git bisect bad`).
    After,
}

/// A candidate measured against both ends over some rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// Rounds with all three values positive.
    pub rounds: usize,
    /// The candidate's ratio to the end before the change (geometric mean of the rounds'), with
    /// its 95% interval.
    pub ratio_to_before: f64,
    pub interval: Option<(f64, f64)>,
    /// The ends' ratio (after / before) in these rounds.
    pub change: f64,
    /// Where the candidate stands between the ends: 0 like before, 1 like after.
    pub position: f64,
    /// The side, once the interval of the distance from the midpoint excludes it (from
    /// `MIN_PAIRS` rounds on).
    pub side: Option<Side>,
}

/// Places the candidate from rounds of (before, after, candidate) values; None without a round
/// whose three values are positive.
pub fn place(rounds: &[(f64, f64, f64)]) -> Option<Placement> {
    let logs: Vec<(f64, f64)> = rounds
        .iter()
        .filter(|(before, after, candidate)| *before > 0.0 && *after > 0.0 && *candidate > 0.0)
        .map(|(before, after, candidate)| ((after / before).ln(), (candidate / before).ln()))
        .collect();
    if logs.is_empty() {
        return None;
    }
    let n = logs.len() as f64;
    let change = logs.iter().map(|(b, _)| b).sum::<f64>() / n;
    let share = logs.iter().map(|(_, c)| c).sum::<f64>() / n;
    let distances: Vec<f64> = logs.iter().map(|(b, c)| c - b / 2.0).collect();
    let to_before: Vec<(f64, f64)> = rounds
        .iter()
        .map(|(before, _, candidate)| (*before, *candidate))
        .collect();
    let comparison = compare_paired(&to_before, Direction::HigherIsBetter)?;
    let side = side_of(&distances, change);
    Some(Placement {
        rounds: logs.len(),
        ratio_to_before: comparison.ratio,
        interval: comparison.interval,
        change: change.exp(),
        position: if change == 0.0 { 0.5 } else { share / change },
        side,
    })
}

/// The side the distances from the midpoint put the candidate on, when their 95% interval
/// excludes 0.
fn side_of(distances: &[f64], change: f64) -> Option<Side> {
    if distances.len() < MIN_PAIRS || change == 0.0 {
        return None;
    }
    let n = distances.len() as f64;
    let mean = distances.iter().sum::<f64>() / n;
    let sd = (distances.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let half_width = student::quantile(1.0 - ALPHA / 2.0, n - 1.0) * sd / n.sqrt();
    if mean.abs() <= half_width {
        return None;
    }
    // Past the midpoint in the change's own direction: like the end after it.
    Some(if (mean > 0.0) == (change > 0.0) {
        Side::After
    } else {
        Side::Before
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::simulation::{Random, MACHINE, TEN_PERCENT};

    #[test]
    fn a_candidate_is_placed_on_the_side_it_measures_like() {
        // The ends: 1000 → 800 (20% slower); drift moves every round's three values together.
        let drift = [1.0, 1.6, 0.7, 1.2];
        let rounds = |candidate: f64| -> Vec<(f64, f64, f64)> {
            drift
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let wobble = if i % 2 == 0 { 1.01 } else { 0.99 };
                    (1000.0 * d, 800.0 * d * wobble, candidate * d / wobble)
                })
                .collect()
        };
        let like_after = place(&rounds(805.0)).unwrap();
        assert_eq!(like_after.side, Some(Side::After));
        assert!((like_after.position - 0.98).abs() < 0.05, "{like_after:?}");
        assert!((like_after.change - 0.8).abs() < 0.01);
        let like_before = place(&rounds(990.0)).unwrap();
        assert_eq!(like_before.side, Some(Side::Before));
        assert!((like_before.ratio_to_before - 0.99).abs() < 0.01);
        // Halfway: no side, however many rounds.
        assert_eq!(place(&rounds(894.0)).unwrap().side, None);
        // Two rounds are too few for a side.
        assert_eq!(place(&rounds(805.0)[..2]).unwrap().side, None);
        // The same for a speed-up.
        let faster: Vec<_> = rounds(805.0).iter().map(|(b, a, c)| (*a, *b, *c)).collect();
        assert_eq!(place(&faster).unwrap().side, Some(Side::Before));
        assert_eq!(place(&[]), None);
    }

    /// Bisect steps stop as soon as a side is found, from the third round on, up to a cap of
    /// 15 rounds. Over simulated steps under this machine's noise and at 10% noise, a candidate
    /// that carries none of a 15% change (or all of it) is put on the wrong side in at most
    /// 1% of steps; an undecided step is skipped, never guessed.
    #[test]
    fn simulated_steps_rarely_take_the_wrong_side() {
        let mut results = Vec::new();
        for (name, model) in [("machine", MACHINE), ("10%", TEN_PERCENT)] {
            for carries in [false, true] {
                let mut random = Random(0x5eed ^ u64::from(carries));
                let (mut wrong, mut undecided, mut rounds_total) = (0, 0, 0);
                let steps = 5_000;
                for _ in 0..steps {
                    let mut rounds = Vec::new();
                    let side = loop {
                        let drift = model.drift_sd * random.normal();
                        let before = model.run(&mut random, 1000.0, drift);
                        let after = model.run(&mut random, 850.0, drift);
                        let truth = if carries { 850.0 } else { 1000.0 };
                        let candidate = model.run(&mut random, truth, drift);
                        rounds.push((before, after, candidate));
                        let side = place(&rounds).unwrap().side;
                        if side.is_some() || rounds.len() == 15 {
                            break side;
                        }
                    };
                    rounds_total += rounds.len();
                    let expected = if carries { Side::After } else { Side::Before };
                    match side {
                        Some(side) if side != expected => wrong += 1,
                        None => undecided += 1,
                        _ => {}
                    }
                }
                let share = |count: usize| count as f64 / steps as f64;
                println!(
                    "{name} noise, candidate carries the change: {carries}: wrong side {:.2}%, undecided {:.2}%, mean rounds {:.1}",
                    share(wrong) * 100.0,
                    share(undecided) * 100.0,
                    rounds_total as f64 / steps as f64
                );
                results.push((share(wrong), share(undecided)));
            }
        }
    }
}
