//! `cloudnativepg = { … }` in a `[[target]]`: the Cluster in the operator's own vocabulary, or
//! `cluster = "name"` for one that already exists.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// The operand images CloudNativePG publishes, by PostgreSQL major.
pub const OPERAND_IMAGES: &str = "ghcr.io/cloudnative-pg/postgresql";
/// How long a Cluster may take to become healthy.
pub const READY_TIMEOUT: Duration = Duration::from_secs(600);

/// What the target asks of the operator.
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterSource {
    /// A Cluster the lab creates, and deletes when it ends.
    Create(Box<ClusterShape>),
    /// A Cluster that exists: the lab only visits it, as a url target's server.
    Existing(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    pub source: ClusterSource,
    pub ready_timeout: Duration,
    /// The pods of a Job each run's clients come from (inside the cluster, as the
    /// applications the Cluster serves).
    pub pods: usize,
    /// Whether a target of the same Cluster shape (its settings aside) shares this one's
    /// Cluster, its settings patched in before each of its runs (`share = false`: a Cluster of
    /// its own, e.g. to see how two Clusters of one spec differ).
    pub share: bool,
}

/// The Cluster's spec as the target gives it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterShape {
    pub instances: u32,
    /// The operand image; None: the operator's default.
    pub image: Option<String>,
    pub storage: Storage,
    pub wal_storage: Option<Storage>,
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
    /// postgresql.parameters as the target gives them (its `settings` join them).
    pub parameters: BTreeMap<String, String>,
    pub synchronous: Option<Synchronous>,
    pub anti_affinity: Option<AntiAffinity>,
    pub node_selector: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Storage {
    /// None: the cluster's default storage class.
    pub class: Option<String>,
    pub size: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Synchronous {
    pub method: String,
    pub number: u32,
    pub data_durability: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AntiAffinity {
    pub enabled: Option<bool>,
    pub topology_key: Option<String>,
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    cluster: Option<String>,
    instances: Option<i64>,
    postgres: Option<toml::Value>,
    image: Option<String>,
    storage: Option<StorageFile>,
    wal_storage: Option<StorageFile>,
    resources: Option<ResourcesFile>,
    #[serde(default)]
    parameters: BTreeMap<String, toml::Value>,
    synchronous: Option<SynchronousFile>,
    affinity: Option<AffinityFile>,
    #[serde(default)]
    node_selector: BTreeMap<String, String>,
    ready_timeout: Option<String>,
    pods: Option<i64>,
    share: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StorageFile {
    class: Option<String>,
    size: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourcesFile {
    #[serde(default)]
    requests: BTreeMap<String, toml::Value>,
    #[serde(default)]
    limits: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SynchronousFile {
    method: String,
    number: i64,
    data_durability: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AffinityFile {
    enable_pod_anti_affinity: Option<bool>,
    topology_key: Option<String>,
    pod_anti_affinity_type: Option<String>,
}

/// The target's table, checked; errors are sentences without the key's name (the caller puts
/// `cloudnativepg: ` and the position before them).
pub fn parse(value: &toml::Value) -> Result<ClusterConfig, String> {
    let file: ClusterFile = value
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())?;
    let ready_timeout = match &file.ready_timeout {
        None => READY_TIMEOUT,
        Some(text) => stampede_base::duration::parse_duration(text)
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                format!("ready_timeout: \"{text}\" is not a duration (\"10m\", \"90s\")")
            })?,
    };
    let pods = match file.pods {
        None => 1,
        Some(n) if (1..=256).contains(&n) => n as usize,
        Some(n) => return Err(format!("pods: {n}: give 1 to 256")),
    };
    let share = file.share.unwrap_or(true);
    let source = match file.cluster.clone() {
        Some(name) if file.share.is_some() => {
            return Err(format!(
                "share: Cluster \"{name}\" is used as it is; share says whether the lab's own Clusters are shared"
            ))
        }
        Some(name) => existing(&file, name)?,
        None => ClusterSource::Create(Box::new(shape(file)?)),
    };
    Ok(ClusterConfig {
        source,
        ready_timeout,
        pods,
        share,
    })
}

/// `cluster = "name"` stands alone: the Cluster's spec is its owner's.
fn existing(file: &ClusterFile, name: String) -> Result<ClusterSource, String> {
    let shaped = file.instances.is_some()
        || file.postgres.is_some()
        || file.image.is_some()
        || file.storage.is_some()
        || file.wal_storage.is_some()
        || file.resources.is_some()
        || !file.parameters.is_empty()
        || file.synchronous.is_some()
        || file.affinity.is_some()
        || !file.node_selector.is_empty();
    if shaped {
        return Err(format!(
            "cluster = \"{name}\" uses a Cluster as it is: give its settings as the target's settings, not instances, storage or other keys of a Cluster the lab would create"
        ));
    }
    if !is_dns_label(&name) {
        return Err(format!("cluster: \"{name}\" is not a Cluster's name"));
    }
    Ok(ClusterSource::Existing(name))
}

fn shape(file: ClusterFile) -> Result<ClusterShape, String> {
    let instances = match file.instances {
        None => 1,
        Some(n) if (1..=64).contains(&n) => n as u32,
        Some(n) => return Err(format!("instances: {n}: give 1 to 64")),
    };
    let image = match (file.postgres, file.image) {
        (Some(_), Some(_)) => {
            return Err("give postgres (a major) or image, not both".into());
        }
        (Some(major), None) => Some(operand_image(&major)?),
        (None, image) => image,
    };
    let storage = match file.storage {
        Some(storage) => storage_of("storage", storage)?,
        None => {
            return Err(
                "storage: give the instances' volumes, e.g. storage = { size = \"20Gi\", class = \"gp3\" } (class: the cluster's default when left out)"
                    .into(),
            )
        }
    };
    let wal_storage = file
        .wal_storage
        .map(|s| storage_of("wal_storage", s))
        .transpose()?;
    let (requests, limits) = match file.resources {
        Some(resources) => (
            quantities("resources.requests", resources.requests)?,
            quantities("resources.limits", resources.limits)?,
        ),
        None => Default::default(),
    };
    let parameters = file
        .parameters
        .into_iter()
        .map(|(name, value)| Ok((name.clone(), scalar(&format!("parameters.{name}"), &value)?)))
        .collect::<Result<_, String>>()?;
    let synchronous = file
        .synchronous
        .map(|s| synchronous(s, instances))
        .transpose()?;
    let anti_affinity = file.affinity.map(anti_affinity).transpose()?;
    Ok(ClusterShape {
        instances,
        image,
        storage,
        wal_storage,
        requests,
        limits,
        parameters,
        synchronous,
        anti_affinity,
        node_selector: file.node_selector,
    })
}

/// `postgres = "17"`: the operator's operand image of that major.
fn operand_image(major: &toml::Value) -> Result<String, String> {
    let text = match major {
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::String(text) => text.trim().to_string(),
        _ => String::new(),
    };
    match text.parse::<u32>() {
        Ok(n) if (13..=99).contains(&n) => Ok(format!("{OPERAND_IMAGES}:{n}")),
        _ => Err(format!(
            "postgres: give a major (\"17\", \"18\") for the operator's image of it, or image = \"…\" for another (not \"{text}\")"
        )),
    }
}

fn storage_of(key: &str, file: StorageFile) -> Result<Storage, String> {
    let size = file
        .size
        .ok_or_else(|| format!("{key}: give its size, e.g. size = \"20Gi\""))?;
    if !is_quantity(&size) {
        return Err(format!(
            "{key}: size \"{size}\" is not a Kubernetes quantity (\"20Gi\", \"500M\")"
        ));
    }
    Ok(Storage {
        class: file.class,
        size,
    })
}

fn quantities(
    key: &str,
    given: BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, String>, String> {
    given
        .into_iter()
        .map(|(name, value)| {
            let text = scalar(&format!("{key}.{name}"), &value)?;
            if !is_quantity(&text) {
                return Err(format!(
                    "{key}.{name}: \"{text}\" is not a Kubernetes quantity (\"2\", \"500m\", \"4Gi\")"
                ));
            }
            Ok((name, text))
        })
        .collect()
}

fn synchronous(file: SynchronousFile, instances: u32) -> Result<Synchronous, String> {
    if !matches!(file.method.as_str(), "any" | "first") {
        return Err(format!(
            "synchronous.method: \"{}\": give \"any\" (quorum) or \"first\" (priority)",
            file.method
        ));
    }
    if file.number < 1 || file.number >= i64::from(instances) {
        return Err(format!(
            "synchronous.number = {}: give 1 to {} (the standbys of {instances} instance(s))",
            file.number,
            instances.saturating_sub(1)
        ));
    }
    if let Some(durability) = &file.data_durability {
        if !matches!(durability.as_str(), "required" | "preferred") {
            return Err(format!(
                "synchronous.data_durability: \"{durability}\": give \"required\" or \"preferred\""
            ));
        }
    }
    Ok(Synchronous {
        method: file.method,
        number: file.number as u32,
        data_durability: file.data_durability,
    })
}

fn anti_affinity(file: AffinityFile) -> Result<AntiAffinity, String> {
    if let Some(kind) = &file.pod_anti_affinity_type {
        if !matches!(kind.as_str(), "preferred" | "required") {
            return Err(format!(
                "affinity.pod_anti_affinity_type: \"{kind}\": give \"preferred\" or \"required\""
            ));
        }
    }
    Ok(AntiAffinity {
        enabled: file.enable_pod_anti_affinity,
        topology_key: file.topology_key,
        kind: file.pod_anti_affinity_type,
    })
}

/// A parameter's or quantity's value as text: strings as they are, numbers and booleans as
/// TOML writes them.
fn scalar(key: &str, value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(text) => Ok(text.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
        _ => Err(format!("{key}: give a string or a number")),
    }
}

/// A Kubernetes quantity: a number with an optional suffix (m, k, M, G, T, Ki, Mi, Gi, Ti, …).
fn is_quantity(text: &str) -> bool {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &text[digits.len()..];
    let number = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.parse::<f64>().is_ok();
    number
        && matches!(
            suffix,
            "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
        )
}

/// A DNS-1035 label as Kubernetes names objects: lower-case letters, digits and `-`, a letter
/// first, at most 63 characters.
pub fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<ClusterConfig, String> {
        // Inline tables are one line in TOML 1.0.
        let table: toml::Table =
            toml::from_str(&format!("c = {}", text.replace('\n', " "))).unwrap();
        parse(&table["c"])
    }

    #[test]
    fn a_cluster_takes_the_operator_s_vocabulary() {
        let config = parsed(
            r#"{ instances = 3, postgres = 17, storage = { class = "fast", size = "20Gi" },
                 wal_storage = { size = "5Gi" }, resources = { requests = { cpu = 2, memory = "4Gi" }, limits = { memory = "4Gi" } },
                 parameters = { shared_buffers = "1GB", max_connections = 200, jit = false },
                 synchronous = { method = "any", number = 1, data_durability = "required" },
                 affinity = { enable_pod_anti_affinity = true, topology_key = "kubernetes.io/hostname" },
                 node_selector = { "node.kubernetes.io/instance-type" = "m6i.xlarge" }, ready_timeout = "15m", pods = 3 }"#,
        )
        .unwrap();
        assert_eq!(config.ready_timeout, Duration::from_secs(900));
        assert_eq!(config.pods, 3);
        assert!(config.share);
        let ClusterSource::Create(shape) = config.source else {
            panic!("a Cluster to create")
        };
        assert_eq!(shape.instances, 3);
        assert_eq!(
            shape.image.as_deref(),
            Some("ghcr.io/cloudnative-pg/postgresql:17")
        );
        assert_eq!(shape.storage.class.as_deref(), Some("fast"));
        assert_eq!(shape.wal_storage.unwrap().size, "5Gi");
        assert_eq!(shape.requests["cpu"], "2");
        assert_eq!(shape.limits["memory"], "4Gi");
        assert_eq!(shape.parameters["max_connections"], "200");
        assert_eq!(shape.parameters["jit"], "off");
        assert_eq!(shape.synchronous.unwrap().number, 1);
        assert_eq!(shape.anti_affinity.unwrap().enabled, Some(true));
        assert_eq!(shape.node_selector.len(), 1);
    }

    #[test]
    fn bad_keys_and_values_are_named() {
        let cases = [
            (
                r#"{ instnces = 2, storage = { size = "1Gi" } }"#,
                "unknown field `instnces`, expected one of",
            ),
            (
                r#"{ instances = 2 }"#,
                "storage: give the instances' volumes",
            ),
            (
                r#"{ storage = { size = "lots" } }"#,
                "storage: size \"lots\" is not a Kubernetes quantity",
            ),
            (
                r#"{ postgres = "17", image = "x", storage = { size = "1Gi" } }"#,
                "give postgres (a major) or image, not both",
            ),
            (
                r#"{ postgres = "seventeen", storage = { size = "1Gi" } }"#,
                "postgres: give a major",
            ),
            (
                r#"{ synchronous = { method = "any", number = 1 }, storage = { size = "1Gi" } }"#,
                "synchronous.number = 1: give 1 to 0 (the standbys of 1 instance(s))",
            ),
            (
                r#"{ instances = 2, synchronous = { method = "all", number = 1 }, storage = { size = "1Gi" } }"#,
                "synchronous.method: \"all\"",
            ),
            (
                r#"{ cluster = "prod", instances = 2 }"#,
                "cluster = \"prod\" uses a Cluster as it is",
            ),
            (
                r#"{ cluster = "Prod_1" }"#,
                "cluster: \"Prod_1\" is not a Cluster's name",
            ),
            (r#"{ cluster = "a", pods = 0 }"#, "pods: 0: give 1 to 256"),
            (
                r#"{ cluster = "a", share = false }"#,
                "share: Cluster \"a\" is used as it is",
            ),
            (
                r#"{ storage = { size = "1Gi" }, ready_timeout = "soon" }"#,
                "ready_timeout: \"soon\" is not a duration",
            ),
            (
                r#"{ storage = { size = "1Gi" }, resources = { requests = { cpu = "two" } } }"#,
                "resources.requests.cpu: \"two\" is not a Kubernetes quantity",
            ),
        ];
        for (text, expected) in cases {
            let error = parsed(text).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn an_existing_cluster_stands_alone() {
        let config = parsed(r#"{ cluster = "prod-db", ready_timeout = "2m" }"#).unwrap();
        assert_eq!(config.source, ClusterSource::Existing("prod-db".into()));
    }
}
