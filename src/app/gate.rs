//! `stampede gate <results> --lab-run latest|TAG --against previous|TAG --threshold 2%`:
//! Markdown on standard output, JUnit XML on request, and the exit code a CI job acts on:
//! 0 pass, 3 a regression decided beyond the threshold, 4 undecided.

use std::path::Path;

use super::export::{deliver, Chosen, Rendered};
use super::judge::{judge, GateRequest, GateResults};
use super::{CommandResult, Failure};
use crate::app::cli::GateArgs;
use crate::report::export::Format;
use crate::report::gate::{self, Outcome};
use crate::report::write_file;
use stampede_base::error::Kind;
use stampede_store::Location;

pub fn run(args: &GateArgs) -> CommandResult {
    let exports = super::export::parse_exports(&args.exports)?;
    let gate = judge(&GateRequest {
        results: GateResults::Given(&args.results),
        lab: args.lab.as_deref(),
        lab_run: &args.lab_run,
        against: &args.against,
        threshold: &args.threshold,
        metric: &args.metric,
        control: args.control.as_deref(),
    })?;
    print!("{}", gate::to_markdown(&gate));
    if let Some(path) = &args.junit {
        write_file(path, &gate::to_junit(&gate))?;
    }
    for (format, path) in &exports {
        let rendered = match format {
            Format::Junit => Rendered::Text(gate::to_junit(&gate)),
            _ => super::export::render(&super::export::Request {
                results: Location::parse(&args.results, Path::new(".")),
                format: *format,
                lab: Some(&gate.history),
                invocation: Chosen::Given(&gate.latest.name),
                // github-action-benchmark's file holds one direction: the gate's metric.
                metrics: match format {
                    Format::GithubActionBenchmark => std::slice::from_ref(&args.metric),
                    _ => &[],
                },
                against: &args.against,
                threshold: &args.threshold,
                control: args.control.as_deref(),
            })?,
        };
        deliver(rendered, Some(path))?;
    }
    match gate.outcome() {
        Outcome::Pass => Ok(()),
        Outcome::Regression => Err(Failure::new(Kind::Regression, gate.summary())),
        Outcome::Undecided(_) => Err(Failure::new(Kind::Undecided, gate.summary())),
    }
}
