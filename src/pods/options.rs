//! The Kubernetes options every run command takes (`stampede pgbench … --pods 3`), named as
//! kubectl and Kubernetes users know them, and their check into the Job's options.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;

use stampede_base::error::Failure;
use stampede_kube::manifest::{JobOptions, WorkdirVolume};
use stampede_kube::SecretEnv;

/// The port pod 0's coordinator listens on unless told otherwise.
pub const DEFAULT_COORDINATOR_PORT: u16 = 7710;

/// Also a lab spec's `[kubernetes]` section, by the same names with `_` (`node_selector =
/// ["pool=clients"]`, `host_network = true`); its workloads say `pods = N` themselves.
#[derive(Debug, Args, Default, Clone, PartialEq, serde::Deserialize)]
#[command(next_help_heading = "Kubernetes (run the load from N pods of an Indexed Job)")]
#[serde(default, deny_unknown_fields)]
pub struct KubeArgs {
    /// Spread the run's clients over this many pods of a Kubernetes Indexed Job
    #[arg(long = "pods", value_name = "N")]
    #[serde(skip)]
    pub pods: Option<usize>,
    /// Print the Job's manifests (after the API server's dry run) and create nothing
    #[arg(long = "dry-run")]
    #[serde(skip)]
    pub dry_run: bool,
    /// The image holding stampede [default: localhost/stampede:VERSION]
    #[arg(long = "image", value_name = "IMAGE")]
    pub image: Option<String>,
    /// Always, IfNotPresent or Never
    #[arg(long = "image-pull-policy", value_name = "POLICY")]
    pub image_pull_policy: Option<String>,
    /// The namespace [default: the context's]
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// A kubeconfig file [default: KUBECONFIG, ~/.kube/config, or in-cluster]
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context to use
    #[arg(long = "context", value_name = "NAME")]
    pub context: Option<String>,
    /// Schedule the pods on nodes with these labels (key=value, comma-separated or repeated)
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// At most one of the run's pods per node (a required pod anti-affinity on the hostname)
    #[arg(long = "one-pod-per-node")]
    pub one_pod_per_node: bool,
    /// The pods' affinity: a v1 Affinity as JSON, or @FILE holding it
    #[arg(long = "affinity", value_name = "JSON")]
    pub affinity: Option<String>,
    /// Tolerate a taint: KEY[=VALUE]:EFFECT (repeatable)
    #[arg(long = "toleration", value_name = "TAINT")]
    pub tolerations: Vec<String>,
    /// Each pod's resource requests (cpu=4,memory=1Gi)
    #[arg(long = "requests", value_name = "LIST")]
    pub requests: Option<String>,
    /// Each pod's resource limits (cpu=4,memory=1Gi)
    #[arg(long = "limits", value_name = "LIST")]
    pub limits: Option<String>,
    /// The pods' service account [default: the namespace's default, its token not mounted]
    #[arg(long = "service-account", value_name = "NAME")]
    pub service_account: Option<String>,
    /// Extra labels on the Job, its pods and Service (key=value, comma-separated)
    #[arg(long = "labels", value_name = "LIST")]
    pub labels: Option<String>,
    /// Run the pods on their nodes' network (single-node clusters, servers on the node)
    #[arg(long = "host-network")]
    pub host_network: bool,
    /// The password from a Secret's key (SECRET or SECRET/KEY, key "password" by default)
    #[arg(long = "password-secret", value_name = "SECRET[/KEY]")]
    pub password_secret: Option<String>,
    /// The pods' working directory (-l logs): pvc:CLAIM or hostPath:/DIR [default: emptyDir]
    #[arg(long = "pod-workdir", value_name = "VOLUME")]
    pub pod_workdir: Option<String>,
    /// How the pods reach pod 0 [default: its name under the run's headless Service]
    #[arg(long = "coordinator-address", value_name = "HOST")]
    pub coordinator_address: Option<String>,
    /// The port pod 0 coordinates on [default: 7710]
    #[arg(long = "coordinator-port", value_name = "PORT")]
    pub coordinator_port: Option<u16>,
    /// How long a pod may take to be scheduled and start [default: 2m]
    #[arg(long = "pod-start-timeout", value_name = "DURATION")]
    pub pod_start_timeout: Option<String>,
    /// A lab's: the address the pods reach its servers at [default: 127.0.0.1, for pods on
    /// the lab machine's network]; its servers must listen there (`listen_addresses`)
    #[arg(skip)]
    pub server_address: Option<String>,
    /// A sharded lab's (`lab run --shards N`): the Secret holding the results database's
    /// password, SECRET or SECRET/KEY
    #[arg(skip)]
    pub results_secret: Option<String>,
    /// A sharded lab's: let several shards share a node (tests, one-node clusters); by default
    /// each shard has a node of its own, as a lab machine has
    #[arg(skip)]
    pub shared_nodes: bool,
}

impl KubeArgs {
    /// Whether the run goes to Kubernetes.
    pub fn wanted(&self) -> bool {
        self.pods.is_some()
    }

    /// Kubernetes options without `--pods`: a mistake, said before anything runs.
    pub fn check_alone(&self) -> Result<(), Failure> {
        if self.pods.is_none() && self.given().next().is_some() {
            return Err(Failure::input(format!(
                "--{} needs --pods N (the Kubernetes options shape the pods of a spread run)",
                self.given()
                    .next()
                    .expect("the condition found a given option")
            )));
        }
        if self.pods == Some(0) {
            return Err(Failure::input("--pods must be at least 1"));
        }
        Ok(())
    }

    fn given(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("dry-run", self.dry_run),
            ("image", self.image.is_some()),
            ("image-pull-policy", self.image_pull_policy.is_some()),
            ("namespace", self.namespace.is_some()),
            ("kubeconfig", self.kubeconfig.is_some()),
            ("context", self.context.is_some()),
            ("node-selector", !self.node_selector.is_empty()),
            ("one-pod-per-node", self.one_pod_per_node),
            ("affinity", self.affinity.is_some()),
            ("toleration", !self.tolerations.is_empty()),
            ("requests", self.requests.is_some()),
            ("limits", self.limits.is_some()),
            ("service-account", self.service_account.is_some()),
            ("labels", self.labels.is_some()),
            ("host-network", self.host_network),
            ("password-secret", self.password_secret.is_some()),
            ("pod-workdir", self.pod_workdir.is_some()),
            ("coordinator-address", self.coordinator_address.is_some()),
            ("coordinator-port", self.coordinator_port.is_some()),
            ("pod-start-timeout", self.pod_start_timeout.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
    }

    /// These options over `base` (a spec's `[kubernetes]`): each one given here wins.
    pub fn over(&self, base: &KubeArgs) -> KubeArgs {
        fn pick<T: Clone>(given: &Option<T>, base: &Option<T>) -> Option<T> {
            given.clone().or_else(|| base.clone())
        }
        fn list(given: &[String], base: &[String]) -> Vec<String> {
            if given.is_empty() { base } else { given }.to_vec()
        }
        KubeArgs {
            pods: pick(&self.pods, &base.pods),
            dry_run: self.dry_run || base.dry_run,
            image: pick(&self.image, &base.image),
            image_pull_policy: pick(&self.image_pull_policy, &base.image_pull_policy),
            namespace: pick(&self.namespace, &base.namespace),
            kubeconfig: pick(&self.kubeconfig, &base.kubeconfig),
            context: pick(&self.context, &base.context),
            node_selector: list(&self.node_selector, &base.node_selector),
            one_pod_per_node: self.one_pod_per_node || base.one_pod_per_node,
            affinity: pick(&self.affinity, &base.affinity),
            tolerations: list(&self.tolerations, &base.tolerations),
            requests: pick(&self.requests, &base.requests),
            limits: pick(&self.limits, &base.limits),
            service_account: pick(&self.service_account, &base.service_account),
            labels: pick(&self.labels, &base.labels),
            host_network: self.host_network || base.host_network,
            password_secret: pick(&self.password_secret, &base.password_secret),
            pod_workdir: pick(&self.pod_workdir, &base.pod_workdir),
            coordinator_address: pick(&self.coordinator_address, &base.coordinator_address),
            coordinator_port: pick(&self.coordinator_port, &base.coordinator_port),
            pod_start_timeout: pick(&self.pod_start_timeout, &base.pod_start_timeout),
            server_address: pick(&self.server_address, &base.server_address),
            results_secret: pick(&self.results_secret, &base.results_secret),
            shared_nodes: self.shared_nodes || base.shared_nodes,
        }
    }

    /// The first option given, by its name on the command line (for "needs --shards").
    pub fn first_given(&self) -> Option<&'static str> {
        self.given().next()
    }

    pub fn image(&self) -> String {
        self.image
            .clone()
            .unwrap_or_else(|| format!("localhost/stampede:{}", env!("CARGO_PKG_VERSION")))
    }

    pub fn image_pull_policy(&self) -> Result<Option<String>, Failure> {
        match self.image_pull_policy.as_deref() {
            None => Ok(None),
            Some(p @ ("Always" | "IfNotPresent" | "Never")) => Ok(Some(p.to_string())),
            Some(other) => Err(Failure::input(format!(
                "--image-pull-policy: \"{other}\" is not Always, IfNotPresent or Never"
            ))),
        }
    }

    pub fn node_selector(&self) -> Result<BTreeMap<String, String>, Failure> {
        let joined = self.node_selector.join(",");
        pairs(&joined, "--node-selector")
    }

    pub fn labels(&self) -> Result<BTreeMap<String, String>, Failure> {
        pairs(self.labels.as_deref().unwrap_or(""), "--labels")
    }

    pub fn requests(&self) -> Result<BTreeMap<String, String>, Failure> {
        pairs(self.requests.as_deref().unwrap_or(""), "--requests")
    }

    pub fn limits(&self) -> Result<BTreeMap<String, String>, Failure> {
        pairs(self.limits.as_deref().unwrap_or(""), "--limits")
    }

    pub fn coordinator_port(&self) -> u16 {
        self.coordinator_port.unwrap_or(DEFAULT_COORDINATOR_PORT)
    }

    pub fn start_timeout(&self) -> Result<Duration, Failure> {
        match self.pod_start_timeout.as_deref() {
            None => Ok(Duration::from_secs(120)),
            Some(text) => stampede_base::duration::parse_duration(text).ok_or_else(|| {
                Failure::input(format!(
                    "--pod-start-timeout: \"{text}\" is not a duration (such as 90s or 5m)"
                ))
            }),
        }
    }

    /// The Job's options these give, for `pods` pods running `args` (stampede's words): what
    /// the run adds (its variables, Secrets, files, coordinator) is the caller's.
    pub fn job_options(
        &self,
        name: &str,
        namespace: &str,
        pods: usize,
        args: Vec<String>,
    ) -> Result<JobOptions, Failure> {
        Ok(JobOptions {
            name: name.to_string(),
            namespace: namespace.to_string(),
            pods,
            image: self.image(),
            image_pull_policy: self.image_pull_policy()?,
            args,
            env: Vec::new(),
            secret_env: Vec::new(),
            node_selector: self.node_selector()?,
            affinity: self.affinity(name)?,
            tolerations: self.tolerations()?,
            requests: self.requests()?,
            limits: self.limits()?,
            service_account: self.service_account.clone(),
            labels: self.labels()?,
            host_network: self.host_network,
            coordinator_port: 0,
            workdir: self.workdir()?,
            files: BTreeMap::new(),
            secret_data: BTreeMap::new(),
            ttl_seconds_after_finished: 600,
            active_deadline_seconds: None,
            independent_pods: false,
            field_env: Vec::new(),
        })
    }

    /// `--password-secret` as the pods' `variable` (PGPASSWORD, MYSQL_PWD).
    pub fn password_secret(&self, variable: &str) -> Result<Option<SecretEnv>, Failure> {
        self.password_secret
            .as_deref()
            .map(|text| secret_reference(text, variable, "--password-secret"))
            .transpose()
    }

    /// `--results-secret` as the shards' `variable`.
    pub fn results_secret(&self, variable: &str) -> Result<Option<SecretEnv>, Failure> {
        self.results_secret
            .as_deref()
            .map(|text| secret_reference(text, variable, "--results-secret"))
            .transpose()
    }

    pub fn workdir(&self) -> Result<WorkdirVolume, Failure> {
        match self.pod_workdir.as_deref() {
            None => Ok(WorkdirVolume::Scratch),
            Some(text) => match text.split_once(':') {
                Some(("pvc", claim)) if !claim.is_empty() => Ok(WorkdirVolume::Claim(claim.into())),
                Some(("hostPath", dir)) if dir.starts_with('/') => {
                    Ok(WorkdirVolume::HostPath(dir.into()))
                }
                _ => Err(Failure::input(format!(
                    "--pod-workdir: \"{text}\" is not pvc:CLAIM or hostPath:/DIR"
                ))),
            },
        }
    }

    /// The affinity: `--affinity` as given, with `--one-pod-per-node`'s anti-affinity added.
    pub fn affinity(
        &self,
        run: &str,
    ) -> Result<Option<k8s_openapi::api::core::v1::Affinity>, Failure> {
        let mut affinity: Option<k8s_openapi::api::core::v1::Affinity> = match &self.affinity {
            None => None,
            Some(text) => {
                let json = match text.strip_prefix('@') {
                    Some(path) => std::fs::read_to_string(path).map_err(|e| {
                        Failure::input(format!("--affinity: could not read {path}: {e}"))
                    })?,
                    None => text.clone(),
                };
                Some(serde_json::from_str(&json).map_err(|e| {
                    Failure::input(format!("--affinity: not a v1 Affinity in JSON: {e}"))
                })?)
            }
        };
        if self.one_pod_per_node {
            let term: k8s_openapi::api::core::v1::PodAffinityTerm =
                serde_json::from_value(serde_json::json!({
                    "labelSelector": {"matchLabels": {stampede_kube::RUN_LABEL: run}},
                    "topologyKey": "kubernetes.io/hostname"
                }))
                .expect("a valid term");
            let anti = affinity
                .get_or_insert_with(Default::default)
                .pod_anti_affinity
                .get_or_insert_with(Default::default);
            anti.required_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .push(term);
        }
        Ok(affinity)
    }

    pub fn tolerations(&self) -> Result<Vec<k8s_openapi::api::core::v1::Toleration>, Failure> {
        self.tolerations.iter().map(|t| toleration(t)).collect()
    }
}

/// SECRET or SECRET/KEY (key "password" by default) as `variable` from that key.
fn secret_reference(text: &str, variable: &str, option: &str) -> Result<SecretEnv, Failure> {
    let (secret, key) = text.split_once('/').unwrap_or((text, "password"));
    if secret.is_empty() || key.is_empty() {
        return Err(Failure::input(format!(
            "{option}: \"{text}\" is not SECRET or SECRET/KEY"
        )));
    }
    Ok(SecretEnv {
        variable: variable.into(),
        secret: secret.into(),
        key: key.into(),
    })
}

/// KEY[=VALUE]:EFFECT as a toleration (Equal with a value, Exists without).
fn toleration(text: &str) -> Result<k8s_openapi::api::core::v1::Toleration, Failure> {
    let bad = || {
        Failure::input(format!(
            "--toleration: \"{text}\" is not KEY[=VALUE]:EFFECT (NoSchedule, PreferNoSchedule, \
             NoExecute)"
        ))
    };
    let (taint, effect) = text.rsplit_once(':').ok_or_else(bad)?;
    if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) || taint.is_empty() {
        return Err(bad());
    }
    let (key, value) = match taint.split_once('=') {
        Some((key, value)) => (key, Some(value.to_string())),
        None => (taint, None),
    };
    Ok(k8s_openapi::api::core::v1::Toleration {
        key: Some(key.into()),
        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
        value,
        effect: Some(effect.into()),
        ..Default::default()
    })
}

/// "a=b,c=d" as a map; empty text, an empty map.
fn pairs(text: &str, option: &str) -> Result<BTreeMap<String, String>, Failure> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(Failure::input(format!(
                "{option}: \"{item}\" is not key=value"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_of_pairs_are_checked() {
        let args = KubeArgs {
            requests: Some("cpu=4, memory=1Gi".into()),
            node_selector: vec!["pool=clients".into(), "zone=a".into()],
            ..KubeArgs::default()
        };
        assert_eq!(args.requests().unwrap()["memory"], "1Gi");
        assert_eq!(args.node_selector().unwrap().len(), 2);
        let bad = KubeArgs {
            labels: Some("team".into()),
            ..KubeArgs::default()
        };
        assert_eq!(
            bad.labels().unwrap_err().to_string(),
            "--labels: \"team\" is not key=value"
        );
    }

    #[test]
    fn a_kubernetes_option_without_pods_is_refused() {
        let args = KubeArgs {
            namespace: Some("bench".into()),
            ..KubeArgs::default()
        };
        assert_eq!(
            args.check_alone().unwrap_err().to_string(),
            "--namespace needs --pods N (the Kubernetes options shape the pods of a spread run)"
        );
    }

    #[test]
    fn secrets_workdirs_and_tolerations_parse() {
        let args = KubeArgs {
            password_secret: Some("pg-app".into()),
            pod_workdir: Some("hostPath:/srv/logs".into()),
            tolerations: vec!["dedicated=bench:NoSchedule".into(), "spot:NoExecute".into()],
            ..KubeArgs::default()
        };
        let secret = args.password_secret("PGPASSWORD").unwrap().unwrap();
        assert_eq!(
            (secret.secret.as_str(), secret.key.as_str()),
            ("pg-app", "password")
        );
        assert_eq!(
            args.workdir().unwrap(),
            WorkdirVolume::HostPath("/srv/logs".into())
        );
        let tolerations = args.tolerations().unwrap();
        assert_eq!(tolerations[0].operator.as_deref(), Some("Equal"));
        assert_eq!(tolerations[1].operator.as_deref(), Some("Exists"));
        let bad = KubeArgs {
            pod_workdir: Some("nfs:/x".into()),
            ..KubeArgs::default()
        };
        assert!(bad.workdir().is_err());
    }

    #[test]
    fn one_pod_per_node_adds_a_required_anti_affinity() {
        let args = KubeArgs {
            one_pod_per_node: true,
            ..KubeArgs::default()
        };
        let affinity = args.affinity("run-1").unwrap().unwrap();
        let terms = affinity
            .pod_anti_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap();
        assert_eq!(terms[0].topology_key, "kubernetes.io/hostname");
    }
}
