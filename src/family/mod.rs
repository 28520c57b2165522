//! Workload families, each in a folder of its own holding everything of it (flags, command, lab
//! adapter, schema, loader, scripts, single-run report), and the one registry of the lab
//! workloads they offer. Spec validation, the lab and `lab plan` read the registry; nothing else
//! lists families, and no family imports another.

pub mod api;
pub mod common;
pub mod dbstress;
pub mod ibench;
pub mod pgbench;
pub mod replay;
pub mod sysbench;
pub mod tpcc;
pub mod tproch;

use api::{LabWorkloadKind, WorkloadMetric};

/// Every family's lab workloads, in the order `lab plan` and errors list them.
const FAMILIES: &[&[LabWorkloadKind]] = &[
    pgbench::lab::KINDS,
    sysbench::lab::KINDS,
    tpcc::lab::KINDS,
    tproch::lab::KINDS,
    dbstress::lab::KINDS,
    ibench::lab::KINDS,
    replay::lab::KINDS,
];

/// The lab workloads, as a spec names them in `[[workload]] name`.
pub fn lab_workloads() -> impl Iterator<Item = &'static LabWorkloadKind> {
    FAMILIES.iter().copied().flatten()
}

/// The lab workload a spec names, if any family offers it.
pub fn lab_workload(name: &str) -> Option<&'static LabWorkloadKind> {
    lab_workloads().find(|kind| kind.name == name)
}

/// The metrics the families' runs report beyond tps and latency, each once, in registry order.
pub fn workload_metrics() -> Vec<&'static WorkloadMetric> {
    let mut metrics: Vec<&'static WorkloadMetric> = Vec::new();
    for metric in lab_workloads().flat_map(|kind| kind.metrics) {
        if !metrics.iter().any(|known| known.name == metric.name) {
            metrics.push(metric);
        }
    }
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_stats::verdict::Direction;

    #[test]
    fn the_workloads_declare_qps_nopm_tpm_and_ips_once_each_higher_being_better() {
        let metrics = workload_metrics();
        let names: Vec<&str> = metrics.iter().map(|metric| metric.name).collect();
        assert_eq!(names, ["qps", "nopm", "tpm", "ips"]);
        assert!(metrics
            .iter()
            .all(|metric| metric.direction == Direction::HigherIsBetter));
    }
}
