//! `stampede pgbench` run mode as a pipeline: the options (`RunSpec`) → the scripts parsed
//! (`plan`) → the server prepared as pgbench prepares it (`setup`) → the driver's `RunPlan` and
//! its result → the report (`assemble`) → pgbench's summary, stampede's extra lines and the JSON
//! file. The same pipeline runs a spread run's pods (`--pods`), with their `Place`.

use super::assemble::{build_report, DriverRun};
use super::plan;
use super::progress::ProgressPrinter;
use super::report::{summary_text, to_json, PgbenchReport};
use super::setup;
use super::spec::RunSpec;
use crate::driver::DriverEvent;
use crate::live::endpoint::RunFeed;
use crate::pods::place::Place;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;

/// The run, on this host or as one pod of a spread run (`--pods`: pod 0 prints the report of
/// the merged run).
pub fn run(spec: &RunSpec, target: &ConnSpec, feed: Option<RunFeed>) -> CommandResult {
    let mut progress = ProgressPrinter::new(spec);
    let place = Place::of_this_process(Box::new(move |interval| {
        progress.observe(&DriverEvent::Interval(interval))
    }))?
    .fed(feed);
    // pgbench's --exit-on-abort ends this process; a pod's abort ends the spread run instead.
    let exit_on_abort = spec.exit_on_abort && !place.is_pod();
    let mut on_event = |event: DriverEvent<'_>| match event {
        DriverEvent::ClientAborted(message, thread) => {
            eprintln!("stampede: error: {message}");
            if exit_on_abort {
                // pgbench's --exit-on-abort: no summary, the run's status is 2.
                eprintln!("stampede: error: Run was aborted due to an error in thread {thread}");
                std::process::exit(2);
            }
        }
        DriverEvent::ClientNotice(message) => eprintln!("stampede: {message}"),
        DriverEvent::Interval(_) | DriverEvent::WarmupEnded | DriverEvent::MeasuredEnded => {}
    };
    match benchmark(spec, target, place, &mut on_event)? {
        Some(report) => print_report(spec, &report),
        None => Ok(()),
    }
}

/// pgbench's summary on standard output, the `--json` file, and the run's status.
pub fn print_report(spec: &RunSpec, report: &PgbenchReport) -> CommandResult {
    print!("{}", summary_text(report));
    if let Some(path) = &spec.json_path {
        crate::report::write_file(path, &to_json(report))?;
    }
    if report.aborted_clients > 0 {
        return Err(Failure::incomplete());
    }
    Ok(())
}

/// Everything but printing the summary: setup, the run, and the report's numbers — on the
/// leader (this host, or pod 0 of a spread run); the other pods get None.
pub fn benchmark(
    spec: &RunSpec,
    target: &ConnSpec,
    mut place: Place,
    on_event: &mut dyn FnMut(DriverEvent<'_>),
) -> Result<Option<PgbenchReport>, Failure> {
    let runtime = control_runtime();
    // The leader prepares the server (vacuum); a spread run's other pods read what their
    // scripts need and close their session; once every pod has joined, the leader takes the
    // counters' first reading again, after theirs.
    let prepared = plan::parse_scripts(spec).and_then(|parsed| {
        let setup = if place.leads() {
            runtime.block_on(setup::prepare(spec, target))
        } else {
            runtime.block_on(setup::prepare_share(spec, target))
        };
        Ok((parsed, setup?))
    });
    let (parsed, setup) = place.join(prepared, |(_, setup)| {
        runtime.block_on(setup.restart_window(target))
    })?;
    let plan = plan::run_plan(spec, target, parsed, setup.scale);
    let (scripts, random_seed) = (plan.scripts.clone(), plan.random_seed);
    let Some(ran) = place.run(plan, on_event)? else {
        return Ok(None);
    };
    let run = DriverRun {
        scripts,
        random_seed,
        result: ran.result,
    };
    let server = runtime.block_on(setup.observe_after(spec, target, &run.result));
    let mut report = build_report(spec, target, &setup, &run, server);
    report.spread = ran.spread;
    Ok(Some(report))
}

/// `benchmark` on this host alone (the lab's runs, the quickstart).
pub fn benchmark_here(
    spec: &RunSpec,
    target: &ConnSpec,
    on_event: &mut dyn FnMut(DriverEvent<'_>),
) -> Result<PgbenchReport, Failure> {
    benchmark(spec, target, Place::here(Box::new(|_| {})), on_event)?
        .ok_or_else(|| Failure::run("a run on this host always has its report"))
}
