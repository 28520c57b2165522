//! The lab report: every target against the base with verdicts, pg_stat_statements per
//! statement with the change against the base (mean and stddev time), and the machine's work per
//! transaction. One model, rendered as Markdown, CSV or JSON; every number of one is in the
//! others.

use std::collections::BTreeMap;

use serde::Serialize;

use super::comparison::{self, cell_of, verdict_text, CellComparison, CellKey, Metric};
use super::headline;
use super::noise::{self, Noise, NoiseInputs, RunProbes};
use super::series::RunSeries;
use super::warnings::{self, WarningInputs};
use super::why::{self, WhyInputs, WhyPanel};
use stampede_stats::paired::{compare_paired, PairedComparison};
use stampede_stats::verdict::Direction;
use stampede_stats::{median, range};
use stampede_store::{CounterRow, RunStatus, StatementRow, StoredRun};

#[derive(Debug, Serialize)]
pub struct LabReport {
    pub lab: String,
    pub base: String,
    pub metric: String,
    /// What was decided, one sentence per target and workload: the answer first.
    pub headline: Vec<String>,
    /// The spec's claims and their verdicts, shown before the tables.
    pub claims: Vec<super::claims::ClaimResult>,
    pub method: &'static str,
    pub warnings: Vec<String>,
    /// Every target's cells: the metric's median and spread over completed runs.
    pub summaries: Vec<CellSummary>,
    pub comparisons: Vec<TargetComparison>,
    /// Per target against the base: the cells' ratios summarized per workload family.
    pub families: Vec<FamilySummary>,
    /// A workload's variants side by side, a row per target (Callaghan's layout).
    pub steps: Vec<super::steps::StepTable>,
    pub latency: Vec<LatencySummary>,
    /// Chosen runs second by second, with checkpoints.
    pub series: Vec<RunSeries>,
    pub statements: Vec<StatementChange>,
    pub efficiency: Vec<Efficiency>,
    /// Every per-run number against the base's, paired by round with its interval.
    pub every_metric: Vec<super::every_metric::MetricChange>,
    /// Per target against the base: settings, plans and waits that differ.
    pub why: Vec<WhyPanel>,
    /// Where the noise comes from: spreads, drift per cell, flagged and excluded runs.
    pub noise: Noise,
    /// Where the runs ran, when on more than one machine or sharded.
    pub machines: Vec<super::machines::MachineRow>,
}

#[derive(Debug, Serialize)]
pub struct CellSummary {
    pub target: String,
    pub cell: CellKey,
    pub runs: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// A target's ratios to the base over the cells of one workload family (e.g. point queries).
#[derive(Debug, Serialize)]
pub struct FamilySummary {
    pub target: String,
    pub workload: String,
    pub family: String,
    pub cells: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub mean: f64,
    /// The group as one comparison (`comparison::group_rounds`): the geometric mean over
    /// rounds of each round's geometric mean of the cells' ratios, with its 95% t interval.
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub rounds: usize,
    pub verdict: Option<String>,
}

impl FamilySummary {
    /// "1.032 [1.011–1.054]", or "-" without rounds both targets ran.
    pub fn group_text(&self) -> String {
        comparison::ratio_text(self.ratio, self.ci_low, self.ci_high)
    }
}

/// Latency percentiles of a cell: medians over its completed runs.
#[derive(Debug, Serialize)]
pub struct LatencySummary {
    pub target: String,
    pub cell: CellKey,
    pub runs: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct TargetComparison {
    pub target: String,
    pub cells: Vec<CellComparison>,
    /// How to read its table: the paired ratio, outlier rounds, what would decide a cell.
    pub notes: Vec<String>,
}

/// A statement's median (over the cell's runs) mean and stddev time on a target, and the
/// change against the base's for the same statement and cell.
#[derive(Debug, Serialize)]
pub struct StatementChange {
    pub target: String,
    pub cell: CellKey,
    pub query: String,
    pub mean_ms: f64,
    pub stddev_ms: f64,
    pub mean_change_pct: Option<f64>,
    pub stddev_change_pct: Option<f64>,
    /// Median calls per run: below `RARE_CALLS` a run's mean is too few calls to estimate.
    pub calls_per_run: f64,
    /// Against the base, the rounds' mean execution times paired as tps is: the geometric mean
    /// of the rounds' ratios, its 95% interval and the verdict ("faster" is a shorter time).
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Option<String>,
}

/// Calls per run below which a statement's mean time is too rare to compare.
pub const RARE_CALLS: f64 = 10.0;

impl StatementChange {
    /// "1.52 [1.48–1.57] slower", "too rare (3 calls per run)", or "-" (the base itself, or
    /// no rounds both measured).
    pub fn against_base(&self, base: &str) -> String {
        if self.target == base {
            return "-".into();
        }
        match (self.ratio, &self.verdict) {
            (Some(ratio), Some(verdict)) => {
                let interval = match (self.ci_low, self.ci_high) {
                    (Some(low), Some(high)) => format!(" [{low:.3}–{high:.3}]"),
                    _ => String::new(),
                };
                format!("{ratio:.3}{interval} {verdict}")
            }
            _ if self.calls_per_run < RARE_CALLS && self.mean_change_pct.is_some() => {
                format!("too rare ({:.0} calls per run)", self.calls_per_run)
            }
            _ => "-".into(),
        }
    }
}

/// The machine's work per transaction (medians over the cell's runs).
#[derive(Debug, Serialize)]
pub struct Efficiency {
    pub target: String,
    pub cell: CellKey,
    pub cpu_us_per_txn: Option<f64>,
    pub context_switches_per_txn: Option<f64>,
    pub read_kb_per_txn: Option<f64>,
    pub write_kb_per_txn: Option<f64>,
    /// The driver's CPU as a share of the client machine's CPUs.
    pub client_cpu_share: Option<f64>,
}

pub const METHOD: &str = "runs of one round are a pair: ratio = geometric mean of the rounds' other / base ratios with a 95% Student t interval, verdict from the paired t test (two-sided, α = 0.05) and the interval; cells whose runs do not pair up: medians, ratio of medians with a 95% percentile-bootstrap interval (10,000 resamples), verdict needs the Mann-Whitney U test and the interval to agree";

pub struct Inputs<'a> {
    pub lab: &'a str,
    pub base: &'a str,
    pub metric: Metric,
    pub runs: &'a [StoredRun],
    pub statements: &'a [(StoredRun, StatementRow)],
    pub counters: &'a [(StoredRun, CounterRow)],
    pub why: WhyInputs<'a>,
    pub client_cores: Option<i64>,
    pub builds: &'a [stampede_store::TargetBuild],
    /// Settings runs saw other than their targets' records (a server others changed).
    pub setting_changes: &'a [stampede_store::RunSettingChange],
    pub series: Vec<RunSeries>,
    /// Runs the user left out (`--exclude-run`): not in `runs`, listed in the Noise section.
    pub excluded: &'a [StoredRun],
    pub probes: &'a RunProbes,
    /// The spec's `[[claim]]`s.
    pub claims: &'a [super::claims::Claim],
    /// The metrics the workloads declare (NOPM, QPS), for the every-number table.
    pub declared: &'a [&'static super::comparison::WorkloadMetric],
}

pub fn build(inputs: Inputs<'_>) -> LabReport {
    let targets = comparison::targets(inputs.runs);
    let others: Vec<&String> = targets.iter().filter(|t| *t != inputs.base).collect();
    let comparisons: Vec<TargetComparison> = others
        .iter()
        .map(|t| {
            let cells = comparison::compare_targets(inputs.runs, inputs.base, t, &inputs.metric);
            TargetComparison {
                target: t.to_string(),
                notes: super::reading::notes(&cells),
                cells,
            }
        })
        .collect();
    let why: Vec<WhyPanel> = others
        .iter()
        .map(|t| why::panel(&inputs.why, inputs.base, t))
        .collect();
    let headline = comparisons
        .iter()
        .flat_map(|c| headline::sentences(&c.target, inputs.base, &inputs.metric.name(), &c.cells))
        .collect();
    let noise = noise::noise(&NoiseInputs {
        runs: inputs.runs,
        excluded: inputs.excluded,
        base: inputs.base,
        comparisons: comparisons
            .iter()
            .map(|c| (c.target.as_str(), c.cells.as_slice()))
            .collect(),
        metric: &inputs.metric,
        probes: inputs.probes,
    });
    LabReport {
        lab: inputs.lab.to_string(),
        base: inputs.base.to_string(),
        metric: inputs.metric.name().to_string(),
        headline,
        claims: super::claims::check(inputs.claims, inputs.runs),
        method: METHOD,
        warnings: report_warnings(&inputs, &targets, &comparisons, &why),
        summaries: summaries(inputs.runs, &inputs.metric),
        families: family_summaries(&comparisons, inputs.runs, inputs.base, &inputs.metric),
        steps: super::steps::step_tables(
            inputs.runs,
            inputs.base,
            &comparisons
                .iter()
                .map(|c| (c.target.as_str(), c.cells.as_slice()))
                .collect::<Vec<_>>(),
            inputs.probes,
        ),
        latency: latency_summaries(inputs.runs),
        series: inputs.series,
        comparisons,
        statements: statement_changes(inputs.statements, inputs.base),
        efficiency: efficiency(inputs.runs, inputs.counters, inputs.client_cores),
        every_metric: super::every_metric::changes(
            inputs.runs,
            inputs.counters,
            inputs.base,
            inputs.declared,
        ),
        why,
        noise,
        machines: super::machines::machines(inputs.runs),
    }
}

/// Warnings in the order a reader needs them: builds and settings that differ first, then the
/// runs' quality.
fn report_warnings(
    inputs: &Inputs<'_>,
    targets: &[String],
    comparisons: &[TargetComparison],
    why: &[WhyPanel],
) -> Vec<String> {
    let names: Vec<&str> = targets.iter().map(String::as_str).collect();
    let mut out: Vec<String> = why
        .iter()
        .filter(|p| p.cross_engine)
        .map(|panel| {
            format!(
                "\"{}\" ({}) and \"{}\" ({}) are different engines: settings, plans and statistics are engine-specific, so \"Why\" shows each one's configured settings side by side rather than a diff, and statements are matched by their normalised text",
                panel.target,
                super::why::engine_of(&panel.version).unwrap_or("?"),
                inputs.base,
                super::why::engine_of(&panel.base_version).unwrap_or("?"),
            )
        })
        .collect();
    out.extend(why
        .iter()
        .filter(|p| !p.other_settings.is_empty())
        .map(|panel| {
            format!(
                "\"{}\" and \"{}\" differ in {} setting(s) nobody configured (defaults of another version or build): see \"Why\"",
                panel.target,
                inputs.base,
                panel.other_settings.len()
            )
        }));
    out.extend(super::defaults::changed_defaults(
        inputs.why.settings,
        inputs.base,
        &names,
    ));
    out.extend(noise::busy_machine(
        inputs.runs,
        &names,
        &inputs.probes.other_cpu_share,
    ));
    out.extend(warnings::warnings(&WarningInputs {
        runs: inputs.runs,
        targets: &names,
        metric: &inputs.metric,
        client_cores: inputs.client_cores,
        builds: inputs.builds,
    }));
    out.extend(warnings::settings_changed(inputs.setting_changes, &names));
    out.extend(
        comparisons
            .iter()
            .filter_map(|c| warnings::too_few_runs(&c.target, inputs.base, &c.cells)),
    );
    out.extend(warnings::excluded_runs(inputs.excluded));
    out.extend(super::machines::unlike(inputs.runs));
    out
}

fn family_summaries(
    comparisons: &[TargetComparison],
    runs: &[StoredRun],
    base: &str,
    metric: &Metric,
) -> Vec<FamilySummary> {
    let mut out = Vec::new();
    for target in comparisons {
        let mut ratios: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
        for cell in &target.cells {
            ratios
                .entry((&cell.cell.workload, &cell.cell.family))
                .or_default()
                .push(cell.ratio);
        }
        for ((workload, family), values) in ratios {
            let (Some((min, max)), Some(median)) = (range(&values), median(&values)) else {
                continue;
            };
            let group = comparison::group_rounds(runs, base, &target.target, metric, |cell| {
                cell.workload == workload && cell.family == family
            });
            let paired = compare_paired(&group.pairs, metric.direction());
            out.push(FamilySummary {
                ratio: paired.as_ref().map(|p| p.ratio),
                ci_low: paired.as_ref().and_then(|p| p.interval).map(|i| i.0),
                ci_high: paired.as_ref().and_then(|p| p.interval).map(|i| i.1),
                rounds: group.pairs.len(),
                verdict: paired.as_ref().map(|p| verdict_text(&p.verdict)),
                target: target.target.clone(),
                workload: workload.to_string(),
                family: family.to_string(),
                cells: values.len(),
                min,
                median,
                max,
                mean: values.iter().sum::<f64>() / values.len() as f64,
            });
        }
    }
    out
}

fn latency_summaries(runs: &[StoredRun]) -> Vec<LatencySummary> {
    let mut per_cell: BTreeMap<(String, CellKey), Vec<[f64; 3]>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if let (Some(p50), Some(p95), Some(p99)) = (run.p50_ms, run.p95_ms, run.p99_ms) {
            per_cell
                .entry((run.target.clone(), cell_of(run)))
                .or_default()
                .push([p50, p95, p99]);
        }
    }
    per_cell
        .into_iter()
        .filter_map(|((target, cell), values)| {
            let at = |i: usize| median(&values.iter().map(|v| v[i]).collect::<Vec<_>>());
            Some(LatencySummary {
                target,
                cell,
                runs: values.len(),
                p50_ms: at(0)?,
                p95_ms: at(1)?,
                p99_ms: at(2)?,
            })
        })
        .collect()
}

fn summaries(runs: &[StoredRun], metric: &Metric) -> Vec<CellSummary> {
    let mut values: BTreeMap<(String, CellKey), Vec<f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if let Some(value) = metric.of(run) {
            values
                .entry((run.target.clone(), cell_of(run)))
                .or_default()
                .push(value);
        }
    }
    values
        .into_iter()
        .filter_map(|((target, cell), v)| {
            let (min, max) = range(&v)?;
            Some(CellSummary {
                target,
                cell,
                runs: v.len(),
                median: median(&v)?,
                min,
                max,
            })
        })
        .collect()
}

/// Statements matched with the base's by their normalised text (`matching_text`), so that one
/// statement as pg_stat_statements and as performance_schema's digests print it is one.
fn statement_changes(rows: &[(StoredRun, StatementRow)], base: &str) -> Vec<StatementChange> {
    type Key = (String, CellKey, String);
    let mut per_run: BTreeMap<Key, StatementRuns> = BTreeMap::new();
    let mut shown: BTreeMap<Key, String> = BTreeMap::new();
    for (run, statement) in rows {
        let key = (
            run.target.clone(),
            cell_of(run),
            matching_text(&statement.query),
        );
        shown
            .entry(key.clone())
            .or_insert_with(|| statement.query.clone());
        let entry = per_run.entry(key).or_default();
        // A time the results database does not hold counts for nothing. Rows of one run whose
        // texts match (one statement normalised twice) are one statement: calls added, the
        // mean weighted by them.
        if let Some(mean) = statement.mean_ms.filter(|_| statement.calls > 0) {
            let round = entry.by_round.entry(run.repetition).or_default();
            round.0 += mean * statement.calls as f64;
            round.1 += statement.calls as f64;
        }
        entry.stddevs.extend(statement.stddev_ms);
    }
    let change = |value: f64, base: f64| (base > 0.0).then(|| (value / base - 1.0) * 100.0);
    per_run
        .iter()
        .filter_map(|(key, runs)| {
            let (target, cell, matching) = key;
            let (mean, stddev) = (median(&runs.means())?, median(&runs.stddevs)?);
            let base_runs = per_run
                .get(&(base.to_string(), cell.clone(), matching.clone()))
                .filter(|_| target != base);
            let base_medians =
                base_runs.and_then(|b| Some((median(&b.means())?, median(&b.stddevs)?)));
            let calls_per_run = runs.calls_per_run();
            let paired = base_runs
                .filter(|b| calls_per_run.min(b.calls_per_run()) >= RARE_CALLS)
                .and_then(|b| paired_means(&b.mean_by_round(), &runs.mean_by_round()));
            Some(StatementChange {
                target: target.clone(),
                cell: cell.clone(),
                query: shown[key].clone(),
                mean_ms: mean,
                stddev_ms: stddev,
                mean_change_pct: base_medians.and_then(|b| change(mean, b.0)),
                stddev_change_pct: base_medians.and_then(|b| change(stddev, b.1)),
                calls_per_run,
                ratio: paired.as_ref().map(|p| p.ratio),
                ci_low: paired.as_ref().and_then(|p| p.interval).map(|i| i.0),
                ci_high: paired.as_ref().and_then(|p| p.interval).map(|i| i.1),
                verdict: paired.as_ref().map(|p| verdict_text(&p.verdict)),
            })
        })
        .collect()
}

/// One statement's runs in one target's cell.
#[derive(Default)]
struct StatementRuns {
    /// Round → (the run's total execution time in ms, its calls).
    by_round: BTreeMap<u32, (f64, f64)>,
    stddevs: Vec<f64>,
}

impl StatementRuns {
    fn mean_by_round(&self) -> BTreeMap<u32, f64> {
        self.by_round
            .iter()
            .map(|(round, (total, calls))| (*round, total / calls))
            .collect()
    }

    fn means(&self) -> Vec<f64> {
        self.mean_by_round().into_values().collect()
    }

    fn calls_per_run(&self) -> f64 {
        let calls: Vec<f64> = self.by_round.values().map(|(_, calls)| *calls).collect();
        median(&calls).unwrap_or(0.0)
    }
}

/// The rounds both targets measured, paired: a shorter time is better.
fn paired_means(base: &BTreeMap<u32, f64>, other: &BTreeMap<u32, f64>) -> Option<PairedComparison> {
    let pairs: Vec<(f64, f64)> = base
        .iter()
        .filter_map(|(round, b)| Some((*b, *other.get(round)?)))
        .collect();
    compare_paired(&pairs, Direction::LowerIsBetter)
}

/// A statement's text with what differs between engines' normalisations taken out: case,
/// quoting, spacing, placeholders (`$1`, `?`), PostgreSQL casts, an INSERT's value list.
pub fn matching_text(query: &str) -> String {
    let mut text = String::with_capacity(query.len());
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' | '"' => {}
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                text.push('?');
            }
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    chars.next();
                }
            }
            c => text.extend(c.to_lowercase()),
        }
    }
    let mut words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for punctuation in ["(", ")", ",", ".", "=", ";"] {
        words = words
            .replace(&format!(" {punctuation}"), punctuation)
            .replace(&format!("{punctuation} "), punctuation);
    }
    let words = words.trim_end_matches(';').to_string();
    match words.find("values(") {
        Some(at) if words.starts_with("insert") => format!("{}values(...)", &words[..at]),
        _ => words,
    }
}

fn efficiency(
    runs: &[StoredRun],
    rows: &[(StoredRun, CounterRow)],
    client_cores: Option<i64>,
) -> Vec<Efficiency> {
    // (target, cell) → run → counter name → per-transaction value.
    type Runs<'r> = BTreeMap<i64, BTreeMap<&'r str, f64>>;
    let mut per_cell: BTreeMap<(String, CellKey), Runs<'_>> = BTreeMap::new();
    let mut shares: BTreeMap<(String, CellKey), Vec<f64>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let key = (run.target.clone(), cell_of(run));
        per_cell.entry(key.clone()).or_default();
        shares
            .entry(key)
            .or_default()
            .extend(warnings::client_cpu_share(run, client_cores));
    }
    for (run, counter) in rows.iter().filter(|(_, c)| c.source == "os") {
        per_cell
            .entry((run.target.clone(), cell_of(run)))
            .or_default()
            .entry(run.id)
            .or_default()
            .insert(counter.name.as_str(), counter.value);
    }
    per_cell
        .into_iter()
        .map(|(key, runs)| {
            // The median over runs of a per-run quantity.
            let over_runs = |of: &dyn Fn(&BTreeMap<&str, f64>) -> Option<f64>| {
                median(&runs.values().filter_map(of).collect::<Vec<_>>())
            };
            let client_cpu_share = shares.get(&key).and_then(|v| median(v));
            let (target, cell) = key;
            Efficiency {
                target,
                cell,
                cpu_us_per_txn: over_runs(&|c| {
                    Some((c.get("cpu_user_s")? + c.get("cpu_system_s")?) * 1e6)
                }),
                context_switches_per_txn: over_runs(&|c| c.get("context_switches").copied()),
                read_kb_per_txn: over_runs(&|c| c.get("disk_read_kb").copied()),
                write_kb_per_txn: over_runs(&|c| c.get("disk_write_kb").copied()),
                client_cpu_share,
            }
        })
        .collect()
}

pub(super) fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

pub(super) fn cell_text(cell: &CellKey) -> String {
    format!(
        "{} {} {}",
        cell.workload,
        cell.script,
        comparison::size_text(&cell.scale, cell.clients)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_statement_as_both_engines_print_it_matches() {
        let postgres = "SELECT S.REF, S.NAME FROM history1 H, stat1 S WHERE S.REF = H.REF_STAT AND H.REF_OBJECT = $1::bpchar ORDER BY H.HORDER";
        let mariadb = "SELECT `S` . `REF` , `S` . `NAME` FROM `history1` `H` , `stat1` `S` WHERE `S` . `REF` = `H` . `REF_STAT` AND `H` . `REF_OBJECT` = ? ORDER BY `H` . `HORDER` ";
        assert_eq!(matching_text(postgres), matching_text(mariadb));
        assert_eq!(
            matching_text("INSERT INTO `history1` VALUES (...) "),
            matching_text("INSERT INTO history1 VALUES ($1::bpchar, $2, $3::bpchar)")
        );
        assert_ne!(
            matching_text("SELECT c FROM t1"),
            matching_text("SELECT c FROM t2")
        );
    }
}
