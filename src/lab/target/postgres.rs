//! The PostgreSQL lab target: a server stampede manages from the spec's source (system, bin
//! dir, download, Debian, build; `ProvisionedServer`), behind the seam `target/mod.rs`
//! defines.

use super::LabServer;
use crate::lab::spec::{ServerSource, TargetSpec};
use crate::lab::window::{RunProbes, WindowProbes};
use crate::probe::postgres::plans;
use crate::server::postgres::provision::ProvisionedServer;
use crate::server::profile::Machine;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_control::postgres::queries::{query_rows, query_string, sql};
use stampede_store::{SettingRow, TargetRecord};

impl LabServer for ProvisionedServer {
    fn describe(&self, spec: &TargetSpec) -> Result<TargetRecord, Failure> {
        let admin = self.pg_conn("postgres");
        let server_version = query_string(&admin, "SELECT version()")?;
        let pg_config = query_string(
            &admin,
            "SELECT string_agg(name || ' = ' || setting, E'\\n' ORDER BY name) FROM pg_config",
        )
        .unwrap_or_default();
        let settings = query_rows(
            &admin,
            "SELECT name, setting, unit, source, boot_val, context FROM pg_settings ORDER BY name",
        )?
        .into_iter()
        .map(|row| SettingRow {
            name: row[0].clone().unwrap_or_default(),
            setting: row[1].clone(),
            unit: row[2].clone(),
            source: row[3].clone(),
            boot_val: row[4].clone(),
            context: row[5].clone(),
        })
        .collect();
        Ok(TargetRecord {
            name: spec.name.clone(),
            server: spec.server.spec_text(),
            binary_source: match &spec.server {
                ServerSource::Postgres(source) => source.provenance(&self.cluster.binaries.bin_dir),
                ServerSource::Mariadb(_) => unreachable!("a PostgreSQL target"),
            },
            bin_dir: self.cluster.binaries.bin_dir.display().to_string(),
            server_version,
            pg_config,
            profile: spec.profile.name(),
            restore_method: self.restore_method().into(),
            settings,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(self.pg_conn(database))
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(ProvisionedServer::workload_conn(self, database))
    }

    fn has_dataset(&self, database: &str) -> bool {
        query_string(
            &self.pg_conn(database),
            "SELECT count(*)::text FROM stampede_dataset",
        )
        .is_ok_and(|n| n == "1")
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        self.drop_database(database)?;
        sql(
            &self.pg_conn("postgres"),
            &format!("CREATE DATABASE {database}"),
        )
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        let conn = self.pg_conn(database);
        sql(&conn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
        sql(&conn, "VACUUM (FREEZE, ANALYZE)")?;
        sql(
            &conn,
            "CREATE TABLE stampede_dataset AS SELECT now() AS loaded_at",
        )?;
        self.checkpoint()
    }

    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        self.drop_database(copy)?;
        sql(
            &self.pg_conn("postgres"),
            &format!(
                "CREATE DATABASE {copy} TEMPLATE {template}{}",
                self.file_copy_clause()
            ),
        )
    }

    fn drop_database(&self, database: &str) -> Result<(), Failure> {
        sql(
            &self.pg_conn("postgres"),
            &format!("DROP DATABASE IF EXISTS {database}"),
        )
    }

    fn checkpoint(&self) -> Result<(), Failure> {
        sql(&self.pg_conn("postgres"), "CHECKPOINT")
    }

    fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        let text = query_string(
            &self.pg_conn(database),
            "SELECT pg_database_size(current_database())::text",
        )?;
        text.parse()
            .map_err(|e| Failure::run(format!("pg_database_size returned {text:?}: {e}")))
    }

    fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        query_string(
            &self.pg_conn("postgres"),
            "SELECT pg_size_bytes(current_setting('shared_buffers'))::text",
        )?
        .parse()
        .map_err(|e| Failure::run(format!("shared_buffers: {e}")))
    }

    fn machine(&self) -> Machine {
        Machine::probe(&self.cluster.root)
    }

    fn alive(&self) -> bool {
        ProvisionedServer::alive(self)
    }

    fn restart(&self) -> Result<(), Failure> {
        ProvisionedServer::restart(self)
    }

    fn log_tail(&self, lines: usize) -> String {
        self.cluster.log_tail(lines)
    }

    fn stop(&self) {
        let _ = self.cluster.stop();
    }

    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>> {
        Some(Box::new(WindowProbes {
            run: self.pg_conn(run.database()),
            admin: self.pg_conn("postgres"),
            data_dir: self.cluster.data_dir(),
            server_version_num: self.version_num,
        }))
    }

    fn explain(&self, database: &str, statement: &str) -> Option<String> {
        plans::explain(&self.pg_conn(database), statement)
    }
}
