//! What the reader must know before trusting a comparison, said at the top of every report:
//! failed runs, noisy cells, too few runs for a verdict, a driver that may have been the
//! bottleneck, and binaries from different builds.

use std::collections::BTreeMap;

use super::comparison::{by_cell, cell_of, CellComparison, CellKey, Metric};
use crate::analysis::coefficient_of_variation;
use crate::server::provision::ZONKY_BINARIES;
use crate::store::{RunStatus, StoredRun};

/// Cells whose spread across repetitions exceeds this coefficient of variation are flagged.
pub const NOISY_COV: f64 = 0.05;
/// Above this share of the client machine's CPUs, the driver may be what limits throughput.
pub const DRIVER_CPU_LIMIT: f64 = 0.70;

pub struct WarningInputs<'a> {
    pub runs: &'a [StoredRun],
    pub targets: &'a [&'a str],
    pub metric: Metric,
    /// CPUs of the machine the driver ran on (unknown for results of older versions).
    pub client_cores: Option<i64>,
    /// (target, where its binaries came from).
    pub binary_sources: &'a [(String, String)],
}

pub fn warnings(inputs: &WarningInputs<'_>) -> Vec<String> {
    let mut out = mixed_builds(inputs);
    out.extend(failed_runs(inputs));
    out.extend(noisy_cells(inputs));
    out.extend(busy_driver(inputs));
    out
}

/// The share of the client machine's CPUs the driver used during a run's measured window.
pub fn client_cpu_share(run: &StoredRun, client_cores: Option<i64>) -> Option<f64> {
    let cores = client_cores.filter(|c| *c > 0)? as f64;
    Some(run.client_cpu_us_per_txn? * run.tps? / 1e6 / cores)
}

/// Cells of a comparison with too few runs for any verdict.
pub fn too_few_runs(target: &str, base: &str, cells: &[CellComparison]) -> Option<String> {
    let short: Vec<&CellComparison> = cells.iter().filter(|c| c.runs_needed.is_some()).collect();
    let needed = short.iter().filter_map(|c| c.runs_needed).max()?;
    Some(format!(
        "{} cell(s) of \"{target}\" vs \"{base}\" have too few runs for a verdict: need ≥ {needed} per side",
        short.len()
    ))
}

fn failed_runs(inputs: &WarningInputs<'_>) -> Vec<String> {
    inputs
        .targets
        .iter()
        .filter_map(|target| {
            let failed = inputs
                .runs
                .iter()
                .filter(|r| r.target == *target && r.status == RunStatus::Failed)
                .count();
            (failed > 0).then(|| format!("{failed} run(s) of \"{target}\" failed and are left out"))
        })
        .collect()
}

fn noisy_cells(inputs: &WarningInputs<'_>) -> Vec<String> {
    inputs
        .targets
        .iter()
        .filter_map(|target| {
            let noisy = by_cell(inputs.runs, target, inputs.metric)
                .values()
                .filter(|values| coefficient_of_variation(values).is_some_and(|c| c > NOISY_COV))
                .count();
            (noisy > 0).then(|| {
                format!(
                    "{noisy} cell(s) of \"{target}\" vary by more than {:.0}% across runs (coefficient of variation)",
                    NOISY_COV * 100.0
                )
            })
        })
        .collect()
}

fn busy_driver(inputs: &WarningInputs<'_>) -> Vec<String> {
    let mut busiest: BTreeMap<(&str, CellKey), f64> = BTreeMap::new();
    for run in inputs
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed && inputs.targets.contains(&r.target.as_str()))
    {
        if let Some(share) = client_cpu_share(run, inputs.client_cores) {
            let entry = busiest
                .entry((run.target.as_str(), cell_of(run)))
                .or_insert(0.0);
            *entry = entry.max(share);
        }
    }
    let over: Vec<(&(&str, CellKey), &f64)> = busiest
        .iter()
        .filter(|(_, share)| **share > DRIVER_CPU_LIMIT)
        .collect();
    let Some(((target, cell), share)) = over
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(key, share)| (*key, **share))
    else {
        return Vec::new();
    };
    vec![format!(
        "the driver used more than {:.0}% of the client's {} cores in {} cell(s), up to {:.0}% (\"{target}\" {} {} scale {} × {} clients): the client may be the bottleneck",
        DRIVER_CPU_LIMIT * 100.0,
        inputs.client_cores.unwrap_or(0),
        over.len(),
        share * 100.0,
        cell.workload,
        cell.script,
        cell.scale,
        cell.clients
    )]
}

fn mixed_builds(inputs: &WarningInputs<'_>) -> Vec<String> {
    let source_of = |target: &str| {
        inputs
            .binary_sources
            .iter()
            .find(|(name, _)| name == target)
            .map(|(_, source)| source.as_str())
    };
    let zonky = inputs
        .targets
        .iter()
        .find(|t| source_of(t) == Some(ZONKY_BINARIES));
    let other = inputs
        .targets
        .iter()
        .find(|t| source_of(t).is_some_and(|s| s != ZONKY_BINARIES));
    match (zonky, other) {
        (Some(zonky), Some(other)) => vec![format!(
            "\"{zonky}\" runs zonky's binaries from Maven Central and \"{other}\" runs {}: the builds differ in compiler flags and configure options, so part of a difference may be the build's, not the version's",
            source_of(other).unwrap_or_default()
        )],
        _ => Vec::new(),
    }
}
