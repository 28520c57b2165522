//! Change points in a history: the invocations of one lab spec on one machine, each a point
//! (the median of its runs) with the spread of its own runs. All of it on ln(value), so a 10%
//! fall and a 10% rise weigh alike and a change's size is a ratio.
//!
//! The method is PELT (Killick, Fearnhead & Eckley 2012) with a penalty chosen by the noise:
//! the segmentation into plateaus that minimises the squared deviations from each plateau's
//! mean, in units of the points' noise variance, plus `PENALTY`·ln(n) per change (a BIC-like
//! penalty, set so that pure noise gives a change point in at most a few percent of series).
//! Then each change must be a decided step between its neighbours — a Student t test on the
//! plateaus either side, p < `ALPHA`, Otava's test (ex-Hunter, MongoDB's and DataStax's
//! nightly series) — and the weakest is dropped until all are.
//!
//! Why PELT and not Otava's E-divisive means: tried first, here, with the same t test; binary
//! segmentation from E-divisive's split missed a dip that comes back (1.0, 0.94, 1.0 in thirds
//! of 90 points: 17–24% of series) because the first split averages the dip with the
//! return; with κ searched as well it misplaced steps more often. PELT is exact for the
//! plateau model, which is what a nightly series of builds is.
//!
//! What stampede adds, because it knows more about each point than Otava does:
//! - **The noise is each point's own as well.** The variance is the larger of the points'
//!   scatter (from successive differences, which a step barely moves: their median absolute
//!   deviation, once there are `SCATTER_POINTS`) and the points' own (their runs' variance of
//!   ln over the run count). A step inside the points' own noise is not a change, and a
//!   history of three nights still has its runs' noise to decide by (with their degrees of
//!   freedom).
//! - **A slow drift is not a step.** PELT cuts a drift into plateaus; when one straight line
//!   explains the whole history at least as well as the plateaus do (the slope costing what a
//!   change costs), there is no change point. A drift with a real step on top is reported as
//!   steps (the limit of a plateau model).
//!
//! Measured by the tests below (2% noise, this module's random source): a 5% step at 40 of 80
//! found alone (±5) in 977 of 1,000 series and within ±1 of 40 in 925 (least squares cannot
//! place a 2.5σ step closer more often); a change point in pure noise in 21 of 1,000; in a
//! 10% drift over 80 points in 21 of 1,000; two 6% steps (a staircase, a dip that returns)
//! both found within ±3 in 493 and 495 of 500 (the staircase within ±1 in 468).

use super::student;

/// PELT's penalty per change, in units of the noise variance, times ln(n).
pub const PENALTY: f64 = 3.0;
/// A change point stays when the t test between its neighbours gives p below this.
pub const ALPHA: f64 = 0.001;
/// Points a history needs before their scatter is estimated (below, the runs' own noise).
pub const SCATTER_POINTS: usize = 10;

/// One invocation's value for a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The median of the invocation's runs (positive).
    pub value: f64,
    /// The variance of ln(value) as its own runs estimate it (their sample variance of ln over
    /// the run count) and its degrees of freedom; None with a single run.
    pub own: Option<(f64, f64)>,
}

impl Point {
    /// A point from its runs' values: the median, and the runs' spread.
    pub fn from_runs(values: &[f64]) -> Option<Point> {
        let value = super::median(values)?;
        if value <= 0.0 {
            return None;
        }
        let logs: Vec<f64> = values
            .iter()
            .filter(|v| **v > 0.0)
            .map(|v| v.ln())
            .collect();
        let own = (logs.len() >= 2).then(|| {
            let n = logs.len() as f64;
            let mean = logs.iter().sum::<f64>() / n;
            let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (variance / n, n - 1.0)
        });
        Some(Point { value, own })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// The first point after the change.
    pub index: usize,
    /// Geometric mean after / before, between the neighbouring change points.
    pub ratio: f64,
    /// Its 95% interval.
    pub interval: (f64, f64),
    pub p_value: f64,
}

/// The change points of a series, in order.
pub fn detect(points: &[Point]) -> Vec<ChangePoint> {
    let logs: Vec<f64> = points.iter().map(|p| p.value.ln()).collect();
    let Some(variance) = noise_variance(points, &logs) else {
        return Vec::new();
    };
    let penalty = PENALTY * (logs.len() as f64).ln().max(1.0);
    let mut found = if variance > 0.0 {
        pelt(&logs, variance, penalty)
    } else {
        Vec::new()
    };
    if !found.is_empty() && variance > 0.0 && line_explains(&logs, &found, variance, penalty) {
        found.clear();
    }
    drop_weak(points, &logs, &mut found);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().copied())
        .chain(std::iter::once(points.len()))
        .collect();
    bounds
        .windows(3)
        .filter_map(|w| {
            let test = step(points, &logs, w[0], w[1], w[2])?;
            Some(ChangePoint {
                index: w[1],
                ratio: test.log_step.exp(),
                interval: (test.low.exp(), test.high.exp()),
                p_value: test.p_value,
            })
        })
        .collect()
}

/// The variance of a point's ln(value) around its segment's mean: the larger of the points'
/// scatter (from successive differences, which a step barely moves: their median absolute
/// deviation) and the points' own. A history shorter than `SCATTER_POINTS` has only its own.
fn noise_variance(points: &[Point], logs: &[f64]) -> Option<f64> {
    let own = own_variance(points).map(|(v, _)| v);
    let scatter = (logs.len() >= SCATTER_POINTS).then(|| {
        let differences: Vec<f64> = logs.windows(2).map(|w| w[1] - w[0]).collect();
        let middle = super::median(&differences).unwrap_or(0.0);
        let deviations: Vec<f64> = differences.iter().map(|d| (d - middle).abs()).collect();
        let sd = super::median(&deviations).unwrap_or(0.0) / 0.6745 / 2f64.sqrt();
        sd * sd
    });
    match (scatter, own) {
        (Some(s), Some(o)) => Some(s.max(o)),
        (s, o) => s.or(o),
    }
}

/// PELT (Killick, Fearnhead & Eckley 2012): the segmentation minimising the squared
/// deviations from each segment's mean over `variance`, plus `penalty` per change; exact, and
/// O(n) on average by pruning the starts that can no longer win.
fn pelt(logs: &[f64], variance: f64, penalty: f64) -> Vec<usize> {
    let n = logs.len();
    let mut sum = vec![0.0; n + 1];
    let mut squares = vec![0.0; n + 1];
    for (i, l) in logs.iter().enumerate() {
        sum[i + 1] = sum[i] + l;
        squares[i + 1] = squares[i] + l * l;
    }
    let cost = |from: usize, to: usize| {
        let (s, q, k) = (
            sum[to] - sum[from],
            squares[to] - squares[from],
            (to - from) as f64,
        );
        (q - s * s / k).max(0.0) / variance
    };
    let mut best = vec![0.0; n + 1];
    let mut last_change = vec![0usize; n + 1];
    best[0] = -penalty;
    let mut starts = vec![0usize];
    for end in 1..=n {
        let (from, total) = starts
            .iter()
            .map(|&from| (from, best[from] + cost(from, end) + penalty))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("starts holds 0 from the first end on");
        best[end] = total;
        last_change[end] = from;
        starts.retain(|&from| best[from] + cost(from, end) <= total);
        starts.push(end);
    }
    let mut changes = Vec::new();
    let mut end = n;
    while last_change[end] > 0 {
        end = last_change[end];
        changes.push(end);
    }
    changes.reverse();
    changes
}

/// Removes, weakest first, the change points that are no decided step between their
/// neighbours (t test, p ≥ `ALPHA`).
fn drop_weak(points: &[Point], logs: &[f64], found: &mut Vec<usize>) {
    while !found.is_empty() {
        let weakest = (0..found.len())
            .map(|k| {
                let before = if k == 0 { 0 } else { found[k - 1] };
                let after = found.get(k + 1).copied().unwrap_or(logs.len());
                let p_value =
                    step(points, logs, before, found[k], after).map_or(1.0, |t| t.p_value);
                (k, p_value)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match weakest {
            Some((k, p_value)) if p_value >= ALPHA => {
                found.remove(k);
            }
            _ => return,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Step {
    log_step: f64,
    low: f64,
    high: f64,
    p_value: f64,
}

/// The t test of points [start, split) against [split, end) on ln(value).
fn step(points: &[Point], logs: &[f64], start: usize, split: usize, end: usize) -> Option<Step> {
    let (left, right) = (&logs[start..split], &logs[split..end]);
    if left.is_empty() || right.is_empty() {
        return None;
    }
    let mean = |side: &[f64]| side.iter().sum::<f64>() / side.len() as f64;
    let (mean_left, mean_right) = (mean(left), mean(right));
    let squares = |side: &[f64], m: f64| side.iter().map(|l| (l - m).powi(2)).sum::<f64>();
    let scatter_df = (left.len() + right.len()) as f64 - 2.0;
    let scatter = (scatter_df > 0.0).then(|| {
        let variance = (squares(left, mean_left) + squares(right, mean_right)) / scatter_df;
        (variance, scatter_df)
    });
    let own = own_variance(&points[start..end]);
    // The larger variance, for caution; the larger degrees of freedom, so that a history of
    // three nights (one degree of freedom of scatter) can still lean on its runs'.
    let (variance, df) = match (scatter, own) {
        (Some(s), Some(o)) => (s.0.max(o.0), s.1.max(o.1)),
        (Some(s), None) => s,
        (None, Some(o)) => o,
        (None, None) => return None,
    };
    let standard_error = (variance * (1.0 / left.len() as f64 + 1.0 / right.len() as f64)).sqrt();
    let log_step = mean_right - mean_left;
    if standard_error == 0.0 {
        return (log_step != 0.0).then_some(Step {
            log_step,
            low: log_step,
            high: log_step,
            p_value: 0.0,
        });
    }
    let t = log_step / standard_error;
    let reach = student::quantile(0.975, df) * standard_error;
    Some(Step {
        log_step,
        low: log_step - reach,
        high: log_step + reach,
        p_value: student::two_sided_p(t, df),
    })
}

/// Whether one straight line over the whole history explains it at least as well as the
/// plateaus between `found` do, each change and the slope costing `penalty` alike: a slow
/// drift, which PELT would cut into plateaus.
fn line_explains(logs: &[f64], found: &[usize], variance: f64, penalty: f64) -> bool {
    let n = logs.len() as f64;
    let position_mean = (n - 1.0) / 2.0;
    let value_mean = logs.iter().sum::<f64>() / n;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (i, y) in logs.iter().enumerate() {
        sxx += (i as f64 - position_mean).powi(2);
        sxy += (i as f64 - position_mean) * (y - value_mean);
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let line_squares: f64 = logs
        .iter()
        .enumerate()
        .map(|(i, y)| (y - value_mean - slope * (i as f64 - position_mean)).powi(2))
        .sum();
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().copied())
        .chain(std::iter::once(logs.len()))
        .collect();
    let plateau_squares: f64 = bounds
        .windows(2)
        .map(|w| {
            let side = &logs[w[0]..w[1]];
            let mean = side.iter().sum::<f64>() / side.len() as f64;
            side.iter().map(|l| (l - mean).powi(2)).sum::<f64>()
        })
        .sum();
    line_squares / variance + penalty <= plateau_squares / variance + penalty * found.len() as f64
}

/// The mean of the points' own variances with their pooled degrees of freedom.
fn own_variance(points: &[Point]) -> Option<(f64, f64)> {
    let owns: Vec<(f64, f64)> = points.iter().filter_map(|p| p.own).collect();
    if owns.is_empty() {
        return None;
    }
    let mean = owns.iter().map(|(v, _)| v).sum::<f64>() / owns.len() as f64;
    let df = owns.iter().map(|(_, df)| df).sum::<f64>();
    Some((mean, df))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::simulation::Random;

    /// `n` points of 2% noise, each with an own interval of a fifth of it, shaped by `level`.
    fn series(random: &mut Random, n: usize, level: impl Fn(usize) -> f64) -> Vec<Point> {
        (0..n)
            .map(|i| Point {
                value: level(i) * (0.02 * random.normal()).exp(),
                own: Some((0.004f64.powi(2), 4.0)),
            })
            .collect()
    }

    fn indices(points: &[Point]) -> Vec<usize> {
        detect(points).iter().map(|c| c.index).collect()
    }

    /// Of `count` series, how many had exactly `expected.len()` change points within `slack`
    /// of the expected ones.
    fn found_within(
        count: usize,
        slack: usize,
        expected: &[usize],
        mut make: impl FnMut() -> Vec<Point>,
    ) -> usize {
        (0..count)
            .filter(|_| {
                let found = indices(&make());
                found.len() == expected.len()
                    && found
                        .iter()
                        .zip(expected)
                        .all(|(f, e)| f.abs_diff(*e) <= slack)
            })
            .count()
    }

    #[test]
    fn a_five_percent_step_in_two_percent_noise_is_found_at_40_of_80() {
        let step = |i: usize| if i < 40 { 1.0 } else { 0.95 };
        let mut random = Random(40);
        let near = found_within(1000, 1, &[40], || series(&mut random, 80, step));
        let mut random = Random(40);
        let alone = found_within(1000, 5, &[40], || series(&mut random, 80, step));
        assert!(near >= 900, "within ±1 in {near} of 1000");
        assert!(alone >= 960, "found alone in {alone} of 1000");
        let change = &detect(&series(&mut Random(7), 80, step))[0];
        assert!(
            change.interval.0 < 0.95 && 0.95 < change.interval.1 && change.p_value < ALPHA,
            "{change:?}"
        );
    }

    #[test]
    fn pure_noise_gives_no_change_point_in_at_least_95_percent_of_series() {
        let mut random = Random(1);
        let flagged = (0..1000)
            .filter(|_| !detect(&series(&mut random, 80, |_| 1.0)).is_empty())
            .count();
        assert!(
            flagged <= 50,
            "{flagged} of 1000 noise series had a change point"
        );
    }

    #[test]
    fn two_steps_are_both_found_a_staircase_as_well_as_a_dip() {
        for shape in [[1.0, 1.06, 1.12], [1.0, 0.94, 1.0]] {
            let mut random = Random(2);
            let found = found_within(500, 3, &[30, 60], || {
                series(&mut random, 90, |i| shape[i / 30])
            });
            assert!(found >= 475, "{shape:?}: both found in {found} of 500");
        }
    }

    #[test]
    fn a_slow_drift_is_not_a_step() {
        let mut random = Random(3);
        let flagged = (0..1000)
            .filter(|_| {
                let points = series(&mut random, 80, |i| 1.0 - 0.10 * i as f64 / 80.0);
                !detect(&points).is_empty()
            })
            .count();
        assert!(
            flagged <= 50,
            "{flagged} of 1000 drifting series had a change point"
        );
    }

    #[test]
    fn a_step_inside_the_points_own_noise_is_not_a_change() {
        // Three nights of three runs each: the third 3% lower, the runs' own spread 10%.
        let noisy = |v: f64| Point::from_runs(&[v * 0.9, v, v * 1.1]).unwrap();
        assert!(detect(&[noisy(100.0), noisy(100.5), noisy(97.0)]).is_empty());
        // The same nights with tight runs and a halving at the third: found at the third.
        let tight = |v: f64| Point::from_runs(&[v * 0.99, v, v * 1.01]).unwrap();
        let found = detect(&[tight(100.0), tight(101.0), tight(50.0)]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 2);
        assert!((found[0].ratio - 0.5 / 1.005).abs() < 0.01, "{found:?}");
    }

    #[test]
    fn short_and_flat_series_have_no_change() {
        assert!(detect(&[]).is_empty());
        let single = Point {
            value: 1.0,
            own: None,
        };
        assert!(detect(&[single]).is_empty());
        assert!(detect(&[single, single]).is_empty());
        assert!(detect(&[single; 10]).is_empty());
    }

    #[test]
    fn a_year_of_points_with_two_steps() {
        let mut random = Random(5);
        let points = series(&mut random, 365, |i| match i {
            0..=119 => 1.0,
            120..=239 => 0.9,
            _ => 1.0,
        });
        let found = indices(&points);
        assert!(
            found.len() == 2 && found[0].abs_diff(120) <= 1 && found[1].abs_diff(240) <= 1,
            "{found:?}"
        );
    }
}
