//! A workload's cells side by side, as Callaghan lays out his Insert Benchmark and sysbench
//! results: per scale and client count, a row per target and a column per variant (a step) in
//! the order they ran; the base's row holds the metric itself, every other row its ratio to
//! the base with the paired interval and the verdict. Under each number, the runs' throughput
//! second by second: its coefficient of variation and longest stall (the most seconds in a row
//! without a transaction), medians over the cell's runs — his "IPS over time" in two numbers.

use std::collections::HashMap;

use serde::Serialize;

use super::comparison::{CellComparison, CellKey};
use super::noise::RunProbes;
use stampede_store::{RunStatus, StoredRun};

#[derive(Debug, Serialize)]
pub struct StepTable {
    pub workload: String,
    pub scale: String,
    pub clients: i64,
    /// The variants, in the order they first ran.
    pub steps: Vec<String>,
    pub rows: Vec<StepRow>,
}

#[derive(Debug, Serialize)]
pub struct StepRow {
    pub target: String,
    /// One per step; None where the target has no completed run of it.
    pub cells: Vec<Option<StepCell>>,
}

#[derive(Debug, Serialize)]
pub struct StepCell {
    /// The base's median of the metric; another target's ratio to it.
    pub value: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Option<String>,
    /// Medians over the cell's runs of their per-second throughput's coefficient of variation
    /// and of their longest stall in seconds.
    pub cv: Option<f64>,
    pub stall_s: Option<f64>,
}

/// Per target other than the base, its cells against the base's.
pub type Comparisons<'a> = [(&'a str, &'a [CellComparison])];

/// The tables of the workloads (per scale and clients) measured with two variants or more.
pub fn step_tables(
    runs: &[StoredRun],
    base: &str,
    comparisons: &Comparisons<'_>,
    probes: &RunProbes,
) -> Vec<StepTable> {
    let completed: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Completed)
        .collect();
    let mut tables: Vec<StepTable> = Vec::new();
    let mut targets: Vec<&str> = Vec::new();
    for run in &completed {
        if !targets.contains(&run.target.as_str()) {
            targets.push(&run.target);
        }
        let table = match tables.iter_mut().find(|t| same_group(t, run)) {
            Some(table) => table,
            None => {
                tables.push(StepTable {
                    workload: run.workload.clone(),
                    scale: run.scale.clone(),
                    clients: run.clients,
                    steps: Vec::new(),
                    rows: Vec::new(),
                });
                tables.last_mut().expect("a table was pushed just above")
            }
        };
        if !table.steps.contains(&run.script) {
            table.steps.push(run.script.clone());
        }
    }
    targets.sort_by_key(|t| *t != base);
    tables.retain(|t| t.steps.len() >= 2);
    for table in &mut tables {
        table.rows = targets
            .iter()
            .map(|target| StepRow {
                target: target.to_string(),
                cells: table
                    .steps
                    .iter()
                    .map(|step| cell(&completed, table, target, step, base, comparisons, probes))
                    .collect(),
            })
            .collect();
    }
    tables
}

fn same_group(table: &StepTable, run: &StoredRun) -> bool {
    table.workload == run.workload && table.scale == run.scale && table.clients == run.clients
}

fn cell(
    runs: &[&StoredRun],
    table: &StepTable,
    target: &str,
    step: &str,
    base: &str,
    comparisons: &Comparisons<'_>,
    probes: &RunProbes,
) -> Option<StepCell> {
    let of_cell: Vec<&StoredRun> = runs
        .iter()
        .copied()
        .filter(|r| same_group(table, r) && r.target == target && r.script == step)
        .collect();
    if of_cell.is_empty() {
        return None;
    }
    let cv = median_of(
        of_cell
            .iter()
            .filter_map(|r| probes.series_cv.get(&r.id).copied()),
    );
    let stall_s = median_of(
        of_cell
            .iter()
            .map(|r| longest_stall(probes.stall_seconds.get(&r.id)) as f64),
    );
    let is_this = |key: &CellKey| {
        key.workload == table.workload
            && key.scale == table.scale
            && key.clients == table.clients
            && key.script == step
    };
    let compared = comparisons
        .iter()
        .flat_map(|(target, cells)| cells.iter().map(move |cell| (*target, cell)))
        .filter(|(_, cell)| is_this(&cell.cell));
    if target == base {
        let base_median = compared.map(|(_, cell)| cell.base_median).next();
        return Some(StepCell {
            value: base_median.or_else(|| median_of(of_cell.iter().filter_map(|r| r.tps)))?,
            ci_low: None,
            ci_high: None,
            verdict: None,
            cv,
            stall_s,
        });
    }
    let (_, compared) = compared.into_iter().find(|(t, _)| *t == target)?;
    Some(StepCell {
        value: compared.ratio,
        ci_low: compared.ci_low,
        ci_high: compared.ci_high,
        verdict: Some(compared.verdict.clone()),
        cv,
        stall_s,
    })
}

/// The most consecutive seconds in `seconds` (sorted).
fn longest_stall(seconds: Option<&Vec<u64>>) -> u64 {
    let mut longest = 0;
    let mut current = 0;
    let mut previous: Option<u64> = None;
    for &second in seconds.map_or(&[][..], Vec::as_slice) {
        current = if previous == Some(second.wrapping_sub(1)) {
            current + 1
        } else {
            1
        };
        longest = longest.max(current);
        previous = Some(second);
    }
    longest
}

fn median_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let values: Vec<f64> = values.collect();
    stampede_stats::median(&values)
}

/// Per run id, the coefficient of variation of its per-second throughput.
pub fn series_cv(series: &[(i64, u64, f64)]) -> HashMap<i64, f64> {
    let mut by_run: HashMap<i64, Vec<f64>> = HashMap::new();
    for (run, _, tps) in series {
        by_run.entry(*run).or_default().push(*tps);
    }
    by_run
        .into_iter()
        .filter_map(|(run, values)| Some((run, stampede_stats::coefficient_of_variation(&values)?)))
        .collect()
}

/// Markdown: one table per workload, scale and client count.
pub fn markdown(tables: &[StepTable], metric: &str, base: &str) -> String {
    let mut out = String::new();
    for table in tables {
        out += &format!(
            "## {} per step at scale {}, {} clients (base {base}: its {metric}; others: ratio to it)\n\n\
             Each cell: the number, then the per-second throughput's coefficient of variation and longest stall (medians over the runs).\n\n",
            table.workload, table.scale, table.clients
        );
        out += &format!("| target | {} |\n", table.steps.join(" | "));
        out += &format!("|---|{}\n", "---|".repeat(table.steps.len()));
        for row in &table.rows {
            let cells: Vec<String> = row.cells.iter().map(|c| cell_text(c.as_ref())).collect();
            out += &format!("| {} | {} |\n", row.target, cells.join(" | "));
        }
        out += "\n";
    }
    out
}

/// "1.032 [1.011–1.054] faster; cv 0.041, stall 0 s", or the base's "52012.3; cv …".
pub fn cell_text(cell: Option<&StepCell>) -> String {
    let Some(cell) = cell else {
        return "-".into();
    };
    let number = match &cell.verdict {
        None => format!("{:.1}", cell.value),
        Some(verdict) => format!(
            "{} {verdict}",
            super::comparison::ratio_text(Some(cell.value), cell.ci_low, cell.ci_high)
        ),
    };
    let cv = cell.cv.map_or("-".into(), |cv| format!("{cv:.3}"));
    let stall = cell.stall_s.map_or("-".into(), |s| format!("{s:.0} s"));
    format!("{number}; cv {cv}, stall {stall}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_stall_counts_consecutive_seconds() {
        assert_eq!(longest_stall(None), 0);
        assert_eq!(longest_stall(Some(&vec![3])), 1);
        assert_eq!(longest_stall(Some(&vec![0, 1, 2, 7, 9, 10])), 3);
        assert_eq!(longest_stall(Some(&vec![4, 6, 7, 8, 9])), 4);
    }

    #[test]
    fn each_run_gets_its_own_cv() {
        let series = [
            (1, 0, 10.0),
            (1, 1, 10.0),
            (2, 0, 5.0),
            (2, 1, 15.0),
            (3, 0, 4.0),
        ];
        let cv = series_cv(&series);
        assert_eq!(cv.get(&1), Some(&0.0));
        assert!((cv[&2] - (50f64.sqrt() / 10.0)).abs() < 1e-12);
        assert_eq!(cv.get(&3), None, "one second has no spread");
    }
}
