//! CloudNativePG's `Cluster` (`postgresql.cnpg.io/v1`) as a typed resource: the part of its spec
//! a lab writes, every other field kept as read, and the status the operator reports.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The phase the operator reports for a Cluster whose instances are all ready.
pub const HEALTHY_PHASE: &str = "Cluster in healthy state";
/// The label the operator puts on a Cluster's pods, PVCs and Services.
pub const CLUSTER_LABEL: &str = "cnpg.io/cluster";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostgresCluster {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: ClusterSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ClusterStatus>,
}

impl PostgresCluster {
    pub fn new(metadata: ObjectMeta, spec: ClusterSpec) -> PostgresCluster {
        PostgresCluster {
            api_version: "postgresql.cnpg.io/v1".into(),
            kind: "Cluster".into(),
            metadata,
            spec,
            status: None,
        }
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

impl kube::Resource for PostgresCluster {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Cluster".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "postgresql.cnpg.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "clusters".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// `spec`: the fields a lab sets; a Cluster read back keeps the rest in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    pub instances: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_storage: Option<StorageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql: Option<PostgresConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<AffinityConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_superuser_access: Option<bool>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostgresConfiguration {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "shared_preload_libraries",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub shared_preload_libraries: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronous: Option<SynchronousConfiguration>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `spec.postgresql.synchronous`: quorum (`any`) or priority (`first`) replication to `number`
/// standbys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SynchronousConfiguration {
    pub method: String,
    pub number: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_durability: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `spec.affinity`: the operator's own scheduling vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AffinityConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_pod_anti_affinity: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity_type: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// `status`, as far as a lab reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub phase_reason: Option<String>,
    #[serde(default)]
    pub instances: Option<u32>,
    #[serde(default)]
    pub ready_instances: Option<u32>,
    #[serde(default)]
    pub current_primary: Option<String>,
    #[serde(default)]
    pub target_primary: Option<String>,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub conditions: Vec<ClusterCondition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

impl ClusterStatus {
    /// Healthy as the operator says it: its phase, every instance ready, the primary settled.
    pub fn is_healthy(&self, instances: u32) -> bool {
        self.phase.as_deref() == Some(HEALTHY_PHASE)
            && self.ready_instances == Some(instances)
            && self.current_primary.is_some()
            && self.current_primary == self.target_primary
    }

    /// "Setting up primary (ready 0/1)", as progress lines quote it.
    pub fn summary(&self, instances: u32) -> String {
        let phase = self.phase.as_deref().unwrap_or("no phase yet");
        let ready = self.ready_instances.unwrap_or(0);
        match self.phase_reason.as_deref().filter(|r| !r.is_empty()) {
            Some(reason) => format!("{phase}: {reason} (ready {ready}/{instances})"),
            None => format!("{phase} (ready {ready}/{instances})"),
        }
    }

    /// The conditions that are not True, as "Ready=False (Reason: message)".
    pub fn unmet_conditions(&self) -> Vec<String> {
        self.conditions
            .iter()
            .filter(|c| c.status != "True")
            .map(|c| {
                let why = [c.reason.as_deref(), c.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(": ");
                format!("{}={} ({why})", c.type_, c.status)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_read_back_keeps_the_fields_it_does_not_name() {
        let read = json!({
            "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": "a"},
            "spec": {"instances": 2, "primaryUpdateStrategy": "unsupervised",
                     "storage": {"size": "1Gi", "resizeInUseVolumes": true},
                     "postgresql": {"parameters": {"work_mem": "4MB"}, "pg_hba": ["x"]}},
            "status": {"phase": HEALTHY_PHASE, "readyInstances": 2, "instances": 2,
                       "currentPrimary": "a-1", "targetPrimary": "a-1"}
        });
        let cluster: PostgresCluster = serde_json::from_value(read.clone()).unwrap();
        assert_eq!(cluster.spec.instances, 2);
        assert!(cluster.status.as_ref().unwrap().is_healthy(2));
        assert_eq!(
            serde_json::to_value(&cluster).unwrap()["spec"],
            read["spec"]
        );
    }

    #[test]
    fn a_switchover_in_progress_is_not_healthy() {
        let status = ClusterStatus {
            phase: Some(HEALTHY_PHASE.into()),
            ready_instances: Some(2),
            current_primary: Some("a-1".into()),
            target_primary: Some("a-2".into()),
            ..ClusterStatus::default()
        };
        assert!(!status.is_healthy(2));
        assert_eq!(
            status.summary(2),
            "Cluster in healthy state (ready 2/2)".to_string()
        );
    }
}
