//! Where a lab's noise comes from: per cell the spread the pairing leaves, each run's metric in
//! the order the lab ran them (a drift chart per cell, one line per target), and the runs that
//! stand out, with the likely cause where the probes show one. No run is dropped here: a
//! flagged run stays in the analysis unless the user excludes it (`--exclude-run`), and the
//! report lists what was excluded.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::comparison::{
    cell_of, CellComparison, CellKey, Metric, MIN_RUNS_TO_FLAG, OUTLIER_Z, SPREAD_FLOOR,
};
use stampede_stats::{coefficient_of_variation, median, robust_z};
use stampede_store::{CounterRow, RunStatus, StoredRun};

/// Steal time above this share of the machine's CPU time is named as a cause.
const STEAL_SHARE: f64 = 0.05;
/// Other processes' CPU above this share of the machine's CPU time is named as a cause: on a
/// quiet machine the kernel's threads and the system's daemons take 1–3%.
const OTHER_CPU_SHARE: f64 = 0.10;

#[derive(Debug, Default, Serialize)]
pub struct Noise {
    pub cells: Vec<CellNoise>,
    pub drift: Vec<DriftChart>,
    pub flagged: Vec<FlaggedRun>,
    /// Runs the user left out of the analysis (`--exclude-run`).
    pub excluded: Vec<ExcludedRun>,
}

/// A target's cell against the base's: how much the runs vary, and how much of it pairing
/// leaves.
#[derive(Debug, Serialize)]
pub struct CellNoise {
    pub target: String,
    pub cell: CellKey,
    pub pairs: Option<usize>,
    /// Standard deviation of the rounds' ratios, in percent (exp(sd of log ratios) − 1).
    pub paired_ratio_sd_pct: Option<f64>,
    /// Coefficient of variation of each side's runs, in percent.
    pub base_cv_pct: Option<f64>,
    pub other_cv_pct: Option<f64>,
    /// The mean share of the machine's CPU time that processes other than the servers and
    /// stampede took during the cell's runs (both sides), in percent; None without the
    /// server's CPU probe (a server on another machine).
    pub other_processes_cpu_pct: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct DriftChart {
    pub cell: CellKey,
    pub rounds: Vec<u32>,
    pub lines: Vec<DriftLine>,
}

/// A target's runs of one cell, per round (None where the round has no completed run).
#[derive(Debug, Serialize)]
pub struct DriftLine {
    pub target: String,
    pub values: Vec<Option<f64>>,
}

#[derive(Debug, Serialize)]
pub struct FlaggedRun {
    pub run_id: i64,
    pub target: String,
    pub cell: CellKey,
    pub round: u32,
    pub value: f64,
    /// How far from the median of its target's cell, in percent.
    pub deviation_pct: f64,
    pub causes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ExcludedRun {
    pub run_id: i64,
    pub target: String,
    pub cell: CellKey,
    pub round: u32,
}

/// What the probes saw in each run's measured window, by run id.
#[derive(Debug, Default)]
pub struct RunProbes {
    /// Seconds with no transaction at all.
    pub stall_seconds: HashMap<i64, Vec<u64>>,
    /// The coefficient of variation of the run's throughput second by second.
    pub series_cv: HashMap<i64, f64>,
    /// Seconds in which a checkpoint completed.
    pub checkpoint_seconds: HashMap<i64, Vec<u64>>,
    /// Steal time as a share of the machine's CPU time over the window.
    pub steal_share: HashMap<i64, f64>,
    /// The share of the machine's CPU time taken by processes other than the run's server and
    /// stampede over the window.
    pub other_cpu_share: HashMap<i64, f64>,
}

/// What `noise` reads: the lab's runs (the excluded ones apart) and its comparisons.
pub struct NoiseInputs<'a> {
    pub runs: &'a [StoredRun],
    pub excluded: &'a [StoredRun],
    pub base: &'a str,
    /// Per target other than the base, its cells against the base's.
    pub comparisons: Vec<(&'a str, &'a [CellComparison])>,
    pub metric: &'a Metric,
    pub probes: &'a RunProbes,
}

pub fn noise(inputs: &NoiseInputs<'_>) -> Noise {
    let NoiseInputs {
        runs,
        excluded,
        metric,
        probes,
        ..
    } = *inputs;
    let values = values(runs, metric);
    Noise {
        cells: inputs
            .comparisons
            .iter()
            .flat_map(|(target, cells)| cell_noise(inputs, &values, target, cells))
            .collect(),
        drift: drift_charts(runs, &values),
        flagged: flagged_runs(runs, &values, metric, probes),
        excluded: excluded
            .iter()
            .map(|run| ExcludedRun {
                run_id: run.id,
                target: run.target.clone(),
                cell: cell_of(run),
                round: run.repetition,
            })
            .collect(),
    }
}

/// The completed runs' values per (cell, target), by round.
type Values = BTreeMap<(CellKey, String), BTreeMap<u32, f64>>;

fn values(runs: &[StoredRun], metric: &Metric) -> Values {
    let mut out = Values::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if let Some(value) = metric.of(run) {
            out.entry((cell_of(run), run.target.clone()))
                .or_default()
                .insert(run.repetition, value);
        }
    }
    out
}

fn cell_noise(
    inputs: &NoiseInputs<'_>,
    values: &Values,
    target: &str,
    cells: &[CellComparison],
) -> Vec<CellNoise> {
    let cv = |cell: &CellKey, name: &str| {
        let side = values.get(&(cell.clone(), name.to_string()))?;
        coefficient_of_variation(&side.values().copied().collect::<Vec<_>>()).map(|v| v * 100.0)
    };
    cells
        .iter()
        .map(|c| CellNoise {
            target: target.to_string(),
            cell: c.cell.clone(),
            pairs: c.pairs,
            paired_ratio_sd_pct: c.log_ratio_sd.map(|sd| (sd.exp() - 1.0) * 100.0),
            base_cv_pct: cv(&c.cell, inputs.base),
            other_cv_pct: cv(&c.cell, target),
            other_processes_cpu_pct: other_processes_cpu(inputs, &c.cell, target),
        })
        .collect()
}

/// The mean of the other processes' CPU share over the cell's runs on the base and `target`.
fn other_processes_cpu(inputs: &NoiseInputs<'_>, cell: &CellKey, target: &str) -> Option<f64> {
    let shares: Vec<f64> = inputs
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed)
        .filter(|r| (r.target == target || r.target == inputs.base) && cell_of(r) == *cell)
        .filter_map(|r| inputs.probes.other_cpu_share.get(&r.id).copied())
        .collect();
    (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64 * 100.0)
}

/// Per cell, every target's runs in round order.
fn drift_charts(runs: &[StoredRun], values: &Values) -> Vec<DriftChart> {
    type Rounds<'v> = &'v BTreeMap<u32, f64>;
    let mut per_cell: BTreeMap<&CellKey, Vec<(&str, Rounds<'_>)>> = BTreeMap::new();
    let order = super::comparison::targets(runs);
    for ((cell, target), rounds) in values {
        per_cell.entry(cell).or_default().push((target, rounds));
    }
    for lines in per_cell.values_mut() {
        lines.sort_by_key(|(target, _)| order.iter().position(|t| t == target));
    }
    per_cell
        .into_iter()
        .map(|(cell, lines)| {
            let mut rounds: Vec<u32> = lines.iter().flat_map(|(_, r)| r.keys().copied()).collect();
            rounds.sort_unstable();
            rounds.dedup();
            let lines = lines
                .into_iter()
                .map(|(target, values)| DriftLine {
                    target: target.to_string(),
                    values: rounds.iter().map(|r| values.get(r).copied()).collect(),
                })
                .collect();
            DriftChart {
                cell: cell.clone(),
                rounds,
                lines,
            }
        })
        .collect()
}

/// Runs far from their cell's median, and runs in which the probes saw a stall.
fn flagged_runs(
    runs: &[StoredRun],
    values: &Values,
    metric: &Metric,
    probes: &RunProbes,
) -> Vec<FlaggedRun> {
    let mut flagged = Vec::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let Some(value) = metric.of(run) else {
            continue;
        };
        let cell = cell_of(run);
        let Some(side) = values.get(&(cell.clone(), run.target.clone())) else {
            continue;
        };
        let logs: Vec<f64> = side.values().map(|v| v.ln()).collect();
        let Some(center) = median(&logs) else {
            continue;
        };
        let outlier = logs.len() >= MIN_RUNS_TO_FLAG
            && robust_z(value.ln(), &logs, SPREAD_FLOOR).is_some_and(|z| z > OUTLIER_Z);
        let stalled = probes.stall_seconds.contains_key(&run.id);
        if !outlier && !stalled {
            continue;
        }
        let mut causes = causes(run.id, probes);
        if causes.is_empty() {
            causes.push(round_cause(run, values));
        }
        flagged.push(FlaggedRun {
            run_id: run.id,
            target: run.target.clone(),
            cell,
            round: run.repetition,
            value,
            deviation_pct: ((value.ln() - center).exp() - 1.0) * 100.0,
            causes,
        });
    }
    flagged
}

/// What the probes show for a run: stalls, checkpoints, steal time, other processes' CPU.
fn causes(run: i64, probes: &RunProbes) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(seconds) = probes.stall_seconds.get(&run) {
        out.push(format!(
            "a stall: {} second(s) without a transaction ({})",
            seconds.len(),
            seconds_text(seconds)
        ));
    }
    if let Some(seconds) = probes.checkpoint_seconds.get(&run) {
        out.push(format!(
            "a checkpoint completed inside the window ({})",
            seconds_text(seconds)
        ));
    }
    if let Some(share) = probes.steal_share.get(&run).filter(|s| **s > STEAL_SHARE) {
        out.push(format!(
            "steal time: {:.0}% of the machine's CPU time",
            share * 100.0
        ));
    }
    if let Some(share) = probes
        .other_cpu_share
        .get(&run)
        .filter(|s| **s > OTHER_CPU_SHARE)
    {
        out.push(format!(
            "other processes: {:.0}% of the machine's CPU time (neither the server nor stampede)",
            share * 100.0
        ));
    }
    out
}

/// The machine's CPU time by state, as the OS probe stores it: their sum is the CPU time.
pub const OS_CPU_TIMES: [&str; 5] = [
    "cpu_user_s",
    "cpu_system_s",
    "cpu_idle_s",
    "cpu_iowait_s",
    "cpu_steal_s",
];

/// A warning when other processes took more than `OTHER_CPU_SHARE` of the machine's CPU time
/// over the compared targets' runs, on average: a busy machine slows and blurs every run, which
/// the reader must know before the verdicts, not only from the noise table.
pub fn busy_machine(
    runs: &[StoredRun],
    targets: &[&str],
    other_cpu_share: &HashMap<i64, f64>,
) -> Option<String> {
    let shares: Vec<(f64, &StoredRun)> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed && targets.contains(&r.target.as_str()))
        .filter_map(|r| Some((*other_cpu_share.get(&r.id)?, r)))
        .collect();
    if shares.is_empty() {
        return None;
    }
    let mean = shares.iter().map(|(s, _)| s).sum::<f64>() / shares.len() as f64;
    let (most, run) = shares.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    (mean > OTHER_CPU_SHARE).then(|| {
        format!(
            "the machine was busy: other processes (neither the servers nor stampede) used {:.0}% of its CPU time during the runs on average, {:.0}% in the busiest (run {} of \"{}\", round {}); every run was slower and noisier than on a quiet machine — see the Noise section, and run the lab again when the machine is quiet",
            mean * 100.0,
            most * 100.0,
            run.id,
            run.target,
            run.repetition + 1
        )
    })
}

/// Per run, the share of the machine's CPU time that neither the run's server (its process
/// tree) nor stampede used: the machine's busy time less theirs, over all its CPU time (the sum of `os_cpu_times`). Runs
/// without the server's CPU counters (a server on another machine) have none. The counters
/// are per transaction, which leaves the shares as they are.
pub fn other_cpu_shares<'c>(
    counters: impl IntoIterator<Item = (i64, &'c CounterRow)>,
    os_cpu_times: &[&str],
) -> HashMap<i64, f64> {
    let mut per_run: HashMap<i64, HashMap<(&str, &str), f64>> = HashMap::new();
    for (run, counter) in counters {
        per_run.entry(run).or_default().insert(
            (counter.source.as_str(), counter.name.as_str()),
            counter.value,
        );
    }
    per_run
        .into_iter()
        .filter_map(|(run, values)| {
            let busy = |source: &str| -> Option<f64> {
                Some(values.get(&(source, "cpu_user_s"))? + values.get(&(source, "cpu_system_s"))?)
            };
            let total: f64 = os_cpu_times
                .iter()
                .filter_map(|name| values.get(&("os", *name)))
                .sum();
            let other = busy("os")? - busy("server")? - busy("driver").unwrap_or(0.0);
            (total > 0.0).then(|| (run, other.max(0.0) / total))
        })
        .collect()
}

/// Without a probe's cause: whether the other targets' runs of the same round moved alike
/// (the machine's phase, which pairing cancels) or not (the run's own noise).
fn round_cause(run: &StoredRun, values: &Values) -> String {
    let cell = cell_of(run);
    let direction = |target: &str| -> Option<f64> {
        let side = values.get(&(cell.clone(), target.to_string()))?;
        let center = median(&side.values().map(|v| v.ln()).collect::<Vec<_>>())?;
        Some(side.get(&run.repetition)?.ln() - center)
    };
    let own = direction(&run.target).unwrap_or(0.0);
    let partners: Vec<f64> = values
        .keys()
        .filter(|(c, target)| *c == cell && *target != run.target)
        .filter_map(|(_, target)| direction(target))
        .collect();
    if !partners.is_empty() && partners.iter().all(|p| p.signum() == own.signum()) {
        "no probe shows a cause; the other targets' runs of the same round moved the same way: a phase of the machine, which pairing cancels".into()
    } else {
        "no probe shows a cause; the other targets' runs of the same round did not move with it: the run's own noise".into()
    }
}

fn seconds_text(seconds: &[u64]) -> String {
    let shown: Vec<String> = seconds.iter().take(5).map(u64::to_string).collect();
    let more = if seconds.len() > 5 { ", …" } else { "" };
    format!("second {}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(source: &str, name: &str, value: f64) -> CounterRow {
        CounterRow {
            source: source.into(),
            name: name.into(),
            value,
        }
    }

    #[test]
    fn other_processes_take_what_the_server_and_stampede_did_not() {
        // Run 1: 20 s of machine CPU time, 12 busy; the server used 6, stampede 2: 4 s are
        // other processes', 20%. Run 2 has no server counters (a remote server): no share.
        let run_1 = [
            counter("os", "cpu_user_s", 9.0),
            counter("os", "cpu_system_s", 3.0),
            counter("os", "cpu_idle_s", 7.5),
            counter("os", "cpu_iowait_s", 0.5),
            counter("server", "cpu_user_s", 5.0),
            counter("server", "cpu_system_s", 1.0),
            counter("driver", "cpu_user_s", 1.5),
            counter("driver", "cpu_system_s", 0.5),
        ];
        let run_2 = [
            counter("os", "cpu_user_s", 9.0),
            counter("os", "cpu_system_s", 3.0),
        ];
        let rows = run_1
            .iter()
            .map(|c| (1, c))
            .chain(run_2.iter().map(|c| (2, c)));
        let times = ["cpu_user_s", "cpu_system_s", "cpu_idle_s", "cpu_iowait_s"];
        let shares = other_cpu_shares(rows, &times);
        assert_eq!(shares.len(), 1);
        assert!((shares[&1] - 0.2).abs() < 1e-12, "{shares:?}");
        let probes = RunProbes {
            other_cpu_share: shares,
            ..RunProbes::default()
        };
        assert_eq!(
            causes(1, &probes),
            ["other processes: 20% of the machine's CPU time (neither the server nor stampede)"]
        );
    }
}
