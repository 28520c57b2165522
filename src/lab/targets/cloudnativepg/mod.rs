//! `cloudnativepg = { … }`: a PostgreSQL Cluster the lab creates through the CloudNativePG
//! operator on the user's Kubernetes (`[kubernetes]` names the cluster, namespace and labels).
//! The operator provisions it; the lab creates the Cluster at the target's first use, waits
//! until the operator reports it healthy, works in it as in a server reached by URL (its own
//! databases, through the `-rw` Service's endpoint and the superuser Secret, read by reference
//! and kept in memory), and deletes it with its volumes when the lab ends, fails or is stopped
//! (`--keep-clusters` keeps it; a kept Cluster is reused by `lab resume` when its spec is the
//! same).

mod manifest;
mod metrics;
mod provision;
mod spec;

use std::sync::Arc;

use super::api::{LabPlace, LabServer, ResolvedTarget, TargetKind, TargetSource, TargetSpec};
use super::table::TargetTable;
use crate::lab::spec_text::SpecError;
use crate::pods::KubeArgs;
use crate::server::profile::Profile;
use crate::server::setup::SetupEvent;
use manifest::ClusterPlace;
use spec::{ClusterConfig, ClusterSource};
use stampede_base::error::Failure;
use stampede_conn::Engine;
use stampede_kube::cloudnativepg::PostgresCluster;

pub struct Kind;

/// `lab plan`'s line on where a Cluster's load comes from and how its CPU is read.
const LOAD_AND_CPU: &str = "each run's clients from pods reaching the Cluster's -rw Service (pods = N; apart from its instances where the nodes allow); server CPU: the primary's pod as its node's kubelet samples it (every ~10 s: the rate between two samples over the window)";

impl TargetKind for Kind {
    fn key(&self) -> &'static str {
        "cloudnativepg"
    }

    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError> {
        let value = table.value.expect("the kind's key names it");
        let config = spec::parse(value.get_ref())
            .map_err(|e| table.at(value, format!("cloudnativepg: {e}")))?;
        Ok(Arc::new(ClusterTarget {
            config,
            lab: table.lab.to_string(),
            target: table.name.to_string(),
            kube: table.kubernetes.clone(),
        }))
    }
}

/// A target's Cluster, as its table and the spec's `[kubernetes]` give it.
pub struct ClusterTarget {
    config: ClusterConfig,
    lab: String,
    target: String,
    kube: KubeArgs,
}

impl std::fmt::Debug for ClusterTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterTarget({})", self.spec_text())
    }
}

impl ClusterTarget {
    fn place(&self, namespace: &str) -> Result<ClusterPlace, Failure> {
        let labels: Vec<(String, String)> = self.kube.labels()?.into_iter().collect();
        let mut place = ClusterPlace::new(&self.lab, &self.target, namespace, &labels);
        if let ClusterSource::Existing(name) = &self.config.source {
            place.name = name.clone();
        }
        place.image_pull_policy = self.kube.image_pull_policy()?;
        Ok(place)
    }

    /// The Cluster the lab would create in `namespace`, with the target's settings.
    fn manifest(
        &self,
        target: &TargetSpec,
        namespace: &str,
    ) -> Result<Option<PostgresCluster>, Failure> {
        let ClusterSource::Create(shape) = &self.config.source else {
            return Ok(None);
        };
        manifest::cluster(shape, &target.settings, &self.place(namespace)?)
            .map(Some)
            .map_err(|e| Failure::input(format!("cloudnativepg: {e}")))
    }

    /// What only a server the lab starts itself can take, and settings on a Cluster the lab
    /// does not own.
    fn check_target(&self, target: &TargetSpec) -> Result<(), Failure> {
        if target.profile != Profile::Untuned {
            return Err(Failure::input(format!(
                "profile = \"{}\": a cloudnativepg target is configured by its Cluster; give the settings to change as settings = {{ … }} or the Cluster's parameters",
                target.profile.name()
            )));
        }
        if target.cpus.is_some() {
            return Err(Failure::input(
                "cpus pins the processes of a server the lab starts; a Cluster's instances get CPUs by resources = { requests = { cpu = … } }",
            ));
        }
        if let ClusterSource::Existing(name) = &self.config.source {
            if !target.settings.is_empty() {
                return Err(Failure::input(format!(
                    "settings on Cluster \"{name}\": the lab does not change the parameters of a Cluster it did not create; give a cloudnativepg = {{ … }} Cluster of the lab's own to compare settings"
                )));
            }
        }
        self.manifest(target, "default").map(|_| ())
    }
}

impl TargetSource for ClusterTarget {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn spec_text(&self) -> String {
        match &self.config.source {
            ClusterSource::Existing(name) => format!("CloudNativePG Cluster \"{name}\""),
            ClusterSource::Create(shape) => format!(
                "CloudNativePG Cluster \"{}\", {} instance(s) of {}",
                manifest::cluster_name(&self.lab, &self.target),
                shape.instances,
                shape
                    .image
                    .as_deref()
                    .unwrap_or("the operator's default image")
            ),
        }
    }

    fn is_managed(&self) -> bool {
        false
    }

    /// The primary's pod CPU as its kubelet samples it.
    fn measures_server_cpu(&self) -> bool {
        true
    }

    fn check(&self, target: &TargetSpec) -> Result<(), Failure> {
        self.check_target(target)
    }

    fn check_at_plan(&self, target: &TargetSpec) -> Result<Vec<String>, Failure> {
        self.check_target(target)?;
        let cluster = provision::connect(&self.kube).map_err(|e| Failure::run(e.message()))?;
        let namespace = provision::namespace(&self.kube, &cluster);
        let Some(manifest) = self.manifest(target, &namespace)? else {
            let name = self.place(&namespace)?.name;
            let found = provision::existing(&cluster, &namespace, &name)?;
            return Ok(vec![
                format!(
                    "Cluster \"{name}\" in namespace \"{namespace}\" as it is ({} instance(s), {}); the lab neither creates nor deletes it",
                    found.spec.instances,
                    found
                        .status
                        .and_then(|s| s.phase)
                        .unwrap_or_else(|| "no phase".into())
                ),
                LOAD_AND_CPU.into(),
            ]);
        };
        cluster
            .create_postgres_cluster(&manifest, true)
            .map_err(|e| Failure::input(e.0))?;
        Ok(vec![
            format!(
                "Cluster \"{}\" in namespace \"{namespace}\", created through the operator at the target's first use and deleted with its volumes when the lab ends (--keep-clusters keeps it); the API server accepted it (dry run)",
                manifest.name()
            ),
            format!(
                "its manifest: {}",
                serde_json::to_string(&manifest).expect("plain data serializes to JSON")
            ),
            LOAD_AND_CPU.into(),
        ])
    }

    fn resolve(
        &self,
        target: &TargetSpec,
        _events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        self.check_target(target)?;
        let cluster = provision::connect(&self.kube)?;
        let namespace = provision::namespace(&self.kube, &cluster);
        let manifest = self.manifest(target, &namespace)?;
        let place = self.place(&namespace)?;
        if manifest.is_none() {
            provision::existing(&cluster, &namespace, &place.name)?;
        } else {
            provision::check_operator(&cluster, &namespace)?;
        }
        Ok(Arc::new(provision::Resolved {
            cluster,
            namespace,
            name: place.name,
            manifest,
            ready_timeout: self.config.ready_timeout,
            pods: self.config.pods,
        }))
    }

    fn clean(&self) -> Option<Result<String, Failure>> {
        Some(self.delete_leftovers())
    }
}

impl ClusterTarget {
    /// `lab clean`: the Clusters this lab's target left (kept, or a lab killed outright).
    fn delete_leftovers(&self) -> Result<String, Failure> {
        let cluster = provision::connect(&self.kube)?;
        let namespace = provision::namespace(&self.kube, &cluster);
        let selector = format!(
            "{},{}={}",
            ClusterPlace::lab_selector(&self.lab),
            manifest::TARGET_LABEL,
            self.place(&namespace)?
                .labels
                .get(manifest::TARGET_LABEL)
                .cloned()
                .unwrap_or_default()
        );
        let found = cluster
            .postgres_clusters(&namespace, &selector)
            .map_err(|e| Failure::run(e.0))?;
        for leftover in &found {
            cluster
                .delete_postgres_cluster(&namespace, leftover.name())
                .map_err(|e| Failure::run(e.0))?;
        }
        Ok(match found.len() {
            0 => "no Cluster of the lab's in namespace \"".to_string() + &namespace + "\"",
            n => format!(
                "{n} Cluster(s) deleted with their volumes: {}",
                found
                    .iter()
                    .map(PostgresCluster::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

impl ResolvedTarget for provision::Resolved {
    fn version(&self) -> String {
        match &self.manifest {
            Some(manifest) => format!(
                "CloudNativePG Cluster \"{}\", {}",
                self.name,
                manifest
                    .spec
                    .image_name
                    .as_deref()
                    .unwrap_or("the operator's default image")
            ),
            None => format!("CloudNativePG Cluster \"{}\"", self.name),
        }
    }

    fn provision(
        &self,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        provision::provision(self, target, place)
    }
}
