//! The lab's work on any PostgreSQL server, over SQL alone: datasets and their pristine copies,
//! checkpoints, sizes, plans, and what the server says of itself. A managed server and one
//! reached by URL both do their work through this; they differ in how they connect, what they
//! name their databases and what else they do around it.

use crate::lab::window::WindowProbes;
use crate::probe::postgres::plans;
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string, sql};
use stampede_store::SettingRow;

/// One PostgreSQL server as the lab's SQL sees it. Databases are named as the server names
/// them.
#[derive(Clone)]
pub struct PostgresSql {
    /// How every session connects; its database is replaced per call.
    pub base: ConnSpec,
    /// A database of the server's that the lab's work does not touch: cluster-wide views,
    /// CREATE/DROP DATABASE.
    pub admin_database: String,
    pub version_num: i64,
    /// `CREATE DATABASE … TEMPLATE`'s strategy clause (" STRATEGY FILE_COPY", or none).
    pub copy_clause: &'static str,
    /// May run CHECKPOINT.
    pub checkpoints: bool,
}

impl PostgresSql {
    /// The measured workload's sessions on `database`.
    pub fn workload(&self, database: &str) -> ConnSpec {
        ConnSpec {
            dbname: database.to_string(),
            ..self.base.clone()
        }
    }

    /// A control session on `database`, kept out of the statement statistics where the role
    /// may.
    pub fn control(&self, database: &str) -> ConnSpec {
        self.workload(database).untracked()
    }

    pub fn admin(&self) -> ConnSpec {
        self.control(&self.admin_database)
    }

    /// Whether `database` holds a dataset whose load completed.
    pub fn has_dataset(&self, database: &str) -> bool {
        query_string(
            &self.control(database),
            "SELECT count(*)::text FROM stampede_dataset",
        )
        .is_ok_and(|n| n == "1")
    }

    pub fn create(&self, database: &str) -> Result<(), Failure> {
        sql(&self.admin(), &format!("CREATE DATABASE {database}"))
    }

    /// `copy` made from `template` on the server.
    pub fn copy(&self, template: &str, copy: &str) -> Result<(), Failure> {
        sql(
            &self.admin(),
            &format!(
                "CREATE DATABASE {copy} TEMPLATE {template}{}",
                self.copy_clause
            ),
        )
    }

    /// Drops `database`; sessions the lab left on it are ended with it (13 and later).
    pub fn drop(&self, database: &str) -> Result<(), Failure> {
        let force = if self.version_num >= 130000 {
            " WITH (FORCE)"
        } else {
            ""
        };
        sql(
            &self.admin(),
            &format!("DROP DATABASE IF EXISTS {database}{force}"),
        )
    }

    /// After a load: statement statistics on (where the role may create the extension),
    /// VACUUM FREEZE ANALYZE, the completion marker, a checkpoint.
    pub fn seal(&self, database: &str) -> Result<(), Failure> {
        let conn = self.control(database);
        // Without the extension a run's statements are absent, not zero.
        let _ = sql(&conn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        sql(&conn, "VACUUM (FREEZE, ANALYZE)")?;
        sql(
            &conn,
            "CREATE TABLE stampede_dataset AS SELECT now() AS loaded_at",
        )?;
        self.checkpoint()
    }

    /// CHECKPOINT where the role may; without it, runs start without one (`lab plan` says so).
    pub fn checkpoint(&self) -> Result<(), Failure> {
        if self.checkpoints {
            sql(&self.admin(), "CHECKPOINT")?;
        }
        Ok(())
    }

    pub fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        let text = query_string(
            &self.control(database),
            "SELECT pg_database_size(current_database())::text",
        )?;
        text.parse()
            .map_err(|e| Failure::run(format!("pg_database_size returned {text:?}: {e}")))
    }

    pub fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        query_string(
            &self.admin(),
            "SELECT pg_size_bytes(current_setting('shared_buffers'))::text",
        )?
        .parse()
        .map_err(|e| Failure::run(format!("shared_buffers: {e}")))
    }

    pub fn alive(&self) -> bool {
        query_string(&self.admin(), "SELECT 1").is_ok()
    }

    pub fn explain(&self, database: &str, statement: &str) -> Option<String> {
        plans::explain(&self.control(database), statement)
    }

    /// `version()`.
    pub fn version(&self) -> Result<String, Failure> {
        query_string(&self.admin(), "SELECT version()")
    }

    /// pg_config's lines, where the role may read the view (a superuser by default).
    pub fn pg_config(&self) -> String {
        query_string(
            &self.admin(),
            "SELECT string_agg(name || ' = ' || setting, E'\\n' ORDER BY name) FROM pg_config",
        )
        .unwrap_or_default()
    }

    /// Every setting as `pg_settings` shows it.
    pub fn settings(&self) -> Result<Vec<SettingRow>, Failure> {
        self.settings_in(&self.admin_database)
    }

    /// Every setting as a session of `database` sees it (its per-database ones included).
    pub fn settings_in(&self, database: &str) -> Result<Vec<SettingRow>, Failure> {
        Ok(query_rows(
            &self.control(database),
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
        .collect())
    }

    /// The probes around a run on `run`; `data_dir` when the server is on this machine.
    pub fn probes(&self, run: &ConnSpec, data_dir: Option<std::path::PathBuf>) -> WindowProbes {
        WindowProbes {
            run: run.clone().untracked(),
            admin: self.admin(),
            data_dir,
            server_version_num: self.version_num,
        }
    }
}
