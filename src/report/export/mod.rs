//! Results in the formats teams already keep (`stampede export`, `--export F=PATH`): Bencher's
//! Metric Format, Apache Otava's CSV, github-action-benchmark's JSON, HammerDB's job report
//! (`hammerdb.rs`, from a TPROC-C run's own numbers) and `gate`'s JUnit XML.
//! Every format renders one model: per cell of an invocation, each metric's median over the
//! cell's completed runs with the median's own interval (order statistics, so that
//! `lower ≤ value ≤ upper` always holds), and for a lab of several targets each target's
//! paired ratio against the base with the lab's interval. Renders; never queries.

pub mod bmf;
pub mod github;
pub mod hammerdb;
pub mod otava;

use std::collections::BTreeMap;

use super::comparison::{compare_targets, targets, Metric, RUN_METRICS};
use super::history::{cell_key, InvocationLabel};
use stampede_base::error::Failure;
use stampede_stats::order::{median_interval, MedianInterval};
use stampede_stats::verdict::Direction;
use stampede_store::{RunStatus, StoredRun};

/// The interval every format carries: 95%, as the lab's.
pub const CONFIDENCE: f64 = 0.95;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Bmf,
    Otava,
    GithubActionBenchmark,
    HammerdbJobReport,
    Junit,
}

/// The formats by the names `--format` and `--export` take.
pub const FORMATS: [(&str, Format); 5] = [
    ("bmf", Format::Bmf),
    ("otava", Format::Otava),
    ("github-action-benchmark", Format::GithubActionBenchmark),
    ("hammerdb-job-report-v1", Format::HammerdbJobReport),
    ("junit", Format::Junit),
];

impl Format {
    /// A format by its name, in any case (`BMF`, `JUnit`); an unknown one is refused with the
    /// names, and the one meant when the name is its start or a typo away from it.
    pub fn parse(name: &str) -> Result<Format, Failure> {
        let lower = name.to_ascii_lowercase();
        if let Some((_, format)) = FORMATS.iter().find(|(known, _)| *known == lower) {
            return Ok(*format);
        }
        let known: Vec<&str> = FORMATS.iter().map(|(n, _)| *n).collect();
        let meant = known
            .iter()
            .find(|known| known.starts_with(&lower) || edits(known, &lower) <= 2)
            .map_or(String::new(), |known| format!(" (did you mean {known}?)"));
        Err(Failure::input(format!(
            "unknown export format \"{name}\"{meant}; the formats: {}",
            known.join(", ")
        )))
    }

    pub fn name(self) -> &'static str {
        FORMATS
            .iter()
            .find(|(_, format)| *format == self)
            .expect("every format is listed")
            .0
    }
}

/// Levenshtein's distance: the single-character edits that turn `a` into `b`.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(x != *y))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// One metric of one cell: the median of its runs and the median's interval.
#[derive(Debug, Clone)]
pub struct Measured {
    /// As `--metric` names it: tps, p99, nopm, server_cpu …
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub value: f64,
    /// None with a single run.
    pub interval: Option<MedianInterval>,
    pub runs: usize,
}

/// A cell of one target (target/workload/script/scale/clients, as histories key it).
#[derive(Debug, Clone)]
pub struct CellExport {
    pub cell: String,
    pub measures: Vec<Measured>,
}

/// A target against the lab's base in one cell: the lab's ratio and interval (paired by
/// round where the runs pair up).
#[derive(Debug, Clone)]
pub struct RatioExport {
    /// The target's cell.
    pub cell: String,
    pub base: String,
    pub metric: String,
    pub direction: Direction,
    pub ratio: f64,
    pub interval: Option<(f64, f64)>,
    /// Rounds paired; None when the analysis was unpaired.
    pub pairs: Option<usize>,
}

/// What an invocation exports.
#[derive(Debug, Clone)]
pub struct InvocationExport {
    pub history: String,
    pub label: InvocationLabel,
    pub cells: Vec<CellExport>,
    pub ratios: Vec<RatioExport>,
}

/// The metrics exported when none is asked for: every run metric and workload metric that
/// some completed run has.
pub fn default_metrics(runs: &[StoredRun], declared: &[Metric]) -> Vec<Metric> {
    let completed: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed)
        .collect();
    RUN_METRICS
        .iter()
        .map(|(_, metric)| metric.clone())
        .chain(declared.iter().cloned())
        .filter(|metric| completed.iter().any(|run| metric.of(run).is_some()))
        .collect()
}

/// An invocation's cells and ratios over `metrics`; ratios against `base` (the lab's first
/// target) when the lab has several targets.
pub fn invocation(
    history: &str,
    label: InvocationLabel,
    runs: &[StoredRun],
    metrics: &[Metric],
    base: Option<&str>,
) -> InvocationExport {
    let mut values: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let per_metric = values
            .entry(cell_key(run))
            .or_insert_with(|| vec![Vec::new(); metrics.len()]);
        for (index, metric) in metrics.iter().enumerate() {
            if let Some(value) = metric.of(run).filter(|v| v.is_finite()) {
                per_metric[index].push(value);
            }
        }
    }
    let cells = values
        .into_iter()
        .map(|(cell, per_metric)| CellExport {
            cell,
            measures: metrics
                .iter()
                .zip(&per_metric)
                .filter_map(|(metric, values)| measured(metric, values))
                .collect(),
        })
        .collect();
    InvocationExport {
        history: history.to_string(),
        label,
        cells,
        ratios: base.map_or(Vec::new(), |base| ratios(runs, base, metrics)),
    }
}

fn measured(metric: &Metric, values: &[f64]) -> Option<Measured> {
    Some(Measured {
        metric: metric.name(),
        unit: unit(metric),
        direction: metric.direction(),
        value: stampede_stats::median(values)?,
        interval: median_interval(values, CONFIDENCE),
        runs: values.len(),
    })
}

/// Every other target against `base`, cell by cell, for each metric.
fn ratios(runs: &[StoredRun], base: &str, metrics: &[Metric]) -> Vec<RatioExport> {
    let mut ratios = Vec::new();
    for other in targets(runs).iter().filter(|t| *t != base) {
        for metric in metrics {
            for row in compare_targets(runs, base, other, metric) {
                let run = runs
                    .iter()
                    .find(|r| r.target == *other && super::comparison::cell_of(r) == row.cell);
                let cell = run.map_or_else(|| other.clone(), cell_key);
                ratios.push(RatioExport {
                    cell,
                    base: base.to_string(),
                    metric: metric.name(),
                    direction: metric.direction(),
                    ratio: row.ratio,
                    interval: row.ci_low.zip(row.ci_high),
                    pairs: row.pairs,
                });
            }
        }
    }
    ratios
}

/// The unit a metric's values are in, as the formats label them.
pub fn unit(metric: &Metric) -> String {
    match metric {
        Metric::Tps => "transactions/s".into(),
        Metric::P50 | Metric::P95 | Metric::P99 | Metric::Statement(_) => "ms".into(),
        Metric::ClientCpu | Metric::ServerCpu => "CPU µs/transaction".into(),
        Metric::Workload(metric) => match metric.name {
            "nopm" => "new orders/min".into(),
            "tpm" => "transactions/min".into(),
            "ips" => "inserts/s".into(),
            "qps" => "queries/s".into(),
            other => other.into(),
        },
        Metric::AgainstControl { metric, control } => format!("{} / {control}", unit(metric)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_in_any_case_and_a_typo_is_pointed_at() {
        assert_eq!(Format::parse("JUnit").unwrap(), Format::Junit);
        assert_eq!(Format::parse("BMF").unwrap(), Format::Bmf);
        let message = |name: &str| Format::parse(name).unwrap_err().message().to_string();
        let known =
            "the formats: bmf, otava, github-action-benchmark, hammerdb-job-report-v1, junit";
        assert_eq!(
            message("otva"),
            format!("unknown export format \"otva\" (did you mean otava?); {known}")
        );
        assert_eq!(
            message("github"),
            format!(
                "unknown export format \"github\" (did you mean github-action-benchmark?); {known}"
            )
        );
        assert_eq!(
            message("csv"),
            format!("unknown export format \"csv\"; {known}")
        );
        assert_eq!(edits("kitten", "sitting"), 3);
    }
}
