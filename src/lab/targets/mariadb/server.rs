//! A managed MariaDB/MySQL server with the profile's settings as the lab uses it: its SQL
//! through `MariadbSql` on its socket as root, its process restarted after a crash.

use std::path::Path;
use std::time::Duration;

use super::sql::{MariadbSql, RESTORE_METHOD};
use crate::lab::targets::api::TargetSpec;
use crate::lab::targets::api::{HostProcess, LabServer};
use crate::lab::window::{MysqlProbes, RunProbes};
use crate::server::free_port;
use crate::server::mariadb::managed::{Flavor, MariadbBinaries, MariadbServer};
use crate::server::mariadb::profile::Mariadb;
use crate::server::profile::Machine;
use crate::server::profile::{self, ServerConfig};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_store::{SettingRow, TargetRecord};

pub struct LabMariadb {
    server: MariadbServer,
}

impl LabMariadb {
    /// Initialises the data directory under `root` once, writes my.cnf with a free port and
    /// the settings, and starts the server.
    pub fn provision(
        binaries: &MariadbBinaries,
        root: &Path,
        config: &ServerConfig<'_>,
    ) -> Result<LabMariadb, Failure> {
        if let Some(parent) = root.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::run(format!("could not create {}: {e}", parent.display())).caused_by(e)
            })?;
        }
        let mut server =
            MariadbServer::new(binaries.clone(), root.to_path_buf(), free_port(None)?)?;
        server.settings = profile::settings::<Mariadb>(
            config.profile,
            &Machine::probe(root),
            config.max_clients,
            config.settings,
        )?;
        if server.is_running() {
            server.stop()?;
        }
        if server.is_initialized() {
            server.write_config()?;
        } else {
            server.init()?;
        }
        server.start()?;
        Ok(LabMariadb { server })
    }

    fn sql(&self) -> MariadbSql {
        MariadbSql {
            account: self.server.spec(),
            checkpoints: true,
        }
    }
}

impl LabServer for LabMariadb {
    fn describe(&self, spec: &TargetSpec) -> Result<TargetRecord, Failure> {
        let server_version = self.sql().version()?;
        let configured = |name: &str| self.server.settings.iter().any(|(n, _)| n == name);
        let settings = self
            .sql()
            .variables()?
            .into_iter()
            .map(|(name, value)| SettingRow {
                source: Some(
                    if configured(&name) {
                        "configuration file"
                    } else {
                        "default"
                    }
                    .into(),
                ),
                name,
                setting: Some(value),
                unit: None,
                boot_val: None,
                context: None,
            })
            .collect();
        let binaries = &self.server.binaries;
        Ok(TargetRecord {
            name: spec.name.clone(),
            server: spec.server.spec_text(),
            binary_source: format!(
                "{} ({})",
                match binaries.flavor {
                    Flavor::MariaDb => "MariaDB",
                    Flavor::MySql => "MySQL",
                },
                if binaries.source == "system" {
                    "system packages"
                } else if binaries.unpacked {
                    // "mariadb-server-core 1:11.8.9+ds-4 (Debian unstable, unpacked) (<root>)".
                    binaries.source.as_str()
                } else {
                    "bin/ path"
                }
            ),
            bin_dir: binaries
                .server
                .parent()
                .map_or_else(String::new, |dir| dir.display().to_string()),
            server_version,
            pg_config: String::new(),
            profile: spec.profile.name(),
            restore_method: RESTORE_METHOD.into(),
            settings,
            server_key: None,
            server_machine: None,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        Endpoint::Mysql(self.sql().spec(database))
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        Endpoint::Mysql(self.sql().spec(database))
    }

    fn has_dataset(&self, database: &str) -> bool {
        self.sql().has_dataset(database)
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        self.sql().create_empty(database)
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        self.sql().seal_dataset(database)
    }

    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        self.sql().copy_database(template, copy)
    }

    fn drop_database(&self, database: &str) -> Result<(), Failure> {
        self.sql().drop_database(database)
    }

    fn checkpoint(&self) -> Result<(), Failure> {
        self.sql().checkpoint()
    }

    fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        self.sql().database_bytes(database)
    }

    fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        self.sql().shared_buffers_bytes()
    }

    fn machine(&self) -> Option<Machine> {
        Some(Machine::probe(&self.server.root))
    }

    fn alive(&self) -> bool {
        self.sql().alive()
    }

    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>> {
        Some(Box::new(MysqlProbes {
            run: self.sql().spec(run.database()),
            data_dir: Some(self.server.data_dir()),
        }))
    }

    /// Statement digests carry `?` for their values, which EXPLAIN cannot take.
    fn explain(&self, _database: &str, _statement: &str) -> Option<String> {
        None
    }

    fn host(&self) -> Option<&dyn HostProcess> {
        Some(self)
    }

    fn release(&self, _lab_ended: bool) {
        let _ = self.server.stop();
    }
}

impl HostProcess for LabMariadb {
    /// A killed server's pid file and socket linger; `start` clears the socket and waits.
    fn restart(&self) -> Result<(), Failure> {
        let mut last = Ok(());
        for _ in 0..10 {
            last = self.server.start();
            if last.is_ok() {
                return last;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        last
    }

    fn log_tail(&self, lines: usize) -> String {
        self.server.log_tail(lines)
    }
}
