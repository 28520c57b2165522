//! `stampede lab calibrate <spec>`: an A/A lab of the spec's base target against an identical
//! twin (a second cluster from the same binaries and settings), every cell in paired rounds.
//! Whatever differs between the two is noise: per cell it gives the spread the pairing leaves,
//! the smallest change a lab of the spec's runs can detect, and the rounds an auto lab needs
//! for its precision. Stored under the spec's name, so `lab plan` can estimate an auto lab.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::lab_spec::load_spec;
use super::progress::Progress;
use super::{CommandResult, Failure};
use crate::lab::executor::Lab;
use crate::lab::plan::Plan;
use crate::lab::spec::{AutoRuns, LabSpec, DEFAULT_PRECISION};
use crate::lab::targets::SpecTargets;
use crate::report::table;
use stampede_base::duration::human;
use stampede_base::signals::watch_signals;
use stampede_stats::calibration::{detectable_change, rounds_for_precision};
use stampede_stats::coefficient_of_variation;
use stampede_stats::paired::compare_paired;
use stampede_stats::verdict::Direction;
use stampede_store::{unix_now, Calibration, RunStatus, Store, StoredRun};

pub fn calibrate(path: &Path, rounds: u32) -> CommandResult {
    let (spec, workloads) = load_spec(path)?;
    let twin = twin_spec(&spec, rounds);
    // Opened only when it exists: a spec whose targets cannot be provisioned leaves no file.
    let resume =
        twin.results.exists() && Store::open(&twin.results)?.find_lab(&twin.name)?.is_some();
    eprintln!(
        "calibrating lab \"{}\": \"{}\" against an identical twin \"{}\", {rounds} paired rounds of each of its cells{}",
        spec.name,
        spec.targets[0].name,
        twin.targets[1].name,
        if resume { " (continuing the stored calibration)" } else { "" }
    );
    let mut progress = Progress::on_stderr();
    let mut lab = Lab::prepare(
        &twin,
        workloads,
        &SpecTargets,
        resume,
        false,
        watch_signals(),
        &mut |event| progress.show(event),
    )?;
    let outcome = lab.run(&mut |event| progress.show(event))?;
    if outcome.interrupted {
        return Err(Failure::interrupted(format!(
            "interrupted; completed runs are saved: continue with `stampede lab calibrate {}`",
            path.display()
        )));
    }
    let mut store = Store::open(&twin.results)?;
    let (lab_id, _) = store
        .find_lab(&twin.name)?
        .expect("the calibration lab was just run");
    let runs = store.lab_runs(lab_id)?;
    let cells = calibrations(&runs, &twin);
    if cells.is_empty() {
        return Err(Failure::run(format!(
            "no cell has two paired rounds to calibrate from; the runs' errors are in {}",
            spec.results
        )));
    }
    store.record_calibration(&spec.name, &cells)?;
    print!("{}", calibration_table(&spec, &cells));
    println!(
        "stored in {} for lab \"{}\": `stampede lab plan` estimates its auto rounds from it",
        spec.results, spec.name
    );
    Ok(())
}

/// The spec with its base target twice (the second renamed), fixed rounds, its own clusters
/// and its own lab name in the same results database.
fn twin_spec(spec: &LabSpec, rounds: u32) -> LabSpec {
    let base = spec.targets[0].clone();
    let mut twin = base.clone();
    twin.name = format!("{}-twin", base.name);
    LabSpec {
        name: calibration_lab_name(&spec.name),
        runs: rounds,
        auto: None,
        server_root: spec.server_root.join("calibration"),
        targets: vec![base, twin],
        ..spec.clone()
    }
}

const CALIBRATION_SUFFIX: &str = " (calibration)";

pub fn calibration_lab_name(name: &str) -> String {
    format!("{name}{CALIBRATION_SUFFIX}")
}

pub fn is_calibration(lab_name: &str) -> bool {
    lab_name.ends_with(CALIBRATION_SUFFIX)
}

/// Per cell: the sd of the rounds' log ratios twin / base, over rounds where both completed.
fn calibrations(runs: &[StoredRun], twin: &LabSpec) -> Vec<Calibration> {
    type Cell = (String, String, String, i64);
    let mut rounds: BTreeMap<Cell, BTreeMap<u32, [Option<f64>; 2]>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let (Some(tps), Some(side)) = (
            run.tps,
            twin.targets.iter().position(|t| t.name == run.target),
        ) else {
            continue;
        };
        let cell = (
            run.workload.clone(),
            run.script.clone(),
            run.scale.clone(),
            run.clients,
        );
        rounds
            .entry(cell)
            .or_default()
            .entry(run.repetition)
            .or_default()[side] = Some(tps);
    }
    let measured_unix_s = unix_now();
    rounds
        .into_iter()
        .filter_map(|((workload, script, scale, clients), by_round)| {
            let pairs: Vec<(f64, f64)> = by_round
                .values()
                .filter_map(|[base, other]| Some(((*base)?, (*other)?)))
                .collect();
            let paired = compare_paired(&pairs, Direction::HigherIsBetter)?;
            let base_values: Vec<f64> = pairs.iter().map(|(b, _)| *b).collect();
            Some(Calibration {
                workload,
                script,
                scale,
                clients,
                duration_s: twin.duration.as_secs_f64(),
                rounds: pairs.len() as u32,
                log_ratio_sd: paired.log_ratio_sd?,
                run_cv: coefficient_of_variation(&base_values),
                measured_unix_s,
            })
        })
        .collect()
}

/// Per cell: the noise, the change a lab of the spec's runs detects, the rounds for the
/// precision.
fn calibration_table(spec: &LabSpec, cells: &[Calibration]) -> String {
    let runs = spec.runs as usize;
    let precision = spec.auto.map_or(DEFAULT_PRECISION, |auto| auto.precision);
    let cap = if spec.auto.is_some() {
        runs
    } else {
        crate::lab::spec::DEFAULT_MAX_RUNS as usize
    };
    let percent = |value: f64| format!("{:.1}%", value * 100.0);
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            vec![
                c.workload.clone(),
                c.script.clone(),
                c.scale.clone(),
                c.clients.to_string(),
                c.rounds.to_string(),
                percent(c.log_ratio_sd.exp() - 1.0),
                c.run_cv.map_or("-".into(), percent),
                detectable_change(c.log_ratio_sd, runs).map_or("-".into(), percent),
                rounds_for_precision(c.log_ratio_sd, precision, cap)
                    .map_or(format!("> {cap}"), |n| n.to_string()),
            ]
        })
        .collect();
    let detectable = format!("detectable with {runs} runs");
    let needed = format!("rounds for ±{}", percent(precision));
    table::render(
        &[
            "workload",
            "script",
            "scale",
            "clients",
            "rounds",
            "paired sd",
            "runs CV",
            &detectable,
            &needed,
        ],
        &rows,
    )
}

/// `lab plan` of an auto spec: the rounds each unit is expected to take from the stored
/// calibration (a unit runs until its noisiest group is precise, or to the cap), and the time.
pub fn auto_estimate(
    spec: &LabSpec,
    plan: &Plan,
    auto: &AutoRuns,
    calibrations: &[Calibration],
    per_run_overhead: Duration,
) -> String {
    let cap = spec.runs as usize;
    if calibrations.is_empty() {
        return format!(
            "no calibration stored for lab \"{}\": run `stampede lab calibrate` for an estimate of the rounds; until then every cell may take {cap}",
            spec.name
        );
    }
    let noise_of = |cell: &crate::lab::plan::Cell| {
        calibrations.iter().find(|c| {
            c.workload == spec.workloads[cell.workload].name
                && c.script == cell.script
                && c.scale == cell.scale.to_string()
                && c.clients == cell.clients as i64
        })
    };
    let (mut runs, mut precise, mut capped, mut unknown) = (0usize, 0usize, 0usize, 0usize);
    for unit in &plan.units {
        let mut unit_rounds = stampede_stats::stopping::MIN_ROUNDS.min(cap);
        for group in unit {
            let expected = noise_of(&plan.cells[group[0]])
                .map(|c| rounds_for_precision(c.log_ratio_sd, auto.precision, cap));
            match expected {
                Some(Some(_)) => precise += 1,
                Some(None) => capped += 1,
                None => unknown += 1,
            }
            unit_rounds = unit_rounds.max(match expected {
                Some(Some(rounds)) => rounds,
                _ => cap,
            });
        }
        runs += unit_rounds * unit.iter().map(Vec::len).sum::<usize>();
    }
    let per_run = spec.duration + spec.warmup + per_run_overhead;
    let unknown_text = if unknown > 0 {
        format!(", {unknown} without a calibration (taken as the cap)")
    } else {
        String::new()
    };
    format!(
        "with the stored calibration ({} s runs): about {runs} of at most {} runs, {}: {precise} cell(s) expected to reach ±{:.1}%, {capped} expected to stop at the cap{unknown_text}",
        calibrations[0].duration_s,
        plan.runs.len(),
        human(per_run * runs as u32),
        auto.precision * 100.0,
    )
}
