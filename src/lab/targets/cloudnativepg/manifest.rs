//! The Cluster a target creates: its name and labels from the lab and target, its spec from the
//! target's table, the target's settings as postgresql.parameters.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use stampede_kube::cloudnativepg::{
    AffinityConfiguration, ClusterSpec, PostgresCluster, PostgresConfiguration,
    StorageConfiguration, SynchronousConfiguration,
};

use super::settings::{ClusterSettings, SETTINGS_ANNOTATION};
use super::spec::{ClusterShape, Storage};

/// The labels naming the lab and target on every Cluster a lab creates (`lab clean` finds
/// them by these).
pub const LAB_LABEL: &str = "stampede.dev/lab";
pub const TARGET_LABEL: &str = "stampede.dev/target";
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "stampede");
/// The annotation holding the digest of what the lab asked for, the targets' settings aside: a
/// Cluster left by an earlier invocation is reused only when it is the same.
pub const SPEC_ANNOTATION: &str = "stampede.dev/spec-digest";
/// The longest Cluster name the lab makes: its pods, Services and Secrets add suffixes.
const NAME_LIMIT: usize = 40;

/// Where the Cluster goes and what it is called.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterPlace {
    pub name: String,
    pub namespace: String,
    /// The lab's labels and the `[kubernetes]` section's.
    pub labels: BTreeMap<String, String>,
    pub image_pull_policy: Option<String>,
}

impl ClusterPlace {
    pub fn new(
        lab: &str,
        target: &str,
        namespace: &str,
        extra_labels: &[(String, String)],
    ) -> ClusterPlace {
        let mut labels: BTreeMap<String, String> = extra_labels.iter().cloned().collect();
        labels.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
        labels.insert(LAB_LABEL.into(), label_value(lab));
        labels.insert(TARGET_LABEL.into(), label_value(target));
        ClusterPlace {
            name: cluster_name(lab, target),
            namespace: namespace.to_string(),
            labels,
            image_pull_policy: None,
        }
    }

    /// The label selector of every Cluster the lab made.
    pub fn lab_selector(lab: &str) -> String {
        format!(
            "{}={},{LAB_LABEL}={}",
            MANAGED_BY.0,
            MANAGED_BY.1,
            label_value(lab)
        )
    }
}

/// `<lab>-<target>` as a DNS-1035 label of at most 40 characters (a digest of the whole
/// keeps two long names apart).
pub fn cluster_name(lab: &str, target: &str) -> String {
    let mut name: String = format!("{lab}-{target}")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_matches('-');
    let name = if name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.to_string()
    } else {
        format!("lab-{name}")
    };
    if name.len() <= NAME_LIMIT {
        return name;
    }
    let digest = format!("{:06x}", digest_of(&name) & 0xff_ffff);
    let kept = name[..NAME_LIMIT - 7].trim_end_matches('-');
    format!("{kept}-{digest}")
}

/// A label value: letters, digits, `-`, `_`, `.`, at most 63, alphanumeric at both ends.
fn label_value(text: &str) -> String {
    let value: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    value
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

fn digest_of(text: &str) -> u64 {
    // FNV-1a: stable across builds and machines, unlike std's hasher.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The Cluster for `shape` at `place`, the target's `settings` among its parameters (a setting
/// the table's `parameters` also give is refused: which one would hold is not clear).
pub fn cluster(
    shape: &ClusterShape,
    settings: &[(String, String)],
    place: &ClusterPlace,
) -> Result<PostgresCluster, String> {
    let settings = cluster_settings(shape, settings)?;
    let mut spec = shape_spec(shape, place);
    let mut annotations = BTreeMap::new();
    // Of the shape alone: targets that share the Cluster differ in their settings.
    annotations.insert(SPEC_ANNOTATION.to_string(), spec_digest(&spec));
    annotations.insert(SETTINGS_ANNOTATION.to_string(), settings.annotation());
    if let Some(postgresql) = spec.postgresql.as_mut() {
        postgresql.parameters.extend(settings.own);
    }
    let metadata = ObjectMeta {
        name: Some(place.name.clone()),
        namespace: Some(place.namespace.clone()),
        labels: Some(place.labels.clone()),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    };
    Ok(PostgresCluster::new(metadata, spec))
}

/// The Cluster as the lab creates it: the shape's parameters alone, no settings recorded as
/// the lab's. The target's settings are patched in once the Cluster is healthy, after its
/// server has checked them: an instance started with a parameter it cannot read does not start.
pub fn as_created(manifest: &PostgresCluster, settings: &ClusterSettings) -> PostgresCluster {
    let mut created = manifest.clone();
    if let Some(postgresql) = created.spec.postgresql.as_mut() {
        postgresql.parameters.retain(|name, _| {
            !settings.own.contains_key(name) || settings.shape.contains_key(name)
        });
    }
    let none = ClusterSettings::default().annotation();
    created
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SETTINGS_ANNOTATION.to_string(), none);
    created
}

/// The target's settings on top of the shape's parameters; a setting the table's
/// `parameters` also give with another value is refused (which one would hold is not clear).
pub fn cluster_settings(
    shape: &ClusterShape,
    settings: &[(String, String)],
) -> Result<ClusterSettings, String> {
    let mut own = BTreeMap::new();
    for (name, value) in settings {
        if let Some(given) = shape.parameters.get(name).filter(|given| *given != value) {
            return Err(format!(
                "{name} is both a setting (\"{value}\") and a parameter of the Cluster (\"{given}\"): give it once"
            ));
        }
        own.insert(name.clone(), value.clone());
    }
    Ok(ClusterSettings {
        shape: shape.parameters.clone(),
        own,
    })
}

/// The Cluster's spec with the shape's own parameters.
fn shape_spec(shape: &ClusterShape, place: &ClusterPlace) -> ClusterSpec {
    let parameters = shape.parameters.clone();
    ClusterSpec {
        instances: shape.instances,
        image_name: shape.image.clone(),
        image_pull_policy: place.image_pull_policy.clone(),
        storage: Some(storage(&shape.storage)),
        wal_storage: shape.wal_storage.as_ref().map(storage),
        resources: resources(shape),
        postgresql: Some(PostgresConfiguration {
            parameters,
            // The lab counts each run's statements.
            shared_preload_libraries: vec!["pg_stat_statements".into()],
            synchronous: shape
                .synchronous
                .as_ref()
                .map(|s| SynchronousConfiguration {
                    method: s.method.clone(),
                    number: s.number,
                    data_durability: s.data_durability.clone(),
                    other: BTreeMap::new(),
                }),
            other: BTreeMap::new(),
        }),
        affinity: affinity(shape),
        // The lab makes databases, checkpoints and reads every statement's statistics.
        enable_superuser_access: Some(true),
        // The exporter caches its queries' results (30 s by default): read at a window's
        // edges, its counters must be the server's then.
        other: BTreeMap::from([(
            "monitoring".to_string(),
            serde_json::json!({ "metricsQueriesTTL": "0s" }),
        )]),
    }
}

/// A digest of the spec as the lab wrote it.
pub fn spec_digest(spec: &ClusterSpec) -> String {
    let text = serde_json::to_string(spec).expect("plain data serializes to JSON");
    format!("{:016x}", digest_of(&text))
}

fn storage(storage: &Storage) -> StorageConfiguration {
    StorageConfiguration {
        storage_class: storage.class.clone(),
        size: Some(storage.size.clone()),
        other: BTreeMap::new(),
    }
}

fn resources(shape: &ClusterShape) -> Option<ResourceRequirements> {
    if shape.requests.is_empty() && shape.limits.is_empty() {
        return None;
    }
    let quantities = |given: &BTreeMap<String, String>| {
        (!given.is_empty()).then(|| {
            given
                .iter()
                .map(|(name, value)| (name.clone(), Quantity(value.clone())))
                .collect()
        })
    };
    Some(ResourceRequirements {
        requests: quantities(&shape.requests),
        limits: quantities(&shape.limits),
        ..ResourceRequirements::default()
    })
}

fn affinity(shape: &ClusterShape) -> Option<AffinityConfiguration> {
    if shape.anti_affinity.is_none() && shape.node_selector.is_empty() {
        return None;
    }
    let anti = shape.anti_affinity.clone();
    Some(AffinityConfiguration {
        enable_pod_anti_affinity: anti.as_ref().and_then(|a| a.enabled),
        topology_key: anti.as_ref().and_then(|a| a.topology_key.clone()),
        pod_anti_affinity_type: anti.and_then(|a| a.kind),
        node_selector: shape.node_selector.clone(),
        other: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::targets::cloudnativepg::spec::{parse, ClusterSource};
    use serde_json::json;

    fn shape(text: &str) -> ClusterShape {
        // Inline tables are one line in TOML 1.0.
        let table: toml::Table =
            toml::from_str(&format!("c = {}", text.replace('\n', " "))).unwrap();
        match parse(&table["c"]).unwrap().source {
            ClusterSource::Create(shape) => *shape,
            ClusterSource::Existing(_) => panic!("a Cluster to create"),
        }
    }

    fn place() -> ClusterPlace {
        ClusterPlace::new(
            "Storage classes",
            "gp3",
            "bench",
            &[("team".into(), "db".into())],
        )
    }

    fn spec_of(text: &str, settings: &[(&str, &str)]) -> serde_json::Value {
        let settings: Vec<(String, String)> = settings
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let cluster = cluster(&shape(text), &settings, &place()).unwrap();
        serde_json::to_value(&cluster).unwrap()
    }

    #[test]
    fn the_manifest_names_the_lab_and_target() {
        let manifest = spec_of(r#"{ storage = { size = "1Gi" } }"#, &[]);
        assert_eq!(manifest["apiVersion"], "postgresql.cnpg.io/v1");
        assert_eq!(manifest["kind"], "Cluster");
        assert_eq!(manifest["metadata"]["name"], "storage-classes-gp3");
        assert_eq!(manifest["metadata"]["namespace"], "bench");
        let labels = &manifest["metadata"]["labels"];
        assert_eq!(labels["stampede.dev/lab"], "Storage-classes");
        assert_eq!(labels["stampede.dev/target"], "gp3");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "stampede");
        assert_eq!(labels["team"], "db");
        assert_eq!(
            manifest["spec"],
            json!({"instances": 1, "storage": {"size": "1Gi"}, "enableSuperuserAccess": true,
                   "postgresql": {"shared_preload_libraries": ["pg_stat_statements"]},
                   "monitoring": {"metricsQueriesTTL": "0s"}})
        );
    }

    #[test]
    fn each_key_lands_where_the_operator_reads_it() {
        let spec = &spec_of(
            r#"{ instances = 2, image = "registry.local/pg:17.2", storage = { class = "fast", size = "20Gi" },
                 wal_storage = { class = "wal", size = "5Gi" },
                 resources = { requests = { cpu = 2, memory = "4Gi" }, limits = { memory = "4Gi" } },
                 parameters = { max_connections = 200 },
                 synchronous = { method = "first", number = 1, data_durability = "preferred" },
                 affinity = { enable_pod_anti_affinity = true, topology_key = "zone", pod_anti_affinity_type = "required" },
                 node_selector = { disk = "nvme" } }"#,
            &[("shared_buffers", "1GB")],
        )["spec"];
        assert_eq!(spec["instances"], 2);
        assert_eq!(spec["imageName"], "registry.local/pg:17.2");
        assert_eq!(
            spec["storage"],
            json!({"storageClass": "fast", "size": "20Gi"})
        );
        assert_eq!(
            spec["walStorage"],
            json!({"storageClass": "wal", "size": "5Gi"})
        );
        assert_eq!(
            spec["resources"],
            json!({"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}})
        );
        assert_eq!(
            spec["postgresql"]["parameters"],
            json!({"max_connections": "200", "shared_buffers": "1GB"})
        );
        assert_eq!(
            spec["postgresql"]["synchronous"],
            json!({"method": "first", "number": 1, "dataDurability": "preferred"})
        );
        assert_eq!(
            spec["affinity"],
            json!({"enablePodAntiAffinity": true, "topologyKey": "zone",
                   "podAntiAffinityType": "required", "nodeSelector": {"disk": "nvme"}})
        );
    }

    #[test]
    fn a_setting_given_twice_is_refused() {
        let error = cluster(
            &shape(r#"{ storage = { size = "1Gi" }, parameters = { work_mem = "4MB" } }"#),
            &[("work_mem".into(), "8MB".into())],
            &place(),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "work_mem is both a setting (\"8MB\") and a parameter of the Cluster (\"4MB\"): give it once"
        );
    }

    #[test]
    fn a_cluster_is_created_with_its_shape_s_parameters_alone() {
        let shape = shape(
            r#"{ storage = { size = "1Gi" }, parameters = { max_connections = "200", work_mem = "4MB" } }"#,
        );
        let settings = [
            ("shared_buffers".to_string(), "1GB".to_string()),
            ("work_mem".to_string(), "4MB".to_string()),
        ];
        let full = cluster(&shape, &settings, &place()).unwrap();
        let created = as_created(&full, &cluster_settings(&shape, &settings).unwrap());
        let parameters = &created.spec.postgresql.as_ref().unwrap().parameters;
        // work_mem is the shape's too, with the same value: it stays.
        assert_eq!(
            parameters.keys().collect::<Vec<_>>(),
            ["max_connections", "work_mem"]
        );
        let annotations = created.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[SETTINGS_ANNOTATION], "{}");
        assert_eq!(
            annotations[SPEC_ANNOTATION],
            full.metadata.annotations.as_ref().unwrap()[SPEC_ANNOTATION]
        );
    }

    #[test]
    fn names_are_dns_labels_that_keep_long_ones_apart() {
        assert_eq!(cluster_name("nightly", "PG 17"), "nightly-pg-17");
        assert_eq!(cluster_name("2026 run", "a"), "lab-2026-run-a");
        let long_a = cluster_name("a-very-long-lab-name-about-storage", "premium-ssd-v2-a");
        let long_b = cluster_name("a-very-long-lab-name-about-storage", "premium-ssd-v2-b");
        assert!(
            long_a.len() <= 40 && long_b.len() <= 40,
            "{long_a} {long_b}"
        );
        assert_ne!(long_a, long_b);
        assert!(crate::lab::targets::cloudnativepg::spec::is_dns_label(
            &long_a
        ));
    }

    #[test]
    fn the_digest_follows_the_spec() {
        let one = cluster(&shape(r#"{ storage = { size = "1Gi" } }"#), &[], &place()).unwrap();
        let two = cluster(&shape(r#"{ storage = { size = "2Gi" } }"#), &[], &place()).unwrap();
        let digest =
            |c: &PostgresCluster| c.metadata.annotations.as_ref().unwrap()[SPEC_ANNOTATION].clone();
        assert_ne!(digest(&one), digest(&two));
        // Settings aside: two targets of one shape share a Cluster and its digest.
        let tuned = cluster(
            &shape(r#"{ storage = { size = "1Gi" } }"#),
            &[("work_mem".into(), "8MB".into())],
            &place(),
        )
        .unwrap();
        assert_eq!(digest(&one), digest(&tuned));
        assert_eq!(
            tuned.metadata.annotations.as_ref().unwrap()[SETTINGS_ANNOTATION],
            r#"{"work_mem":"8MB"}"#
        );
        assert_eq!(
            one.metadata.annotations.as_ref().unwrap()[SETTINGS_ANNOTATION],
            "{}"
        );
    }
}
