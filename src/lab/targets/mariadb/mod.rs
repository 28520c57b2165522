//! `mariadb = …`: a MariaDB/MySQL server stampede manages: the system's, an installation's
//! folder, or a release series unpacked from Debian's archive (`server.rs`); `sql.rs`: the
//! lab's SQL on any MariaDB/MySQL server, this kind's and a url target's.

mod server;
pub mod spec;
pub mod sql;

use std::sync::Arc;

use super::api::{LabPlace, LabServer, ResolvedTarget, TargetKind, TargetSource};
use super::table::TargetTable;
use crate::lab::spec_text::SpecError;
use crate::lab::targets::api::TargetSpec;
use crate::server::mariadb::managed::MariadbBinaries;
use crate::server::mariadb::release;
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;
use stampede_conn::Engine;

pub use server::LabMariadb;

pub struct Kind;

impl TargetKind for Kind {
    fn key(&self) -> &'static str {
        "mariadb"
    }

    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError> {
        let value = table.value.expect("the kind's key names it");
        let source = spec::mariadb_source(table.source, value, table.base)?;
        Ok(Arc::new(ManagedMariadb(source)))
    }
}

/// "system", a release series, or a directory holding `mariadbd`/`mysqld` (itself, or its
/// bin/ or sbin/).
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedMariadb(pub String);

impl ManagedMariadb {
    fn is_series(&self) -> bool {
        release::is_series(&self.0)
    }
}

impl TargetSource for ManagedMariadb {
    fn engine(&self) -> Engine {
        Engine::Mysql
    }

    fn spec_text(&self) -> String {
        self.0.clone()
    }

    fn check(&self, _target: &TargetSpec) -> Result<(), Failure> {
        if self.is_series() {
            release::locate(&self.0)?;
        }
        Ok(())
    }

    fn check_at_plan(&self, target: &TargetSpec, _dry_run: bool) -> Result<Vec<String>, Failure> {
        self.check(target).map(|()| Vec::new())
    }

    fn resolve(
        &self,
        target: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        let binaries = if self.is_series() {
            release::binaries(&self.0, events)?
        } else {
            MariadbBinaries::find(&self.0)?
        };
        super::setting_names::check_mariadb(&binaries, &target.settings)?;
        Ok(Arc::new(ResolvedMariadb(binaries)))
    }
}

struct ResolvedMariadb(MariadbBinaries);

impl ResolvedTarget for ResolvedMariadb {
    fn version(&self) -> String {
        self.0.version.clone()
    }

    fn provision(
        &self,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        let config = place.server_config(target);
        Ok(Box::new(LabMariadb::provision(
            &self.0,
            &place.root,
            &config,
        )?))
    }
}
