//! Target against base, cell by cell, from a lab's stored runs: the model that `compare` prints
//! and `report` renders. Computes from stored numbers only.
//!
//! The runs of one cell in one round (the same repetition) ran back to back, so they are a
//! pair: when the two targets' runs pair up, the ratio comes from the rounds' own ratios
//! (`paired`), and the machine's drift between rounds cancels. Runs that do not pair up (a
//! target added to the lab later, or a lab resumed after its partner's runs were lost) get
//! benchstat's unpaired analysis, as every lab did before.

use std::collections::BTreeMap;

use serde::Serialize;

use stampede_base::error::Failure;
use stampede_stats::paired::{compare_paired, rounds_to_decide, PairedComparison};
use stampede_stats::verdict::{self, Comparison, Direction, Verdict};
use stampede_stats::{median, robust_z};
use stampede_store::{RunStatus, StoredRun, OWN_CLIENTS, OWN_SCALE};

/// A value (a run's, or a round's ratio) further than this many robust standard deviations
/// (1.4826 MAD, of logs) from its cell's median is flagged: for normal noise, 1 in 2,000.
pub const OUTLIER_Z: f64 = 3.5;
/// The robust spread is taken as at least this (2%): values that agree to a fraction of a
/// percent would otherwise flag one 1% off.
pub const SPREAD_FLOOR: f64 = 0.02;
/// Values a cell needs before its median and spread can flag one.
pub const MIN_RUNS_TO_FLAG: usize = 4;

/// "scale 10 × 4 clients"; a cell of a workload that brings its own data and clients (a
/// replay: the captured sessions on the capture's starting data), which the lab stores with
/// scale "-" and clients 0, is "its own sessions".
pub fn size_text(scale: &str, clients: i64) -> String {
    if scale == OWN_SCALE && clients == OWN_CLIENTS {
        "its own sessions".into()
    } else {
        format!("scale {scale} × {clients} clients")
    }
}

/// What a cell is, apart from its target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellKey {
    pub workload: String,
    /// The workload's group for relative-throughput tables.
    pub family: String,
    pub script: String,
    pub scale: String,
    pub clients: i64,
}

/// A number a workload reports for each run beyond tps and latency (TPROC-C's NOPM), and which
/// way is better: the families declare theirs, the commands hand them to `Metric::parse`.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkloadMetric {
    /// As stored (`run_metrics.name`) and as `--metric` takes it.
    pub name: &'static str,
    pub direction: Direction,
    /// Read from the server over the run's window (TPROC-C's New-Orders from district), not
    /// counted by the driver: a run spread over pods cannot take it.
    pub from_server: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    Tps,
    P50,
    P95,
    P99,
    /// The driver's CPU per transaction (µs): the client's cost of a transaction.
    ClientCpu,
    /// The server processes' CPU per transaction (µs: the postmaster and every process it
    /// forked): the work a transaction costs the server, which a busy neighbour moves less than
    /// it moves throughput.
    ServerCpu,
    /// One a workload declares (TPROC-C's nopm); runs of other workloads have none.
    Workload(&'static WorkloadMetric),
    /// `statement:<text>`: the mean execution time (ms) of the statements whose normalised
    /// text begins with `<text>` (case and runs of white space ignored), per run from its
    /// pg_stat_statements deltas, calls-weighted when several match.
    Statement(String),
    /// A metric over the control target's in the same invocation, cell and round
    /// (`StoredRun::control`, set by `control::attach`): what history and gate compare
    /// across invocations when the spec names a control.
    AgainstControl {
        metric: Box<Metric>,
        control: String,
    },
}

/// What `--metric statement:` takes before the statement's text.
pub const STATEMENT_PREFIX: &str = "statement:";

/// The metrics every run has, by name, in the order help and errors list them.
pub const RUN_METRICS: [(&str, Metric); 6] = [
    ("tps", Metric::Tps),
    ("p50", Metric::P50),
    ("p95", Metric::P95),
    ("p99", Metric::P99),
    ("client_cpu", Metric::ClientCpu),
    ("server_cpu", Metric::ServerCpu),
];

/// A metric name that names none: the names it could be, for the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownMetric {
    /// `statement:` with no text after it.
    NoStatement(String),
    /// A name no metric has; `known` are every metric's, run metrics first.
    Name {
        given: String,
        known: Vec<&'static str>,
    },
}

impl std::fmt::Display for UnknownMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnknownMetric::NoStatement(given) => write!(
                f,
                "\"{given}\": give the statement's text (its beginning is enough) after \"statement:\""
            ),
            UnknownMetric::Name { given, known } => {
                let (last, rest) = known.split_last().expect("the run metrics at least");
                write!(
                    f,
                    "unknown metric \"{given}\"; use {} or {last} (or statement:<text>)",
                    rest.join(", ")
                )
            }
        }
    }
}

impl From<UnknownMetric> for Failure {
    /// The user's `--metric` to fix.
    fn from(error: UnknownMetric) -> Failure {
        Failure::input(error.to_string())
    }
}

impl Metric {
    /// One of `RUN_METRICS` or of the metrics the workloads declare.
    pub fn parse(
        name: &str,
        declared: &[&'static WorkloadMetric],
    ) -> Result<Metric, UnknownMetric> {
        if let Some(text) = name.strip_prefix(STATEMENT_PREFIX) {
            let text = statement_key(text);
            if text.is_empty() {
                return Err(UnknownMetric::NoStatement(name.into()));
            }
            return Ok(Metric::Statement(text));
        }
        if let Some((_, metric)) = RUN_METRICS.iter().find(|(n, _)| *n == name) {
            return Ok(metric.clone());
        }
        match declared.iter().find(|metric| metric.name == name) {
            Some(metric) => Ok(Metric::Workload(metric)),
            None => Err(UnknownMetric::Name {
                given: name.into(),
                known: RUN_METRICS
                    .iter()
                    .map(|(n, _)| *n)
                    .chain(declared.iter().map(|metric| metric.name))
                    .collect(),
            }),
        }
    }

    /// Every run's metrics with their meaning, for help texts.
    pub fn run_metrics_help() -> &'static str {
        "tps (higher is better), p50, p95, p99 (latency, ms), client_cpu, server_cpu (CPU µs per \
         transaction of the driver, of the server's processes; lower is better), \
         statement:<text> (the mean time of the statement whose text begins so)"
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Workload(metric) => metric.name.to_string(),
            Metric::Statement(text) => format!("{STATEMENT_PREFIX}{text}"),
            Metric::AgainstControl { metric, control } => format!("{} / {control}", metric.name()),
            run => RUN_METRICS
                .iter()
                .find(|(_, m)| m == run)
                .expect("a run metric")
                .0
                .to_string(),
        }
    }

    pub fn direction(&self) -> Direction {
        match self {
            Metric::Tps => Direction::HigherIsBetter,
            Metric::P50
            | Metric::P95
            | Metric::P99
            | Metric::ClientCpu
            | Metric::ServerCpu
            | Metric::Statement(_) => Direction::LowerIsBetter,
            Metric::Workload(metric) => metric.direction,
            Metric::AgainstControl { metric, .. } => metric.direction(),
        }
    }

    /// Whether the metric reads the runs' statements (`StoredRun::statements`), which the
    /// commands then load.
    pub fn needs_statements(&self) -> bool {
        match self {
            Metric::Statement(_) => true,
            Metric::AgainstControl { metric, .. } => metric.needs_statements(),
            _ => false,
        }
    }

    pub fn of(&self, run: &StoredRun) -> Option<f64> {
        match self {
            Metric::Tps => run.tps,
            Metric::P50 => run.p50_ms,
            Metric::P95 => run.p95_ms,
            Metric::P99 => run.p99_ms,
            Metric::ClientCpu => run.client_cpu_us_per_txn,
            Metric::ServerCpu => run.server_cpu_us_per_txn,
            Metric::Workload(metric) => run.workload_metric(metric.name),
            Metric::Statement(text) => statement_mean(run, text),
            Metric::AgainstControl { metric, .. } => Some(metric.of(run)? / run.control?),
        }
    }
}

/// A statement's text as `statement:` matches it: lower case, white space runs as one space.
pub fn statement_key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The calls-weighted mean time (ms) of the run's statements whose text begins with `text`.
fn statement_mean(run: &StoredRun, text: &str) -> Option<f64> {
    let (time, calls) = run
        .statements
        .iter()
        .filter(|s| s.calls > 0 && statement_key(&s.query).starts_with(text))
        .filter_map(|s| Some((s.mean_ms? * s.calls as f64, s.calls as f64)))
        .fold((0.0, 0.0), |(t, c), (time, calls)| (t + time, c + calls));
    (calls > 0.0).then(|| time / calls)
}

#[derive(Debug, Clone, Serialize)]
pub struct CellComparison {
    pub cell: CellKey,
    pub base_runs: usize,
    pub other_runs: usize,
    pub base_median: f64,
    pub other_median: f64,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: f64,
    pub verdict: String,
    /// Set when the runs are too few for any verdict: runs needed per side.
    pub runs_needed: Option<usize>,
    /// Rounds analysed as pairs; None when the runs did not pair up (the unpaired analysis).
    pub pairs: Option<usize>,
    /// How far the interval reaches from the ratio, relative (0.03 for ±3%).
    pub precision: Option<f64>,
    /// Standard deviation of the rounds' log ratios: the noise that pairing leaves.
    pub log_ratio_sd: Option<f64>,
    /// In an auto lab: why the cell stopped (precision, cap, budget) and after how many rounds.
    pub stopped: Option<String>,
    pub rounds: Option<u32>,
    /// Paired: each round's ratio other / base, by round (repetition, from 0), which the
    /// ratio is the geometric mean of.
    pub round_ratios: Vec<(u32, f64)>,
    /// Paired: the rounds whose ratio lies far from the others' (a robust z over 3.5).
    pub outlier_rounds: Vec<u32>,
    /// Paired and undecided: the rounds in all that would decide it at the measured noise.
    pub rounds_to_decide: Option<usize>,
}

impl CellComparison {
    /// "4.2% after 8 rounds (precision)": how far the cell was measured, when an auto lab
    /// stopped it.
    pub fn stop_text(&self) -> Option<String> {
        let stopped = self.stopped.as_deref()?;
        let rounds = self.rounds.unwrap_or(0);
        Some(format!("{stopped} after {rounds} rounds"))
    }

    /// "5 pairs" when the rounds were paired, "5/4" (base/other runs) otherwise.
    pub fn runs_text(&self) -> String {
        match self.pairs {
            Some(pairs) => format!("{pairs} pairs"),
            None => format!("{}/{}", self.base_runs, self.other_runs),
        }
    }

    /// "±1.5%": the precision reached; "-" without an interval.
    pub fn precision_text(&self) -> String {
        self.precision
            .map_or("-".into(), |p| format!("±{:.1}%", p * 100.0))
    }

    pub fn is_decided(&self) -> bool {
        self.verdict == "faster" || self.verdict == "slower"
    }

    /// Paired: the median of the rounds' ratios, beside their geometric mean (`ratio`), which
    /// one wild round moves and the median does not.
    pub fn median_round_ratio(&self) -> Option<f64> {
        let ratios: Vec<f64> = self.round_ratios.iter().map(|(_, r)| *r).collect();
        median(&ratios)
    }

    /// "select-only scale 10 × 4 clients".
    pub fn cell_text(&self) -> String {
        format!(
            "{} {}",
            self.cell.script,
            size_text(&self.cell.scale, self.cell.clients)
        )
    }
}

/// Every cell both targets completed, in cell order.
pub fn compare_targets(
    runs: &[StoredRun],
    base: &str,
    other: &str,
    metric: &Metric,
) -> Vec<CellComparison> {
    let base_cells = rounds_by_cell(runs, base, metric);
    let other_cells = rounds_by_cell(runs, other, metric);
    base_cells
        .iter()
        .filter_map(|(cell, base_rounds)| {
            let other_rounds = other_cells.get(cell)?;
            compare_cell(cell, base_rounds, other_rounds, metric.direction())
        })
        .map(|mut row| {
            let stop = runs
                .iter()
                .find(|r| r.target == other && cell_of(r) == row.cell && r.stopped.is_some());
            if let Some(run) = stop {
                row.stopped = run.stopped.clone();
                row.rounds = run.rounds;
            }
            row
        })
        .collect()
}

/// Paired when every run of the side with fewer runs has its partner in the same round.
fn compare_cell(
    cell: &CellKey,
    base_rounds: &BTreeMap<u32, f64>,
    other_rounds: &BTreeMap<u32, f64>,
    direction: Direction,
) -> Option<CellComparison> {
    let base_values: Vec<f64> = base_rounds.values().copied().collect();
    let other_values: Vec<f64> = other_rounds.values().copied().collect();
    let rounds: Vec<(u32, f64, f64)> = base_rounds
        .iter()
        .filter_map(|(round, base)| Some((*round, *base, *other_rounds.get(round)?)))
        .collect();
    let pairs: Vec<(f64, f64)> = rounds.iter().map(|(_, b, o)| (*b, *o)).collect();
    let unpaired = verdict::compare(&base_values, &other_values, direction)?;
    let mut row = row(cell, base_values.len(), other_values.len(), &unpaired);
    let pair_up = !pairs.is_empty() && pairs.len() == base_values.len().min(other_values.len());
    if let Some(paired) = pair_up.then(|| compare_paired(&pairs, direction)).flatten() {
        take_paired(&mut row, &paired);
        take_rounds(&mut row, &rounds);
    }
    Some(row)
}

/// Each round's ratio, the rounds whose ratio is an outlier among them, and for an undecided
/// cell the rounds that would decide it.
fn take_rounds(row: &mut CellComparison, rounds: &[(u32, f64, f64)]) {
    row.round_ratios = rounds
        .iter()
        .filter(|(_, base, other)| *base > 0.0 && *other > 0.0)
        .map(|(round, base, other)| (*round, other / base))
        .collect();
    let logs: Vec<f64> = row.round_ratios.iter().map(|(_, r)| r.ln()).collect();
    if logs.len() >= MIN_RUNS_TO_FLAG {
        row.outlier_rounds = row
            .round_ratios
            .iter()
            .filter(|(_, r)| robust_z(r.ln(), &logs, SPREAD_FLOOR).is_some_and(|z| z > OUTLIER_Z))
            .map(|(round, _)| *round)
            .collect();
    }
    if row.verdict == "inconclusive" {
        row.rounds_to_decide = row
            .log_ratio_sd
            .and_then(|sd| rounds_to_decide(row.ratio, sd));
    }
}

/// The paired analysis replaces the unpaired ratio, interval, test and verdict; the medians
/// stay as the description of each side.
fn take_paired(row: &mut CellComparison, paired: &PairedComparison) {
    row.pairs = Some(paired.pairs);
    row.ratio = paired.ratio;
    row.ci_low = paired.interval.map(|i| i.0);
    row.ci_high = paired.interval.map(|i| i.1);
    row.p_value = paired.p_value;
    row.verdict = verdict_text(&paired.verdict);
    row.runs_needed = match paired.verdict {
        Verdict::NeedRuns(n) => Some(n),
        _ => None,
    };
    row.precision = paired.precision();
    row.log_ratio_sd = paired.log_ratio_sd;
}

fn row(cell: &CellKey, base_runs: usize, other_runs: usize, c: &Comparison) -> CellComparison {
    CellComparison {
        cell: cell.clone(),
        base_runs,
        other_runs,
        base_median: c.base_median,
        other_median: c.other_median,
        ratio: c.ratio,
        ci_low: c.interval.map(|i| i.0),
        ci_high: c.interval.map(|i| i.1),
        p_value: c.p_value,
        verdict: verdict_text(&c.verdict),
        runs_needed: match c.verdict {
            Verdict::NeedRuns(n) => Some(n),
            _ => None,
        },
        pairs: None,
        precision: c
            .interval
            .map(|(low, high)| (high / c.ratio - 1.0).max(1.0 - low / c.ratio)),
        log_ratio_sd: None,
        stopped: None,
        rounds: None,
        round_ratios: Vec::new(),
        outlier_rounds: Vec::new(),
        rounds_to_decide: None,
    }
}

/// "1.032 [1.011–1.054]"; the ratio alone without an interval; "-" without a ratio.
pub fn ratio_text(ratio: Option<f64>, low: Option<f64>, high: Option<f64>) -> String {
    match (ratio, low, high) {
        (Some(ratio), Some(low), Some(high)) => format!("{ratio:.3} [{low:.3}–{high:.3}]"),
        (Some(ratio), _, _) => format!("{ratio:.3}"),
        _ => "-".into(),
    }
}

pub fn verdict_text(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Better => "faster".into(),
        Verdict::Worse => "slower".into(),
        Verdict::NoDifference => "no detectable difference".into(),
        Verdict::Inconclusive => "inconclusive".into(),
        Verdict::NeedRuns(n) => format!("need ≥ {n} runs"),
    }
}

/// A group of cells' rounds as one comparison: per round in which every selected cell ran on
/// both targets, (1, the geometric mean of the cells' ratios other / base), the pairs
/// `compare_paired` reads. A group's interval is then the t interval of the rounds' mean log
/// ratios: the rounds' shared drift counts once, not once per cell, and a cell that moved alone
/// moves the group by its share.
pub struct GroupRounds {
    /// Selected cells both targets completed.
    pub cells: usize,
    pub pairs: Vec<(f64, f64)>,
}

pub fn group_rounds(
    runs: &[StoredRun],
    base: &str,
    other: &str,
    metric: &Metric,
    selects: impl Fn(&CellKey) -> bool,
) -> GroupRounds {
    let mut base_cells = rounds_by_cell(runs, base, metric);
    base_cells.retain(|cell, _| selects(cell));
    let other_cells = rounds_by_cell(runs, other, metric);
    let cells: Vec<&CellKey> = base_cells
        .keys()
        .filter(|c| other_cells.contains_key(*c))
        .collect();
    let Some(first) = cells.first() else {
        return GroupRounds {
            cells: 0,
            pairs: Vec::new(),
        };
    };
    let pairs = base_cells[*first]
        .keys()
        .filter_map(|round| {
            let logs: Option<Vec<f64>> = cells
                .iter()
                .map(|cell| {
                    let (b, o) = (
                        base_cells[*cell].get(round)?,
                        other_cells[*cell].get(round)?,
                    );
                    (*b > 0.0 && *o > 0.0).then(|| (o / b).ln())
                })
                .collect();
            let logs = logs?;
            Some((1.0, (logs.iter().sum::<f64>() / logs.len() as f64).exp()))
        })
        .collect();
    GroupRounds {
        cells: cells.len(),
        pairs,
    }
}

/// The target's completed runs' values per cell, by round (repetition).
fn rounds_by_cell(
    runs: &[StoredRun],
    target: &str,
    metric: &Metric,
) -> BTreeMap<CellKey, BTreeMap<u32, f64>> {
    let mut cells: BTreeMap<CellKey, BTreeMap<u32, f64>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|r| r.target == target && r.status == RunStatus::Completed)
    {
        if let Some(value) = metric.of(run) {
            cells
                .entry(cell_of(run))
                .or_default()
                .insert(run.repetition, value);
        }
    }
    cells
}

/// The target's completed runs' values per cell.
pub fn by_cell(runs: &[StoredRun], target: &str, metric: &Metric) -> BTreeMap<CellKey, Vec<f64>> {
    let mut cells: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|r| r.target == target && r.status == RunStatus::Completed)
    {
        if let Some(value) = metric.of(run) {
            cells.entry(cell_of(run)).or_default().push(value);
        }
    }
    cells
}

pub fn cell_of(run: &StoredRun) -> CellKey {
    CellKey {
        workload: run.workload.clone(),
        family: run.family.clone(),
        script: run.script.clone(),
        scale: run.scale.clone(),
        clients: run.clients,
    }
}

/// Targets in the order they first ran.
pub fn targets(runs: &[StoredRun]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for run in runs {
        if !seen.contains(&run.target) {
            seen.push(run.target.clone());
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOPM: WorkloadMetric = WorkloadMetric {
        name: "nopm",
        direction: Direction::HigherIsBetter,
        from_server: true,
    };
    const LATENCY: WorkloadMetric = WorkloadMetric {
        name: "wait",
        direction: Direction::LowerIsBetter,
        from_server: false,
    };

    #[test]
    fn a_statement_metric_is_the_calls_weighted_mean_of_the_statements_it_names() {
        let metric = Metric::parse("statement:INSERT  INTO pgbench_history", &[]).unwrap();
        assert_eq!(metric.name(), "statement:insert into pgbench_history");
        assert_eq!(metric.direction(), Direction::LowerIsBetter);
        let row = |query: &str, calls: i64, mean: f64| stampede_store::StatementRow {
            query: query.into(),
            calls,
            mean_ms: Some(mean),
            stddev_ms: None,
            rows: None,
            shared_blks_hit: None,
            shared_blks_read: None,
        };
        let run = StoredRun {
            statements: vec![
                row("INSERT INTO pgbench_history (tid) VALUES ($1)", 30, 0.2),
                row(
                    "insert into pgbench_history (tid, bid) values ($1, $2)",
                    10,
                    0.6,
                ),
                row("UPDATE pgbench_accounts SET abalance = $1", 40, 1.0),
            ],
            ..crate::report::machines::tests::run(1, 0, "host", "model", "kernel")
        };
        // (30 · 0.2 + 10 · 0.6) / 40 = 0.3
        assert!((metric.of(&run).unwrap() - 0.3).abs() < 1e-12);
        let none = Metric::parse("statement:SELECT", &[]).unwrap();
        assert_eq!(none.of(&run), None);
        assert_eq!(
            Metric::parse("statement: ", &[]).unwrap_err().to_string(),
            "\"statement: \": give the statement's text (its beginning is enough) after \"statement:\""
        );
    }

    #[test]
    fn declared_metrics_are_parsed_with_their_direction() {
        let declared = [&NOPM, &LATENCY];
        let nopm = Metric::parse("nopm", &declared).unwrap();
        assert_eq!(nopm.name(), "nopm");
        assert_eq!(nopm.direction(), Direction::HigherIsBetter);
        let wait = Metric::parse("wait", &declared).unwrap();
        assert_eq!(wait.direction(), Direction::LowerIsBetter);
        assert_eq!(
            Metric::parse("p99", &declared).unwrap().direction(),
            Direction::LowerIsBetter
        );
        for name in ["tps", "p50", "p95", "p99", "client_cpu", "server_cpu"] {
            assert_eq!(Metric::parse(name, &declared).unwrap().name(), name);
        }
        assert_eq!(
            Metric::parse("server_cpu", &declared).unwrap().direction(),
            Direction::LowerIsBetter
        );
        assert_eq!(
            Metric::parse("qps", &declared).unwrap_err().to_string(),
            "unknown metric \"qps\"; use tps, p50, p95, p99, client_cpu, server_cpu, nopm or wait (or statement:<text>)"
        );
    }
}
