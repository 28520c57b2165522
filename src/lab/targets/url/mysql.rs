//! A MariaDB/MySQL server reached by a `mysql://`/`mariadb://` URL. MySQL has no per-database
//! settings: each of the target's variables is set with `SET GLOBAL` (which new sessions take)
//! before each of its runs and put back after it, like a PostgreSQL server's ALTER SYSTEM ones;
//! a read-only variable (a restart's) or a session-only one is refused. The lab's databases
//! carry a `stampede_lab` table holding their marker, which their copies take along.

use super::metrics::{NodeMetrics, ServerIdentity};
use super::names::OwnedDatabases;
use super::put_back::PutBack;
use crate::lab::targets::api::{HostProcess, LabPlace, LabServer, TargetSpec};
use crate::lab::targets::mariadb::sql::{MariadbSql, RESTORE_METHOD};
use crate::lab::window::{MysqlProbes, RunProbes};
use crate::server::profile::Machine;
use stampede_base::error::Failure;
use stampede_conn::{Endpoint, MysqlSpec};
use stampede_control::mysql::ControlSession;
use stampede_control::postgres::system_settings::SystemChange;
use stampede_store::{SettingRow, TargetRecord, SOURCE_AROUND_RUNS};

/// The table that marks a database as the lab's.
const MARKER_TABLE: &str = "stampede_lab";

/// A server the URL reached, with its version and the variables to set.
pub struct Reached {
    account: MysqlSpec,
    masked: String,
    version: String,
    /// (name, value) set globally for each run.
    variables: Vec<(String, String)>,
    /// May SET GLOBAL: the target's variables, and InnoDB's flushing ones for a checkpoint.
    sets_globals: bool,
}

impl Reached {
    pub fn reach(
        account: MysqlSpec,
        masked: &str,
        target: &TargetSpec,
    ) -> Result<Reached, Failure> {
        let account = account.with_database("");
        let mut session = ControlSession::connect(&account)
            .map_err(|e| Failure::input(format!("cannot reach {masked}: {}", e.message())))?;
        let version = first(&mut session, "SELECT VERSION()")?;
        let grants: Vec<String> = session
            .rows("SHOW GRANTS")?
            .rows
            .into_iter()
            .flatten()
            .flatten()
            .map(|grant| grant.to_ascii_uppercase())
            .collect();
        check_create(&grants, &account)?;
        let sets_globals = grants.iter().any(|grant| {
            grant.contains(" ON *.* ")
                && [
                    "ALL PRIVILEGES",
                    "SUPER",
                    "SYSTEM VARIABLES ADMIN",
                    "SYSTEM_VARIABLES_ADMIN",
                ]
                .iter()
                .any(|privilege| grant.contains(privilege))
        });
        for (name, _) in &target.settings {
            check_variable(&mut session, name)?;
            if !sets_globals {
                return Err(Failure::input(format!(
                    "settings.{name}: SET GLOBAL needs SUPER (MariaDB 10.5.2 and later: SYSTEM VARIABLES ADMIN; MySQL: SYSTEM_VARIABLES_ADMIN), which user \"{}\" lacks",
                    account.user
                )));
            }
        }
        Ok(Reached {
            account,
            masked: masked.to_string(),
            version,
            variables: target.settings.clone(),
            sets_globals,
        })
    }

    pub fn version(&self) -> String {
        self.version.clone()
    }

    pub fn plan_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{} reached as {}: {}; the lab neither starts nor stops it",
            self.masked, self.account.user, self.version
        )];
        lines.push(
            "each dataset in a database of the lab's own, copied before each run that writes by CREATE TABLE … LIKE + INSERT … SELECT; dropped when the lab ends (--keep-data keeps them)".into(),
        );
        if !self.variables.is_empty() {
            lines.push(format!(
                "for each run by SET GLOBAL, put back after it: {}",
                self.variables
                    .iter()
                    .map(|(name, value)| format!("{name} = {}", literal(value)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.sets_globals {
            lines.push(format!(
                "no buffer-pool flush before runs: user \"{}\" may not SET GLOBAL",
                self.account.user
            ));
        }
        lines
    }
}

fn first(session: &mut ControlSession, sql: &str) -> Result<String, Failure> {
    Ok(session
        .rows(sql)?
        .rows
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().next().flatten())
        .unwrap_or_default())
}

/// The account must be able to create the lab's databases: CREATE on every database, or on
/// those named `stampede…`.
fn check_create(grants: &[String], account: &MysqlSpec) -> Result<(), Failure> {
    let may = grants.iter().any(|grant| {
        let on_all = grant.contains(" ON *.* ");
        let on_ours = grant.contains(" ON `STAMPEDE");
        let creates = grant.contains("ALL PRIVILEGES") || grant.contains("CREATE");
        creates && (on_all || on_ours)
    });
    if may {
        return Ok(());
    }
    Err(Failure::input(format!(
        "user \"{}\" may not create databases, and the lab loads each dataset into a database of its own and copies it before each run that writes; grant it with GRANT ALL ON `stampede\\_%`.* TO '{}'",
        account.user, account.user
    )))
}

/// A variable that can be set globally for new sessions: known, writable, not session-only (MariaDB's information_schema.SYSTEM_VARIABLES says; a server without it is
/// left to SET GLOBAL's own refusal).
fn check_variable(session: &mut ControlSession, name: &str) -> Result<(), Failure> {
    let normal = name.replace('-', "_").to_ascii_uppercase();
    let described = session.try_rows(&format!(
        "SELECT VARIABLE_SCOPE, READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = '{normal}'"
    ))?;
    let Ok(rows) = described else {
        return Ok(());
    };
    let Some(row) = rows.rows.first() else {
        return Err(Failure::input(format!(
            "settings.{name}: not a variable of this server"
        )));
    };
    let scope = row.first().cloned().flatten().unwrap_or_default();
    if row.get(1).cloned().flatten().as_deref() == Some("YES") {
        return Err(Failure::input(format!(
            "settings.{name}: read-only while the server runs (it takes a restart), and stampede does not restart a server it did not start; set it on the server yourself and compare servers, or use a target the lab starts"
        )));
    }
    if scope == "SESSION ONLY" {
        return Err(Failure::input(format!(
            "settings.{name}: a session-only variable, which the lab cannot set for the workload's sessions"
        )));
    }
    Ok(())
}

/// A variable's value as SET takes it: numbers bare, anything else quoted.
fn literal(value: &str) -> String {
    if value.parse::<f64>().is_ok() {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
    }
}

/// The lab's work on a MariaDB/MySQL server it reached by URL.
pub struct RemoteMysql {
    sql: MariadbSql,
    version: String,
    variables: Vec<(String, String)>,
    names: OwnedDatabases,
    put_back: PutBack,
    keep_data: bool,
    metrics: Option<NodeMetrics>,
}

impl RemoteMysql {
    pub fn connect(
        reached: &Reached,
        target: &TargetSpec,
        place: &LabPlace<'_>,
        metrics: Option<NodeMetrics>,
    ) -> Result<RemoteMysql, Failure> {
        let server = RemoteMysql {
            sql: MariadbSql {
                account: reached.account.clone(),
                checkpoints: reached.sets_globals,
            },
            version: reached.version.clone(),
            variables: reached.variables.clone(),
            names: OwnedDatabases::new(place.lab, &target.name),
            put_back: PutBack::in_folder(&place.root),
            keep_data: place.keep_data,
            metrics,
        };
        server.put_back_left_over()?;
        Ok(server)
    }

    fn session(&self) -> Result<ControlSession, Failure> {
        self.sql.session()
    }

    fn put_back_left_over(&self) -> Result<(), Failure> {
        self.put_back
            .left_over(|pending| self.put_back_globally(pending))
    }

    fn put_back_globally(&self, changes: &[SystemChange]) -> Result<(), Failure> {
        self.set_globally(changes.iter().map(|c| (&c.name, &c.before)))
    }

    fn set_globally<'v>(
        &self,
        variables: impl Iterator<Item = (&'v String, &'v String)>,
    ) -> Result<(), Failure> {
        let mut session = self.session()?;
        for (name, value) in variables {
            session.execute(&format!("SET GLOBAL {name} = {}", literal(value)))?;
        }
        Ok(())
    }

    /// Whether `name` exists, refusing one the lab did not make.
    fn exists(&self, name: &str) -> Result<bool, Failure> {
        let mut session = self.session()?;
        let found = first(
            &mut session,
            &format!(
                "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{name}'"
            ),
        )?;
        if found == "0" {
            return Ok(false);
        }
        let marker = session.try_rows(&format!("SELECT marker FROM `{name}`.{MARKER_TABLE}"))?;
        let ours = marker.is_ok_and(|rows| {
            rows.rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .as_deref()
                == Some(self.names.marker())
        });
        if ours {
            Ok(true)
        } else {
            Err(self.names.not_ours(name))
        }
    }

    fn mark(&self, name: &str) -> Result<(), Failure> {
        let mut session = self.session()?;
        session.execute(&format!(
            "CREATE TABLE `{name}`.{MARKER_TABLE} (marker VARCHAR(200) NOT NULL)"
        ))?;
        session.execute(&format!(
            "INSERT INTO `{name}`.{MARKER_TABLE} VALUES ({})",
            literal(self.names.marker())
        ))
    }

    fn all_ours(&self) -> Result<Vec<String>, Failure> {
        let rows = self.session()?.rows(&format!(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE LEFT(SCHEMA_NAME, {}) = '{}' ORDER BY 1",
            self.names.prefix().len(),
            self.names.prefix()
        ))?;
        let named: Vec<String> = rows
            .rows
            .into_iter()
            .filter_map(|row| row.into_iter().next().flatten())
            .collect();
        Ok(named
            .into_iter()
            .filter(|name| self.exists(name).unwrap_or(false))
            .collect())
    }

    fn drop_ours(&self, name: &str) -> Result<(), Failure> {
        if self.exists(name)? {
            self.sql.drop_database(name)?;
        }
        Ok(())
    }

    /// What identifies the server: the host and port it answers as, and when its system
    /// schema was made (a server initialised anew under the same address), where visible.
    fn identity(&self) -> Result<ServerIdentity, Failure> {
        let mut session = self.session()?;
        let host =
            first(&mut session, "SELECT CONCAT(@@hostname, ':', @@port)").unwrap_or_default();
        let made = first(
            &mut session,
            "SELECT DATE_FORMAT(MIN(create_time), '%Y-%m-%d %H:%i:%s') FROM information_schema.tables WHERE table_schema = 'mysql'",
        )
        .ok()
        .filter(|made| !made.is_empty());
        let key = match &made {
            Some(made) => format!("answered as {host}, system schema made {made}"),
            None => format!("answered as {host}"),
        };
        let described = format!(
            "server not started by stampede (user \"{}\"; {key})",
            self.sql.account.user
        );
        Ok(ServerIdentity {
            described: match &self.metrics {
                Some(metrics) => format!("{described}; {}", metrics.described()),
                None => described,
            },
            key,
            machine: self.metrics.as_ref().map(NodeMetrics::machine),
        })
    }
}

impl RemoteMysql {
    /// The server's global variables as the target's runs see them: read with its own set
    /// (and put back at once), since one may move others (an alias: long_query_time is
    /// log_slow_query_time).
    fn settings_seen(&self) -> Result<Vec<SettingRow>, Failure> {
        self.begin_run(&mut |_| {})?;
        let rows = self.variables_read();
        self.end_run()?;
        rows
    }

    /// The server's global variables now, the target's own marked as its. The replication
    /// positions (`gtid_*`) are left out: they move with every write.
    fn variables_read(&self) -> Result<Vec<SettingRow>, Failure> {
        Ok(self
            .sql
            .variables()?
            .into_iter()
            .filter(|(name, _)| !name.starts_with("gtid_"))
            .map(|(name, value)| {
                let set = self
                    .variables
                    .iter()
                    .find(|(n, _)| n.replace('-', "_").eq_ignore_ascii_case(&name));
                SettingRow {
                    source: Some(
                        if set.is_some() {
                            SOURCE_AROUND_RUNS
                        } else {
                            "server"
                        }
                        .into(),
                    ),
                    setting: Some(value),
                    name,
                    unit: None,
                    boot_val: None,
                    context: None,
                }
            })
            .collect())
    }
}

impl LabServer for RemoteMysql {
    fn describe(&self, target: &TargetSpec) -> Result<TargetRecord, Failure> {
        let settings = self.settings_seen()?;
        let identity = self.identity()?;
        Ok(TargetRecord {
            name: target.name.clone(),
            server: target.server.spec_text(),
            binary_source: identity.described,
            bin_dir: String::new(),
            server_version: self.version.clone(),
            pg_config: String::new(),
            profile: target.profile.name(),
            restore_method: RESTORE_METHOD.into(),
            settings,
            server_key: Some(identity.key),
            server_machine: identity.machine,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        Endpoint::Mysql(self.sql.spec(&self.names.name(database)))
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        self.conn(database)
    }

    fn has_dataset(&self, database: &str) -> bool {
        let name = self.names.name(database);
        self.exists(&name).unwrap_or(false) && self.sql.has_dataset(&name)
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        let name = self.names.name(database);
        self.drop_ours(&name)?;
        self.sql.create_empty(&name)?;
        self.mark(&name)
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        self.sql.seal_dataset(&self.names.name(database))
    }

    /// The marker table is copied with the others.
    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        let name = self.names.name(copy);
        self.drop_ours(&name)?;
        self.sql.copy_database(&self.names.name(template), &name)
    }

    fn drop_database(&self, database: &str) -> Result<(), Failure> {
        self.drop_ours(&self.names.name(database))
    }

    fn checkpoint(&self) -> Result<(), Failure> {
        self.sql.checkpoint()
    }

    fn database_bytes(&self, database: &str) -> Result<u64, Failure> {
        self.sql.database_bytes(&self.names.name(database))
    }

    fn shared_buffers_bytes(&self) -> Result<u64, Failure> {
        self.sql.shared_buffers_bytes()
    }

    fn machine(&self) -> Option<Machine> {
        None
    }

    fn alive(&self) -> bool {
        self.sql.alive()
    }

    fn window_probes(&self, run: &Endpoint) -> Option<Box<dyn RunProbes>> {
        let probes: Box<dyn RunProbes> = Box::new(MysqlProbes {
            run: self.sql.spec(run.database()),
            data_dir: None,
        });
        Some(match &self.metrics {
            Some(metrics) => metrics.around(probes),
            None => probes,
        })
    }

    fn explain(&self, _database: &str, _statement: &str) -> Option<String> {
        None
    }

    fn run_settings(&self, _database: &str) -> Option<Vec<SettingRow>> {
        self.variables_read().ok()
    }

    fn begin_run(&self, _notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        if self.variables.is_empty() {
            return Ok(());
        }
        let mut session = self.session()?;
        let mut changes = Vec::new();
        for (name, value) in &self.variables {
            let before = first(&mut session, &format!("SELECT @@GLOBAL.{name}"))?;
            changes.push(SystemChange {
                name: name.clone(),
                value: value.clone(),
                before,
                in_auto_conf: false,
            });
        }
        self.put_back.begin_run(changes, |_| {
            self.set_globally(self.variables.iter().map(|(n, v)| (n, v)))
        })
    }

    fn end_run(&self) -> Result<(), Failure> {
        self.put_back
            .end_run(|applied| self.put_back_globally(applied))
    }

    fn host(&self) -> Option<&dyn HostProcess> {
        None
    }

    fn release(&self, lab_ended: bool) {
        let _ = self.end_run();
        let _ = self.put_back_left_over();
        if lab_ended && !self.keep_data {
            for name in self.all_ours().unwrap_or_default() {
                let _ = self.sql.drop_database(&name);
            }
        }
    }
}
