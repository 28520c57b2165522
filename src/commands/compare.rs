//! `stampede compare <results> <base> <other>`: per cell, the other target against the base,
//! with a confidence interval and a verdict, in the terminal.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CommandResult, Failure};
use crate::analysis::coefficient_of_variation;
use crate::analysis::verdict::{self, Comparison, Direction, Verdict};
use crate::cli::CompareArgs;
use crate::report::table;
use crate::store::{Location, Store, StoredRun};

/// Runs whose spread across repetitions exceeds this are flagged.
const NOISY_COV: f64 = 0.05;

/// What a cell is, apart from its target.
type CellKey = (String, String, String, i64);

pub fn run(args: &CompareArgs) -> CommandResult {
    let location = Location::parse(&args.results, Path::new("."));
    let mut store = Store::open_existing(&location).map_err(Failure::Input)?;
    let (lab_id, lab_name) = choose_lab(&mut store, args.lab.as_deref(), &location)?;
    let runs = store.lab_runs(lab_id).map_err(Failure::Run)?;
    let targets: Vec<&str> = distinct(runs.iter().map(|r| r.target.as_str()));
    for name in [&args.base, &args.other] {
        if !targets.contains(&name.as_str()) {
            return Err(Failure::Input(format!(
                "unknown target \"{name}\"; lab \"{lab_name}\" has: {}",
                targets.join(", ")
            )));
        }
    }
    let direction = match args.metric.as_str() {
        "tps" => Direction::HigherIsBetter,
        "p99" => Direction::LowerIsBetter,
        other => {
            return Err(Failure::Input(format!(
                "unknown metric \"{other}\"; use tps or p99"
            )))
        }
    };
    let metric = |run: &StoredRun| match direction {
        Direction::HigherIsBetter => run.tps,
        Direction::LowerIsBetter => run.p99_ms,
    };
    let base = by_cell(&runs, &args.base, metric);
    let other = by_cell(&runs, &args.other, metric);
    for warning in warnings(&runs, &args.base, &args.other, &base, &other) {
        println!("warning: {warning}");
    }
    let mut rows = Vec::new();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for (cell, base_values) in &base {
        let Some(other_values) = other.get(cell) else {
            continue;
        };
        let Some(comparison) = verdict::compare(base_values, other_values, direction) else {
            continue;
        };
        *tally.entry(verdict_text(&comparison.verdict)).or_default() += 1;
        rows.push(row(
            cell,
            base_values.len(),
            other_values.len(),
            &comparison,
        ));
    }
    if rows.is_empty() {
        return Err(Failure::Input(format!(
            "targets \"{}\" and \"{}\" have no completed runs of the same cell in lab \"{lab_name}\"",
            args.base, args.other
        )));
    }
    println!(
        "lab \"{lab_name}\": {} vs base {} ({}; 95% bootstrap interval of the median ratio, Mann-Whitney U at α = 0.05)",
        args.other, args.base, args.metric
    );
    print!(
        "{}",
        table::render(
            &[
                "workload", "script", "scale", "clients", "runs", "base", "other", "ratio",
                "95% CI", "p", "verdict",
            ],
            &rows
        )
    );
    let summary: Vec<String> = tally.iter().map(|(v, n)| format!("{n} {v}")).collect();
    println!("{}", summary.join(", "));
    Ok(())
}

fn choose_lab(
    store: &mut Store,
    wanted: Option<&str>,
    location: &Location,
) -> Result<(i64, String), Failure> {
    let labs = store.labs().map_err(Failure::Run)?;
    let names = || {
        labs.iter()
            .map(|(_, n)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(name) => labs
            .iter()
            .find(|(_, n)| n == name)
            .cloned()
            .ok_or_else(|| {
                Failure::Input(format!(
                    "no lab \"{name}\" in {location}; it has: {}",
                    names()
                ))
            }),
        None if labs.len() == 1 => Ok(labs[0].clone()),
        None if labs.is_empty() => Err(Failure::Input(format!("{location} holds no lab yet"))),
        None => Err(Failure::Input(format!(
            "{location} holds several labs; choose one with --lab: {}",
            names()
        ))),
    }
}

fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut all: Vec<&str> = names.collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The target's completed runs' values per cell.
fn by_cell(
    runs: &[StoredRun],
    target: &str,
    metric: impl Fn(&StoredRun) -> Option<f64>,
) -> BTreeMap<CellKey, Vec<f64>> {
    let mut cells: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|r| r.target == target && r.status == "completed")
    {
        if let Some(value) = metric(run) {
            let key = (
                run.workload.clone(),
                run.script.clone(),
                run.scale.clone(),
                run.clients,
            );
            cells.entry(key).or_default().push(value);
        }
    }
    cells
}

fn warnings(
    runs: &[StoredRun],
    base: &str,
    other: &str,
    base_cells: &BTreeMap<CellKey, Vec<f64>>,
    other_cells: &BTreeMap<CellKey, Vec<f64>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for target in [base, other] {
        let failed = runs
            .iter()
            .filter(|r| r.target == target && r.status == "failed")
            .count();
        if failed > 0 {
            out.push(format!(
                "{failed} run(s) of \"{target}\" failed and are left out"
            ));
        }
    }
    for (target, cells) in [(base, base_cells), (other, other_cells)] {
        let noisy = cells
            .values()
            .filter(|values| coefficient_of_variation(values).is_some_and(|c| c > NOISY_COV))
            .count();
        if noisy > 0 {
            out.push(format!(
                "{noisy} cell(s) of \"{target}\" vary by more than {:.0}% across runs (coefficient of variation)",
                NOISY_COV * 100.0
            ));
        }
    }
    out
}

fn verdict_text(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Better => "faster".into(),
        Verdict::Worse => "slower".into(),
        Verdict::NoDifference => "no detectable difference".into(),
        Verdict::Inconclusive => "inconclusive".into(),
        Verdict::NeedRuns(n) => format!("need ≥ {n} runs"),
    }
}

fn row(cell: &CellKey, base_runs: usize, other_runs: usize, c: &Comparison) -> Vec<String> {
    let (workload, script, scale, clients) = cell;
    vec![
        workload.clone(),
        script.clone(),
        scale.clone(),
        clients.to_string(),
        format!("{base_runs}/{other_runs}"),
        format!("{:.1}", c.base_median),
        format!("{:.1}", c.other_median),
        format!("{:.3}", c.ratio),
        c.interval
            .map_or("-".into(), |(low, high)| format!("{low:.3}–{high:.3}")),
        format!("{:.3}", c.p_value),
        verdict_text(&c.verdict),
    ]
}
