//! `stampede compare <results> <base> <other>`: per cell, the other target against the base,
//! with a confidence interval and a verdict, in the terminal.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CommandResult, Failure};
use crate::app::cli::CompareArgs;
use crate::family;
use crate::report::comparison::{self, CellComparison, Metric};
use crate::report::table;
use crate::report::warnings::{self, WarningInputs};
use crate::store::{Location, Store, StoredRun};

pub fn run(args: &CompareArgs) -> CommandResult {
    let metric =
        Metric::parse(&args.metric, &family::workload_metrics()).map_err(Failure::input)?;
    let LoadedLab {
        mut store,
        id,
        name: lab_name,
        runs,
    } = load_lab(&args.results, args.lab.as_deref())?;
    check_targets(&runs, &lab_name, &[&args.base, &args.other])?;
    let rows = comparison::compare_targets(&runs, &args.base, &args.other, metric);
    let mut warnings = warnings::warnings(&WarningInputs {
        runs: &runs,
        targets: &[&args.base, &args.other],
        metric,
        client_cores: store.client_cores(id)?,
        builds: &store.lab_builds(id)?,
    });
    warnings.extend(warnings::too_few_runs(&args.other, &args.base, &rows));
    for warning in warnings {
        println!("warning: {warning}");
    }
    if rows.is_empty() {
        return Err(Failure::input(format!(
            "targets \"{}\" and \"{}\" have no completed runs of the same cell in lab \"{lab_name}\"",
            args.base, args.other
        )));
    }
    println!(
        "lab \"{lab_name}\": {} vs base {} ({}; 95% bootstrap interval of the median ratio, Mann-Whitney U at α = 0.05)",
        args.other,
        args.base,
        metric.name()
    );
    print!("{}", table::render(&HEADER, &terminal_rows(&rows)));
    println!("{}", tally(&rows));
    Ok(())
}

pub const HEADER: [&str; 11] = [
    "workload", "script", "scale", "clients", "runs", "base", "other", "ratio", "95% CI", "p",
    "verdict",
];

pub fn terminal_rows(rows: &[CellComparison]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|c| {
            vec![
                c.cell.workload.clone(),
                c.cell.script.clone(),
                c.cell.scale.clone(),
                c.cell.clients.to_string(),
                format!("{}/{}", c.base_runs, c.other_runs),
                format!("{:.1}", c.base_median),
                format!("{:.1}", c.other_median),
                format!("{:.3}", c.ratio),
                match (c.ci_low, c.ci_high) {
                    (Some(low), Some(high)) => format!("{low:.3}–{high:.3}"),
                    _ => "-".into(),
                },
                format!("{:.3}", c.p_value),
                c.verdict.clone(),
            ]
        })
        .collect()
}

/// "1 faster, 2 no detectable difference".
pub fn tally(rows: &[CellComparison]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for row in rows {
        *counts.entry(row.verdict.as_str()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(verdict, n)| format!("{n} {verdict}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A lab chosen in an existing results database, with its runs.
pub struct LoadedLab {
    pub store: Store,
    pub id: i64,
    pub name: String,
    pub runs: Vec<StoredRun>,
}

pub fn load_lab(results: &str, lab: Option<&str>) -> Result<LoadedLab, Failure> {
    let location = Location::parse(results, Path::new("."));
    let mut store = Store::open_existing(&location)?;
    let (id, name) = choose_lab(&mut store, lab, &location)?;
    let runs = store.lab_runs(id)?;
    Ok(LoadedLab {
        store,
        id,
        name,
        runs,
    })
}

/// Unknown target names are refused with the lab's targets listed.
pub fn check_targets(runs: &[StoredRun], lab_name: &str, wanted: &[&str]) -> CommandResult {
    let mut known = comparison::targets(runs);
    known.sort();
    for name in wanted {
        if !known.iter().any(|k| k == name) {
            return Err(Failure::input(format!(
                "unknown target \"{name}\"; lab \"{lab_name}\" has: {}",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

fn choose_lab(
    store: &mut Store,
    wanted: Option<&str>,
    location: &Location,
) -> Result<(i64, String), Failure> {
    let labs = store.labs()?;
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
                Failure::input(format!(
                    "no lab \"{name}\" in {location}; it has: {}",
                    names()
                ))
            }),
        None if labs.len() == 1 => Ok(labs[0].clone()),
        None if labs.is_empty() => Err(Failure::input(format!("{location} holds no lab yet"))),
        None => Err(Failure::input(format!(
            "{location} holds several labs; choose one with --lab: {}",
            names()
        ))),
    }
}
