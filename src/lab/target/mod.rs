//! What the lab needs of a target: binaries resolved before anything starts, a server
//! provisioned on first use, and the handful of things done to it between runs (datasets,
//! pristine copies, checkpoints, crash recovery). The executor sees only these traits, so a
//! new target kind or engine implements them without touching it, and its tests drive it
//! with a fake.

pub mod managed;
pub mod mariadb;
pub mod postgres;

use std::path::Path;

use crate::lab::spec::TargetSpec;
use crate::lab::window::RunProbes;
use crate::server::mariadb::managed::MariadbBinaries;
use crate::server::postgres::binaries::Binaries;
use crate::server::profile::Machine;
use crate::server::profile::ServerConfig;
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_store::TargetRecord;

/// A target's server binaries, of either engine.
#[derive(Debug, Clone)]
pub enum TargetBinaries {
    Postgres(Binaries),
    Mariadb(MariadbBinaries),
}

impl TargetBinaries {
    /// As notes name it: "15.4", "10.11.6-MariaDB-0+deb12u1".
    pub fn version(&self) -> &str {
        match self {
            TargetBinaries::Postgres(binaries) => &binaries.version,
            TargetBinaries::Mariadb(binaries) => &binaries.version,
        }
    }
}

/// Resolves and provisions the targets of a lab spec.
pub trait Targets {
    /// Checks, without downloading or building, that the target's binaries can be had; every
    /// target is checked before any is resolved, so that a bad one costs nothing.
    fn check(&self, _spec: &TargetSpec) -> Result<(), Failure> {
        Ok(())
    }
    /// The target's binaries, checked before the lab starts (a download or a build happens
    /// here, told to `events`), with the target's settings checked against them.
    fn resolve(
        &self,
        spec: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<TargetBinaries, Failure>;
    /// Starts the target's server under `root` (initialised there once, reused on resume).
    fn provision(
        &self,
        binaries: &TargetBinaries,
        root: &Path,
        config: &ServerConfig<'_>,
    ) -> Result<Box<dyn LabServer>, Failure>;
}

/// A started server as the lab uses it.
pub trait LabServer {
    /// Provenance and every setting, for the results database.
    fn describe(&self, spec: &TargetSpec) -> Result<TargetRecord, Failure>;
    /// A control session on `database`, kept out of the statement statistics.
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
    /// The machine the server's data lives on (RAM, free disk) for scale classes.
    fn machine(&self) -> Machine;
    /// Whether the server answers.
    fn alive(&self) -> bool;
    /// Starts the server again after a crash.
    fn restart(&self) -> Result<(), Failure>;
    fn log_tail(&self, lines: usize) -> String;
    fn stop(&self);
    /// The probes around a run on `run` (its database), when the server can be probed.
    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>>;
    /// The plan of `statement` in `database`, when it can be explained.
    fn explain(&self, database: &str, statement: &str) -> Option<String>;
}
