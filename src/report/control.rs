//! A control target in history and gate: an unchanged reference build that every invocation
//! runs interleaved with the candidates. Two invocations hours apart see different machines (a
//! neighbour started, the CPU ran hotter); the control sees the same, so each target's value
//! over the control's in the same round cancels what the machine did between invocations, and
//! the series and gates compare those ratios instead.

use std::collections::HashMap;

use super::comparison::Metric;
use super::history::group_key;
use stampede_store::{RunStatus, StoredRun};

/// Sets every run's `control` from the control target's run of the same invocation, cell and
/// round, drops the control's own runs, and returns the metric that reads the ratio. A run
/// whose control did not complete has none, and counts for nothing.
pub fn attach(runs: &mut Vec<(i64, StoredRun)>, control: &str, metric: &Metric) -> Metric {
    let mut values: HashMap<(i64, String, u32), f64> = HashMap::new();
    for (lab, run) in runs.iter() {
        if run.target == control && run.status == RunStatus::Completed {
            if let Some(value) = metric.of(run) {
                values.insert((*lab, group_key(run), run.repetition), value);
            }
        }
    }
    runs.retain(|(_, run)| run.target != control);
    for (lab, run) in runs.iter_mut() {
        run.control = values.get(&(*lab, group_key(run), run.repetition)).copied();
    }
    Metric::AgainstControl {
        metric: Box::new(metric.clone()),
        control: control.to_string(),
    }
}

/// The sentence a history or gate prints when it compares against a control.
pub fn sentence(metric: &Metric) -> Option<String> {
    let Metric::AgainstControl { metric, control } = metric else {
        return None;
    };
    Some(format!(
        "Each target's {} is taken over the control target \"{control}\"'s in the same invocation, cell and round, so what the machine did between invocations cancels.",
        metric.name()
    ))
}
