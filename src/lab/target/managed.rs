//! The lab's real targets: each spec target resolved to its engine's binaries and provisioned
//! as that engine's `LabServer` (`postgres.rs`, `mariadb.rs`).

use std::path::Path;

use super::{LabServer, TargetBinaries, Targets};
use crate::lab::spec::{ServerSource, TargetSpec};
use crate::server::mariadb::managed::MariadbBinaries;
use crate::server::mariadb::release;
use crate::server::postgres::provision::ProvisionedServer;
use crate::server::profile::ServerConfig;
use crate::server::setup::SetupEvent;
use stampede_base::error::{Failure, Kind};

/// Managed servers from the spec's sources: PostgreSQL (system, bin dir, download, build) and
/// MariaDB/MySQL (system, bin dir).
pub struct ManagedTargets;

impl ManagedTargets {
    /// `lab plan`'s look at a target, without downloading anything: what `check` refuses is
    /// refused; a source that could not be asked (Maven Central or Debian's archive out of
    /// reach) is said, as a line for the plan, to be unchecked.
    pub fn check_at_plan(&self, spec: &TargetSpec) -> Result<Option<String>, Failure> {
        match check_source(spec) {
            Ok(()) => Ok(None),
            Err(e) if e.kind() == Kind::Run => Ok(Some(format!(
                "target \"{}\": {} not checked ({})",
                spec.name,
                spec.server.spec_text(),
                e.message()
            ))),
            Err(e) => Err(named(spec, e)),
        }
    }
}

/// Whether the target's source can be had, as its engine's release machinery says.
fn check_source(spec: &TargetSpec) -> Result<(), Failure> {
    match &spec.server {
        ServerSource::Postgres(source) => source.check(),
        ServerSource::Mariadb(source) if release::is_series(source) => {
            release::locate(source).map(|_| ())
        }
        ServerSource::Mariadb(_) => Ok(()),
    }
}

/// A target's refusal, naming it.
fn named(spec: &TargetSpec, e: Failure) -> Failure {
    e.into_input()
        .map_message(|text| format!("target \"{}\": {text}", spec.name))
}

impl Targets for ManagedTargets {
    fn check(&self, spec: &TargetSpec) -> Result<(), Failure> {
        check_source(spec).map_err(|e| named(spec, e))
    }

    fn resolve(
        &self,
        spec: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<TargetBinaries, Failure> {
        let mut named = |event: SetupEvent<'_>| match event {
            SetupEvent::Note(note) => events(SetupEvent::Note(&format!(
                "target \"{}\": {note}",
                spec.name
            ))),
            download => events(download),
        };
        let binaries = match &spec.server {
            ServerSource::Postgres(source) => {
                source.resolve(&mut named).map(TargetBinaries::Postgres)
            }
            ServerSource::Mariadb(source) if release::is_series(source) => {
                release::binaries(source, &mut named).map(TargetBinaries::Mariadb)
            }
            ServerSource::Mariadb(source) => {
                MariadbBinaries::find(source).map(TargetBinaries::Mariadb)
            }
        };
        let in_target = |e: Failure| {
            e.into_input()
                .map_message(|text| format!("target \"{}\": {text}", spec.name))
        };
        let binaries = binaries.map_err(in_target)?;
        crate::lab::setting_names::check(&binaries, &spec.settings).map_err(in_target)?;
        Ok(binaries)
    }

    fn provision(
        &self,
        binaries: &TargetBinaries,
        root: &Path,
        config: &ServerConfig<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        Ok(match binaries {
            TargetBinaries::Postgres(binaries) => {
                Box::new(ProvisionedServer::provision(binaries, root, config)?)
            }
            TargetBinaries::Mariadb(binaries) => Box::new(super::mariadb::LabMariadb::provision(
                binaries, root, config,
            )?),
        })
    }
}
