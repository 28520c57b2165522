//! A managed PostgreSQL server (`ProvisionedServer`) as the lab uses it: its SQL through
//! `PostgresSql` on its unix socket as the superuser, its process restarted after a crash.

use super::sql::PostgresSql;
use crate::lab::targets::api::TargetSpec;
use crate::lab::targets::api::{HostProcess, LabServer};
use crate::lab::window::RunProbes;
use crate::server::postgres::provision::{BinarySource, ProvisionedServer};
use crate::server::profile::Machine;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_store::TargetRecord;

/// The lab's managed PostgreSQL: its server, the source its binaries came from, its SQL.
pub struct LabPostgres {
    server: ProvisionedServer,
    source: BinarySource,
    sql: PostgresSql,
}

impl LabPostgres {
    pub fn new(server: ProvisionedServer, source: BinarySource) -> LabPostgres {
        let sql = PostgresSql {
            base: server.workload_conn("postgres"),
            admin_database: "postgres".into(),
            version_num: server.version_num,
            copy_clause: server.file_copy_clause(),
            checkpoints: true,
        };
        LabPostgres {
            server,
            source,
            sql,
        }
    }
}

impl LabServer for LabPostgres {
    fn describe(&self, spec: &TargetSpec) -> Result<TargetRecord, Failure> {
        let binaries = &self.server.cluster.binaries;
        Ok(TargetRecord {
            name: spec.name.clone(),
            server: spec.server.spec_text(),
            binary_source: self.source.provenance(&binaries.bin_dir),
            bin_dir: binaries.bin_dir.display().to_string(),
            server_version: self.sql.version()?,
            pg_config: self.sql.pg_config(),
            profile: spec.profile.name(),
            restore_method: self.server.restore_method().into(),
            settings: self.sql.settings()?,
            server_key: None,
            server_machine: None,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(self.sql.control(database))
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(self.sql.workload(database))
    }

    fn has_dataset(&self, database: &str) -> bool {
        self.sql.has_dataset(database)
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        self.sql.drop(database)?;
        self.sql.create(database)
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        self.sql.seal(database)
    }

    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        self.sql.drop(copy)?;
        self.sql.copy(template, copy)
    }

    fn drop_database(&self, database: &str) -> Result<(), Failure> {
        self.sql.drop(database)
    }

    fn checkpoint(&self) -> Result<(), Failure> {
        self.sql.checkpoint()
    }

    fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        self.sql.database_bytes(database)
    }

    fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        self.sql.shared_buffers_bytes()
    }

    fn machine(&self) -> Option<Machine> {
        Some(Machine::probe(&self.server.cluster.root))
    }

    fn alive(&self) -> bool {
        self.sql.alive()
    }

    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>> {
        let run = run.postgres("the probes").ok()?;
        let data_dir = Some(self.server.cluster.data_dir());
        Some(Box::new(self.sql.probes(run, data_dir)))
    }

    fn explain(&self, database: &str, statement: &str) -> Option<String> {
        self.sql.explain(database, statement)
    }

    fn host(&self) -> Option<&dyn HostProcess> {
        Some(self)
    }

    fn release(&self, _lab_ended: bool) {
        let _ = self.server.cluster.stop();
    }
}

impl HostProcess for LabPostgres {
    fn restart(&self) -> Result<(), Failure> {
        self.server.restart()
    }

    fn log_tail(&self, lines: usize) -> String {
        self.server.cluster.log_tail(lines)
    }
}
