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
mod settings;
mod spec;

use std::sync::Arc;

use super::api::{LabPlace, LabServer, ResolvedTarget, TargetKind, TargetSource, TargetSpec};
use super::table::TargetTable;
use crate::lab::spec_text::SpecError;
use crate::pods::KubeArgs;
use crate::server::profile::Profile;
use crate::server::setup::SetupEvent;
use manifest::ClusterPlace;
use settings::SETTINGS_ANNOTATION;
use spec::{ClusterConfig, ClusterSource};
use stampede_base::error::Failure;
use stampede_conn::Engine;
use stampede_kube::cloudnativepg::PostgresCluster;

pub struct Kind;

/// `lab plan`'s line on where a Cluster's load comes from and how its CPU is read.
const SETTINGS_PATCHED: &str = "the manifest as during this target's runs: the Cluster is created with its shape's parameters alone, and the target's settings are patched in once it is healthy, after its server has checked each name and value (an instance restarted with a parameter it cannot read would not start)";
const LOAD_AND_CPU: &str = "each run's clients from pods reaching the Cluster's -rw Service (pods = N; apart from its instances where the nodes allow); server CPU: the primary's pod as its node's kubelet samples it (every ~10 s: the rate between two samples over the window)";

impl TargetKind for Kind {
    fn key(&self) -> &'static str {
        "cloudnativepg"
    }

    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError> {
        let value = table.value.expect("the kind's key names it");
        let config = spec::parse(value.get_ref())
            .map_err(|e| table.at(value, format!("cloudnativepg: {e}")))?;
        let owner = sharing(&config, table.earlier).unwrap_or(table.name);
        Ok(Arc::new(ClusterTarget {
            lab: table.lab.to_string(),
            target: table.name.to_string(),
            owner: owner.to_string(),
            config,
            kube: table.kubernetes.clone(),
        }))
    }
}

/// The first earlier target whose Cluster this one's shares: the same shape (its settings
/// aside), both sharing.
fn sharing<'a>(
    config: &ClusterConfig,
    earlier: &[(&'a str, &toml::Spanned<toml::Value>)],
) -> Option<&'a str> {
    if !config.share || !matches!(config.source, ClusterSource::Create(_)) {
        return None;
    }
    earlier.iter().find_map(|(name, value)| {
        let other = spec::parse(value.get_ref()).ok()?;
        (other.share && other.source == config.source).then_some(*name)
    })
}

/// A target's Cluster, as its table and the spec's `[kubernetes]` give it.
pub struct ClusterTarget {
    config: ClusterConfig,
    lab: String,
    target: String,
    /// The target whose name names the Cluster: this one, or the first of its shape.
    owner: String,
    kube: KubeArgs,
}

impl std::fmt::Debug for ClusterTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterTarget({})", self.spec_text())
    }
}

impl ClusterTarget {
    /// `lab plan`'s lines on a Cluster the lab creates, `checked` saying how far.
    fn plan_lines(&self, manifest: &PostgresCluster, checked: &str) -> Vec<String> {
        let settings = manifest
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SETTINGS_ANNOTATION))
            .filter(|text| text.as_str() != "{}");
        let mut lines = vec![
            format!(
                "Cluster \"{}\" in namespace \"{}\"{}, created through the operator at its first use and deleted with its volumes when the lab ends (--keep-clusters keeps it); {checked}",
                manifest.name(),
                manifest.metadata.namespace.as_deref().unwrap_or("default"),
                self.shared_with()
            ),
            format!(
                "its manifest: {}",
                serde_json::to_string(manifest).expect("plain data serializes to JSON")
            ),
        ];
        if settings.is_some() {
            lines.push(SETTINGS_PATCHED.into());
        }
        lines.push(LOAD_AND_CPU.into());
        lines
    }

    /// ", shared with target \"a\" (…)" for a target whose Cluster an earlier one names.
    fn shared_with(&self) -> String {
        if self.owner == self.target {
            return String::new();
        }
        format!(
            ", shared with target \"{}\" (the same Cluster; this target's settings patched in before each of its runs)",
            self.owner
        )
    }

    fn place(&self, namespace: &str) -> Result<ClusterPlace, Failure> {
        let labels: Vec<(String, String)> = self.kube.labels()?.into_iter().collect();
        let mut place = ClusterPlace::new(&self.lab, &self.owner, namespace, &labels);
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
                "CloudNativePG Cluster \"{}\", {} instance(s) of {}{}",
                manifest::cluster_name(&self.lab, &self.owner),
                shape.instances,
                shape
                    .image
                    .as_deref()
                    .unwrap_or("the operator's default image"),
                self.shared_with()
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

    fn check_at_plan(&self, target: &TargetSpec, dry_run: bool) -> Result<Vec<String>, Failure> {
        self.check_target(target)?;
        // Without a dry run a Cluster to create is shown as the lab would send it, read from
        // the spec alone when no Kubernetes configuration is at hand (the namespace then the
        // spec's, else "default").
        let cluster = provision::connect(&self.kube).map_err(|e| Failure::run(e.message()));
        let creates = matches!(self.config.source, ClusterSource::Create(_));
        if creates && !dry_run {
            let namespace = match (&self.kube.namespace, &cluster) {
                (Some(namespace), _) => namespace.clone(),
                (None, Ok(cluster)) => provision::namespace(&self.kube, cluster),
                (None, Err(_)) => "default".into(),
            };
            let manifest = self.manifest(target, &namespace)?;
            return Ok(self.plan_lines(
                manifest
                    .as_ref()
                    .expect("a Cluster to create has a manifest"),
                "not sent to the API server (lab plan --dry-run has it check the manifest)",
            ));
        }
        let cluster = cluster?;
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
        Ok(self.plan_lines(&manifest, "the API server accepted it (dry run)"))
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
        let settings = match &self.config.source {
            ClusterSource::Create(shape) => Some(
                manifest::cluster_settings(shape, &target.settings)
                    .map_err(|e| Failure::input(format!("cloudnativepg: {e}")))?,
            ),
            ClusterSource::Existing(_) => None,
        };
        Ok(Arc::new(provision::Resolved {
            cluster,
            namespace,
            name: place.name,
            manifest,
            settings,
            shared_with: (self.owner != self.target).then(|| self.owner.clone()),
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Each target's `spec_text` in a lab of `targets`.
    fn described(targets: &str) -> Vec<String> {
        let text = format!(
            "name = \"sc\"\nruns = 1\nduration = \"1s\"\n{targets}\n[[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n"
        );
        let spec = crate::lab::spec::parse(Path::new("lab.toml"), &text).unwrap();
        spec.targets.iter().map(|t| t.server.spec_text()).collect()
    }

    #[test]
    fn targets_of_one_shape_share_a_cluster_unless_told_not_to() {
        let shape = r#"storage = { class = "gp3", size = "10Gi" }"#;
        let texts = described(&format!(
            "[[target]]\nname = \"a\"\ncloudnativepg = {{ {shape} }}\nsettings = {{ shared_buffers = \"128MB\" }}\n\
             [[target]]\nname = \"b\"\ncloudnativepg = {{ {shape} }}\nsettings = {{ shared_buffers = \"1GB\" }}\n\
             [[target]]\nname = \"c\"\ncloudnativepg = {{ {shape}, instances = 2 }}\n\
             [[target]]\nname = \"d\"\ncloudnativepg = {{ {shape}, share = false }}\n\
             [[target]]\nname = \"e\"\ncloudnativepg = {{ {shape}, pods = 2 }}\n"
        ));
        assert_eq!(
            texts[0],
            "CloudNativePG Cluster \"sc-a\", 1 instance(s) of the operator's default image"
        );
        assert_eq!(
            texts[1],
            "CloudNativePG Cluster \"sc-a\", 1 instance(s) of the operator's default image, shared with target \"a\" (the same Cluster; this target's settings patched in before each of its runs)"
        );
        // Another shape, a Cluster of its own by request: their own names.
        assert!(texts[2].starts_with("CloudNativePG Cluster \"sc-c\", 2 instance(s)"));
        assert!(texts[3].starts_with("CloudNativePG Cluster \"sc-d\", 1 instance(s)"));
        // Where the load comes from is not the Cluster's shape.
        assert!(texts[4].contains("\"sc-a\"") && texts[4].contains("shared with target \"a\""));
    }
}
