//! `postgres = …`: a PostgreSQL server stampede manages from the spec's source (system, bin
//! dir, download, Debian, build), started under the lab's folder (`server.rs`); `sql.rs`: the
//! lab's SQL on any PostgreSQL server, this kind's and a url target's.

mod server;
pub mod spec;
pub mod sql;

use std::sync::Arc;

use super::api::{LabPlace, LabServer, ResolvedTarget, TargetKind, TargetSource};
use super::table::TargetTable;
use crate::lab::spec_text::SpecError;
use crate::lab::targets::api::TargetSpec;
use crate::server::postgres::binaries::Binaries;
use crate::server::postgres::provision::{BinarySource, ProvisionedServer};
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;
use stampede_conn::Engine;

pub use server::LabPostgres;

pub struct Kind;

impl TargetKind for Kind {
    fn key(&self) -> &'static str {
        "postgres"
    }

    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError> {
        let source = spec::postgres_source(table.source, table.value, table.base)?;
        Ok(Arc::new(ManagedPostgres(source)))
    }
}

/// A PostgreSQL server the lab starts from one of its binary sources.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedPostgres(pub BinarySource);

impl TargetSource for ManagedPostgres {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn spec_text(&self) -> String {
        self.0.spec_text()
    }

    fn builds_from_source(&self) -> bool {
        matches!(self.0, BinarySource::Build(_))
    }

    fn check(&self, _target: &TargetSpec) -> Result<(), Failure> {
        self.0.check()
    }

    fn check_at_plan(&self, _target: &TargetSpec, _dry_run: bool) -> Result<Vec<String>, Failure> {
        self.0.check().map(|()| Vec::new())
    }

    fn resolve(
        &self,
        target: &TargetSpec,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        let binaries = self.0.resolve(events)?;
        super::setting_names::check_postgres(&binaries, &target.settings)?;
        Ok(Arc::new(ResolvedPostgres {
            source: self.0.clone(),
            binaries,
        }))
    }
}

struct ResolvedPostgres {
    source: BinarySource,
    binaries: Binaries,
}

impl ResolvedTarget for ResolvedPostgres {
    fn version(&self) -> String {
        self.binaries.version.clone()
    }

    fn provision(
        &self,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        let config = place.server_config(target);
        let server = ProvisionedServer::provision(&self.binaries, &place.root, &config)?;
        Ok(Box::new(LabPostgres::new(server, self.source.clone())))
    }
}
