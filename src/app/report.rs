//! `stampede report <results> --base T [--format md|csv|json] [-o FILE]`: every target of a lab
//! against the base, statements, work per transaction.

use std::collections::HashMap;

use super::compare::{check_targets, load_lab, LoadedLab};
use super::{CommandResult, Failure};
use crate::app::cli::ReportArgs;
use crate::family;
use crate::probe::postgres::cluster_stats::CHECKPOINT_SERIES;
use crate::report::comparison::{cell_of, Metric};
use crate::report::lab_report::{self, Inputs};
use crate::report::noise::{self, RunProbes};
use crate::report::series::{self, RunSeries};
use crate::report::why::WhyInputs;
use crate::report::{html, text};
use stampede_store::{CounterRow, RunStatus, StoredRun};

/// The format an output file's extension names; Markdown for standard output and other names.
fn format_of(output: Option<&std::path::Path>) -> String {
    let extension = output
        .and_then(|path| path.extension())
        .map(|ext| ext.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("html" | "htm") => "html",
        Some("csv") => "csv",
        Some("json") => "json",
        _ => "md",
    }
    .to_string()
}

pub fn run(args: &ReportArgs) -> CommandResult {
    let metric = Metric::parse(&args.metric, &family::workload_metrics())?;
    let format = args
        .format
        .clone()
        .unwrap_or_else(|| format_of(args.output.as_deref()));
    let render = match format.as_str() {
        "md" | "markdown" => text::to_markdown,
        "csv" => text::to_csv,
        "json" => text::to_json,
        "html" => html::to_html,
        other => {
            return Err(Failure::input(format!(
                "unknown format \"{other}\"; use html, md, csv or json"
            )))
        }
    };
    let mut lab = load_lab(&args.results, args.lab.as_deref(), &args.exclude_runs)?;
    let report = build(&mut lab, args.base.as_deref(), metric, &args.series_runs)?;
    let text = render(&report);
    match &args.output {
        Some(path) => crate::report::write_file(path, &text),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The lab's report against `base` (default: its first target), as `report` renders it in
/// every format and the live page shows it when the lab ends.
pub fn build(
    lab: &mut LoadedLab,
    base: Option<&str>,
    metric: Metric,
    series_runs: &[i64],
) -> Result<lab_report::LabReport, Failure> {
    let base = match base {
        Some(base) => base.to_string(),
        None => lab
            .store
            .lab_target_names(lab.id)?
            .into_iter()
            .next()
            .ok_or_else(|| Failure::input(format!("lab \"{}\" has no targets", lab.name)))?,
    };
    check_targets(&lab.runs, &lab.name, &[&base])?;
    let statements = lab.store.lab_statements(lab.id)?;
    let counters = lab.store.lab_counters_per_txn(lab.id)?;
    let settings = lab.store.lab_target_settings(lab.id)?;
    let plans = lab.store.lab_plans(lab.id)?;
    let waits = lab.store.lab_wait_events(lab.id)?;
    let client_cores = lab.store.client_cores(lab.id)?;
    let builds = lab.store.lab_builds(lab.id)?;
    let setting_changes = lab.store.run_setting_changes(&[lab.id])?;
    let series = load_series(lab, &base, series_runs)?;
    let probes = load_probes(lab, &counters)?;
    let claims = super::compare::stored_claims(&mut lab.store, lab.id, &lab.name)?;
    Ok(lab_report::build(Inputs {
        lab: &lab.name,
        base: &base,
        metric,
        runs: &lab.runs,
        statements: &statements,
        counters: &counters,
        why: WhyInputs {
            settings: &settings,
            plans: &plans,
            waits: &waits,
        },
        client_cores,
        builds: &builds,
        setting_changes: &setting_changes,
        series,
        excluded: &lab.excluded,
        probes: &probes,
        claims: &claims,
        declared: &family::workload_metrics(),
    }))
}

/// What the probes saw in every run: stalls, checkpoints, steal time, other processes' CPU.
fn load_probes(
    lab: &mut LoadedLab,
    counters: &[(StoredRun, CounterRow)],
) -> Result<RunProbes, Failure> {
    let (source, [completed, _]) = CHECKPOINT_SERIES;
    let by_run = |rows: Vec<(i64, u64)>| {
        let mut out: HashMap<i64, Vec<u64>> = HashMap::new();
        for (run, second) in rows {
            out.entry(run).or_default().push(second);
        }
        out
    };
    let cpu =
        |store: &mut stampede_store::Store, name: &str| -> Result<HashMap<i64, f64>, Failure> {
            Ok(store
                .lab_counter_series_sums(lab.id, "os", name)?
                .into_iter()
                .collect())
        };
    let steal = cpu(&mut lab.store, "cpu_steal_s")?;
    let mut total: HashMap<i64, f64> = HashMap::new();
    for name in noise::OS_CPU_TIMES {
        for (run, seconds) in cpu(&mut lab.store, name)? {
            *total.entry(run).or_default() += seconds;
        }
    }
    Ok(RunProbes {
        stall_seconds: by_run(lab.store.lab_stall_seconds(lab.id)?),
        series_cv: crate::report::steps::series_cv(&lab.store.lab_series(lab.id)?),
        checkpoint_seconds: by_run(lab.store.lab_counter_seconds(lab.id, source, completed)?),
        steal_share: steal
            .into_iter()
            .filter_map(|(run, steal)| {
                let total = total.get(&run).copied().filter(|t| *t > 0.0)?;
                Some((run, steal / total))
            })
            .collect(),
        other_cpu_share: noise::other_cpu_shares(
            counters.iter().map(|(run, counter)| (run.id, counter)),
            &noise::OS_CPU_TIMES,
        ),
    })
}

/// The runs to chart second by second: the ones asked for, or by default each target's median
/// run of the base's busiest cell.
fn load_series(lab: &mut LoadedLab, base: &str, wanted: &[i64]) -> Result<Vec<RunSeries>, Failure> {
    let (source, [completed, buffers]) = CHECKPOINT_SERIES;
    let chosen: Vec<StoredRun> = if wanted.is_empty() {
        let checkpoints: HashMap<i64, f64> = lab
            .store
            .lab_counter_series_sums(lab.id, source, completed)?
            .into_iter()
            .collect();
        series::default_runs(&lab.runs, base, &checkpoints)
            .into_iter()
            .cloned()
            .collect()
    } else {
        wanted
            .iter()
            .map(|id| {
                lab.runs
                    .iter()
                    .find(|r| r.id == *id && r.status == RunStatus::Completed)
                    .cloned()
                    .ok_or_else(|| {
                        Failure::input(format!("lab \"{}\" has no completed run {id}", lab.name))
                    })
            })
            .collect::<Result<_, _>>()?
    };
    let loaded: Vec<RunSeries> = chosen
        .into_iter()
        .map(|run| {
            let store = &mut lab.store;
            let tps = store.run_series(run.id)?;
            let completed = store.run_counter_series(run.id, source, completed)?;
            let buffers = store.run_counter_series(run.id, source, buffers)?;
            Ok(RunSeries {
                target: run.target.clone(),
                cell: cell_of(&run),
                run_id: run.id,
                repetition: run.repetition,
                tps,
                checkpoints: series::checkpoint_marks(&completed, &buffers),
            })
        })
        .collect::<Result<_, Failure>>()?;
    // Runs stored without a series (interrupted early, older results) have nothing to chart.
    Ok(loaded.into_iter().filter(|s| !s.tps.is_empty()).collect())
}
