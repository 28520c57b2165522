//! The gate's judgement (`gate`, `export --format junit`): one invocation of a history against
//! its reference on the same machine, cell by cell, at a threshold.

use std::path::Path;

use super::history::{control_target, history_of, open_invocations_at, select};
use super::Failure;
use crate::family;
use crate::report::comparison::Metric;
use crate::report::gate::{self, Gate};
use crate::report::history::label;
use stampede_base::error::Kind;
use stampede_store::{Invocation, Location};

/// What a gate judges: the invocation, its reference, the threshold and the metric, as
/// `gate`'s options give them (and `export --format junit`'s).
pub struct GateRequest<'a> {
    pub results: GateResults<'a>,
    pub lab: Option<&'a str>,
    pub lab_run: &'a str,
    pub against: &'a str,
    pub threshold: &'a str,
    pub metric: &'a str,
    pub control: Option<&'a str>,
}

/// The results database, as the user wrote it or already located.
pub enum GateResults<'a> {
    Given(&'a str),
    At(&'a Location),
}

/// The gate's cells decided: `lab_run` against `against` in one history on one machine.
pub fn judge(request: &GateRequest<'_>) -> Result<Gate, Failure> {
    let metric = Metric::parse(request.metric, &family::workload_metrics())?;
    let threshold = parse_threshold(request.threshold)?;
    let (location, written) = match request.results {
        GateResults::Given(text) => (Location::parse(text, Path::new(".")), text.to_string()),
        GateResults::At(location) => (location.clone(), location.to_string()),
    };
    let (mut store, invocations) = open_invocations_at(&location)?;
    let history = history_of(&invocations, request.lab, &written)?;
    let members: Vec<&Invocation> = invocations
        .iter()
        .filter(|i| i.history == history)
        .collect();
    let latest = select(&members, request.lab_run, "--lab-run", &history)?;
    let reference = reference(&members, latest, request.against, &history)?;
    let mut runs = store.runs_of_labs(&[latest.id, reference.id])?;
    if metric.needs_statements() {
        for id in [latest.id, reference.id] {
            store.attach_statements(id, runs.iter_mut().map(|(_, run)| run))?;
        }
    }
    let control = control_target(&mut store, latest.id, request.control, &runs)?;
    let metric = match &control {
        Some(control) => crate::report::control::attach(&mut runs, control, &metric),
        None => metric,
    };
    let of = |lab: i64| -> Vec<_> {
        runs.iter()
            .filter(|(id, _)| *id == lab)
            .map(|(_, run)| run.clone())
            .collect()
    };
    let (cells, unmatched) = gate::decide(&of(latest.id), &of(reference.id), &metric, threshold);
    let server_changes = {
        let (latest_runs, reference_runs) = (of(latest.id), of(reference.id));
        crate::report::history::server_changes(
            &reference_runs.iter().collect::<Vec<_>>(),
            &latest_runs.iter().collect::<Vec<_>>(),
        )
    };
    Ok(Gate {
        history,
        latest: label(latest),
        reference: label(reference),
        threshold,
        metric,
        cells,
        unmatched,
        server_changes,
    })
}

/// `previous` (the invocation before `latest` on its machine) or a tag, which must be of
/// `latest`'s machine and another invocation.
fn reference<'a>(
    members: &[&'a Invocation],
    latest: &Invocation,
    against: &str,
    history: &str,
) -> Result<&'a Invocation, Failure> {
    // A series never mixes machines: the reference is looked for on the latest's.
    let reference = if against == "previous" {
        members
            .iter()
            .copied()
            .rev()
            .find(|i| i.id < latest.id && i.machine == latest.machine)
            .ok_or_else(|| {
                Failure::new(
                    Kind::Undecided,
                    format!(
                        "\"{}\" is the first invocation of \"{history}\" on its machine: nothing to gate against",
                        latest.name
                    ),
                )
            })?
    } else {
        let found = select(members, against, "--against", history)?;
        if found.machine != latest.machine {
            return Err(Failure::input(format!(
                "--against {against}: \"{}\" ran on another machine ({}) than \"{}\" ({}); a gate compares one machine's invocations",
                found.name,
                found.machine.as_deref().unwrap_or("unrecorded"),
                latest.name,
                latest.machine.as_deref().unwrap_or("unrecorded")
            )));
        }
        found
    };
    if reference.id == latest.id {
        return Err(Failure::input(format!(
            "--against {against}: that is the invocation being gated (\"{}\")",
            latest.name
        )));
    }
    Ok(reference)
}

/// `2%` or `2` (percent); 0 up to (not including) 100.
fn parse_threshold(text: &str) -> Result<f64, Failure> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    number
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && (0.0..100.0).contains(p))
        .map(|p| p / 100.0)
        .ok_or_else(|| {
            Failure::input(format!(
                "--threshold {text}: expected a percentage from 0 to 100, such as 2%"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_percentages() {
        assert_eq!(parse_threshold("2%").unwrap(), 0.02);
        assert_eq!(parse_threshold("2.5").unwrap(), 0.025);
        assert_eq!(parse_threshold("0%").unwrap(), 0.0);
        for bad in ["abc", "-1%", "100%", "2%%", "", "NaN"] {
            let error = parse_threshold(bad).unwrap_err();
            assert_eq!(
                error.message(),
                format!("--threshold {bad}: expected a percentage from 0 to 100, such as 2%")
            );
        }
    }
}
