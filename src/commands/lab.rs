//! `stampede lab plan|run|resume`: spec in, plan or results out.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::lab_dbstress::DbstressLab;
use super::lab_pgbench::{Flavor, PgbenchLab, DEFAULT_RUN_OVERHEAD};
use super::lab_sysbench::{MicrobenchLab, SysbenchLab};
use super::lab_tpcc::TpccLab;
use super::{CommandResult, Failure};
use crate::analysis::{median, range};
use crate::cli::LabAction;
use crate::lab::executor::{Lab, LabEvent, LabOutcome};
use crate::lab::plan::Plan;
use crate::lab::spec::{self, LabSpec};
use crate::lab::workload::LabWorkload;
use crate::report::table;
use crate::store::{unix_now, Location, RunStatus, Store};

pub fn run(action: &LabAction) -> CommandResult {
    match action {
        LabAction::Plan { spec } => plan(spec),
        LabAction::Run { spec, keep_going } => execute(spec, false, *keep_going),
        LabAction::Resume { spec, keep_going } => execute(spec, true, *keep_going),
    }
}

/// The spec and one workload implementation per `[[workload]]`; a workload without `scripts`
/// gets its default variants.
fn load_spec(path: &Path) -> Result<(LabSpec, Vec<Box<dyn LabWorkload>>), Failure> {
    let mut spec = spec::load(path).map_err(|e| Failure::Input(e.to_string()))?;
    let workloads = workloads(&spec)?;
    for (workload, implementation) in spec.workloads.iter_mut().zip(&workloads) {
        if workload.scripts.is_empty() {
            workload.scripts = implementation.default_variants();
        }
    }
    Ok((spec, workloads))
}

fn workloads(spec: &LabSpec) -> Result<Vec<Box<dyn LabWorkload>>, Failure> {
    spec.workloads
        .iter()
        .map(|w| {
            let workload: Result<Box<dyn LabWorkload>, String> = match w.name.as_str() {
                "pgbench" => {
                    PgbenchLab::new(&w.name, Flavor::Plain, &w.options).map(|l| Box::new(l) as _)
                }
                "pgbench-extra-indexes" => {
                    PgbenchLab::new(&w.name, Flavor::ExtraIndexes, &w.options)
                        .map(|l| Box::new(l) as _)
                }
                "analytics" => PgbenchLab::new(&w.name, Flavor::Analytics, &w.options)
                    .map(|l| Box::new(l) as _),
                "sysbench" => SysbenchLab::new(&w.options).map(|l| Box::new(l) as _),
                "sysbench-microbench" => MicrobenchLab::new(&w.options).map(|l| Box::new(l) as _),
                "tpcc" => TpccLab::new(&w.options).map(|l| Box::new(l) as _),
                "dbstress" => DbstressLab::new(&w.options).map(|l| Box::new(l) as _),
                other => unreachable!("the spec admits only known workloads, not {other}"),
            };
            workload.map_err(Failure::Input)
        })
        .collect()
}

fn plan(path: &Path) -> CommandResult {
    // Workload options are checked before anything is planned.
    let (spec, workloads) = load_spec(path)?;
    // The order a resumed lab would use, when the results database already knows the lab.
    // A SQLite file that does not exist yet is not created by planning.
    let exists = match &spec.results {
        Location::Sqlite(path) => path.exists(),
        Location::Postgres(_) => true,
    };
    let mut stored = exists.then(|| Store::open(&spec.results).ok()).flatten();
    let known = stored
        .as_mut()
        .and_then(|s| s.find_lab(&spec.name).ok().flatten());
    let seed = known
        .map(|(_, seed)| seed)
        .or(spec.seed)
        .unwrap_or_else(|| unix_now().to_bits());
    let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
    let plan = Plan::new(&spec, seed, &sequential);
    let rows: Vec<Vec<String>> = plan
        .runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let cell = &plan.cells[run.cell];
            vec![
                (i + 1).to_string(),
                (run.repetition + 1).to_string(),
                spec.targets[cell.target].name.clone(),
                spec.workloads[cell.workload].name.clone(),
                cell.script.clone(),
                cell.scale.to_string(),
                cell.clients.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table::render(
            &["run", "rep", "target", "workload", "script", "scale", "clients"],
            &rows
        )
    );
    let overhead = known
        .and_then(|(lab, _)| stored.as_mut()?.mean_overhead_s(lab).ok().flatten())
        .map(Duration::from_secs_f64);
    let per_run = overhead.unwrap_or(DEFAULT_RUN_OVERHEAD);
    let total = plan.measuring_time(&spec) + per_run * plan.runs.len() as u32;
    println!(
        "{} cells × {} runs = {} runs; order seed {}; estimated {} ({} measuring, {:.1} s overhead per run {}), plus loading each dataset once",
        plan.cells.len(),
        spec.runs,
        plan.runs.len(),
        plan.seed,
        human(total),
        human(plan.measuring_time(&spec)),
        per_run.as_secs_f64(),
        if overhead.is_some() { "measured by earlier runs" } else { "assumed" },
    );
    Ok(())
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM end the current run early (recorded as interrupted) instead of killing
/// the process, so servers stop cleanly and `resume` has an exact record.
pub(super) fn watch_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(
            libc::SIGINT,
            request_stop as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            request_stop as *const () as libc::sighandler_t,
        );
    }
    let relay = stop.clone();
    std::thread::spawn(move || loop {
        if STOP_REQUESTED.load(Ordering::SeqCst) {
            relay.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    });
    stop
}

fn execute(path: &Path, resume: bool, keep_going: bool) -> CommandResult {
    let (spec, workloads) = load_spec(path)?;
    let stop = watch_signals();
    let mut lab =
        Lab::prepare(&spec, workloads, resume, keep_going, stop).map_err(Failure::Input)?;
    eprintln!(
        "lab \"{}\": {} runs, results in {}",
        spec.name,
        lab.plan().runs.len(),
        spec.results
    );
    let mut progress = Progress::new();
    let outcome = lab
        .run(&mut |event| progress.show(event))
        .map_err(Failure::Run)?;
    print!("{}", results_table(&spec, lab.plan(), &outcome));
    if outcome.interrupted {
        return Err(Failure::Run(format!(
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
        return Err(Failure::Run(format!(
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

/// The progress line on stderr: one line per run, ended by its result. On a terminal the
/// line also shows each measured second's tps as it comes.
struct Progress {
    terminal: bool,
    /// The current run's line, until its result is printed.
    open_line: Option<String>,
    /// Whether that line is the last thing on stderr (no note has been printed since).
    line_shown: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            // SAFETY: isatty only inspects the descriptor.
            terminal: unsafe { libc::isatty(2) } == 1,
            open_line: None,
            line_shown: false,
        }
    }

    fn show(&mut self, event: LabEvent<'_>) {
        match event {
            LabEvent::Note(note) => {
                if self.line_shown {
                    eprintln!();
                    self.line_shown = false;
                }
                eprintln!("{note}");
            }
            LabEvent::RunStarting {
                position,
                total,
                cell,
                repetition,
                eta,
            } => {
                let line = format!(
                    "run {position}/{total}: {} rep {}{}",
                    cell.key,
                    repetition + 1,
                    eta.map_or(String::new(), |d| format!(" (ETA {})", human(d)))
                );
                eprint!("{line} ... ");
                self.open_line = Some(line);
                self.line_shown = true;
            }
            LabEvent::Second { index, tps } => {
                if let (true, Some(line)) = (self.terminal, &self.open_line) {
                    eprint!("\r\x1b[K{line} ... {}s: {tps:.0} tps", index + 1);
                    self.line_shown = true;
                }
            }
            LabEvent::RunEnded { status, tps, error } => {
                let result = match (status, tps, error) {
                    (RunStatus::Completed, Some(tps), _) => format!("{tps:.0} tps"),
                    (RunStatus::Interrupted, _, _) => "interrupted".into(),
                    (_, _, error) => format!("failed: {}", error.unwrap_or("unknown error")),
                };
                match self.open_line.take() {
                    Some(line) if self.terminal => eprintln!("\r\x1b[K{line} ... {result}"),
                    Some(line) if !self.line_shown => eprintln!("{line} ... {result}"),
                    _ => eprintln!("{result}"),
                }
                self.line_shown = false;
            }
        }
    }
}

/// Per cell: runs, median tps, min–max, median p99.
fn results_table(spec: &LabSpec, plan: &Plan, outcome: &LabOutcome) -> String {
    let mut by_cell: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for run in &outcome.completed {
        let entry = by_cell.entry(run.cell_key.as_str()).or_default();
        entry.0.push(run.tps);
        entry.1.push(run.p99_ms);
    }
    let rows: Vec<Vec<String>> = plan
        .cells
        .iter()
        .filter_map(|cell| {
            let (tps, p99) = by_cell.get(cell.key.as_str())?;
            let (low, high) = range(tps)?;
            Some(vec![
                spec.targets[cell.target].name.clone(),
                cell.script.clone(),
                cell.scale.to_string(),
                cell.clients.to_string(),
                tps.len().to_string(),
                format!("{:.0}", median(tps)?),
                format!("{low:.0}–{high:.0}"),
                format!("{:.3}", median(p99)?),
            ])
        })
        .collect();
    table::render(
        &[
            "target",
            "script",
            "scale",
            "clients",
            "runs",
            "median tps",
            "min–max",
            "p99 ms",
        ],
        &rows,
    )
}
