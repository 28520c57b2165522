//! `stampede report <results> --base T [--format md|csv|json] [-o FILE]`: every target of a lab
//! against the base, statements, work per transaction.

use super::compare::{check_targets, load_lab};
use super::{CommandResult, Failure};
use crate::cli::ReportArgs;
use crate::report::comparison::Metric;
use crate::report::html;
use crate::report::lab_report::{self, Inputs};
use crate::report::why::WhyInputs;

pub fn run(args: &ReportArgs) -> CommandResult {
    let metric = Metric::parse(&args.metric).map_err(Failure::Input)?;
    let render = match args.format.as_str() {
        "md" | "markdown" => lab_report::to_markdown,
        "csv" => lab_report::to_csv,
        "json" => lab_report::to_json,
        "html" => html::to_html,
        other => {
            return Err(Failure::Input(format!(
                "unknown format \"{other}\"; use html, md, csv or json"
            )))
        }
    };
    let mut lab = load_lab(&args.results, args.lab.as_deref())?;
    check_targets(&lab.runs, &lab.name, &[&args.base])?;
    let statements = lab.store.lab_statements(lab.id).map_err(Failure::Run)?;
    let counters = lab
        .store
        .lab_counters_per_txn(lab.id)
        .map_err(Failure::Run)?;
    let settings = lab
        .store
        .lab_target_settings(lab.id)
        .map_err(Failure::Run)?;
    let plans = lab.store.lab_plans(lab.id).map_err(Failure::Run)?;
    let waits = lab.store.lab_wait_events(lab.id).map_err(Failure::Run)?;
    let report = lab_report::build(&Inputs {
        lab: &lab.name,
        base: &args.base,
        metric,
        runs: &lab.runs,
        statements: &statements,
        counters: &counters,
        why: WhyInputs {
            settings: &settings,
            plans: &plans,
            waits: &waits,
        },
    });
    let text = render(&report);
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure::Run(format!("could not write {}: {e}", path.display()))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
