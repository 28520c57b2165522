//! `stampede lab plan|run|resume`: spec in, plan or results out.

use super::export::{self, Chosen};
use super::lab_metrics::LabMetrics;
use super::live_page::{self, LivePage, Shown, PAGE_PATIENCE};
use crate::live::endpoint::MetricsArgs;
use std::path::{Path, PathBuf};

use std::time::Duration;

use super::calibrate;
use super::lab_results;
use super::lab_shards;
use super::lab_spec::load_spec;
use super::progress::Progress;
use super::{CommandResult, Failure};
use crate::app::cli::{FleetArgs, LabAction, PageArgs};
use crate::lab::executor::{Lab, LabEvent};
use crate::lab::plan::{Cell, Plan};
use crate::lab::spec::{AutoRuns, LabSpec};
use crate::lab::targets::SpecTargets;
use crate::report::export::Format;
use crate::report::table;
use stampede_base::duration::human;
use stampede_base::signals::watch_signals;
use stampede_store::{unix_now, Store};

pub fn run(action: &LabAction) -> CommandResult {
    match action {
        LabAction::Plan {
            spec,
            shards,
            dry_run,
        } => plan(spec, *shards, *dry_run),
        LabAction::Run {
            spec,
            keep_going,
            keep_data,
            keep_clusters,
            tags,
            exports,
            fleet,
            live,
            page,
        } => execute(
            spec,
            false,
            Keep {
                going: *keep_going,
                data: *keep_data,
                clusters: *keep_clusters,
            },
            Recording { tags, exports },
            fleet,
            live,
            page,
        ),
        LabAction::Resume {
            spec,
            keep_going,
            keep_data,
            keep_clusters,
            exports,
            fleet,
            live,
            page,
        } => execute(
            spec,
            true,
            Keep {
                going: *keep_going,
                data: *keep_data,
                clusters: *keep_clusters,
            },
            Recording { tags: &[], exports },
            fleet,
            live,
            page,
        ),
        LabAction::ShardRun {
            lab_id,
            shards,
            shard_list,
            results,
            keep_going,
            spec,
        } => lab_shards::shard_run(spec, *lab_id, *shards, shard_list, results, *keep_going),
        LabAction::Calibrate { spec, rounds } => calibrate::calibrate(spec, *rounds),
        LabAction::Clean { spec } => super::lab_clean::clean(spec),
        LabAction::PodRun { request } => crate::lab::pods::run_pod(request),
    }
}

/// `--tag key=value`, each key once.
fn parse_tags(given: &[String]) -> Result<Vec<(String, String)>, Failure> {
    let mut tags: Vec<(String, String)> = Vec::new();
    for tag in given {
        let (key, value) = tag
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| {
                Failure::input(format!("--tag {tag}: expected KEY=VALUE, e.g. night=42"))
            })?;
        if tags.iter().any(|(k, _)| k == key.trim()) {
            return Err(Failure::input(format!("--tag {}: given twice", key.trim())));
        }
        tags.push((key.trim().to_string(), value.trim().to_string()));
    }
    Ok(tags)
}

/// "targets a, b share one server (…)": url targets naming the same server, which the lab
/// measures one at a time.
fn shared_servers(spec: &LabSpec) -> Vec<String> {
    let mut by_server: Vec<(String, Vec<&str>)> = Vec::new();
    for target in spec.targets.iter().filter(|t| !t.server.is_managed()) {
        let server = target.server.spec_text();
        match by_server.iter_mut().find(|(s, _)| *s == server) {
            Some((_, names)) => names.push(&target.name),
            None => by_server.push((server, vec![&target.name])),
        }
    }
    by_server
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(server, names)| {
            format!(
                "targets {} share one server ({server}): their runs are interleaved, never concurrent",
                names.join(", ")
            )
        })
        .collect()
}

/// Seconds a lab run takes beyond its measuring, for estimates before any run was measured.
const DEFAULT_RUN_OVERHEAD: Duration = Duration::from_secs(2);

fn plan(path: &Path, shards: Option<usize>, dry_run: bool) -> CommandResult {
    // Workload options and scripts are checked before anything is planned, and each target's
    // version against what its archives publish (said as unchecked when they are out of reach),
    // so that a plan that passes runs.
    let (spec, workloads) = load_spec(path)?;
    let mut target_lines = Vec::new();
    for target in &spec.targets {
        target_lines.extend(SpecTargets.check_at_plan(target, dry_run)?);
    }
    // The order a resumed lab would use, when the results database holds an invocation that
    // has not ended (a next invocation draws its own). A SQLite file that does not exist yet is
    // not created by planning.
    let mut stored = spec
        .results
        .exists()
        .then(|| Store::open(&spec.results).ok())
        .flatten();
    let latest = stored
        .as_mut()
        .and_then(|s| s.latest_invocation(&spec.name).ok().flatten());
    let seed = latest
        .as_ref()
        .filter(|lab| !lab.ended)
        .map(|lab| lab.seed)
        .or(spec.seed)
        .unwrap_or_else(|| unix_now().to_bits());
    let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
    let plan = Plan::new(&spec, seed, &sequential);
    if let Some(shards) = shards {
        crate::lab::shards::check(&spec, plan.units.len(), shards)?;
    }
    for line in target_lines.into_iter().chain(shared_servers(&spec)) {
        eprintln!("{line}");
    }
    let rows: Vec<Vec<String>> = plan
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let cell = &plan.cells[run.cell];
            let mut row = vec![
                (i + 1).to_string(),
                (run.repetition + 1).to_string(),
                spec.targets[cell.target].name.clone(),
                spec.workloads[cell.workload].name.clone(),
                cell.script.clone(),
                cell.scale.to_string(),
                cell.clients.to_string(),
            ];
            row.extend(shards.map(|n| (run.unit % n).to_string()));
            row
        })
        .collect();
    let mut header = vec![
        "run", "rep", "target", "workload", "script", "scale", "clients",
    ];
    header.extend(shards.map(|_| "shard"));
    print!("{}", table::render(&header, &rows));
    let overhead = latest
        .and_then(|lab| stored.as_mut()?.mean_overhead_s(lab.id).ok().flatten())
        .map(Duration::from_secs_f64);
    let per_run = overhead.unwrap_or(DEFAULT_RUN_OVERHEAD);
    let spec_time = spec.warmup + spec.duration;
    let run_time = |cell: &Cell| workloads[cell.workload].run_time(&cell.variant, spec_time);
    let measuring = plan.measuring_time(&run_time);
    let total = measuring + per_run * plan.runs.len() as u32;
    let at_most = if spec.auto.is_some() { "at most " } else { "" };
    println!(
        "{} cells × {at_most}{} runs = {at_most}{} runs; order seed {}; estimated {at_most}{} ({} measuring, {:.1} s overhead per run {}), plus loading each dataset once",
        plan.cells.len(),
        spec.runs,
        plan.runs.len(),
        plan.seed,
        human(total),
        human(measuring),
        per_run.as_secs_f64(),
        if overhead.is_some() { "measured by earlier runs" } else { "assumed" },
    );
    if let Some(shards) = shards {
        println!("{}", shard_estimate(&plan, shards, per_run, &run_time));
    }
    if let Some(auto) = &spec.auto {
        println!("{}", auto_rule(&spec, auto));
        let calibrations = match stored.as_mut() {
            Some(store) => store.calibrations(&spec.name)?,
            None => Vec::new(),
        };
        println!(
            "{}",
            calibrate::auto_estimate(&spec, &plan, auto, &calibrations, per_run)
        );
    }
    Ok(())
}

/// `--keep-going` and `--keep-data`.
#[derive(Clone, Copy)]
struct Keep {
    going: bool,
    data: bool,
    clusters: bool,
}

/// How the invocation is named in its history (`--tag`) and what it writes when it ends
/// (`--export`).
struct Recording<'a> {
    tags: &'a [String],
    exports: &'a [String],
}

fn execute(
    path: &Path,
    resume: bool,
    keep: Keep,
    recording: Recording<'_>,
    fleet: &FleetArgs,
    live: &MetricsArgs,
    page: &PageArgs,
) -> CommandResult {
    let keep_going = keep.going;
    let tags = parse_tags(recording.tags)?;
    let exports = super::export::parse_exports(recording.exports)?;
    // The page's address and token are checked before anything runs.
    let page_access = page
        .serve
        .as_deref()
        .map(|address| live_page::access(address, &live.token, "--serve"))
        .transpose()?;
    let (mut spec, workloads) = load_spec(path)?;
    spec.tags = tags;
    if live.metrics_addr.is_some() && fleet.shards.is_some() {
        return Err(Failure::input(
            "--metrics-addr is not served for a sharded lab (--shards): its runs are in its \
             shards' pods; --serve shows each shard's progress from the results database",
        ));
    }
    let live = LabMetrics::start(live, &spec)?;
    if let Some(kube) = lab_shards::sharded(&spec, fleet, resume)? {
        return lab_shards::execute(
            path,
            &spec,
            workloads,
            kube,
            fleet.shards,
            keep_going,
            page_access,
        );
    }
    // Before any server starts: a workload with `pods` needs a cluster its kubeconfig names.
    if spec.workloads.iter().any(|w| w.pods.is_some()) {
        crate::pods::launch::check_cluster(&spec.kubernetes)
            .map_err(|failure| Failure::input(format!("[kubernetes]: {}", failure.message())))?;
    }
    let stop = watch_signals();
    let mut progress = Progress::on_stderr();
    let mut show = |event: LabEvent<'_>| {
        if let Some(live) = &live {
            live.show(&event);
        }
        progress.show(event)
    };
    let mut lab = Lab::prepare(
        &spec,
        workloads,
        &SpecTargets,
        resume,
        keep_going,
        stop,
        &mut show,
    )?;
    let live_page = page_access
        .map(|(address, access)| {
            LivePage::start(&spec.results, Shown::Id(lab.id()), address, access)
        })
        .transpose()?;
    lab.keep_data(keep.data);
    lab.keep_clusters(keep.clusters);
    if let Some(auto) = &spec.auto {
        eprintln!("{}", auto_rule(&spec, auto));
    }
    eprintln!(
        "lab \"{}\": {}{} runs, results in {}",
        spec.name,
        if spec.auto.is_some() { "at most " } else { "" },
        lab.plan().runs.len(),
        spec.results
    );
    let outcome = lab.run(&mut show);
    // Open pages get the lab's last state (its report, when it ended) before serving stops.
    if let Some(page) = live_page {
        page.finish(PAGE_PATIENCE);
    }
    let outcome = outcome.map_err(|e| lab_results::with_resume_hint(e, path))?;
    print!(
        "{}",
        lab_results::table(&spec, lab.plan(), &outcome.completed)
    );
    if !spec.claims.is_empty() {
        print!("{}", crate::report::claims::text(&lab.claims()?));
    }
    if !outcome.interrupted {
        write_exports(&spec, lab.id(), &exports)?;
    }
    if outcome.interrupted {
        return Err(Failure::interrupted(format!(
            "interrupted; completed runs are saved: continue with `stampede lab resume {}`",
            path.display()
        )));
    }
    if !outcome.skipped.is_empty() {
        for skipped in &outcome.skipped {
            eprintln!(
                "stampede: target \"{}\" was skipped ({} run(s) not run): {}",
                skipped.target, skipped.runs, skipped.reason
            );
        }
        return Err(Failure::run(format!(
            "not every target could be provisioned; fix the cause and continue with `stampede lab resume {}`",
            path.display()
        )));
    }
    if outcome.failed_runs > 0 {
        eprintln!(
            "stampede: {} run(s) failed; their errors are in {}",
            outcome.failed_runs, spec.results
        );
    }
    Ok(())
}

/// `--export F=PATH`: the invocation's results in each format, as `stampede export` writes
/// them (junit: its gate against the previous invocation on this machine).
fn write_exports(spec: &LabSpec, lab: i64, exports: &[(Format, PathBuf)]) -> CommandResult {
    for (format, path) in exports {
        let rendered = export::render(&export::Request {
            results: spec.results.clone(),
            format: *format,
            lab: Some(&spec.name),
            invocation: Chosen::Lab(lab),
            metrics: &[],
            against: "previous",
            threshold: "2%",
            control: None,
        })?;
        export::deliver(rendered, Some(path))?;
        eprintln!("{} written to {}", format.name(), path.display());
    }
    Ok(())
}

/// Each shard's runs and the slowest shard's time: the sharded lab's wall time, once its pods
/// run (provisioning and loading on every shard besides).
fn shard_estimate(
    plan: &Plan,
    shards: usize,
    per_run: Duration,
    run_time: &dyn Fn(&Cell) -> Duration,
) -> String {
    let mut runs = vec![0u32; shards];
    let mut time = vec![Duration::ZERO; shards];
    for run in &plan.runs {
        runs[run.unit % shards] += 1;
        time[run.unit % shards] += run_time(&plan.cells[run.cell]) + per_run;
    }
    let slowest = time.iter().copied().max().unwrap_or_default();
    let each: Vec<String> = runs.iter().map(u32::to_string).collect();
    format!(
        "--shards {shards}: runs per shard {}; estimated {} on the slowest shard, plus each shard's provisioning and loading",
        each.join(", "),
        human(slowest)
    )
}

/// What `runs = "auto"` will do, in one sentence.
fn auto_rule(spec: &LabSpec, auto: &AutoRuns) -> String {
    let budget = auto.budget.map_or(String::new(), |budget| {
        format!(", until {} of measuring", human(budget))
    });
    if spec.targets.len() == 1 {
        return format!(
            "runs = \"auto\" with one target: there is no ratio to decide, so every cell runs {} rounds{budget}",
            spec.runs
        );
    }
    format!(
        "runs = \"auto\": each cell runs round after round until every target's {} ratio to \"{}\" is known to ±{}% (95% interval, from round {} on){}, at most {} rounds{budget}",
        auto.metric.name(),
        spec.targets[0].name,
        // 0.99 * 100 is 98.99999999999999: print the percentage to a tenth, as given.
        (auto.precision * 1000.0).round() / 10.0,
        stampede_stats::stopping::MIN_ROUNDS,
        if spec.claims.is_empty() {
            ""
        } else {
            " or its claims are decided (a 99% interval)"
        },
        spec.runs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_key_value_pairs_each_key_once() {
        let given =
            |tags: &[&str]| parse_tags(&tags.iter().map(|t| t.to_string()).collect::<Vec<_>>());
        assert_eq!(
            given(&["commit=abc", "night = 42"]).unwrap(),
            [
                ("commit".to_string(), "abc".to_string()),
                ("night".to_string(), "42".to_string())
            ]
        );
        assert_eq!(
            given(&["empty="]).unwrap(),
            [("empty".to_string(), String::new())]
        );
        let message = |tags: &[&str]| given(tags).unwrap_err().message().to_string();
        assert_eq!(
            message(&["night"]),
            "--tag night: expected KEY=VALUE, e.g. night=42"
        );
        assert_eq!(
            message(&["=42"]),
            "--tag =42: expected KEY=VALUE, e.g. night=42"
        );
        assert_eq!(message(&["a=1", "a=2"]), "--tag a: given twice");
    }
}
