//! A Job of independent pods (a lab's shards): each index runs to its own end, one that fails
//! leaves the others running (the Job's `backoffLimitPerIndex: 0`), and the launcher reports per
//! index which succeeded and why the others failed. A reason that concerns every pod (none can be
//! scheduled, the image is missing) still ends the whole run at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::launch::{job_condition, name_of, pod_failure, Run, POLL};
use crate::{Cluster, KubeError, Manifests};

/// What the caller watches for.
pub struct FleetWatch<'a> {
    /// Set by Ctrl-C.
    pub stop: Arc<AtomicBool>,
    /// How long a pod may stay unscheduled or not started before the run fails.
    pub start_timeout: Duration,
    /// Called after every look at the pods: the caller's progress.
    pub on_tick: &'a mut dyn FnMut(&FleetStatus),
}

/// The pods as the launcher last saw them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FleetStatus {
    /// Indexes whose pod is running.
    pub running: BTreeSet<usize>,
    /// Indexes that ran to success.
    pub succeeded: BTreeSet<usize>,
    /// Indexes that failed, with the pod's reason and the end of its output.
    pub failed: BTreeMap<usize, String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum FleetEnding {
    /// Every index ran to its end (succeeded or failed).
    Finished,
    /// Stopped by the user (the objects were deleted).
    Interrupted,
}

#[derive(Debug)]
pub struct FleetOutcome {
    pub ending: FleetEnding,
    pub status: FleetStatus,
}

impl Cluster {
    /// Creates the objects, follows every index to its end and deletes them. `on_tick` runs
    /// outside the cluster's runtime, so it may use a runtime of its own (a results database).
    pub fn run_fleet(
        &self,
        manifests: Manifests,
        watch: FleetWatch<'_>,
    ) -> Result<FleetOutcome, KubeError> {
        let pods = manifests
            .job
            .spec
            .as_ref()
            .and_then(|spec| spec.completions)
            .unwrap_or(1) as usize;
        let run = Run::new(self.client(), &manifests);
        let created = self.runtime().block_on(run.create(manifests));
        let result = created.and_then(|()| self.follow(&run, pods, watch));
        self.runtime().block_on(run.delete());
        result
    }

    fn follow(
        &self,
        run: &Run,
        pods: usize,
        watch: FleetWatch<'_>,
    ) -> Result<FleetOutcome, KubeError> {
        let started = Instant::now();
        let mut status = FleetStatus::default();
        // The reasons of pods seen failing, kept for when the Job counts their index as failed.
        let mut reasons: BTreeMap<usize, String> = BTreeMap::new();
        loop {
            if watch.stop.load(Ordering::SeqCst) {
                return Ok(FleetOutcome {
                    ending: FleetEnding::Interrupted,
                    status,
                });
            }
            let elapsed = started.elapsed();
            self.runtime().block_on(look(
                run,
                elapsed,
                watch.start_timeout,
                &mut status,
                &mut reasons,
            ))?;
            (watch.on_tick)(&status);
            if status.succeeded.len() + status.failed.len() >= pods {
                return Ok(FleetOutcome {
                    ending: FleetEnding::Finished,
                    status,
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

/// One look at the pods and the Job: which indexes run, succeeded and failed (and why).
async fn look(
    run: &Run,
    elapsed: Duration,
    start_timeout: Duration,
    status: &mut FleetStatus,
    reasons: &mut BTreeMap<usize, String>,
) -> Result<(), KubeError> {
    let listed = run.list_pods().await?;
    for (index, pod) in &listed {
        let Some(reason) = pod_failure(pod, elapsed, start_timeout) else {
            continue;
        };
        if !ran(pod) {
            // Not scheduled, no image: no pod of the Job would fare better.
            return Err(with_tail(run, pod, &reason).await);
        }
        if !reasons.contains_key(index) {
            reasons.insert(*index, with_tail(run, pod, &reason).await.0);
        }
    }
    let job = run.job().await?;
    status.running = listed
        .iter()
        .filter(|(_, pod)| phase(pod) == Some("Running"))
        .map(|(index, _)| *index)
        .collect();
    status.succeeded = indexes(job_status(&job, |s| s.completed_indexes.as_deref()));
    for index in indexes(job_status(&job, |s| s.failed_indexes.as_deref())) {
        let reason = reasons
            .get(&index)
            .cloned()
            .unwrap_or_else(|| format!("its pod (index {index}) was deleted or lost its node"));
        status.failed.entry(index).or_insert(reason);
    }
    if let Some(reason) = job_condition(&job, "Failed").filter(|_| status.failed.is_empty()) {
        return Err(KubeError::new(format!("the Job failed: {reason}")));
    }
    Ok(())
}

/// Whether the pod's container started at all (so its failure is its own run's).
fn ran(pod: &Pod) -> bool {
    let started = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some() || s.terminated.is_some());
    started || matches!(phase(pod), Some("Failed") | Some("Succeeded"))
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

fn job_status(
    job: &Job,
    field: fn(&k8s_openapi::api::batch::v1::JobStatus) -> Option<&str>,
) -> &str {
    job.status.as_ref().and_then(field).unwrap_or("")
}

async fn with_tail(run: &Run, pod: &Pod, reason: &str) -> KubeError {
    let mut message = format!("pod {} {reason}", name_of(pod));
    let tail = run.log_tail(name_of(pod)).await;
    if !tail.is_empty() {
        message.push_str("; its last output:");
        for line in tail {
            message.push_str("\n  ");
            message.push_str(&line);
        }
    }
    KubeError::new(message)
}

/// The Job's "1,3-5" index lists as a set.
fn indexes(text: &str) -> BTreeSet<usize> {
    let mut set = BTreeSet::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((from, to)) => {
                if let (Ok(from), Ok(to)) = (from.parse::<usize>(), to.parse::<usize>()) {
                    set.extend(from..=to);
                }
            }
            None => set.extend(part.parse::<usize>().ok()),
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_are_read_as_the_job_writes_them() {
        assert_eq!(indexes(""), BTreeSet::new());
        assert_eq!(indexes("0-2"), BTreeSet::from([0, 1, 2]));
        assert_eq!(indexes("1,3-5,7"), BTreeSet::from([1, 3, 4, 5, 7]));
    }
}
