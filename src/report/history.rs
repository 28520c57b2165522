//! Histories: the invocations of one lab spec on one machine, per cell the series of their
//! medians, and where it changed (`analysis::changepoint`). Two machines' invocations of a
//! spec are two histories: their numbers are never one series.

use std::collections::BTreeMap;

use crate::report::comparison::Metric;
use stampede_stats::changepoint::{self, Point};
use stampede_stats::student;
use stampede_store::{Invocation, RunStatus, StoredRun};

pub struct History {
    /// The spec's name.
    pub name: String,
    /// `Machine::key`, or "unrecorded" for labs stored before histories.
    pub machine: String,
    pub invocations: Vec<InvocationLabel>,
    pub cells: Vec<CellHistory>,
    /// Where a target's server changed between invocations (a series ends, another starts).
    pub notes: Vec<String>,
}

/// An invocation as a history shows it.
#[derive(Debug, Clone)]
pub struct InvocationLabel {
    pub lab_id: i64,
    pub name: String,
    /// "key=value, …" (empty without tags).
    pub tags: String,
    pub created_unix_s: f64,
    pub kernel: Option<String>,
}

impl InvocationLabel {
    /// The name with its tags, as tables and charts say which invocation.
    pub fn described(&self) -> String {
        if self.tags.is_empty() {
            format!("\"{}\"", self.name)
        } else {
            format!("\"{}\" ({})", self.name, self.tags)
        }
    }
}

pub struct CellHistory {
    /// target/workload/script/scale/clients, as the lab's cells are keyed.
    pub cell: String,
    pub points: Vec<HistoryPoint>,
    pub changes: Vec<Change>,
}

pub struct HistoryPoint {
    /// Index into `History::invocations`.
    pub invocation: usize,
    /// The median of the invocation's completed runs.
    pub value: f64,
    /// 95% interval of the runs' geometric mean, as wide as the point's own noise; None with
    /// a single run.
    pub interval: Option<(f64, f64)>,
    pub runs: usize,
}

pub struct Change {
    /// Index into `CellHistory::points`: the first point after the change.
    pub at: usize,
    /// Geometric mean after / before, between the neighbouring changes, with its interval.
    pub ratio: f64,
    pub interval: (f64, f64),
    pub p_value: f64,
}

/// Every history in the results (only `only`'s when given), oldest invocation first.
pub fn build(
    invocations: &[Invocation],
    runs: &[(i64, StoredRun)],
    metric: &Metric,
    only: Option<&str>,
) -> Vec<History> {
    let mut keyed: BTreeMap<(String, String), Vec<&Invocation>> = BTreeMap::new();
    for invocation in invocations
        .iter()
        .filter(|i| only.is_none_or(|name| i.history == name))
    {
        let machine = invocation
            .machine
            .clone()
            .unwrap_or_else(|| "unrecorded".into());
        keyed
            .entry((invocation.history.clone(), machine))
            .or_default()
            .push(invocation);
    }
    let mut values: BTreeMap<(i64, String), Vec<f64>> = BTreeMap::new();
    let mut servers: BTreeMap<i64, Vec<&StoredRun>> = BTreeMap::new();
    for (lab, run) in runs {
        servers.entry(*lab).or_default().push(run);
        if run.status != RunStatus::Completed {
            continue;
        }
        if let Some(value) = metric.of(run).filter(|v| *v > 0.0) {
            values.entry((*lab, cell_key(run))).or_default().push(value);
        }
    }
    let mut histories: Vec<History> = keyed
        .into_iter()
        .map(|((name, machine), members)| {
            let labels: Vec<InvocationLabel> = members.iter().map(|i| label(i)).collect();
            let notes = labels
                .windows(2)
                .flat_map(|pair| {
                    let of = |label: &InvocationLabel| {
                        servers.get(&label.lab_id).cloned().unwrap_or_default()
                    };
                    server_changes(&of(&pair[0]), &of(&pair[1]))
                        .into_iter()
                        .map(|change| format!("from {}: {change}", pair[1].described()))
                })
                .collect();
            History {
                cells: cells(&labels, &values),
                name,
                machine,
                invocations: labels,
                notes,
            }
        })
        .collect();
    histories.sort_by(|a, b| {
        let first = |h: &History| h.invocations.first().map(|i| i.lab_id);
        first(a).cmp(&first(b))
    });
    histories
}

/// The cell's key as the lab stores it, and for a target the lab did not start the server
/// it ran on: a server rebuilt under the same URL (another system identifier) starts another
/// series, as another machine does.
pub fn cell_key(run: &StoredRun) -> String {
    let key = format!("{}/{}", run.target, group_key(run));
    match &run.server_key {
        Some(server) => format!("{key} (server: {server})"),
        None => key,
    }
}

/// The cell's key without its target: what the runs of one round share across targets. A
/// sharded lab's run adds the machine it ran on, since its shard may land on another machine
/// in the next invocation and a series (or a gate's pair) never mixes machines.
pub fn group_key(run: &StoredRun) -> String {
    let key = format!(
        "{}/{}/{}/{}",
        run.workload, run.script, run.scale, run.clients
    );
    match (&run.shard, &run.machine) {
        (Some(_), Some(machine)) => format!("{key} on {}", machine.key),
        _ => key,
    }
}

/// Targets whose server is another in `later` than in `earlier` (by the key that identifies
/// a server the lab did not start), as sentences.
pub fn server_changes(earlier: &[&StoredRun], later: &[&StoredRun]) -> Vec<String> {
    let servers = |runs: &[&StoredRun]| -> BTreeMap<String, String> {
        runs.iter()
            .filter_map(|r| Some((r.target.clone(), r.server_key.clone()?)))
            .collect()
    };
    let before = servers(earlier);
    servers(later)
        .into_iter()
        .filter_map(|(target, after)| {
            let was = before.get(&target).filter(|was| **was != after)?;
            Some(format!(
                "target \"{target}\" ran on another server ({was} before, {after} now): its cells start new series"
            ))
        })
        .collect()
}

/// An invocation's name, tags and date as histories and gates show it.
pub fn label(invocation: &Invocation) -> InvocationLabel {
    let tags: Vec<String> = invocation
        .tags
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    InvocationLabel {
        lab_id: invocation.id,
        name: invocation.name.clone(),
        tags: tags.join(", "),
        created_unix_s: invocation.created_unix_s,
        kernel: invocation.kernel.clone(),
    }
}

/// Per cell (in key order), the points of the invocations that measured it, and its changes.
fn cells(
    labels: &[InvocationLabel],
    values: &BTreeMap<(i64, String), Vec<f64>>,
) -> Vec<CellHistory> {
    let mut per_cell: BTreeMap<&str, Vec<(usize, &Vec<f64>)>> = BTreeMap::new();
    for (index, label) in labels.iter().enumerate() {
        let own = values
            .range((label.lab_id, String::new())..)
            .take_while(|((lab, _), _)| *lab == label.lab_id);
        for ((_, cell), runs) in own {
            per_cell
                .entry(cell.as_str())
                .or_default()
                .push((index, runs));
        }
    }
    per_cell
        .into_iter()
        .map(|(cell, series)| {
            let points: Vec<(HistoryPoint, Point)> = series
                .into_iter()
                .filter_map(|(invocation, runs)| point(invocation, runs))
                .collect();
            let analysed: Vec<Point> = points.iter().map(|(_, p)| *p).collect();
            let changes = changepoint::detect(&analysed)
                .into_iter()
                .map(|c| Change {
                    at: c.index,
                    ratio: c.ratio,
                    interval: c.interval,
                    p_value: c.p_value,
                })
                .collect();
            CellHistory {
                cell: cell.to_string(),
                points: points.into_iter().map(|(p, _)| p).collect(),
                changes,
            }
        })
        .collect()
}

fn point(invocation: usize, runs: &[f64]) -> Option<(HistoryPoint, Point)> {
    let analysed = Point::from_runs(runs)?;
    let interval = analysed.own.map(|(variance, df)| {
        let logs: Vec<f64> = runs.iter().map(|v| v.ln()).collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let reach = student::quantile(0.975, df) * variance.sqrt();
        ((mean - reach).exp(), (mean + reach).exp())
    });
    Some((
        HistoryPoint {
            invocation,
            value: analysed.value,
            interval,
            runs: runs.len(),
        },
        analysed,
    ))
}

/// "YYYY-MM-DD HH:MM" in UTC.
pub fn utc_minute(unix_s: f64) -> String {
    stampede_base::calendar::UtcTime::from_unix(unix_s.max(0.0) as i64).minute_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_in_utc() {
        assert_eq!(utc_minute(0.0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400.0), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_795_710_365.0), "2026-11-26 16:26");
    }
}
