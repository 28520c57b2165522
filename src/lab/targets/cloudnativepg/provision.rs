//! A target's Cluster through its lifecycle: checked before the lab starts, created (or
//! reused) at the target's first use, waited on until the operator reports it healthy, reached
//! as a server by URL is, and deleted with its volumes when the lab hands it back.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::manifest::{MANAGED_BY, SPEC_ANNOTATION};
use super::metrics::PrimaryProbes;
use super::settings::{self, ClusterSettings, SettingsWait};
use crate::lab::targets::api::{LabPlace, LabServer, PodLoad, TargetSpec};
use crate::lab::targets::url::postgres::{Reached, RemotePostgres, ServerHooks};
use crate::lab::window::RunProbes;
use crate::pods::KubeArgs;
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;
use stampede_kube::cloudnativepg::{HealthWait, PostgresCluster, CLUSTER_LABEL};
use stampede_kube::Cluster;

/// A target's Cluster, checked and ready to provision.
pub struct Resolved {
    pub cluster: Arc<Cluster>,
    pub namespace: String,
    pub name: String,
    /// The Cluster the lab creates; None for one that exists.
    pub manifest: Option<PostgresCluster>,
    /// The target's settings on the Cluster the lab creates.
    pub settings: Option<ClusterSettings>,
    /// The earlier target of the same shape whose Cluster this one shares.
    pub shared_with: Option<String>,
    pub ready_timeout: Duration,
    /// The pods each run's clients come from.
    pub pods: usize,
}

/// The Kubernetes the spec's `[kubernetes]` names (kubeconfig, context), as kubectl reads it.
pub fn connect(kube: &KubeArgs) -> Result<Arc<Cluster>, Failure> {
    crate::pods::launch::connect(kube)
        .map(Arc::new)
        .map_err(|e| e.map_message(|text| format!("[kubernetes]: {text}")))
}

/// `[kubernetes] namespace`, else the context's.
pub fn namespace(kube: &KubeArgs, cluster: &Cluster) -> String {
    kube.namespace
        .clone()
        .unwrap_or_else(|| cluster.default_namespace().to_string())
}

/// A Cluster that must exist, as it is.
pub fn existing(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<PostgresCluster, Failure> {
    cluster
        .postgres_cluster(namespace, name)
        .map_err(|e| Failure::run(e.0))?
        .ok_or_else(|| {
            Failure::input(format!(
                "no Cluster \"{name}\" in namespace \"{namespace}\""
            ))
        })
}

/// The operator's resource is known to the API server (the operator is installed).
pub fn check_operator(cluster: &Cluster, namespace: &str) -> Result<(), Failure> {
    match cluster.postgres_clusters(namespace, &format!("{}={}", MANAGED_BY.0, MANAGED_BY.1)) {
        Ok(_) => Ok(()),
        Err(e) if e.0.contains("(NotFound)") => Err(Failure::input(format!(
            "the API server has no CloudNativePG Cluster resource (postgresql.cnpg.io/v1): install the operator first ({})",
            e.0
        ))),
        Err(e) => Err(Failure::run(e.0)),
    }
}

pub fn provision(
    resolved: &Resolved,
    target: &TargetSpec,
    place: &LabPlace<'_>,
) -> Result<Box<dyn LabServer>, Failure> {
    let owned = resolved.manifest.is_some();
    let keep = place.keep_clusters || !owned;
    let created = match &resolved.manifest {
        Some(manifest) => create_or_reuse(resolved, manifest, place)?,
        None => false,
    };
    let hooks = ClusterHooks {
        cluster: resolved.cluster.clone(),
        namespace: resolved.namespace.clone(),
        name: resolved.name.clone(),
        pods: resolved.pods,
        keep,
        primary: Mutex::new(None),
        run_duration: place.run_duration,
        settings: resolved.settings.clone(),
        ready_timeout: resolved.ready_timeout,
        stop: stampede_base::signals::watch_signals(),
    };
    let healthy = wait_healthy(resolved, place);
    let server = healthy
        .and_then(|_| reach(resolved, target, place))
        // The target's own settings before its record is read (another target of the
        // Cluster's may have left its own).
        .and_then(|server| {
            hooks.apply_settings(&server.admin(), &mut |line| (place.notes)(line))?;
            Ok(server)
        });
    match server {
        Ok(server) => Ok(Box::new(server.with_hooks(Box::new(hooks)))),
        Err(failure) => {
            // A Cluster made now for nothing goes; one found there may serve another target.
            if created && !keep {
                delete(&resolved.cluster, &resolved.namespace, &resolved.name);
            }
            Err(failure)
        }
    }
}

/// Creates the Cluster (true), or reuses the one an earlier target of its shape or an earlier
/// invocation of the lab left when it is the same; one of the lab's with another spec is
/// created again, anyone else's is refused.
fn create_or_reuse(
    resolved: &Resolved,
    manifest: &PostgresCluster,
    place: &LabPlace<'_>,
) -> Result<bool, Failure> {
    let (namespace, name) = (&resolved.namespace, &resolved.name);
    let found = resolved
        .cluster
        .postgres_cluster(namespace, name)
        .map_err(|e| Failure::run(e.0))?;
    if let Some(found) = found {
        let label = |c: &PostgresCluster, key: &str| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(key).cloned())
        };
        let ours = label(&found, super::manifest::LAB_LABEL)
            == label(manifest, super::manifest::LAB_LABEL)
            && label(&found, MANAGED_BY.0).as_deref() == Some(MANAGED_BY.1);
        if !ours {
            return Err(Failure::input(format!(
                "a Cluster \"{name}\" exists in namespace \"{namespace}\" and is not this lab's: rename the lab or the target"
            )));
        }
        let digest = |c: &PostgresCluster| {
            c.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SPEC_ANNOTATION).cloned())
        };
        if digest(&found) == digest(manifest) {
            (place.notes)(&match &resolved.shared_with {
                Some(owner) => format!(
                    "sharing Cluster \"{name}\" with target \"{owner}\" (the same spec; this target's settings patched in before each of its runs)"
                ),
                None => format!("reusing Cluster \"{name}\" (there already, with the same spec)"),
            });
            return Ok(false);
        }
        (place.notes)(&format!(
            "Cluster \"{name}\" is there with another spec: deleting it to create it again (its datasets are loaded again)"
        ));
        resolved
            .cluster
            .delete_postgres_cluster(namespace, name)
            .map_err(|e| Failure::run(e.0))?;
    }
    (place.notes)(&format!(
        "creating Cluster \"{name}\" in namespace \"{namespace}\" through the operator"
    ));
    let created = match &resolved.settings {
        Some(settings) => super::manifest::as_created(manifest, settings),
        None => manifest.clone(),
    };
    resolved
        .cluster
        .create_postgres_cluster(&created, false)
        .map_err(|e| Failure::run(e.0))?;
    Ok(true)
}

fn wait_healthy(resolved: &Resolved, place: &LabPlace<'_>) -> Result<(), Failure> {
    let mut on_progress = |line: &str| (place.notes)(line);
    resolved
        .cluster
        .wait_healthy(
            &resolved.namespace,
            &resolved.name,
            HealthWait {
                timeout: resolved.ready_timeout,
                // Ctrl-C or SIGTERM while the operator works ends the wait (the lab's own
                // flag is set by the same signal and ends the lab).
                stop: stampede_base::signals::watch_signals(),
                on_progress: &mut on_progress,
            },
        )
        .map(|_| ())
        .map_err(|e| Failure::run(e.0))
}

/// The primary through the `-rw` Service's endpoint, as the superuser whose Secret the
/// operator made: the lab makes databases, checkpoints and reads every statement's counters.
fn reach(
    resolved: &Resolved,
    target: &TargetSpec,
    place: &LabPlace<'_>,
) -> Result<RemotePostgres, Failure> {
    let (namespace, name) = (&resolved.namespace, &resolved.name);
    let secret = format!("{name}-superuser");
    let value = |key: &str| {
        resolved
            .cluster
            .secret_value(namespace, &secret, key)
            .map_err(|e| Failure::run(e.0))
    };
    let password = value("password")?.ok_or_else(|| {
        Failure::run(format!(
            "Secret \"{secret}\" has no password: the lab needs the Cluster's superuser (enableSuperuserAccess)"
        ))
    })?;
    let user = value("username")?.unwrap_or_else(|| "postgres".into());
    let port = value("port")?.unwrap_or_else(|| "5432".into());
    let service = format!("{name}-rw");
    let address = resolved
        .cluster
        .service_endpoints(namespace, &service)
        .map_err(|e| Failure::run(e.0))?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::run(format!("Service \"{service}\" has no ready endpoint")))?;
    let mut conn = ConnSpec::from_conninfo(&format!(
        "host={service} hostaddr={address} port={port} dbname=postgres sslmode=prefer connect_timeout=10"
    ))?;
    conn.user = user;
    conn.password = Some(password);
    // The Cluster's parameters hold the target's settings; none are set over SQL.
    let as_created = TargetSpec {
        settings: Vec::new(),
        ..target.clone()
    };
    let masked = format!("Cluster \"{name}\" ({service} at {address})");
    let reached = Reached::reach(conn, &masked, &as_created)?;
    RemotePostgres::connect(&reached, &as_created, place, None)
}

/// What a Cluster adds to the lab's work in it: runs loaded from pods that reach it by its
/// `-rw` Service, its primary watched over each run, its deletion when the lab is done.
struct ClusterHooks {
    cluster: Arc<Cluster>,
    namespace: String,
    name: String,
    pods: usize,
    /// Keep the Cluster when the lab hands it back (`--keep-clusters`, or not the lab's).
    keep: bool,
    /// The primary as a run began.
    primary: Mutex<Option<String>>,
    /// How long each run is measured.
    run_duration: Duration,
    /// The target's settings on a Cluster the lab made (it may share it with other targets).
    settings: Option<ClusterSettings>,
    /// How long the operator may take to apply them.
    ready_timeout: Duration,
    /// Set by Ctrl-C or SIGTERM: a wait for the operator ends.
    stop: Arc<AtomicBool>,
}

impl ClusterHooks {
    /// Patches the target's settings into the Cluster, when another target's are there, and
    /// waits until the primary runs with them.
    fn apply_settings(
        &self,
        primary: &ConnSpec,
        notes: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        let Some(settings) = &self.settings else {
            return Ok(());
        };
        settings::apply(
            &self.cluster,
            (&self.namespace, &self.name),
            primary,
            settings,
            SettingsWait {
                timeout: self.ready_timeout,
                notes,
                stop: self.stop.clone(),
            },
        )
    }

    /// The primary, and the one a switchover under way moves to (the same when none is).
    fn primaries(&self) -> Result<(Option<String>, Option<String>), Failure> {
        let cluster = existing(&self.cluster, &self.namespace, &self.name)?;
        let status = cluster.status.unwrap_or_default();
        Ok((status.current_primary, status.target_primary))
    }
}

impl ServerHooks for ClusterHooks {
    fn pod_load(&self) -> Option<PodLoad> {
        Some(PodLoad {
            pods: self.pods,
            host: format!("{}-rw", self.name),
            password_secret: format!("{}-superuser/password", self.name),
            apart_from: (CLUSTER_LABEL.into(), self.name.clone()),
        })
    }

    fn begin_run(&self, server: &ConnSpec, notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        let (primary, _) = self.primaries()?;
        *self.primary.lock().expect("the primary's lock") = primary;
        // After the primary is noted: applying them may move it, which fails the run.
        self.apply_settings(server, notes)
    }

    fn discards_server(&self) -> bool {
        !self.keep
    }

    fn run_disturbed(&self) -> Option<String> {
        let before = self.primary.lock().expect("the primary's lock").clone();
        // A Cluster that cannot be read now is said as such: the run's numbers are in doubt.
        let (current, target) = match self.primaries() {
            Ok(primaries) => primaries,
            Err(e) => return Some(format!("the Cluster could not be read after the run: {e}")),
        };
        // A switchover still under way counts: its target is where the primary goes.
        let after = if target.is_some() && target != current {
            target
        } else {
            current
        };
        (before != after).then(|| {
            format!(
                "primary changed during the run: {} → {} (a failover or switchover)",
                before.as_deref().unwrap_or("none"),
                after.as_deref().unwrap_or("none")
            )
        })
    }

    fn released(&self, _lab_ended: bool) {
        if !self.keep {
            delete(&self.cluster, &self.namespace, &self.name);
        }
    }

    fn around(&self, probes: Box<dyn RunProbes>) -> Box<dyn RunProbes> {
        Box::new(PrimaryProbes {
            inner: probes,
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            run_duration: self.run_duration,
        })
    }

    fn placement(&self) -> Option<(String, String)> {
        // A Cluster that cannot be read now is recorded without it (said in the record).
        match self.cluster.placement(&self.namespace, &self.name) {
            Ok(placement) => Some((placement.described(), placement.key())),
            Err(e) => Some((
                format!(
                    "CloudNativePG Cluster \"{}\": its placement could not be read: {e}",
                    self.name
                ),
                format!("cloudnativepg cluster {}", self.name),
            )),
        }
    }
}

/// Deletes the Cluster and its volumes; a failure is said (what is left costs the user).
fn delete(cluster: &Cluster, namespace: &str, name: &str) {
    if let Err(e) = cluster.delete_postgres_cluster(namespace, name) {
        eprintln!(
            "stampede: warning: Cluster \"{name}\" in namespace \"{namespace}\" may be left: {e}; `stampede lab clean SPEC` deletes it"
        );
    }
}
