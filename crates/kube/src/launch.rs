//! The launcher: creates a run's objects through the API server, follows its pods, relays the
//! coordinator pod's framed output to the terminal, and deletes everything it created however
//! the run ends. A pod that cannot be scheduled, cannot pull its image, is killed or exits with
//! an error ends the run at once, named with Kubernetes' reason.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::AsyncBufReadExt;
use futures_util::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::sync::mpsc;

use crate::frame::{decode, Frame};
use crate::manifest::Manifests;
use crate::{KubeError, RUN_LABEL};

/// The label the Job controller gives each pod: its completion index.
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";
/// How often the launcher looks at the pods.
pub(crate) const POLL: Duration = Duration::from_millis(400);
/// How long the launcher waits for what it deleted to be gone.
const CLEANUP_WAIT: Duration = Duration::from_secs(60);

/// A connection to one cluster, as kubectl would make it.
pub struct Cluster {
    client: Client,
    runtime: tokio::runtime::Runtime,
    namespace: String,
}

/// How a launched run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The coordinator's exit code (0: the run succeeded; its output was relayed).
    Exited(i32),
    /// Stopped by the user (the objects were deleted).
    Interrupted,
}

#[derive(Debug)]
pub struct LaunchOutcome {
    pub ending: Ending,
    /// The coordinator's `--json` document, line by line.
    pub json: Vec<String>,
}

/// What the launcher watches for besides the pods.
pub struct Watch<'a> {
    /// Set by Ctrl-C.
    pub stop: Arc<AtomicBool>,
    /// How long a pod may stay unscheduled or not started before the run fails.
    pub start_timeout: Duration,
    /// A line for the user about the pods' progress (scheduled, running).
    pub on_status: &'a mut dyn FnMut(&str),
    /// Each framed line of the coordinator's output.
    pub on_frame: &'a mut dyn FnMut(Frame<'_>),
}

impl Cluster {
    /// kubectl's rules: `kubeconfig` or KUBECONFIG or ~/.kube/config (its `context`, or the
    /// current one), else the service account of the pod this runs in.
    pub fn connect(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Cluster, KubeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| KubeError::new(format!("could not start a runtime: {e}")))?;
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        let config = runtime.block_on(async {
            match kubeconfig {
                Some(path) => {
                    let file = Kubeconfig::read_from(path).map_err(|e| {
                        KubeError::new(format!("could not read {}: {e}", path.display()))
                    })?;
                    Config::from_custom_kubeconfig(file, &options)
                        .await
                        .map_err(|e| KubeError::new(format!("kubeconfig {}: {e}", path.display())))
                }
                None if context.is_some() => Config::from_kubeconfig(&options)
                    .await
                    .map_err(|e| KubeError::new(format!("kubeconfig: {e}"))),
                None => Config::infer().await.map_err(|e| {
                    KubeError::new(format!(
                        "no Kubernetes configuration found (KUBECONFIG, ~/.kube/config, or a \
                         pod's service account): {e}"
                    ))
                }),
            }
        })?;
        let namespace = config.default_namespace.clone();
        // The client's buffer task lives on this runtime, which runs whenever the API is asked.
        let _entered = runtime.enter();
        let client = Client::try_from(config)
            .map_err(|e| KubeError::new(format!("could not make a Kubernetes client: {e}")))?;
        Ok(Cluster {
            client,
            runtime,
            namespace,
        })
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    /// The namespace of the configuration's context ("default" when it names none).
    pub fn default_namespace(&self) -> &str {
        &self.namespace
    }

    /// Has the API server check every object as if created (`dryRun=All`): admission, schema
    /// and quota, nothing persisted.
    pub fn dry_run(&self, manifests: &Manifests) -> Result<(), KubeError> {
        let params = PostParams {
            dry_run: true,
            field_manager: Some("stampede".into()),
        };
        self.runtime.block_on(async {
            let namespace = namespace_of(manifests);
            if let Some(config_map) = &manifests.config_map {
                Api::<ConfigMap>::namespaced(self.client.clone(), &namespace)
                    .create(&params, config_map)
                    .await
                    .map_err(|e| refused("ConfigMap", e))?;
            }
            if let Some(service) = &manifests.service {
                Api::<Service>::namespaced(self.client.clone(), &namespace)
                    .create(&params, service)
                    .await
                    .map_err(|e| refused("Service", e))?;
            }
            Api::<Job>::namespaced(self.client.clone(), &namespace)
                .create(&params, &manifests.job)
                .await
                .map_err(|e| refused("Job", e))?;
            Ok(())
        })
    }

    /// Creates the objects, follows the run to its end and deletes them.
    pub fn run(&self, manifests: Manifests, watch: Watch<'_>) -> Result<LaunchOutcome, KubeError> {
        self.runtime.block_on(async {
            let run = Run::new(self.client.clone(), &manifests);
            let created = run.create(manifests).await;
            let result = match created {
                Ok(()) => run.follow(watch).await,
                Err(e) => Err(e),
            };
            run.delete().await;
            result
        })
    }
}

fn namespace_of(manifests: &Manifests) -> String {
    manifests
        .job
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into())
}

pub(crate) fn refused(kind: &str, error: kube::Error) -> KubeError {
    match error {
        kube::Error::Api(status) => KubeError::new(format!(
            "the API server refused the {kind}: {} ({})",
            status.message, status.reason
        )),
        other => KubeError::new(format!("could not create the {kind}: {other}")),
    }
}

/// One run's objects in the cluster.
pub(crate) struct Run {
    pub(crate) name: String,
    jobs: Api<Job>,
    services: Api<Service>,
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
    pods: Api<Pod>,
}

/// The coordinator's log, as it streams.
enum LogEvent {
    Line(String),
    Ended,
}

impl Run {
    pub(crate) fn new(client: Client, manifests: &Manifests) -> Run {
        let namespace = namespace_of(manifests);
        Run {
            name: manifests.job.metadata.name.clone().unwrap_or_default(),
            jobs: Api::namespaced(client.clone(), &namespace),
            services: Api::namespaced(client.clone(), &namespace),
            config_maps: Api::namespaced(client.clone(), &namespace),
            secrets: Api::namespaced(client.clone(), &namespace),
            pods: Api::namespaced(client, &namespace),
        }
    }

    pub(crate) async fn create(&self, mut manifests: Manifests) -> Result<(), KubeError> {
        let params = PostParams {
            dry_run: false,
            field_manager: Some("stampede".into()),
        };
        let job = self
            .jobs
            .create(&params, &manifests.job)
            .await
            .map_err(|e| refused("Job", e))?;
        manifests.owned_by_job(job.metadata.uid.as_deref().unwrap_or_default());
        if let Some(service) = &manifests.service {
            self.services
                .create(&params, service)
                .await
                .map_err(|e| refused("Service", e))?;
        }
        if let Some(config_map) = &manifests.config_map {
            self.config_maps
                .create(&params, config_map)
                .await
                .map_err(|e| refused("ConfigMap", e))?;
        }
        if let Some(secret) = &manifests.secret {
            self.secrets
                .create(&params, secret)
                .await
                .map_err(|e| refused("Secret", e))?;
        }
        Ok(())
    }

    async fn follow(&self, watch: Watch<'_>) -> Result<LaunchOutcome, KubeError> {
        let started = Instant::now();
        let (log_sender, mut log_lines) = mpsc::unbounded_channel();
        let mut following = false;
        let mut log_ended = false;
        let mut exit = None;
        let mut json = Vec::new();
        let mut last_status = String::new();
        loop {
            if watch.stop.load(Ordering::SeqCst) {
                return Ok(LaunchOutcome {
                    ending: Ending::Interrupted,
                    json,
                });
            }
            while let Ok(event) = log_lines.try_recv() {
                match event {
                    LogEvent::Line(line) => match decode(&line) {
                        Frame::Exit(code) => exit = Some(code),
                        Frame::Json(text) => json.push(text.to_string()),
                        frame => (watch.on_frame)(frame),
                    },
                    LogEvent::Ended => log_ended = true,
                }
            }
            let pods = self.list_pods().await?;
            if let Some(failure) = self
                .first_failure(&pods, started, watch.start_timeout)
                .await
            {
                return Err(failure);
            }
            let status = pods_status(&pods);
            if !pods.is_empty() && status != last_status {
                (watch.on_status)(&status);
                last_status = status;
            }
            if !following {
                if let Some(coordinator) = pods.get(&0).filter(|p| has_started(p)) {
                    following = true;
                    self.follow_log(name_of(coordinator), log_sender.clone());
                }
            }
            if log_ended {
                if let Some(code) = exit {
                    if code != 0 || self.job_complete().await? {
                        return Ok(LaunchOutcome {
                            ending: Ending::Exited(code),
                            json,
                        });
                    }
                } else if pods.get(&0).is_some_and(has_terminated) {
                    return Err(KubeError::new(format!(
                        "pod {} ended without saying how its run ended",
                        name_of(&pods[&0])
                    )));
                }
            }
            if let Some(reason) = self.job_failed().await? {
                return Err(KubeError::new(format!("the Job failed: {reason}")));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    pub(crate) async fn list_pods(&self) -> Result<BTreeMap<usize, Pod>, KubeError> {
        let params = ListParams::default().labels(&format!("{RUN_LABEL}={}", self.name));
        let list = self
            .pods
            .list(&params)
            .await
            .map_err(|e| KubeError::new(format!("could not list the run's pods: {e}")))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|pod| Some((pod_index(&pod)?, pod)))
            .collect())
    }

    /// The pod that failed, with its reason and the end of its output. A reason only Kubernetes
    /// knows (unschedulable, no image, out of memory) comes first; then a worker's own exit,
    /// and pod 0's last: its account usually names the worker that failed.
    async fn first_failure(
        &self,
        pods: &BTreeMap<usize, Pod>,
        started: Instant,
        start_timeout: Duration,
    ) -> Option<KubeError> {
        let waited = started.elapsed();
        let failures: Vec<(&Pod, String)> = pods
            .values()
            .filter_map(|pod| Some((pod, pod_failure(pod, waited, start_timeout)?)))
            .collect();
        let exit = |reason: &str| reason.starts_with("exited with code");
        let (pod, reason) = failures
            .iter()
            .find(|(_, reason)| !exit(reason))
            .or_else(|| failures.iter().find(|(pod, _)| pod_index(pod) != Some(0)))
            .or_else(|| failures.first())?;
        let mut message = format!("pod {} {reason}", name_of(pod));
        let tail = self.log_tail(name_of(pod)).await;
        if !tail.is_empty() {
            message.push_str("; its last output:");
            tail.iter().for_each(|line| {
                message.push_str("\n  ");
                message.push_str(line);
            });
        }
        Some(KubeError::new(message))
    }

    pub(crate) async fn log_tail(&self, pod: &str) -> Vec<String> {
        let params = LogParams {
            tail_lines: Some(10),
            ..LogParams::default()
        };
        match self.pods.logs(pod, &params).await {
            Ok(text) => text
                .lines()
                .filter_map(|line| match decode(line) {
                    Frame::Stdout(t) | Frame::Stderr(t) | Frame::Raw(t) => Some(t.to_string()),
                    Frame::Json(_) | Frame::Metrics(_) | Frame::Exit(_) => None,
                })
                .filter(|line| !line.is_empty())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn follow_log(&self, pod: &str, sender: mpsc::UnboundedSender<LogEvent>) {
        let pods = self.pods.clone();
        let pod = pod.to_string();
        tokio::spawn(async move {
            let params = LogParams {
                follow: true,
                ..LogParams::default()
            };
            if let Ok(stream) = pods.log_stream(&pod, &params).await {
                let mut lines = stream.lines();
                while let Some(Ok(line)) = lines.next().await {
                    if sender.send(LogEvent::Line(line)).is_err() {
                        return;
                    }
                }
            }
            let _ = sender.send(LogEvent::Ended);
        });
    }

    pub(crate) async fn job(&self) -> Result<Job, KubeError> {
        self.jobs
            .get(&self.name)
            .await
            .map_err(|e| KubeError::new(format!("could not read the Job: {e}")))
    }

    async fn job_complete(&self) -> Result<bool, KubeError> {
        Ok(job_condition(&self.job().await?, "Complete").is_some())
    }

    async fn job_failed(&self) -> Result<Option<String>, KubeError> {
        Ok(job_condition(&self.job().await?, "Failed"))
    }

    /// Deletes the Job (its pods first: foreground propagation), the Service and the
    /// ConfigMap, and waits until no pod of the run is left.
    pub(crate) async fn delete(&self) {
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        let _ = self.jobs.delete(&self.name, &params).await;
        let _ = self
            .services
            .delete(&self.name, &DeleteParams::default())
            .await;
        let _ = self
            .config_maps
            .delete(&self.name, &DeleteParams::default())
            .await;
        let _ = self
            .secrets
            .delete(&self.name, &DeleteParams::default())
            .await;
        let deadline = Instant::now() + CLEANUP_WAIT;
        while Instant::now() < deadline {
            let pods_left = self.list_pods().await.map_or(0, |p| p.len());
            let job_left = self.jobs.get_opt(&self.name).await.ok().flatten().is_some();
            if pods_left == 0 && !job_left {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

pub(crate) fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("?")
}

pub(crate) fn pod_index(pod: &Pod) -> Option<usize> {
    pod.metadata.labels.as_ref()?.get(INDEX_LABEL)?.parse().ok()
}

pub(crate) fn job_condition(job: &Job, kind: &str) -> Option<String> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == kind && c.status == "True")
        .map(|c| {
            let reason = c.reason.clone().unwrap_or_default();
            match c.message.as_deref() {
                Some(message) if !message.is_empty() => format!("{reason}: {message}"),
                _ => reason,
            }
        })
}

fn has_started(pod: &Pod) -> bool {
    container_state(pod).is_some_and(|s| s.running.is_some() || s.terminated.is_some())
}

fn has_terminated(pod: &Pod) -> bool {
    container_state(pod).is_some_and(|s| s.terminated.is_some())
}

fn container_state(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerState> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()
}

/// "pods: 3 of 3 running" and the like, for the user's terminal.
fn pods_status(pods: &BTreeMap<usize, Pod>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for pod in pods.values() {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending");
        *counts.entry(phase).or_default() += 1;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(phase, count)| format!("{count} {}", phase.to_lowercase()))
        .collect();
    format!("pods: {}", parts.join(", "))
}

/// Container states that will not get better by waiting.
const HOPELESS_WAITING: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// Why a pod failed, if it did: "exited with code 1 (Error)", "was OOMKilled", "could not be
/// scheduled: …", "could not start its container: ErrImageNeverPull: …". A pod still pending
/// fails once it has waited longer than `start_timeout`.
pub fn pod_failure(pod: &Pod, waited: Duration, start_timeout: Duration) -> Option<String> {
    let status = pod.status.as_ref()?;
    if let Some(state) = container_state(pod) {
        if let Some(terminated) = &state.terminated {
            if terminated.exit_code != 0 {
                let reason = terminated.reason.as_deref().unwrap_or("Error");
                return Some(if reason == "OOMKilled" {
                    format!(
                        "was OOMKilled (out of memory: exit code {})",
                        terminated.exit_code
                    )
                } else {
                    format!("exited with code {} ({reason})", terminated.exit_code)
                });
            }
        }
        if let Some(waiting) = &state.waiting {
            let reason = waiting.reason.as_deref().unwrap_or("");
            if HOPELESS_WAITING.contains(&reason) {
                let message = waiting.message.as_deref().unwrap_or("");
                return Some(format!(
                    "could not start its container: {reason}: {message}"
                ));
            }
        }
    }
    if status.phase.as_deref() == Some("Failed") {
        let reason = status.reason.as_deref().unwrap_or("Failed");
        let message = status.message.as_deref().unwrap_or("");
        return Some(format!("failed: {reason}: {message}"));
    }
    if status.phase.as_deref() == Some("Pending") && waited > start_timeout {
        let unscheduled = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False");
        let seconds = start_timeout.as_secs();
        return Some(match unscheduled {
            Some(condition) => format!(
                "could not be scheduled within {seconds} s: {}",
                condition.message.as_deref().unwrap_or("no reason given")
            ),
            None => {
                let waiting = container_state(pod)
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.clone())
                    .unwrap_or_else(|| "Pending".into());
                format!("did not start within {seconds} s ({waiting})")
            }
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "run-1-abcde", "labels": {INDEX_LABEL: "1"}},
            "status": status,
        }))
        .unwrap()
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_container_that_exits_with_an_error_fails_its_pod() {
        let failed = pod(json!({"phase": "Failed", "containerStatuses": [{
            "name": "stampede", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}));
        assert_eq!(
            pod_failure(&failed, Duration::ZERO, MINUTE).as_deref(),
            Some("exited with code 2 (Error)")
        );
        assert_eq!(pod_index(&failed), Some(1));
    }

    #[test]
    fn an_oom_kill_is_named() {
        let killed = pod(json!({"phase": "Failed", "containerStatuses": [{
            "name": "stampede", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}));
        assert_eq!(
            pod_failure(&killed, Duration::ZERO, MINUTE).as_deref(),
            Some("was OOMKilled (out of memory: exit code 137)")
        );
    }

    #[test]
    fn an_image_that_cannot_be_had_fails_at_once() {
        let waiting = pod(json!({"phase": "Pending", "containerStatuses": [{
            "name": "stampede", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImageNeverPull",
                                  "message": "image \"x\" is not present"}}}]}));
        assert_eq!(
            pod_failure(&waiting, Duration::ZERO, MINUTE).as_deref(),
            Some("could not start its container: ErrImageNeverPull: image \"x\" is not present")
        );
    }

    #[test]
    fn an_unschedulable_pod_fails_after_the_start_timeout() {
        let pending = pod(json!({"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}]}));
        assert_eq!(pod_failure(&pending, Duration::from_secs(5), MINUTE), None);
        assert_eq!(
            pod_failure(&pending, Duration::from_secs(61), MINUTE).as_deref(),
            Some(
                "could not be scheduled within 60 s: 0/1 nodes are available: 1 node(s) didn't \
                 match Pod's node affinity/selector."
            )
        );
    }

    #[test]
    fn a_running_or_succeeded_pod_has_not_failed() {
        let running = pod(json!({"phase": "Running", "containerStatuses": [{
            "name": "stampede", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {}}}]}));
        assert_eq!(
            pod_failure(&running, Duration::from_secs(600), MINUTE),
            None
        );
        assert!(has_started(&running));
        let done = pod(json!({"phase": "Succeeded", "containerStatuses": [{
            "name": "stampede", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}));
        assert_eq!(pod_failure(&done, Duration::from_secs(600), MINUTE), None);
    }
}
