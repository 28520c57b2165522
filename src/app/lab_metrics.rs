//! `lab run --metrics-addr`: the lab's events into the live registry — each run's series
//! labelled with the lab, its target, cell and round, and the lab's runs done and failed.

use crate::lab::executor::LabEvent;
use crate::lab::spec::LabSpec;
use crate::live::endpoint::{MetricsArgs, MetricsEndpoint};
use crate::live::metrics::RunStart;
use stampede_base::error::Failure;
use stampede_store::RunStatus;

pub struct LabMetrics {
    endpoint: MetricsEndpoint,
    targets: Vec<String>,
    workloads: Vec<String>,
}

impl LabMetrics {
    /// Serving when `--metrics-addr` was given.
    pub fn start(args: &MetricsArgs, spec: &LabSpec) -> Result<Option<LabMetrics>, Failure> {
        let labels = vec![("lab".to_string(), spec.name.clone())];
        Ok(args.start(labels)?.map(|endpoint| LabMetrics {
            endpoint,
            targets: spec.targets.iter().map(|t| t.name.clone()).collect(),
            workloads: spec.workloads.iter().map(|w| w.name.clone()).collect(),
        }))
    }

    pub fn show(&self, event: &LabEvent<'_>) {
        let metrics = &self.endpoint.metrics;
        match event {
            LabEvent::RunStarting {
                total,
                cell,
                repetition,
                ..
            } => {
                metrics.plan_runs(*total as u64);
                let labels = vec![
                    ("target".to_string(), self.targets[cell.target].clone()),
                    (
                        "workload".to_string(),
                        self.workloads[cell.workload].clone(),
                    ),
                    ("cell".to_string(), cell.key.clone()),
                    ("round".to_string(), (repetition + 1).to_string()),
                ];
                metrics.start_run(RunStart {
                    labels,
                    scripts: vec![cell.script.clone()],
                    clients: cell.clients,
                    rate_limited: false,
                    new_order_script: None,
                });
            }
            LabEvent::Interval(interval) => metrics.observe(interval),
            LabEvent::RunEnded { status, .. } => {
                metrics.end_run(!matches!(status, RunStatus::Completed))
            }
            LabEvent::Note(_) | LabEvent::Setup(_) | LabEvent::Second { .. } => {}
        }
    }
}
