//! Where a lab's runs ran, when that was more than one place (a lab sharded over a fleet, or
//! one resumed on another machine): per machine its shards, cells and runs, and a warning when
//! machines meant to be alike differ in CPU model or kernel. A cell's targets and rounds always
//! ran on one machine, so each verdict compares targets; numbers of cells on different
//! machines compare machines too.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use stampede_store::StoredRun;

#[derive(Debug, Serialize, PartialEq)]
pub struct MachineRow {
    /// Host (a pod's node), cores × CPU model, and a CPU limit when there was one.
    pub machine: String,
    pub kernel: String,
    pub shards: Vec<u32>,
    /// workload/script/scale/clients: the cells (on every target) it ran.
    pub cells: Vec<String>,
    pub runs: usize,
}

/// What one machine ran.
#[derive(Default)]
struct Seen {
    shards: BTreeSet<u32>,
    cells: BTreeSet<String>,
    runs: usize,
}

/// One row per machine, when the runs name more than one machine or a shard; else none.
pub fn machines(runs: &[StoredRun]) -> Vec<MachineRow> {
    let mut by_machine: BTreeMap<(String, String), Seen> = BTreeMap::new();
    for run in runs {
        let Some(machine) = &run.machine else {
            continue;
        };
        let seen = by_machine
            .entry((machine.key.clone(), machine.kernel.clone()))
            .or_default();
        seen.shards.extend(run.shard);
        seen.cells.insert(format!(
            "{}/{}/{}/{}",
            run.workload, run.script, run.scale, run.clients
        ));
        seen.runs += 1;
    }
    let sharded = runs.iter().any(|run| run.shard.is_some());
    if by_machine.len() < 2 && !sharded {
        return Vec::new();
    }
    by_machine
        .into_iter()
        .map(|((machine, kernel), seen)| MachineRow {
            machine,
            kernel,
            shards: seen.shards.into_iter().collect(),
            cells: seen.cells.into_iter().collect(),
            runs: seen.runs,
        })
        .collect()
}

/// A warning when the lab's machines differ in CPU model or kernel.
pub fn unlike(runs: &[StoredRun]) -> Option<String> {
    let mut models: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut kernels: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for machine in runs.iter().filter_map(|run| run.machine.as_ref()) {
        let host = machine.key.split(',').next().unwrap_or(&machine.key);
        models.entry(&machine.cpu_model).or_default().insert(host);
        kernels.entry(&machine.kernel).or_default().insert(host);
    }
    let differs = |what: &str, values: &BTreeMap<&str, BTreeSet<&str>>| {
        (values.len() > 1).then(|| {
            let each: Vec<String> = values
                .iter()
                .map(|(value, hosts)| {
                    let hosts: Vec<&str> = hosts.iter().copied().collect();
                    format!("{value} on {}", hosts.join(", "))
                })
                .collect();
            format!("{what}: {}", each.join("; "))
        })
    };
    let differences: Vec<String> = [differs("CPU model", &models), differs("kernel", &kernels)]
        .into_iter()
        .flatten()
        .collect();
    (!differences.is_empty()).then(|| {
        format!(
            "the lab's machines are not alike ({}): each cell's verdict compares its targets on one \
             machine, but cells on different machines also compare the machines (see \"Machines\")",
            differences.join("; ")
        )
    })
}

/// The section's columns, its header first.
pub const HEADER: [&str; 5] = ["machine", "kernel", "shards", "cells", "runs"];

/// Each machine's row as text, in `HEADER`'s order.
pub fn cells(row: &MachineRow) -> [String; 5] {
    let shards: Vec<String> = row.shards.iter().map(u32::to_string).collect();
    [
        row.machine.clone(),
        row.kernel.clone(),
        if shards.is_empty() {
            "-".into()
        } else {
            shards.join(", ")
        },
        row.cells.join(", "),
        row.runs.to_string(),
    ]
}

pub fn markdown(rows: &[MachineRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Machines\n\n| {} |\n|---|---|---|---|---|\n",
        HEADER.join(" | ")
    );
    for row in rows {
        out += &format!("| {} |\n", cells(row).join(" | "));
    }
    out + "\n"
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use stampede_store::{RunMachine, RunStatus};

    pub(crate) fn run(
        clients: i64,
        shard: u32,
        host: &str,
        model: &str,
        kernel: &str,
    ) -> StoredRun {
        StoredRun {
            id: 1,
            target: "a".into(),
            workload: "pgbench".into(),
            family: "pgbench".into(),
            script: "select-only".into(),
            scale: "1".into(),
            clients,
            repetition: 0,
            status: RunStatus::Completed,
            duration_s: None,
            tps: None,
            p50_ms: None,
            p95_ms: None,
            p99_ms: None,
            client_cpu_us_per_txn: None,
            server_cpu_us_per_txn: None,
            server_key: None,
            served: None,
            workload_metrics: Vec::new(),
            stopped: None,
            rounds: None,
            shard: Some(shard),
            machine: Some(RunMachine {
                key: format!("{host}, 64 × {model}"),
                cpu_model: model.into(),
                kernel: kernel.into(),
            }),
            statements: Vec::new(),
            control: None,
        }
    }

    #[test]
    fn each_machine_lists_its_shards_and_cells() {
        let runs = [
            run(1, 0, "node-a", "EPYC 9654", "6.1"),
            run(1, 0, "node-a", "EPYC 9654", "6.1"),
            run(2, 1, "node-b", "EPYC 9654", "6.1"),
        ];
        let rows = machines(&runs);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].shards, [0]);
        assert_eq!(rows[0].cells, ["pgbench/select-only/1/1"]);
        assert_eq!(rows[0].runs, 2);
        assert_eq!(unlike(&runs), None);
        assert!(markdown(&rows)
            .contains("| node-b, 64 × EPYC 9654 | 6.1 | 1 | pgbench/select-only/1/2 | 1 |"));
    }

    #[test]
    fn machines_that_differ_are_named() {
        let runs = [
            run(1, 0, "node-a", "EPYC 9654", "6.1"),
            run(2, 1, "node-b", "Xeon 8480", "6.8"),
        ];
        assert_eq!(
            unlike(&runs).unwrap(),
            "the lab's machines are not alike (CPU model: EPYC 9654 on node-a; Xeon 8480 on \
             node-b; kernel: 6.1 on node-a; 6.8 on node-b): each cell's verdict compares its \
             targets on one machine, but cells on different machines also compare the machines \
             (see \"Machines\")"
        );
    }

    #[test]
    fn a_sharded_runs_series_is_its_machines() {
        let sharded = run(4, 1, "node-b", "EPYC", "6.1");
        assert_eq!(
            crate::report::history::cell_key(&sharded),
            "a/pgbench/select-only/1/4 on node-b, 64 × EPYC"
        );
        let mut local = sharded;
        local.shard = None;
        assert_eq!(
            crate::report::history::cell_key(&local),
            "a/pgbench/select-only/1/4"
        );
    }

    #[test]
    fn one_machine_without_shards_needs_no_section() {
        let mut one = run(1, 0, "node-a", "EPYC", "6.1");
        one.shard = None;
        assert!(machines(&[one]).is_empty());
    }
}
