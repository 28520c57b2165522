//! Every per-run number a report shows, compared with the base as tps is: for each target,
//! cell and measure, the rounds' values paired with the base's (the geometric mean of the
//! rounds' ratios with its 95% t interval and the paired verdict). The measures: throughput
//! and latency percentiles, the driver's and the server's CPU per transaction, the workloads'
//! own numbers (NOPM, TPM, QPS), and the machine's work per transaction from the OS probe (CPU
//! µs, context switches, KB read and written).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::comparison::{cell_of, verdict_text, CellKey, Metric, WorkloadMetric};
use stampede_stats::median;
use stampede_stats::paired::compare_paired;
use stampede_stats::verdict::{self, Direction};
use stampede_store::{CounterRow, RunStatus, StoredRun};

#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    pub target: String,
    pub cell: CellKey,
    pub metric: String,
    #[serde(flatten)]
    pub compared: Compared,
}

/// One measure of one cell against the base's.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// Medians over each side's runs (in the paired rounds, when they pair).
    pub base_median: f64,
    pub other_median: f64,
    /// Rounds analysed as pairs; 0 when the runs did not pair up (benchstat's unpaired
    /// analysis: the medians' ratio with a bootstrap interval).
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
            let measure = &measures[*index];
            let compared = compare_rounds(base_rounds, rounds, measure.direction)?;
            Some(MetricChange {
                target: target.clone(),
                cell: cell.clone(),
                metric: measure.name.clone(),
                compared,
            })
        })
        .collect()
}

/// The rounds paired as tps is when every run of the side with fewer has its partner in the
/// same round; otherwise benchstat's unpaired analysis (medians, bootstrap interval).
fn compare_rounds(
    base: &BTreeMap<u32, f64>,
    other: &BTreeMap<u32, f64>,
    direction: Direction,
) -> Option<Compared> {
    let pairs: Vec<(f64, f64)> = base
        .iter()
        .filter_map(|(round, b)| Some((*b, *other.get(round)?)))
        .collect();
    if !pairs.is_empty() && pairs.len() == base.len().min(other.len()) {
        let paired = compare_paired(&pairs, direction)?;
        let (b, o): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        return Some(Compared {
            base_median: median(&b)?,
            other_median: median(&o)?,
            pairs: paired.pairs,
            ratio: paired.ratio,
            ci_low: paired.interval.map(|i| i.0),
            ci_high: paired.interval.map(|i| i.1),
            verdict: verdict_text(&paired.verdict),
        });
    }
    let b: Vec<f64> = base.values().copied().collect();
    let o: Vec<f64> = other.values().copied().collect();
    let unpaired = verdict::compare(&b, &o, direction)?;
    Some(Compared {
        base_median: unpaired.base_median,
        other_median: unpaired.other_median,
        pairs: 0,
        ratio: unpaired.ratio,
        ci_low: unpaired.interval.map(|i| i.0),
        ci_high: unpaired.interval.map(|i| i.1),
        verdict: verdict_text(&unpaired.verdict),
    })
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
pub fn against_base(change: &Compared) -> String {
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
            "{} {} {}",
            change.cell.workload,
            change.cell.script,
            super::comparison::size_text(&change.cell.scale, change.cell.clients)
        ),
        change.metric.clone(),
        super::svg::significant(change.compared.base_median),
        super::svg::significant(change.compared.other_median),
        against_base(&change.compared),
        change.compared.pairs.to_string(),
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
