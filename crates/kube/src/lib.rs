//! A stampede run as a Kubernetes Indexed Job: the manifests (`manifest`), what a pod's output
//! looks like on its way to the user's terminal (`frame`), and the launcher that creates the
//! objects through the API, follows them, relays the coordinator pod's output, names the pod and
//! Kubernetes' reason when one fails, and deletes everything it created (`launch`); and
//! CloudNativePG's Cluster as a lab's target (`cloudnativepg`).
//!
//! The launcher needs no network path to the pods: it speaks only to the API server, reading
//! the configuration as kubectl does (KUBECONFIG, ~/.kube/config, or the pod's service account
//! when it runs in a cluster).

pub mod cloudnativepg;
pub mod fleet;
pub mod frame;
pub mod kubelet;
pub mod launch;
pub mod manifest;

pub use fleet::{FleetEnding, FleetOutcome, FleetStatus, FleetWatch};
pub use launch::{Cluster, LaunchOutcome};
pub use manifest::{JobOptions, Manifests, SecretEnv, WorkdirVolume};

/// What went wrong, as a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeError(pub String);

impl std::fmt::Display for KubeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KubeError {}

impl KubeError {
    pub fn new(message: impl Into<String>) -> KubeError {
        KubeError(message.into())
    }
}

/// The label every object of one run carries (its value: the run's name).
pub const RUN_LABEL: &str = "stampede.dev/run";
