//! `stampede compare <results> <base> <other>`: per cell, the other target against the base,
//! with a confidence interval and a verdict, in the terminal.

use std::collections::BTreeMap;
use std::path::Path;

use super::{calibrate, CommandResult, Failure};
use crate::app::cli::CompareArgs;
use crate::family;
use crate::report::claims::{self, Claim};
use crate::report::comparison::{self, CellComparison, Metric};
use crate::report::headline;
use crate::report::noise;
use crate::report::table;
use crate::report::warnings::{self, WarningInputs};
use stampede_store::{Location, Store, StoredRun};

pub fn run(args: &CompareArgs) -> CommandResult {
    let metric = Metric::parse(&args.metric, &family::workload_metrics())?;
    let LoadedLab {
        mut store,
        id,
        name: lab_name,
        runs,
        excluded,
    } = load_lab(&args.results, args.lab.as_deref(), &args.exclude_runs)?;
    check_targets(&runs, &lab_name, &[&args.base, &args.other])?;
    let claims: Vec<Claim> = stored_claims(&mut store, id, &lab_name)?
        .into_iter()
        .filter(|c| c.base == args.base && c.target == args.other)
        .collect();
    print!("{}", claims::text(&claims::check(&claims, &runs)));
    let rows = comparison::compare_targets(&runs, &args.base, &args.other, &metric);
    for sentence in headline::sentences(&args.other, &args.base, &metric.name(), &rows) {
        println!("{sentence}");
    }
    let mut warnings = warnings::warnings(&WarningInputs {
        runs: &runs,
        targets: &[&args.base, &args.other],
        metric: &metric,
        client_cores: store.client_cores(id)?,
        builds: &store.lab_builds(id)?,
    });
    warnings.extend(crate::report::defaults::changed_defaults(
        &store.lab_target_settings(id)?,
        &args.base,
        &[&args.base, &args.other],
    ));
    warnings.extend(warnings::settings_changed(
        &store.run_setting_changes(&[id])?,
        &[&args.base, &args.other],
    ));
    warnings.extend(warnings::too_few_runs(&args.other, &args.base, &rows));
    let counters = store.lab_counters_per_txn(id)?;
    let other_cpu = noise::other_cpu_shares(
        counters.iter().map(|(run, counter)| (run.id, counter)),
        &noise::OS_CPU_TIMES,
    );
    warnings.extend(noise::busy_machine(
        &runs,
        &[&args.base, &args.other],
        &other_cpu,
    ));
    warnings.extend(warnings::excluded_runs(&excluded));
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
        "lab \"{lab_name}\": {} vs base {} ({}; {})",
        args.other,
        args.base,
        metric.name(),
        method(&rows)
    );
    let stops = rows.iter().any(|c| c.stopped.is_some());
    let header: Vec<&str> = HEADER
        .iter()
        .copied()
        .chain(stops.then_some("stopped"))
        .collect();
    print!("{}", table::render(&header, &terminal_rows(&rows, stops)));
    println!("{}", tally(&rows));
    for note in crate::report::reading::notes(&rows) {
        println!("{note}");
    }
    Ok(())
}

/// The analyses the rows used, in words.
fn method(rows: &[CellComparison]) -> String {
    let paired = rows.iter().filter(|c| c.pairs.is_some()).count();
    let mut methods = Vec::new();
    if paired > 0 {
        methods.push("paired rounds: geometric mean of the rounds' ratios, 95% t interval");
    }
    if paired < rows.len() {
        methods.push(
            "unpaired runs: 95% bootstrap interval of the median ratio, Mann-Whitney U at α = 0.05",
        );
    }
    methods.join("; ")
}

pub const HEADER: [&str; 13] = [
    "workload",
    "script",
    "scale",
    "clients",
    "runs",
    "base",
    "other",
    "ratio",
    "median ratio",
    "95% CI",
    "±",
    "p",
    "verdict",
];

/// With `stops`, why an auto lab stopped the cell.
pub fn terminal_rows(rows: &[CellComparison], stops: bool) -> Vec<Vec<String>> {
    rows.iter()
        .map(|c| {
            let mut row = vec![
                c.cell.workload.clone(),
                c.cell.script.clone(),
                c.cell.scale.clone(),
                // A replay's clients are its captured sessions: none of the spec's.
                match c.cell.clients {
                    stampede_store::OWN_CLIENTS => "-".into(),
                    n => n.to_string(),
                },
                c.runs_text(),
                format!("{:.1}", c.base_median),
                format!("{:.1}", c.other_median),
                format!("{:.3}", c.ratio),
                c.median_round_ratio()
                    .map_or("-".into(), |m| format!("{m:.3}")),
                match (c.ci_low, c.ci_high) {
                    (Some(low), Some(high)) => format!("{low:.3}–{high:.3}"),
                    _ => "-".into(),
                },
                c.precision_text(),
                format!("{:.3}", c.p_value),
                c.verdict.clone(),
            ];
            if stops {
                row.push(c.stop_text().unwrap_or_else(|| "-".into()));
            }
            row
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

/// A lab chosen in an existing results database, with its runs: those the user excluded
/// apart.
pub struct LoadedLab {
    pub store: Store,
    pub id: i64,
    pub name: String,
    pub runs: Vec<StoredRun>,
    pub excluded: Vec<StoredRun>,
}

/// Opens the lab; every id in `exclude` must name one of its runs.
pub fn load_lab(results: &str, lab: Option<&str>, exclude: &[i64]) -> Result<LoadedLab, Failure> {
    let location = Location::parse(results, Path::new("."));
    let mut store = Store::open_existing(&location)?;
    let (id, name) = choose_lab(&mut store, lab, &location)?;
    let mut all = store.lab_runs(id)?;
    // A statement's time is a metric like any other (`--metric statement:…`, claims).
    store.attach_statements(id, &mut all)?;
    let (excluded, runs): (Vec<StoredRun>, Vec<StoredRun>) =
        all.into_iter().partition(|run| exclude.contains(&run.id));
    if let Some(unknown) = exclude
        .iter()
        .find(|wanted| !excluded.iter().any(|run| run.id == **wanted))
    {
        return Err(Failure::input(format!(
            "--exclude-run {unknown}: lab \"{name}\" has no run {unknown}"
        )));
    }
    Ok(LoadedLab {
        store,
        id,
        name,
        runs,
        excluded,
    })
}

/// The claims of the spec lab `id` ran.
pub fn stored_claims(store: &mut Store, id: i64, lab_name: &str) -> Result<Vec<Claim>, Failure> {
    let text = store.lab_spec(id)?;
    crate::lab::claims::stored(&text)
        .map_err(|why| Failure::input(format!("lab \"{lab_name}\": its spec's claims: {why}")))
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

pub fn choose_lab(
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
        // A lab's calibration (`lab calibrate`) is stored beside it: the lab is still the one.
        None if measured(&labs).len() == 1 => Ok(measured(&labs)[0].clone()),
        None if labs.is_empty() => Err(Failure::input(format!("{location} holds no lab yet"))),
        None => Err(Failure::input(format!(
            "{location} holds several labs; choose one with --lab: {}",
            names()
        ))),
    }
}

/// The newest lab that is not a calibration: what a live page shows unless told.
pub fn newest_lab(store: &mut Store, location: &Location) -> Result<(i64, String), Failure> {
    let labs = store.labs()?;
    measured(&labs)
        .last()
        .map(|lab| (*lab).clone())
        .ok_or_else(|| Failure::input(format!("{location} holds no lab yet")))
}

/// The labs that are not another lab's calibration.
fn measured(labs: &[(i64, String)]) -> Vec<&(i64, String)> {
    labs.iter()
        .filter(|(_, name)| !calibrate::is_calibration(name))
        .collect()
}
