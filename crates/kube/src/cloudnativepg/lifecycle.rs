//! What a lab does with a Cluster through the API server: create it (or have it dry-run), wait
//! until the operator reports it healthy — failing at once on what waiting cannot mend (an
//! image that cannot be pulled, a storage class that does not exist) and quoting the operator's
//! conditions and Kubernetes' events otherwise — read its secrets and primary, and delete it with
//! its volumes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Node, PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use super::resource::{PostgresCluster, CLUSTER_LABEL};
use crate::launch::{pod_failure, refused, Cluster, POLL};
use crate::KubeError;

/// How long deleting a Cluster may take until its pods and volumes are gone.
const DELETE_WAIT: Duration = Duration::from_secs(120);

/// What waiting for a Cluster watches besides the Cluster.
pub struct HealthWait<'a> {
    pub timeout: Duration,
    /// Set by Ctrl-C: the wait ends with an error.
    pub stop: Arc<AtomicBool>,
    /// A line for the user each time the operator's phase changes.
    pub on_progress: &'a mut dyn FnMut(&str),
}

impl Cluster {
    fn postgres_clusters_in(&self, namespace: &str) -> Api<PostgresCluster> {
        Api::namespaced(self.client(), namespace)
    }

    /// Creates the Cluster, or has the API server check it without creating it (`dry_run`).
    pub fn create_postgres_cluster(
        &self,
        cluster: &PostgresCluster,
        dry_run: bool,
    ) -> Result<PostgresCluster, KubeError> {
        let namespace = cluster.metadata.namespace.as_deref().unwrap_or("default");
        let params = PostParams {
            dry_run,
            field_manager: Some("stampede".into()),
        };
        self.runtime().block_on(async {
            self.postgres_clusters_in(namespace)
                .create(&params, cluster)
                .await
                .map_err(|e| refused("Cluster", e))
        })
    }

    /// The Cluster of that name, if there is one.
    pub fn postgres_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<PostgresCluster>, KubeError> {
        self.runtime().block_on(async {
            self.postgres_clusters_in(namespace)
                .get_opt(name)
                .await
                .map_err(|e| asked("the Cluster", name, e))
        })
    }

    /// The Clusters carrying every label of `selector` (`key=value,…`).
    pub fn postgres_clusters(
        &self,
        namespace: &str,
        selector: &str,
    ) -> Result<Vec<PostgresCluster>, KubeError> {
        self.runtime().block_on(async {
            self.postgres_clusters_in(namespace)
                .list(&ListParams::default().labels(selector))
                .await
                .map(|list| list.items)
                .map_err(|e| asked("Clusters labelled", selector, e))
        })
    }

    /// Merges `parameters` into the Cluster's `spec.postgresql.parameters` (a value of `null`
    /// removes one) and `annotations` into its own, in one change.
    pub fn patch_postgres_parameters(
        &self,
        namespace: &str,
        name: &str,
        parameters: &BTreeMap<String, Option<String>>,
        annotations: &BTreeMap<String, String>,
    ) -> Result<PostgresCluster, KubeError> {
        // A merge patch: a parameter given as null is removed from the Cluster's.
        let patch = serde_json::json!({
            "metadata": {"annotations": annotations},
            "spec": {"postgresql": {"parameters": parameters}},
        });
        self.runtime().block_on(async {
            self.postgres_clusters_in(namespace)
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| refused("Cluster's new parameters", e))
        })
    }

    /// Waits until the operator reports the Cluster healthy (every instance ready, the primary
    /// settled) and returns it as it is then.
    pub fn wait_healthy(
        &self,
        namespace: &str,
        name: &str,
        wait: HealthWait<'_>,
    ) -> Result<PostgresCluster, KubeError> {
        let started = Instant::now();
        let mut said = String::new();
        loop {
            let cluster = self
                .postgres_cluster(namespace, name)?
                .ok_or_else(|| KubeError::new(format!("Cluster \"{name}\" is gone")))?;
            let instances = cluster.spec.instances;
            let status = cluster.status.clone().unwrap_or_default();
            if status.is_healthy(instances) {
                return Ok(cluster);
            }
            let summary = status.summary(instances);
            if summary != said {
                (wait.on_progress)(&format!("Cluster \"{name}\": {summary}"));
                said = summary;
            }
            let waited = started.elapsed();
            if let Some(hopeless) = self.hopeless(namespace, name, waited, wait.timeout)? {
                return Err(KubeError::new(format!(
                    "Cluster \"{name}\" cannot become healthy: {hopeless}"
                )));
            }
            if waited > wait.timeout {
                return Err(KubeError::new(format!(
                    "Cluster \"{name}\" was not healthy within {} s: {}",
                    wait.timeout.as_secs(),
                    self.why_not_healthy(namespace, name, &cluster)
                )));
            }
            if wait.stop.load(Ordering::SeqCst) {
                return Err(KubeError::new(format!(
                    "stopped while waiting for Cluster \"{name}\""
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// What waiting cannot mend: a pod of the Cluster that cannot start its container (or
    /// stayed unscheduled past the timeout), a volume whose storage class does not exist.
    fn hopeless(
        &self,
        namespace: &str,
        name: &str,
        waited: Duration,
        timeout: Duration,
    ) -> Result<Option<String>, KubeError> {
        let selector = format!("{CLUSTER_LABEL}={name}");
        for pod in self.labelled::<Pod>(namespace, &selector)? {
            if let Some(why) = pod_failure(&pod, waited, timeout) {
                let pod_name = pod.metadata.name.as_deref().unwrap_or("?");
                return Ok(Some(format!("pod {pod_name} {why}")));
            }
        }
        for claim in self.labelled::<PersistentVolumeClaim>(namespace, &selector)? {
            let claim_name = claim.metadata.name.clone().unwrap_or_default();
            let missing_class = self
                .warnings(namespace, &claim_name)?
                .into_iter()
                .find(|event| event.contains("storageclass") && event.contains("not found"));
            if let Some(event) = missing_class {
                return Ok(Some(format!("volume {claim_name}: {event}")));
            }
        }
        Ok(None)
    }

    /// The operator's phase and conditions, and the warnings Kubernetes recorded for the
    /// Cluster, its pods and its volumes.
    fn why_not_healthy(&self, namespace: &str, name: &str, cluster: &PostgresCluster) -> String {
        let status = cluster.status.clone().unwrap_or_default();
        let mut parts = vec![status.summary(cluster.spec.instances)];
        parts.extend(status.unmet_conditions());
        let selector = format!("{CLUSTER_LABEL}={name}");
        let mut objects = vec![name.to_string()];
        for pod in self
            .labelled::<Pod>(namespace, &selector)
            .unwrap_or_default()
        {
            objects.extend(pod.metadata.name);
        }
        for claim in self
            .labelled::<PersistentVolumeClaim>(namespace, &selector)
            .unwrap_or_default()
        {
            objects.extend(claim.metadata.name);
        }
        for object in objects {
            for warning in self.warnings(namespace, &object).unwrap_or_default() {
                parts.push(format!("{object}: {warning}"));
            }
        }
        parts.join("; ")
    }

    fn labelled<K>(&self, namespace: &str, selector: &str) -> Result<Vec<K>, KubeError>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        self.runtime().block_on(async {
            Api::<K>::namespaced(self.client(), namespace)
                .list(&ListParams::default().labels(selector))
                .await
                .map(|list| list.items)
                .map_err(|e| asked("objects labelled", selector, e))
        })
    }

    /// The Warning events of the object of that name, oldest first, as "Reason: message".
    fn warnings(&self, namespace: &str, object: &str) -> Result<Vec<String>, KubeError> {
        let fields = format!("involvedObject.name={object},type=Warning");
        let mut events = self.runtime().block_on(async {
            Api::<Event>::namespaced(self.client(), namespace)
                .list(&ListParams::default().fields(&fields))
                .await
                .map(|list| list.items)
                .map_err(|e| asked("the events of", object, e))
        })?;
        events.sort_by_key(|e| e.last_timestamp.clone().map(|t| t.0));
        let mut lines: Vec<String> = Vec::new();
        for event in events {
            let line = format!(
                "{}: {}",
                event.reason.unwrap_or_default(),
                event.message.unwrap_or_default().trim()
            );
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        Ok(lines)
    }

    /// Deletes the Cluster and waits until its pods and volumes are gone (volumes the operator
    /// left are deleted too). A Cluster already gone is not an error.
    pub fn delete_postgres_cluster(&self, namespace: &str, name: &str) -> Result<(), KubeError> {
        let selector = format!("{CLUSTER_LABEL}={name}");
        self.runtime().block_on(async {
            let deleted = self
                .postgres_clusters_in(namespace)
                .delete(name, &DeleteParams::background())
                .await;
            match deleted {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                Err(e) => Err(asked("deleting the Cluster", name, e)),
            }
        })?;
        let started = Instant::now();
        loop {
            let cluster = self.postgres_cluster(namespace, name)?;
            let pods = self.labelled::<Pod>(namespace, &selector)?;
            let claims = self.labelled::<PersistentVolumeClaim>(namespace, &selector)?;
            if cluster.is_none() && pods.is_empty() && claims.is_empty() {
                return Ok(());
            }
            if cluster.is_none() {
                self.delete_claims(namespace, &claims)?;
            }
            if started.elapsed() > DELETE_WAIT {
                return Err(KubeError::new(format!(
                    "Cluster \"{name}\" was not gone within {} s ({} pods, {} volumes left)",
                    DELETE_WAIT.as_secs(),
                    pods.len(),
                    claims.len()
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    fn delete_claims(
        &self,
        namespace: &str,
        claims: &[PersistentVolumeClaim],
    ) -> Result<(), KubeError> {
        self.runtime().block_on(async {
            let api = Api::<PersistentVolumeClaim>::namespaced(self.client(), namespace);
            for claim in claims {
                let name = claim.metadata.name.as_deref().unwrap_or_default();
                match api.delete(name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(e) => return Err(asked("deleting the volume", name, e)),
                }
            }
            Ok(())
        })
    }

    /// One key of a Secret, read to connect and kept in memory only.
    pub fn secret_value(
        &self,
        namespace: &str,
        secret: &str,
        key: &str,
    ) -> Result<Option<String>, KubeError> {
        let found = self.runtime().block_on(async {
            Api::<Secret>::namespaced(self.client(), namespace)
                .get_opt(secret)
                .await
                .map_err(|e| asked("the Secret", secret, e))
        })?;
        Ok(found
            .and_then(|s| s.data)
            .and_then(|data| data.get(key).cloned())
            .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned()))
    }

    /// The ready IPv4 addresses behind a Service (its EndpointSlices).
    pub fn service_endpoints(
        &self,
        namespace: &str,
        service: &str,
    ) -> Result<Vec<String>, KubeError> {
        let selector = format!("kubernetes.io/service-name={service}");
        let slices = self.labelled::<EndpointSlice>(namespace, &selector)?;
        Ok(slices
            .iter()
            .filter(|slice| slice.address_type == "IPv4")
            .flat_map(|slice| &slice.endpoints)
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
            .flat_map(|e| e.addresses.clone())
            .collect())
    }
}

/// A failed request, naming what was asked.
fn asked(what: &str, name: &str, error: kube::Error) -> KubeError {
    match error {
        kube::Error::Api(status) => KubeError::new(format!(
            "the API server refused {what} \"{name}\": {} ({})",
            status.message, status.reason
        )),
        other => KubeError::new(format!("could not ask for {what} \"{name}\": {other}")),
    }
}

/// Where a Cluster runs, as its record and history name it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterPlacement {
    /// The operator's version, as it annotates the instances.
    pub operator_version: Option<String>,
    pub instances: Vec<InstancePlacement>,
    /// The storage class of the data volumes and its provisioner.
    pub storage: Option<(String, String)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstancePlacement {
    pub pod: String,
    pub node: String,
    /// The node's capacity: CPUs and memory, as Kubernetes quantities.
    pub node_cpu: String,
    pub node_memory: String,
    /// `node.kubernetes.io/instance-type`, where the cloud labels it.
    pub instance_type: Option<String>,
    /// The image the instance runs, by digest as the runtime resolved it.
    pub image: String,
    /// The instance's resources as `requests …; limits …`.
    pub resources: String,
}

impl Cluster {
    /// The Cluster's instances, nodes, image digests and storage, read now.
    pub fn placement(&self, namespace: &str, name: &str) -> Result<ClusterPlacement, KubeError> {
        let selector = format!("{CLUSTER_LABEL}={name},cnpg.io/podRole=instance");
        let mut pods = self.labelled::<Pod>(namespace, &selector)?;
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut placement = ClusterPlacement::default();
        for pod in &pods {
            placement.operator_version = placement.operator_version.or_else(|| {
                pod.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("cnpg.io/operatorVersion").cloned())
            });
            placement.instances.push(self.instance_placement(pod)?);
        }
        let claims =
            self.labelled::<PersistentVolumeClaim>(namespace, &format!("{CLUSTER_LABEL}={name}"))?;
        if let Some(class) = claims
            .iter()
            .find_map(|c| c.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
        {
            let provisioner = self.runtime().block_on(async {
                Api::<StorageClass>::all(self.client())
                    .get_opt(&class)
                    .await
                    .map_err(|e| asked("the StorageClass", &class, e))
            })?;
            let provisioner = provisioner.map_or_else(|| "not found".into(), |c| c.provisioner);
            placement.storage = Some((class, provisioner));
        }
        Ok(placement)
    }

    fn instance_placement(&self, pod: &Pod) -> Result<InstancePlacement, KubeError> {
        let spec = pod.spec.clone().unwrap_or_default();
        let node_name = spec.node_name.clone().unwrap_or_default();
        let node = self.runtime().block_on(async {
            Api::<Node>::all(self.client())
                .get_opt(&node_name)
                .await
                .map_err(|e| asked("the node", &node_name, e))
        })?;
        let capacity = node
            .as_ref()
            .and_then(|n| n.status.as_ref())
            .and_then(|s| s.capacity.clone())
            .unwrap_or_default();
        let quantity = |key: &str| capacity.get(key).map(|q| q.0.clone()).unwrap_or_default();
        let container = spec.containers.iter().find(|c| c.name == "postgres");
        let resources = container
            .and_then(|c| c.resources.clone())
            .map(|r| {
                let list = |map: Option<
                    std::collections::BTreeMap<
                        String,
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
                    >,
                >| {
                    map.unwrap_or_default()
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.0))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                format!("requests {}; limits {}", list(r.requests), list(r.limits))
            })
            .filter(|text| text != "requests ; limits ")
            .unwrap_or_else(|| "no requests or limits".into());
        let image = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|statuses| statuses.iter().find(|c| c.name == "postgres"))
            .map(|c| c.image_id.clone())
            .unwrap_or_default();
        Ok(InstancePlacement {
            pod: pod.metadata.name.clone().unwrap_or_default(),
            node: node_name,
            node_cpu: quantity("cpu"),
            node_memory: quantity("memory"),
            instance_type: node
                .and_then(|n| n.metadata.labels)
                .and_then(|labels| labels.get("node.kubernetes.io/instance-type").cloned()),
            image,
            resources,
        })
    }
}

impl ClusterPlacement {
    /// One line for the machines table: operator, each instance's node and image, storage.
    pub fn described(&self) -> String {
        let instances: Vec<String> = self
            .instances
            .iter()
            .map(|i| {
                let kind = i
                    .instance_type
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default();
                format!(
                    "{} on node {}{kind} ({} CPU, {} memory; {}) image {}",
                    i.pod, i.node, i.node_cpu, i.node_memory, i.resources, i.image
                )
            })
            .collect();
        let storage = self
            .storage
            .as_ref()
            .map(|(class, provisioner)| format!("; storage class {class} ({provisioner})"))
            .unwrap_or_default();
        format!(
            "CloudNativePG {}: {}{storage}",
            self.operator_version
                .as_deref()
                .unwrap_or("(operator version unknown)"),
            instances.join("; ")
        )
    }

    /// What a series of runs is keyed by: what the Cluster runs on, not which Cluster (each
    /// lab creates its own, with a new system identifier).
    pub fn key(&self) -> String {
        let instances: Vec<String> = self
            .instances
            .iter()
            .map(|i| {
                format!(
                    "{}/{}/{}/{}",
                    i.instance_type.as_deref().unwrap_or("-"),
                    i.node_cpu,
                    i.node_memory,
                    i.image
                )
            })
            .collect();
        format!(
            "cloudnativepg {} [{}] {}",
            self.operator_version.as_deref().unwrap_or("-"),
            instances.join(" "),
            self.storage
                .as_ref()
                .map_or("-".into(), |(class, p)| format!("{class}/{p}"))
        )
    }
}
