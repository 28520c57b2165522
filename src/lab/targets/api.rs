//! What the target axis is made of: a kind parses its `[[target]]` table into a
//! `TargetSource`, which resolves to a `ResolvedTarget`, which is provisioned as a
//! `LabServer` (and, for a process the lab started, its `HostProcess`). Kinds and the executor
//! see these; the registry (`mod.rs`) sees the kinds.

use std::path::PathBuf;
use std::sync::Arc;

use crate::lab::spec_text::SpecError;
use crate::lab::window::RunProbes;
use crate::server::profile::{Machine, Profile, ServerConfig};
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;
use stampede_conn::{Endpoint, Engine};
use stampede_store::{SettingRow, TargetRecord};

use super::table::TargetTable;

#[derive(Debug, Clone)]
pub struct TargetSpec {
    pub name: String,
    /// Where its server comes from, as its kind parsed it (`lab::targets`).
    pub server: Arc<dyn TargetSource>,
    pub profile: Profile,
    /// Overrides on top of the profile, as postgresql.conf (or my.cnf) values.
    pub settings: Vec<(String, String)>,
    /// Pin the server to these CPUs.
    pub cpus: Option<Vec<usize>>,
    /// Statements run on each of the target's datasets after its load and before it is
    /// sealed (an index this target has or lacks: "does it help my workload?").
    pub dataset_sql: Vec<String>,
}

impl PartialEq for TargetSpec {
    /// Two targets' servers are equal when they name the same source of one engine.
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.server.engine() == other.server.engine()
            && self.server.spec_text() == other.server.spec_text()
            && self.profile == other.profile
            && self.settings == other.settings
            && self.cpus == other.cpus
            && self.dataset_sql == other.dataset_sql
    }
}

/// A kind of target: it claims a key of `[[target]]` and parses the table that names it.
pub trait TargetKind: Sync {
    /// The key naming this kind in a `[[target]]` table: `postgres`, `mariadb`, `url`.
    fn key(&self) -> &'static str;
    /// Further keys of the table that only this kind reads (a url target's `metrics`).
    fn own_keys(&self) -> &'static [&'static str] {
        &[]
    }
    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError>;
}

/// What a `[[target]]` names: where its server comes from.
pub trait TargetSource: std::fmt::Debug + Send + Sync {
    fn engine(&self) -> Engine;
    /// As the spec names it: "system", "17", a path, a URL without its password.
    fn spec_text(&self) -> String;
    /// A password the spec holds for it, to be masked wherever the spec is stored or shown.
    fn secret(&self) -> Option<String> {
        None
    }
    /// Whether the lab starts and stops this target's server (a url target's it does not).
    fn is_managed(&self) -> bool {
        true
    }
    /// Whether the pods of its runs (`pods = N`) log in with the password in the spec's
    /// `[kubernetes] password_secret` (a server reached by URL).
    fn pods_use_password_secret(&self) -> bool {
        false
    }
    /// Whether each run's server CPU per transaction can be measured (a local server's
    /// processes; a remote one's only through a metrics source).
    fn measures_server_cpu(&self) -> bool {
        true
    }
    /// Whether its binaries are built from source (which every shard would do again).
    fn builds_from_source(&self) -> bool {
        false
    }
    /// Checks, without downloading or building, that the target can be had; every target is
    /// checked before any is resolved, so that a bad one costs nothing.
    fn check(&self, _target: &TargetSpec) -> Result<(), Failure> {
        Ok(())
    }
    /// `lab plan`'s look at the target: what it refuses is refused (an input error), and the
    /// lines it returns are printed with the plan (what was not checked, how copies are made).
    /// With `dry_run` the API server checks each Kubernetes object the target would create.
    fn check_at_plan(&self, target: &TargetSpec, dry_run: bool) -> Result<Vec<String>, Failure>;
    /// The target's server as the lab will provision it: binaries downloaded or built (told
    /// to `events`), the settings checked against them; a remote server reached.
    fn resolve(
        &self,
        target: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure>;
    /// `lab clean`'s work for a kind whose leftovers are not a server folder or a remote
    /// server's databases (a Cluster the lab created): what was removed, as a sentence.
    fn clean(&self) -> Option<Result<String, Failure>> {
        None
    }
}

/// A target ready to provision.
pub trait ResolvedTarget: Send + Sync {
    /// As notes name it: "15.4", "10.11.6-MariaDB-0+deb12u1".
    fn version(&self) -> String;
    /// The target's server for this lab: a managed one started under `place.root`
    /// (initialised there once, reused on resume); a remote one connected to.
    fn provision(
        &self,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure>;
}

/// Where in a lab a target's server is provisioned.
pub struct LabPlace<'a> {
    /// The lab's name: a remote server's databases carry it.
    pub lab: &'a str,
    /// The target's folder: a managed server's cluster, a remote one's record of what to put
    /// back.
    pub root: PathBuf,
    /// The most clients any workload will open.
    pub max_clients: usize,
    /// Keep a remote server's datasets when the lab ends (`--keep-data`).
    pub keep_data: bool,
    /// Keep the Clusters the lab created when it ends (`--keep-clusters`).
    pub keep_clusters: bool,
    /// A line of progress for the user while the server is provisioned.
    pub notes: &'a dyn Fn(&str),
    /// How long each run is measured (the lab's `duration`): what a rate read around the
    /// window is taken over, where the window closes later than the run (runs from pods).
    pub run_duration: std::time::Duration,
}

impl LabPlace<'_> {
    /// How a server the lab starts for `target` is configured.
    pub fn server_config<'t>(&self, target: &'t TargetSpec) -> ServerConfig<'t> {
        ServerConfig {
            profile: &target.profile,
            settings: &target.settings,
            cpus: target.cpus.clone(),
            max_clients: self.max_clients,
        }
    }
}

/// Resolves and provisions a lab's targets: the executor's seam.
pub trait Targets {
    fn check(&self, _target: &TargetSpec) -> Result<(), Failure> {
        Ok(())
    }
    fn resolve(
        &self,
        target: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure>;
    fn provision(
        &self,
        resolved: &dyn ResolvedTarget,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure>;
}

/// Where a target's runs take their load from when its server lives in Kubernetes: the pods of
/// a Job, which reach the server by a name only the cluster resolves.
#[derive(Debug, Clone, PartialEq)]
pub struct PodLoad {
    pub pods: usize,
    /// The server's host as the pods reach it (a Service's name).
    pub host: String,
    /// The Secret holding the workload role's password, SECRET/KEY.
    pub password_secret: String,
    /// A label (key, value) of the pods the load keeps away from, when the cluster has the
    /// nodes: the server's own.
    pub apart_from: (String, String),
}

/// A server as the lab uses it: what every server of an engine does over SQL.
pub trait LabServer {
    /// Provenance, identity and every setting, for the results database.
    fn describe(&self, target: &TargetSpec) -> Result<TargetRecord, Failure>;
    /// A control session on `database`, kept out of the statement statistics where it can be.
    fn conn(&self, database: &str) -> Endpoint;
    /// The measured workload's sessions on `database`.
    fn workload_conn(&self, database: &str) -> Endpoint;
    /// Whether `database` holds a dataset whose load completed.
    fn has_dataset(&self, database: &str) -> bool;
    /// An empty `database`, replacing any of that name.
    fn create_empty(&self, database: &str) -> Result<(), Failure>;
    /// After a load: statement statistics on, VACUUM FREEZE ANALYZE (ANALYZE TABLE), the
    /// completion marker, a checkpoint.
    fn seal_dataset(&self, database: &str) -> Result<(), Failure>;
    /// `copy` as a fresh copy of `template`, replacing any of that name.
    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure>;
    fn drop_database(&self, database: &str) -> Result<(), Failure>;
    fn checkpoint(&self) -> Result<(), Failure>;
    fn database_bytes(&self, database: &str) -> Result<u64, Failure>;
    /// The server's buffer cache: shared_buffers, InnoDB's buffer pool.
    fn shared_buffers_bytes(&self) -> Result<u64, Failure>;
    /// The machine the server's data lives on (RAM, free disk) for scale classes, when known.
    fn machine(&self) -> Option<Machine>;
    /// Whether the server answers.
    fn alive(&self) -> bool;
    /// The probes around a run on `run` (its database), when the server can be probed.
    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>>;
    /// The plan of `statement` in `database`, when it can be explained.
    fn explain(&self, database: &str, statement: &str) -> Option<String>;
    /// The server's whole settings as a run on `database` sees them, for a server others may
    /// change during the lab (read as each run starts); None for one the lab controls.
    fn run_settings(&self, _database: &str) -> Option<Vec<SettingRow>> {
        None
    }
    /// Just before a run is measured: what the target sets for its runs alone (a remote
    /// server's ALTER SYSTEM settings, which another target of the same server must not see;
    /// a shared Cluster's parameters), with a line for the user on a wait for them.
    fn begin_run(&self, _notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        Ok(())
    }
    /// After a run, measured or failed: puts back what `begin_run` set.
    fn end_run(&self) -> Result<(), Failure> {
        Ok(())
    }
    /// After a measured run: why its numbers are not the target's (its primary changed while
    /// it ran). The run is recorded failed, and the server is provisioned again before the next.
    fn run_disturbed(&self) -> Option<String> {
        None
    }
    /// Where the runs' clients come from when not from the lab's machine (a Cluster's pods).
    fn pod_load(&self) -> Option<PodLoad> {
        None
    }
    /// The server's process, when the lab started it.
    fn host(&self) -> Option<&dyn HostProcess>;
    /// Hands the server back when the lab stops: a managed one is stopped; a remote one gets
    /// its settings back and, when the lab ended (not interrupted), loses the lab's databases.
    fn release(&self, lab_ended: bool);
}

/// What only a server the lab started has.
pub trait HostProcess {
    /// Starts the server again after a crash.
    fn restart(&self) -> Result<(), Failure>;
    fn log_tail(&self, lines: usize) -> String;
}
