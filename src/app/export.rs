//! `stampede export <results> --format F [--lab NAME] [--invocation TAG] [--metric M]… [-o FILE]`:
//! an invocation's results (a history's, for Otava) in a format other tools read, and
//! `--export F=PATH` for the lab and `gate`, which write them when they end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::history::{history_of, open_invocations_at, select};
use super::judge::{judge, GateRequest, GateResults};
use super::{CommandResult, Failure};
use crate::app::cli::ExportArgs;
use crate::family;
use crate::report::comparison::{targets, Metric};
use crate::report::export::hammerdb::{self, TpccJob};
use crate::report::export::{self, bmf, github, otava, Format, InvocationExport};
use crate::report::gate::{to_junit, Gate, GateCell, Outcome};
use crate::report::history::{cell_key, label};
use crate::report::write_file;
use stampede_base::error::Kind;
use stampede_store::{Invocation, Location, RunStatus, Store, StoredRun};

pub fn run(args: &ExportArgs) -> CommandResult {
    let format = Format::parse(&args.format)?;
    let rendered = render(&Request {
        results: Location::parse(&args.results, Path::new(".")),
        format,
        lab: args.lab.as_deref(),
        invocation: Chosen::Given(&args.invocation),
        metrics: &args.metrics,
        against: &args.against,
        threshold: &args.threshold,
        control: args.control.as_deref(),
    })?;
    deliver(rendered, args.output.as_deref())
}

/// An export's text, or HammerDB's job reports: one per TPROC-C cell, each with the path
/// HammerDB's results repository keeps it at.
pub enum Rendered {
    Text(String),
    Jobs(Vec<(PathBuf, String)>),
}

/// Writes `rendered` to `output` (standard output without one); job reports go under
/// `output` at their repository paths when it is a directory, and one alone is a text.
/// Everything is checked before the first write.
pub fn deliver(rendered: Rendered, output: Option<&Path>) -> CommandResult {
    let text = match rendered {
        Rendered::Text(text) => text,
        Rendered::Jobs(jobs) => match output.filter(|dir| dir.is_dir()) {
            Some(dir) => return write_jobs(dir, &jobs),
            None if jobs.len() == 1 => jobs.into_iter().next().expect("one job").1,
            None => {
                return Err(Failure::input(format!(
                "--format hammerdb-job-report-v1: {} TPROC-C cells, a job report each: give -o an \
                     existing directory to write them at the results repository's paths \
                     (results/tproc-c/<database>/<YYYY>/<MM>/<jobid>.json)",
                jobs.len()
            )))
            }
        },
    };
    match output {
        Some(path) => write_file(path, &text),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn write_jobs(dir: &Path, jobs: &[(PathBuf, String)]) -> CommandResult {
    for (path, text) in jobs {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Failure::run(format!("could not create {}: {e}", parent.display())))?;
        }
        write_file(&path, text)?;
        eprintln!("{}", path.display());
    }
    Ok(())
}

/// What to export, from the command line or a lab's or gate's `--export`.
pub struct Request<'a> {
    pub results: Location,
    pub format: Format,
    pub lab: Option<&'a str>,
    pub invocation: Chosen<'a>,
    /// `--metric` names; empty for every metric the runs have (tps alone for
    /// github-action-benchmark, whose file holds one direction).
    pub metrics: &'a [String],
    /// JUnit's gate: the reference, the threshold, the control target.
    pub against: &'a str,
    pub threshold: &'a str,
    pub control: Option<&'a str>,
}

/// Which invocation: as the user named it, or the lab's own.
#[derive(Clone, Copy)]
pub enum Chosen<'a> {
    /// `latest`, a tag or an invocation's name.
    Given(&'a str),
    /// The invocation a lab just ran.
    Lab(i64),
}

/// The export's text; nothing is written here, so a refused request leaves no file.
pub fn render(request: &Request<'_>) -> Result<Rendered, Failure> {
    let declared = family::workload_metrics();
    let mut asked = Vec::new();
    for name in request.metrics {
        asked.push(Metric::parse(name, &declared)?);
    }
    if request.format == Format::Junit {
        return junit(request, &asked).map(Rendered::Text);
    }
    if request.format == Format::HammerdbJobReport {
        if !asked.is_empty() {
            return Err(Failure::input(
                "--format hammerdb-job-report-v1 takes no --metric: its fields are HammerDB's"
                    .to_string(),
            ));
        }
        let Selected {
            mut store, chosen, ..
        } = selected(request, request.invocation)?;
        return hammerdb_jobs(&mut store, &chosen).map(Rendered::Jobs);
    }
    if request.format == Format::GithubActionBenchmark && asked.is_empty() {
        asked.push(Metric::Tps);
    }
    one_direction(request.format, &asked)?;
    let Selected {
        mut store,
        history,
        members,
        chosen,
    } = selected(request, request.invocation)?;
    let chosen = &chosen;
    let exported: Vec<&Invocation> = match request.format {
        // A history: the invocations on the chosen one's machine, up to it.
        Format::Otava => members
            .iter()
            .filter(|i| i.machine == chosen.machine && i.id <= chosen.id)
            .collect(),
        _ => vec![chosen],
    };
    let ids: Vec<i64> = exported.iter().map(|i| i.id).collect();
    let mut runs = store.runs_of_labs(&ids)?;
    if asked.iter().any(Metric::needs_statements) {
        for id in &ids {
            store.attach_statements(*id, runs.iter_mut().map(|(_, run)| run))?;
        }
    }
    let metrics = if asked.is_empty() {
        let all: Vec<StoredRun> = runs.iter().map(|(_, run)| run.clone()).collect();
        let workload: Vec<Metric> = declared.iter().map(|m| Metric::Workload(m)).collect();
        export::default_metrics(&all, &workload)
    } else {
        asked
    };
    let mut history_exports = Vec::new();
    for invocation in exported {
        let own: Vec<StoredRun> = runs
            .iter()
            .filter(|(lab, _)| *lab == invocation.id)
            .map(|(_, run)| run.clone())
            .collect();
        let base = base_target(&mut store, invocation.id, &own)?;
        history_exports.push(export::invocation(
            &history,
            label(invocation),
            &own,
            &metrics,
            base.as_deref(),
        ));
    }
    Ok(Rendered::Text(match request.format {
        Format::Otava => otava::render(&history_exports),
        Format::Bmf => bmf::render(last(&history_exports)),
        Format::GithubActionBenchmark => github::render(last(&history_exports)),
        Format::Junit | Format::HammerdbJobReport => {
            unreachable!("rendered above from their own sources")
        }
    }))
}

/// Each TPROC-C cell's median run (by NOPM) of the invocation as a HammerDB job report.
fn hammerdb_jobs(
    store: &mut Store,
    invocation: &Invocation,
) -> Result<Vec<(PathBuf, String)>, Failure> {
    let runs = store.runs_of_labs(&[invocation.id])?;
    let mut cells: BTreeMap<String, Vec<&StoredRun>> = BTreeMap::new();
    for (_, run) in &runs {
        let tproc_c = run.workload_metric("nopm").is_some() && run.workload_metric("tpm").is_some();
        if run.status == RunStatus::Completed && tproc_c {
            cells.entry(cell_key(run)).or_default().push(run);
        }
    }
    if cells.is_empty() {
        return Err(Failure::input(format!(
            "--format hammerdb-job-report-v1: \"{}\" has no completed TPROC-C run (a tpcc \
             workload's, with its NOPM)",
            invocation.name
        )));
    }
    let versions: BTreeMap<String, Option<String>> = store
        .lab_target_settings(invocation.id)?
        .into_iter()
        .map(|t| (t.target, t.server_version))
        .collect();
    let warmup =
        crate::lab::spec::stored_warmup(&store.lab_spec(invocation.id)?).unwrap_or_default();
    let mut jobs = Vec::new();
    for (cell, mut runs) in cells {
        let nopm = |run: &StoredRun| run.workload_metric("nopm").unwrap_or(0.0);
        runs.sort_by(|a, b| nopm(a).total_cmp(&nopm(b)));
        let run = runs[(runs.len() - 1) / 2];
        let started = store
            .run_started_unix_s(run.id)?
            .unwrap_or(invocation.created_unix_s);
        let duration_s = run.duration_s.unwrap_or(0.0);
        let job = TpccJob {
            jobid: hammerdb::jobid(started, invocation.id, run.id),
            started_unix_s: started,
            version: versions.get(&run.target).cloned().flatten(),
            target: run.target.clone(),
            cell,
            warehouses: run.scale.clone(),
            virtual_users: run.clients,
            rampup_s: warmup.as_secs_f64(),
            duration_s,
            nopm: run.workload_metric("nopm").unwrap_or(0.0),
            tpm: run.workload_metric("tpm").unwrap_or(0.0),
            transactions: run.tps.unwrap_or(0.0) * duration_s,
            p50_ms: run.p50_ms,
            p95_ms: run.p95_ms,
            p99_ms: run.p99_ms,
            series: store.run_series(run.id)?,
            machine: run
                .machine
                .as_ref()
                .map(|m| (m.key.clone(), m.kernel.clone())),
            stampede_version: env!("CARGO_PKG_VERSION"),
        };
        jobs.push((job.canonical_path(), hammerdb::render(&job)));
    }
    Ok(jobs)
}

fn last(exports: &[InvocationExport]) -> &InvocationExport {
    exports.last().expect("the chosen invocation is exported")
}

/// The lab's first target when it ran several (whose ratios to it are exported); the first
/// that ran for results stored without their targets.
fn base_target(store: &mut Store, lab: i64, runs: &[StoredRun]) -> Result<Option<String>, Failure> {
    let ran = targets(runs);
    if ran.len() < 2 {
        return Ok(None);
    }
    let first = store.lab_target_names(lab)?.into_iter().next();
    Ok(first.or_else(|| ran.first().cloned()))
}

/// github-action-benchmark reads a file as bigger-is-better or smaller-is-better: metrics of
/// both kinds go to two files.
fn one_direction(format: Format, metrics: &[Metric]) -> Result<(), Failure> {
    if format != Format::GithubActionBenchmark {
        return Ok(());
    }
    let tools: BTreeSet<&str> = metrics
        .iter()
        .map(|m| github::tool(m.direction()))
        .collect();
    if tools.len() < 2 {
        return Ok(());
    }
    let of = |tool: &str| -> Vec<String> {
        metrics
            .iter()
            .filter(|m| github::tool(m.direction()) == tool)
            .map(Metric::name)
            .collect()
    };
    Err(Failure::input(format!(
        "--format github-action-benchmark: a file holds one direction (the action's tool), and \
         {} are bigger-is-better (customBiggerIsBetter) while {} are smaller-is-better \
         (customSmallerIsBetter); export them into two files",
        of("customBiggerIsBetter").join(", "),
        of("customSmallerIsBetter").join(", ")
    )))
}

/// `gate`'s verdicts for the chosen invocation against its reference.
fn junit(request: &Request<'_>, metrics: &[Metric]) -> Result<String, Failure> {
    if metrics.len() > 1 {
        return Err(Failure::input(
            "--format junit: a gate decides on one --metric".to_string(),
        ));
    }
    let metric = metrics.first().map_or("tps".to_string(), Metric::name);
    let lab_run = match request.invocation {
        Chosen::Given(wanted) => wanted.to_string(),
        Chosen::Lab(id) => invocation_name(request, id)?,
    };
    let gate = judge(&GateRequest {
        results: GateResults::At(&request.results),
        lab: request.lab,
        lab_run: &lab_run,
        against: request.against,
        threshold: request.threshold,
        metric: &metric,
        control: request.control,
    });
    match gate {
        Ok(gate) => Ok(to_junit(&gate)),
        // The first invocation on its machine: each of its cells a skipped case that says so.
        Err(failure) if failure.kind() == Kind::Undecided => {
            first_invocation(request, &lab_run, &metric, failure.message())
        }
        Err(failure) => Err(failure),
    }
}

/// JUnit for an invocation with nothing to gate against: its cells, each skipped with `why`.
fn first_invocation(
    request: &Request<'_>,
    lab_run: &str,
    metric: &str,
    why: &str,
) -> Result<String, Failure> {
    let Selected {
        mut store,
        history,
        chosen,
        ..
    } = selected(request, Chosen::Given(lab_run))?;
    let mut cells: Vec<String> = store
        .runs_of_labs(&[chosen.id])?
        .iter()
        .map(|(_, run)| cell_key(run))
        .collect();
    cells.sort();
    cells.dedup();
    let gate = Gate {
        history,
        latest: label(&chosen),
        reference: label(&chosen),
        threshold: 0.0,
        metric: Metric::parse(metric, &family::workload_metrics())?,
        cells: cells
            .into_iter()
            .map(|cell| GateCell {
                cell,
                reference_median: None,
                latest_median: None,
                comparison: None,
                outcome: Outcome::Undecided(why.to_string()),
            })
            .collect(),
        unmatched: Vec::new(),
        server_changes: Vec::new(),
    };
    Ok(to_junit(&gate))
}

/// The name of the invocation stored as `id`.
fn invocation_name(request: &Request<'_>, id: i64) -> Result<String, Failure> {
    Ok(selected(request, Chosen::Lab(id))?.chosen.name)
}

/// The results opened, the history (`--lab` or the latest's), its invocations and the one
/// chosen.
struct Selected {
    store: Store,
    history: String,
    members: Vec<Invocation>,
    chosen: Invocation,
}

fn selected(request: &Request<'_>, invocation: Chosen<'_>) -> Result<Selected, Failure> {
    let (store, invocations) = open_invocations_at(&request.results)?;
    let history = history_of(&invocations, request.lab, &request.results.to_string())?;
    let members: Vec<Invocation> = invocations
        .into_iter()
        .filter(|i| i.history == history)
        .collect();
    let chosen = match invocation {
        Chosen::Given(wanted) => {
            let refs: Vec<&Invocation> = members.iter().collect();
            select(&refs, wanted, "--invocation", &history)?.clone()
        }
        Chosen::Lab(id) => members
            .iter()
            .find(|i| i.id == id)
            .cloned()
            .ok_or_else(|| Failure::run(format!("the lab's invocation {id} is not stored")))?,
    };
    Ok(Selected {
        store,
        history,
        members,
        chosen,
    })
}

/// `--export F=PATH` options: each format and the file it goes to, refused before anything
/// runs.
pub fn parse_exports(given: &[String]) -> Result<Vec<(Format, std::path::PathBuf)>, Failure> {
    given
        .iter()
        .map(|text| {
            let (format, path) = text
                .split_once('=')
                .filter(|(format, path)| !format.is_empty() && !path.is_empty())
                .ok_or_else(|| {
                    Failure::input(format!(
                        "--export {text}: expected FORMAT=PATH, such as bmf=results.json"
                    ))
                })?;
            Ok((Format::parse(format)?, std::path::PathBuf::from(path)))
        })
        .collect()
}
