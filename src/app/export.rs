//! `stampede export <results> --format F [--lab NAME] [--invocation TAG] [--metric M]… [-o FILE]`:
//! an invocation's results (a history's, for Otava) in a format other tools read, and
//! `--export F=PATH` for the lab and `gate`, which write them when they end.

use std::collections::BTreeSet;

use std::path::Path;

use super::history::{history_of, open_invocations_at, select};
use super::judge::{judge, GateRequest, GateResults};
use super::{CommandResult, Failure};
use crate::app::cli::ExportArgs;
use crate::family;
use crate::report::comparison::{targets, Metric};
use crate::report::export::{self, bmf, github, otava, Format, InvocationExport};
use crate::report::gate::{to_junit, Gate, GateCell, Outcome};
use crate::report::history::{cell_key, label};
use crate::report::write_file;
use stampede_base::error::Kind;
use stampede_store::{Invocation, Location, Store, StoredRun};

pub fn run(args: &ExportArgs) -> CommandResult {
    let format = Format::parse(&args.format)?;
    let text = render(&Request {
        results: Location::parse(&args.results, Path::new(".")),
        format,
        lab: args.lab.as_deref(),
        invocation: Chosen::Given(&args.invocation),
        metrics: &args.metrics,
        against: &args.against,
        threshold: &args.threshold,
        control: args.control.as_deref(),
    })?;
    match &args.output {
        Some(path) => write_file(path, &text),
        None => {
            print!("{text}");
            Ok(())
        }
    }
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
pub fn render(request: &Request<'_>) -> Result<String, Failure> {
    let declared = family::workload_metrics();
    let mut asked = Vec::new();
    for name in request.metrics {
        asked.push(Metric::parse(name, &declared)?);
    }
    if request.format == Format::Junit {
        return junit(request, &asked);
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
    Ok(match request.format {
        Format::Otava => otava::render(&history_exports),
        Format::Bmf => bmf::render(last(&history_exports)),
        Format::GithubActionBenchmark => github::render(last(&history_exports)),
        Format::Junit => unreachable!("JUnit is the gate's, rendered above"),
    })
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
