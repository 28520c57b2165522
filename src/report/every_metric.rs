//! Every per-run number a report shows, compared with the base as tps is: for each target,
//! cell and measure, the rounds' values paired with the base's (the geometric mean of the
//! rounds' ratios with its 95% t interval and the paired verdict). The measures: throughput
//! and latency percentiles, the driver's and the server's CPU per transaction, the workloads'
//! own numbers (NOPM, TPM, QPS), and the machine's work per transaction from the OS probe (CPU
//! µs, context switches, KB read and written).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::comparison::{cell_of, verdict_text, CellKey, Metric, WorkloadMetric};
use crate::analysis::median;
use crate::analysis::paired::compare_paired;
use crate::analysis::verdict::Direction;
use crate::store::{CounterRow, RunStatus, StoredRun};

#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    pub target: String,
    pub cell: CellKey,
    pub metric: String,
    /// Medians over each side's runs in the paired rounds.
    pub base_median: f64,
    pub other_median: f64,
    pub pairs: usize,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// "faster" is the better direction of the measure (less CPU, more NOPM).
    pub verdict: String,
}

/// A run's OS counters per transaction, by name.
type OsCounters<'c> = HashMap<&'c str, f64>;

/// Reads a measure from a run and its OS counters.
type Reader = Box<dyn Fn(&StoredRun, Option<&OsCounters<'_>>) -> Option<f64>>;

/// A measure and how to read it from a run.
struct Measure {
    name: String,
    direction: Direction,
    read: Reader,
}

/// Every target other than `base` against it, over every measure the runs carry.
pub fn changes(
    runs: &[StoredRun],
    counters: &[(StoredRun, CounterRow)],
    base: &str,
    declared: &[&'static WorkloadMetric],
) -> Vec<MetricChange> {
    let mut os: HashMap<i64, OsCounters<'_>> = HashMap::new();
    for (run, counter) in counters.iter().filter(|(_, c)| c.source == "os") {
        os.entry(run.id)
            .or_default()
            .insert(counter.name.as_str(), counter.value);
    }
    let measures = measures(declared);
    // (target, cell, measure) → round → value.
    let mut values: BTreeMap<(String, CellKey, usize), BTreeMap<u32, f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        for (index, measure) in measures.iter().enumerate() {
            if let Some(value) = (measure.read)(run, os.get(&run.id)).filter(|v| *v > 0.0) {
                values
                    .entry((run.target.clone(), cell_of(run), index))
                    .or_default()
                    .insert(run.repetition, value);
            }
        }
    }
    values
        .iter()
        .filter(|((target, _, _), _)| target != base)
        .filter_map(|((target, cell, index), rounds)| {
            let base_rounds = values.get(&(base.to_string(), cell.clone(), *index))?;
            let pairs: Vec<(f64, f64)> = base_rounds
                .iter()
                .filter_map(|(round, b)| Some((*b, *rounds.get(round)?)))
                .collect();
            let measure = &measures[*index];
            let comparison = compare_paired(&pairs, measure.direction)?;
            let side =
                |pick: fn(&(f64, f64)) -> f64| median(&pairs.iter().map(pick).collect::<Vec<_>>());
            Some(MetricChange {
                target: target.clone(),
                cell: cell.clone(),
                metric: measure.name.clone(),
                base_median: side(|p| p.0)?,
                other_median: side(|p| p.1)?,
                pairs: comparison.pairs,
                ratio: comparison.ratio,
                ci_low: comparison.interval.map(|i| i.0),
                ci_high: comparison.interval.map(|i| i.1),
                verdict: verdict_text(&comparison.verdict),
            })
        })
        .collect()
}

fn measures(declared: &[&'static WorkloadMetric]) -> Vec<Measure> {
    let run_metric = |metric: Metric| Measure {
        name: metric.name(),
        direction: metric.direction(),
        read: Box::new(move |run, _| metric.of(run)),
    };
    let mut measures: Vec<Measure> = [
        Metric::Tps,
        Metric::P50,
        Metric::P95,
        Metric::P99,
        Metric::ClientCpu,
        Metric::ServerCpu,
    ]
    .into_iter()
    .map(run_metric)
    .collect();
    measures.extend(declared.iter().map(|m| run_metric(Metric::Workload(m))));
    let os = |name: &str, read: fn(&OsCounters<'_>) -> Option<f64>| Measure {
        name: name.to_string(),
        direction: Direction::LowerIsBetter,
        read: Box::new(move |_, counters| read(counters?)),
    };
    measures.extend([
        os("os_cpu_us_per_txn", |c| {
            Some((c.get("cpu_user_s")? + c.get("cpu_system_s")?) * 1e6)
        }),
        os("context_switches_per_txn", |c| {
            c.get("context_switches").copied()
        }),
        os("read_kb_per_txn", |c| c.get("disk_read_kb").copied()),
        os("write_kb_per_txn", |c| c.get("disk_write_kb").copied()),
    ]);
    measures
}

/// "1.052 [1.011–1.094] slower".
pub fn against_base(change: &MetricChange) -> String {
    match (change.ci_low, change.ci_high) {
        (Some(low), Some(high)) => format!(
            "{:.3} [{low:.3}–{high:.3}] {}",
            change.ratio, change.verdict
        ),
        _ => format!("{:.3} {}", change.ratio, change.verdict),
    }
}

/// The columns of the every-number table.
pub const HEADER: [&str; 7] = [
    "target",
    "cell",
    "metric",
    "base",
    "other",
    "against the base (95% interval)",
    "pairs",
];

/// A change's row under `HEADER`.
pub fn cells(change: &MetricChange) -> Vec<String> {
    vec![
        change.target.clone(),
        format!(
            "{} {} scale {} × {} clients",
            change.cell.workload, change.cell.script, change.cell.scale, change.cell.clients
        ),
        change.metric.clone(),
        super::svg::significant(change.base_median),
        super::svg::significant(change.other_median),
        against_base(change),
        change.pairs.to_string(),
    ]
}

/// The table as a Markdown section.
pub fn markdown(changes: &[MetricChange]) -> String {
    if changes.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Every number against the base\n\n| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for change in changes {
        out += &format!("| {} |\n", cells(change).join(" | "));
    }
    out + "\n"
}
