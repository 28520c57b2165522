//! The objects of one run: an Indexed Job (one pod per index, all at once, none retried: a
//! restarted pod cannot rejoin a run in progress), a headless Service that gives pod 0 (the
//! coordinator) a stable name in clusters with DNS, and a ConfigMap with the files the command
//! line names (scripts), mounted read-only where the rewritten command line points.
//!
//! Least privilege: the pods run as a non-root user with a read-only root filesystem (an
//! emptyDir at /tmp), no capabilities, no privilege escalation, the runtime's seccomp profile and
//! no service-account token; passwords come from Secrets by reference, never as values.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource,
    HostPathVolumeSource, ObjectFieldSelector, PersistentVolumeClaimVolumeSource,
    PodSecurityContext, PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, Secret,
    SecretKeySelector, SecurityContext, Service, ServicePort, ServiceSpec, Toleration, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::RUN_LABEL;

/// Where the pods' files go: the working directory of each pod (`-l` logs and the like).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkdirVolume {
    /// An emptyDir: gone with the pod.
    Scratch,
    /// A PersistentVolumeClaim (ReadWriteMany when the pods are on several nodes).
    Claim(String),
    /// A directory of the node (single-node clusters, tests).
    HostPath(String),
}

/// An environment variable taken from a Secret's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEnv {
    pub variable: String,
    pub secret: String,
    pub key: String,
}

/// Everything the user chose about the pods, and what the run needs of them.
#[derive(Debug, Clone)]
pub struct JobOptions {
    /// The run's name: the Job's, the Service's and the ConfigMap's.
    pub name: String,
    pub namespace: String,
    pub pods: usize,
    pub image: String,
    pub image_pull_policy: Option<String>,
    /// The container's arguments (the image's entrypoint is stampede).
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<SecretEnv>,
    pub node_selector: BTreeMap<String, String>,
    pub affinity: Option<Affinity>,
    pub tolerations: Vec<Toleration>,
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
    pub service_account: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub host_network: bool,
    pub coordinator_port: u16,
    pub workdir: WorkdirVolume,
    /// Files for the ConfigMap: key → content, mounted at `FILES_DIR/<key>`.
    pub files: BTreeMap<String, String>,
    /// The run's own Secret (named as the run, owned by its Job), for a password its launcher
    /// made: key → value. `secret_env` refers to it by the run's name.
    pub secret_data: BTreeMap<String, String>,
    /// The backstop that deletes a finished Job the launcher could not (it was killed).
    pub ttl_seconds_after_finished: i32,
    /// The whole run's limit, after which Kubernetes fails the Job.
    pub active_deadline_seconds: Option<i64>,
    /// Pods that do not talk to each other (a lab's shards): each index succeeds or fails on
    /// its own (the others go on), and there is no coordinator, so no Service.
    pub independent_pods: bool,
    /// Variables set from the pod's own fields (the downward API): name → field path, such as
    /// `spec.nodeName`.
    pub field_env: Vec<(String, String)>,
}

/// Where the ConfigMap's files are in a pod.
pub const FILES_DIR: &str = "/etc/stampede/files";
/// The pods' working directory.
pub const WORKDIR: &str = "/work";
/// The user the pods run as (the image's; any non-root id works).
pub const POD_USER: i64 = 65532;

pub struct Manifests {
    pub job: Job,
    /// Pod 0's stable name for a run with a coordinator.
    pub service: Option<Service>,
    pub config_map: Option<ConfigMap>,
    /// Never printed (`to_list` leaves it out): it holds a password.
    pub secret: Option<Secret>,
}

impl Manifests {
    pub fn new(options: &JobOptions) -> Manifests {
        Manifests {
            job: job(options),
            service: (!options.independent_pods).then(|| service(options)),
            config_map: config_map(options),
            secret: secret(options),
        }
    }

    /// The objects as one `v1 List`, the form `kubectl apply -f` takes.
    pub fn to_list(&self) -> serde_json::Value {
        let mut items: Vec<serde_json::Value> = self
            .service
            .iter()
            .map(|service| serde_json::to_value(service).expect("a Service serializes"))
            .collect();
        items.push(serde_json::to_value(&self.job).expect("a Job serializes"));
        if let Some(config_map) = &self.config_map {
            items.insert(
                0,
                serde_json::to_value(config_map).expect("a ConfigMap serializes"),
            );
        }
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
    }

    /// Makes the Service and ConfigMap the Job's, so that deleting the Job (or its TTL)
    /// removes them too.
    pub fn owned_by_job(&mut self, uid: &str) {
        let owner = OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: self.job.metadata.name.clone().unwrap_or_default(),
            uid: uid.to_string(),
            block_owner_deletion: Some(true),
            controller: None,
        };
        if let Some(service) = &mut self.service {
            service.metadata.owner_references = Some(vec![owner.clone()]);
        }
        if let Some(config_map) = &mut self.config_map {
            config_map.metadata.owner_references = Some(vec![owner.clone()]);
        }
        if let Some(secret) = &mut self.secret {
            secret.metadata.owner_references = Some(vec![owner]);
        }
    }
}

/// The address the workers dial: pod 0's stable name under the headless Service.
pub fn coordinator_host(options: &JobOptions) -> String {
    format!("{}-0.{}", options.name, options.name)
}

fn metadata(options: &JobOptions) -> ObjectMeta {
    ObjectMeta {
        name: Some(options.name.clone()),
        namespace: Some(options.namespace.clone()),
        labels: Some(labels(options)),
        ..ObjectMeta::default()
    }
}

fn labels(options: &JobOptions) -> BTreeMap<String, String> {
    let mut labels = options.labels.clone();
    labels.insert("app.kubernetes.io/name".into(), "stampede".into());
    labels.insert("app.kubernetes.io/managed-by".into(), "stampede".into());
    labels.insert(RUN_LABEL.into(), options.name.clone());
    labels
}

fn service(options: &JobOptions) -> Service {
    Service {
        metadata: metadata(options),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // The workers dial pod 0 before it is Ready (it has no readiness probe to pass).
            publish_not_ready_addresses: Some(true),
            selector: Some(BTreeMap::from([(RUN_LABEL.into(), options.name.clone())])),
            ports: Some(vec![ServicePort {
                name: Some("coordinator".into()),
                port: options.coordinator_port.into(),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn config_map(options: &JobOptions) -> Option<ConfigMap> {
    (!options.files.is_empty()).then(|| ConfigMap {
        metadata: metadata(options),
        data: Some(options.files.clone()),
        ..ConfigMap::default()
    })
}

fn secret(options: &JobOptions) -> Option<Secret> {
    (!options.secret_data.is_empty()).then(|| Secret {
        metadata: metadata(options),
        string_data: Some(options.secret_data.clone()),
        ..Secret::default()
    })
}

fn job(options: &JobOptions) -> Job {
    let pods = options.pods as i32;
    Job {
        metadata: metadata(options),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(pods),
            parallelism: Some(pods),
            // No pod is retried: a restarted pod cannot rejoin a run in progress, and a shard's
            // pod that failed is re-created by `lab resume`, not behind the user's back.
            backoff_limit: (!options.independent_pods).then_some(0),
            backoff_limit_per_index: options.independent_pods.then_some(0),
            ttl_seconds_after_finished: Some(options.ttl_seconds_after_finished),
            active_deadline_seconds: options.active_deadline_seconds,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(options)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec(options)),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

fn pod_spec(options: &JobOptions) -> PodSpec {
    let (volumes, mounts) = volumes(options);
    PodSpec {
        restart_policy: Some("Never".into()),
        // Pod i's hostname is <job>-<i>; under the Service's subdomain it resolves.
        subdomain: (!options.independent_pods).then(|| options.name.clone()),
        host_network: options.host_network.then_some(true),
        dns_policy: options
            .host_network
            .then(|| "ClusterFirstWithHostNet".to_string()),
        automount_service_account_token: Some(false),
        service_account_name: options.service_account.clone(),
        node_selector: (!options.node_selector.is_empty()).then(|| options.node_selector.clone()),
        affinity: options.affinity.clone(),
        tolerations: (!options.tolerations.is_empty()).then(|| options.tolerations.clone()),
        termination_grace_period_seconds: Some(10),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(POD_USER),
            run_as_group: Some(POD_USER),
            fs_group: Some(POD_USER),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..SeccompProfile::default()
            }),
            ..PodSecurityContext::default()
        }),
        containers: vec![container(options, mounts)],
        volumes: Some(volumes),
        ..PodSpec::default()
    }
}

fn container(options: &JobOptions, mounts: Vec<VolumeMount>) -> Container {
    Container {
        name: "stampede".into(),
        image: Some(options.image.clone()),
        image_pull_policy: options.image_pull_policy.clone(),
        args: Some(options.args.clone()),
        working_dir: Some(WORKDIR.into()),
        env: Some(env(options)),
        resources: resources(options),
        volume_mounts: Some(mounts),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

fn env(options: &JobOptions) -> Vec<EnvVar> {
    let plain = options.env.iter().map(|(name, value)| EnvVar {
        name: name.clone(),
        value: Some(value.clone()),
        ..EnvVar::default()
    });
    let secret = options.secret_env.iter().map(|s| EnvVar {
        name: s.variable.clone(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: s.secret.clone(),
                key: s.key.clone(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    });
    let fields = options.field_env.iter().map(|(name, path)| EnvVar {
        name: name.clone(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.clone(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    });
    plain.chain(secret).chain(fields).collect()
}

fn resources(options: &JobOptions) -> Option<ResourceRequirements> {
    let quantities = |map: &BTreeMap<String, String>| {
        (!map.is_empty()).then(|| {
            map.iter()
                .map(|(k, v)| (k.clone(), Quantity(v.clone())))
                .collect()
        })
    };
    let requirements = ResourceRequirements {
        requests: quantities(&options.requests),
        limits: quantities(&options.limits),
        ..ResourceRequirements::default()
    };
    (requirements.requests.is_some() || requirements.limits.is_some()).then_some(requirements)
}

fn volumes(options: &JobOptions) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = vec![Volume {
        name: "tmp".into(),
        empty_dir: Some(Default::default()),
        ..Volume::default()
    }];
    let mut mounts = vec![mount("tmp", "/tmp", false)];
    let mut workdir = Volume {
        name: "work".into(),
        ..Volume::default()
    };
    match &options.workdir {
        WorkdirVolume::Scratch => workdir.empty_dir = Some(Default::default()),
        WorkdirVolume::Claim(claim) => {
            workdir.persistent_volume_claim = Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: Some(false),
            })
        }
        WorkdirVolume::HostPath(path) => {
            workdir.host_path = Some(HostPathVolumeSource {
                path: path.clone(),
                type_: Some("Directory".into()),
            })
        }
    }
    volumes.push(workdir);
    mounts.push(mount("work", WORKDIR, false));
    if !options.files.is_empty() {
        volumes.push(Volume {
            name: "files".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: options.name.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
        mounts.push(mount("files", FILES_DIR, true));
    }
    (volumes, mounts)
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> JobOptions {
        JobOptions {
            name: "stampede-pgbench-x1".into(),
            namespace: "bench".into(),
            pods: 3,
            image: "registry.example/stampede:1".into(),
            image_pull_policy: Some("IfNotPresent".into()),
            args: vec!["pgbench".into(), "-S".into()],
            env: vec![("PGHOST".into(), "pg-rw".into())],
            secret_env: vec![SecretEnv {
                variable: "PGPASSWORD".into(),
                secret: "pg-app".into(),
                key: "password".into(),
            }],
            node_selector: BTreeMap::from([("pool".into(), "clients".into())]),
            affinity: None,
            tolerations: vec![],
            requests: BTreeMap::from([("cpu".into(), "4".into())]),
            limits: BTreeMap::new(),
            service_account: None,
            labels: BTreeMap::from([("team".into(), "db".into())]),
            host_network: false,
            coordinator_port: 7710,
            workdir: WorkdirVolume::Scratch,
            files: BTreeMap::from([("script-0.sql".into(), "SELECT 1;".into())]),
            secret_data: BTreeMap::new(),
            ttl_seconds_after_finished: 600,
            active_deadline_seconds: None,
            independent_pods: false,
            field_env: Vec::new(),
        }
    }

    #[test]
    fn the_job_is_indexed_with_one_pod_per_index_and_no_retries() {
        let manifests = Manifests::new(&options());
        let job = serde_json::to_value(&manifests.job).unwrap();
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 3);
        assert_eq!(spec["parallelism"], 3);
        assert_eq!(spec["backoffLimit"], 0);
        assert_eq!(spec["ttlSecondsAfterFinished"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["subdomain"], "stampede-pgbench-x1");
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        let container = &pod["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(container["resources"]["requests"]["cpu"], "4");
        assert_eq!(spec["template"]["metadata"]["labels"]["team"], "db");
        assert_eq!(
            spec["template"]["metadata"]["labels"][RUN_LABEL],
            "stampede-pgbench-x1"
        );
    }

    #[test]
    fn independent_pods_fail_alone_and_have_no_service() {
        let mut options = options();
        options.independent_pods = true;
        options.field_env = vec![("STAMPEDE_NODE_NAME".into(), "spec.nodeName".into())];
        let manifests = Manifests::new(&options);
        assert!(manifests.service.is_none());
        let job = serde_json::to_value(&manifests.job).unwrap();
        let spec = &job["spec"];
        assert_eq!(spec["backoffLimitPerIndex"], 0);
        assert!(spec.get("backoffLimit").is_none());
        let pod = &spec["template"]["spec"];
        assert!(pod.get("subdomain").is_none());
        let env = pod["containers"][0]["env"].as_array().unwrap();
        let node = env
            .iter()
            .find(|e| e["name"] == "STAMPEDE_NODE_NAME")
            .unwrap();
        assert_eq!(node["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
        let kinds: Vec<String> = manifests.to_list()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Job"]);
    }

    #[test]
    fn a_password_is_a_reference_never_a_value() {
        let manifests = Manifests::new(&options());
        let text = manifests.to_list().to_string();
        assert!(text.contains("\"secretKeyRef\":{\"key\":\"password\",\"name\":\"pg-app\""));
        let job = serde_json::to_value(&manifests.job).unwrap();
        let env = job["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .clone();
        let password = env.iter().find(|e| e["name"] == "PGPASSWORD").unwrap();
        assert!(password.get("value").is_none());
    }

    #[test]
    fn owned_objects_name_the_job() {
        let mut manifests = Manifests::new(&options());
        manifests.owned_by_job("uid-1");
        let owners = manifests
            .service
            .unwrap()
            .metadata
            .owner_references
            .unwrap();
        assert_eq!(owners[0].uid, "uid-1");
        assert_eq!(owners[0].kind, "Job");
        assert!(manifests
            .config_map
            .unwrap()
            .metadata
            .owner_references
            .is_some());
    }

    #[test]
    fn the_list_holds_the_config_map_first() {
        let list = Manifests::new(&options()).to_list();
        let kinds: Vec<_> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Service", "Job"]);
    }
}
