//! `stampede pgbench` run mode as a pipeline: the options (`RunSpec`) → the scripts parsed
//! (`plan`) → the server prepared as pgbench prepares it (`setup`) → the driver's `RunPlan` and
//! its result → the report (`assemble`) → pgbench's summary, stampede's extra lines and the JSON
//! file.

use super::assemble::{build_report, DriverRun};
use super::plan;
use super::progress::ProgressPrinter;
use super::report::{summary_text, to_json, PgbenchReport};
use super::setup;
use super::spec::RunSpec;
use crate::driver::{self, DriverEvent};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;

pub fn run(spec: &RunSpec, target: &ConnSpec) -> CommandResult {
    let exit_on_abort = spec.exit_on_abort;
    let on_event = |event: DriverEvent<'_>| match event {
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
    let mut progress = ProgressPrinter::new(spec);
    let report = benchmark(spec, target, &mut |event| {
        progress.observe(&event);
        on_event(event);
    })?;
    print_report(spec, &report)
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

/// Everything but printing the summary: setup, the run, and the report's numbers.
pub fn benchmark(
    spec: &RunSpec,
    target: &ConnSpec,
    on_event: &mut dyn FnMut(DriverEvent<'_>),
) -> Result<PgbenchReport, Failure> {
    let parsed = plan::parse_scripts(spec)?;
    let runtime = control_runtime();
    let setup = runtime.block_on(setup::prepare(spec, target))?;
    let plan = plan::run_plan(spec, target, parsed, setup.scale);
    let run = DriverRun {
        scripts: plan.scripts.clone(),
        random_seed: plan.random_seed,
        result: driver::run(plan, on_event)?,
    };
    let server = runtime.block_on(setup.observe_after(spec, target, &run.result));
    Ok(build_report(spec, target, &setup, &run, server))
}
