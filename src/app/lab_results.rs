//! The table `lab run` prints at its end: per cell its runs, and beside every target's cell
//! the decided comparison with the base's cell of the same workload, script, scale and clients.

use std::collections::BTreeMap;
use std::path::Path;

use crate::lab::plan::Plan;
use crate::lab::spec::LabSpec;
use crate::report::comparison::verdict_text;
use crate::report::table as text_table;
use stampede_base::error::Failure;
use stampede_stats::paired::compare_paired;
use stampede_stats::verdict::Direction;
use stampede_stats::{median, range};
use stampede_store::RunSummary;

const HEADER: [&str; 10] = [
    "target",
    "workload",
    "script",
    "scale",
    "clients",
    "runs",
    "median tps",
    "min–max",
    "p99 ms",
    "tps vs base",
];

/// Per cell: runs, median tps, min–max, median p99, and the paired comparison with the base.
pub fn table(spec: &LabSpec, plan: &Plan, completed: &[RunSummary]) -> String {
    let mut tps_by_round: BTreeMap<&str, BTreeMap<u32, f64>> = BTreeMap::new();
    let mut p99_by_cell: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in completed {
        if let Some(tps) = run.tps {
            tps_by_round
                .entry(run.cell_key.as_str())
                .or_default()
                .insert(run.repetition, tps);
        }
        p99_by_cell
            .entry(run.cell_key.as_str())
            .or_default()
            .extend(run.p99_ms);
    }
    let base_of = base_cells(plan);
    let rows: Vec<Vec<String>> = plan
        .cells
        .iter()
        .enumerate()
        .filter_map(|(index, cell)| {
            let rounds = tps_by_round.get(cell.key.as_str())?;
            let tps: Vec<f64> = rounds.values().copied().collect();
            let (low, high) = range(&tps)?;
            let p99 = p99_by_cell.get(cell.key.as_str()).and_then(|v| median(v));
            let against = match base_of.get(&index) {
                None => "base".to_string(),
                Some(&base) => tps_by_round
                    .get(plan.cells[base].key.as_str())
                    .map_or("-".into(), |base_rounds| against_base(base_rounds, rounds)),
            };
            Some(vec![
                spec.targets[cell.target].name.clone(),
                spec.workloads[cell.workload].name.clone(),
                cell.script.clone(),
                cell.scale.to_string(),
                cell.clients.to_string(),
                tps.len().to_string(),
                format!("{:.0}", median(&tps)?),
                format!("{low:.0}–{high:.0}"),
                p99.map_or("-".into(), |p| format!("{p:.3}")),
                against,
            ])
        })
        .collect();
    text_table::render(&HEADER, &rows)
}

/// Each cell of a target other than the base, with the base's cell of its group.
fn base_cells(plan: &Plan) -> BTreeMap<usize, usize> {
    plan.units
        .iter()
        .flatten()
        .flat_map(|group| group[1..].iter().map(|&other| (other, group[0])))
        .collect()
}

/// "1.203× faster (±1.5%)": the rounds' paired ratio and its verdict.
fn against_base(base: &BTreeMap<u32, f64>, other: &BTreeMap<u32, f64>) -> String {
    let pairs: Vec<(f64, f64)> = base
        .iter()
        .filter_map(|(round, b)| Some((*b, *other.get(round)?)))
        .collect();
    let Some(comparison) = compare_paired(&pairs, Direction::HigherIsBetter) else {
        return "-".into();
    };
    let precision = comparison
        .precision()
        .map_or(String::new(), |p| format!(" (±{:.1}%)", p * 100.0));
    format!(
        "{:.3}× {}{precision}",
        comparison.ratio,
        verdict_text(&comparison.verdict)
    )
}
/// A results write that failed (a full disk, a lost connection) leaves every recorded run intact
/// (each is one transaction): say how to go on.
pub fn with_resume_hint(failure: Failure, path: &Path) -> Failure {
    if !failure.message().starts_with("results database:") {
        return failure;
    }
    failure.map_message(|text| {
        format!(
            "{text}; the runs recorded before it are kept: continue with `stampede lab resume {}` once the results can be written",
            path.display()
        )
    })
}
