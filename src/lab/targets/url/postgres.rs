//! A PostgreSQL server reached by URL, as the lab uses it: `Reached` is what `lab plan` and
//! the lab's start learn from it (role, version, how each setting is applied);
//! `RemotePostgres` is the lab's work there, in databases of its own.

use super::access::{plan_settings, Access, SettingsPlan};
use super::metrics::{NodeMetrics, ServerIdentity};
use super::names::OwnedDatabases;
use super::put_back::PutBack;
use crate::lab::targets::api::TargetSpec;
use crate::lab::targets::api::{HostProcess, LabPlace, LabServer, PodLoad};
use crate::lab::targets::postgres::sql::PostgresSql;
use crate::lab::window::RunProbes;
use crate::server::profile::Machine;
use stampede_base::error::Failure;
use stampede_conn::{ConnSpec, Endpoint};
use stampede_control::postgres::queries::{query_rows, query_string, sql};
use stampede_control::postgres::system_settings::{self, quote};
use stampede_store::{SettingRow, TargetRecord, SOURCE_AROUND_RUNS, SOURCE_PER_DATABASE};

/// How a run's pristine copy is made, as reports name it (with the strategy clause).
const RESTORE_METHOD: &str = "CREATE DATABASE … TEMPLATE";

/// A server the URL reached, with what its role may do.
pub struct Reached {
    /// The URL's own database: the lab's control sessions and cluster-wide views.
    conn: ConnSpec,
    masked: String,
    access: Access,
    settings: SettingsPlan,
}

impl Reached {
    /// Connects and checks everything a lab needs of the role, refusing what it lacks.
    pub fn reach(conn: ConnSpec, masked: &str, target: &TargetSpec) -> Result<Reached, Failure> {
        let access = Access::read(&conn)
            .map_err(|e| Failure::input(format!("cannot reach {masked}: {}", e.message())))?;
        access.check_databases()?;
        let settings = plan_settings(&conn, &access, &target.settings)?;
        // Refuses settings whose former values the role cannot see to put back.
        system_settings::changes(&conn, &settings.system)?;
        Ok(Reached {
            conn,
            masked: masked.to_string(),
            access,
            settings,
        })
    }

    pub fn version(&self) -> String {
        format!("PostgreSQL {}", self.access.version)
    }

    /// What `lab plan` says of the target.
    pub fn plan_lines(&self) -> Vec<String> {
        let access = &self.access;
        let mut lines = vec![format!(
            "{} reached as role \"{}\": PostgreSQL {}; the lab neither starts nor stops it",
            self.masked, access.role, access.version
        )];
        lines.push(
            "each dataset in a database of the lab's own, copied before each run that writes by CREATE DATABASE … TEMPLATE (the server writes the dataset's size again per run); dropped when the lab ends (--keep-data keeps them)".into(),
        );
        let names = |settings: &[(String, String)]| {
            settings
                .iter()
                .map(|(name, value)| format!("{name} = {}", quote(value)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.settings.per_database.is_empty() {
            lines.push(format!(
                "per database (ALTER DATABASE … SET on the lab's databases): {}",
                names(&self.settings.per_database)
            ));
        }
        if !self.settings.system.is_empty() {
            lines.push(format!(
                "for each run by ALTER SYSTEM and a reload, put back after it: {}",
                names(&self.settings.system)
            ));
        }
        if !access.checkpoint {
            lines.push(format!(
                "no CHECKPOINT before runs: role \"{}\" may not run it (GRANT pg_checkpoint TO \"{}\", PostgreSQL 15 and later)",
                access.role, access.role
            ));
        }
        lines
    }
}

/// The lab's work on a server it reached by URL.
pub struct RemotePostgres {
    sql: PostgresSql,
    access: Access,
    settings: SettingsPlan,
    names: OwnedDatabases,
    put_back: PutBack,
    keep_data: bool,
    metrics: Option<NodeMetrics>,
    /// What the kind that reached this server adds to it (a Cluster's pods, primary, deletion).
    hooks: Option<Box<dyn ServerHooks>>,
}

/// What a kind that reaches its server as a url target does adds to the lab's work there: a
/// CloudNativePG Cluster's load from pods, its primary watched over each run, its deletion.
pub trait ServerHooks: Send + Sync {
    fn pod_load(&self) -> Option<PodLoad> {
        None
    }
    /// Just before a run is measured, with the server's primary at `server` (a shared
    /// Cluster's settings are patched in here).
    fn begin_run(&self, _server: &ConnSpec, _notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        Ok(())
    }
    /// Whether the server goes when the lab hands it back (a Cluster the lab deletes): its
    /// databases are not dropped one by one first.
    fn discards_server(&self) -> bool {
        false
    }
    /// After it: why its numbers are not the target's, if something changed under it.
    fn run_disturbed(&self) -> Option<String> {
        None
    }
    /// Once the server is handed back.
    fn released(&self, _lab_ended: bool) {}
    /// The run's probes with the kind's own around them (a Cluster's primary pod's CPU).
    fn around(&self, probes: Box<dyn RunProbes>) -> Box<dyn RunProbes> {
        probes
    }
    /// Where the server runs, as one line, and what its series are keyed by instead of its
    /// system identifier (a Cluster the lab creates has a new one each time).
    fn placement(&self) -> Option<(String, String)> {
        None
    }
}

impl RemotePostgres {
    /// The server with what the kind that reached it adds.
    pub fn with_hooks(self, hooks: Box<dyn ServerHooks>) -> RemotePostgres {
        RemotePostgres {
            hooks: Some(hooks),
            ..self
        }
    }

    /// The lab's view of the server; settings a killed lab left changed are put back first.
    pub fn connect(
        reached: &Reached,
        target: &TargetSpec,
        place: &LabPlace<'_>,
        metrics: Option<NodeMetrics>,
    ) -> Result<RemotePostgres, Failure> {
        let server = RemotePostgres {
            sql: PostgresSql {
                // Only a superuser's sessions may keep out of the statement statistics.
                base: ConnSpec {
                    may_untrack: reached.access.superuser,
                    ..reached.conn.clone()
                },
                admin_database: reached.conn.dbname.clone(),
                version_num: reached.access.version_num,
                // As a managed server's copies are made (cold, from files), so that the copy
                // a run starts from is the same on both.
                copy_clause: if reached.access.version_num >= 150000 {
                    " STRATEGY FILE_COPY"
                } else {
                    ""
                },
                checkpoints: reached.access.checkpoint,
            },
            access: reached.access.clone(),
            settings: reached.settings.clone(),
            names: OwnedDatabases::new(place.lab, &target.name),
            put_back: PutBack::in_folder(&place.root),
            keep_data: place.keep_data,
            metrics,
            hooks: None,
        };
        server.put_back_left_over()?;
        Ok(server)
    }

    /// The URL's own database, where system settings are changed and databases made.
    /// A control session's connection on the server (a Cluster's primary).
    pub fn admin(&self) -> ConnSpec {
        self.sql.admin()
    }

    fn put_back_left_over(&self) -> Result<(), Failure> {
        self.put_back
            .left_over(|pending| system_settings::restore(&self.admin(), pending, &mut |_| {}))
    }

    /// A database the lab just made: marked as its own, with the target's settings.
    fn adopt(&self, name: &str) -> Result<(), Failure> {
        self.mark(name)?;
        for (setting, value) in &self.settings.per_database {
            sql(
                &self.admin(),
                &format!("ALTER DATABASE {name} SET {setting} = {}", quote(value)),
            )?;
        }
        Ok(())
    }

    /// The executor's `database` made by `create` (given the server's name for it), replacing
    /// the lab's own database of that name and refusing anyone else's.
    fn make(
        &self,
        database: &str,
        create: impl Fn(&str) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let name = self.names.name(database);
        if self.exists(&name)? {
            self.sql.drop(&name)?;
        }
        create(&name)?;
        self.adopt(&name)
    }

    /// The server's settings as the lab's databases see them during the target's runs: read
    /// with its ALTER SYSTEM ones applied (and put back at once), its per-database ones over
    /// them.
    fn settings_seen(&self) -> Result<Vec<SettingRow>, Failure> {
        self.begin_run(&mut |_| {})?;
        let rows = self.sql.settings();
        self.end_run()?;
        Ok(self.with_own(rows?))
    }

    /// `rows` with the target's own settings marked as its (its per-database ones, which a
    /// session of another database does not see, as it gives them).
    fn with_own(&self, mut rows: Vec<SettingRow>) -> Vec<SettingRow> {
        for (name, value) in &self.settings.per_database {
            if let Some(row) = rows.iter_mut().find(|r| r.name == name.to_lowercase()) {
                row.setting = Some(value.clone());
                row.source = Some(SOURCE_PER_DATABASE.into());
            }
        }
        for (name, _) in &self.settings.system {
            if let Some(row) = rows.iter_mut().find(|r| r.name == name.to_lowercase()) {
                row.source = Some(SOURCE_AROUND_RUNS.into());
            }
        }
        rows
    }

    /// What identifies the server: its cluster's system identifier (when the role may read
    /// pg_control), else the address it answered on.
    fn identity(&self) -> ServerIdentity {
        let identifier = query_string(
            &self.admin(),
            "SELECT system_identifier::text FROM pg_control_system()",
        )
        .ok();
        let address = query_string(
            &self.admin(),
            "SELECT coalesce(host(inet_server_addr()) || ':' || inet_server_port(), 'unix socket')",
        )
        .unwrap_or_default();
        let described = format!(
            "server not started by stampede (role \"{}\"; system identifier {}; answered on {address})",
            self.access.role,
            identifier.as_deref().unwrap_or("not readable by this role")
        );
        let identity = ServerIdentity {
            described: match &self.metrics {
                Some(metrics) => format!("{described}; {}", metrics.described()),
                None => described,
            },
            key: match identifier {
                Some(identifier) => format!("system identifier {identifier}"),
                None => format!("answered on {address}"),
            },
            machine: self.metrics.as_ref().map(NodeMetrics::machine),
        };
        match self.hooks.as_ref().and_then(|hooks| hooks.placement()) {
            Some((placement, key)) => ServerIdentity {
                described: format!("{}; {placement}", identity.described),
                key,
                machine: Some(placement),
            },
            None => identity,
        }
    }
}

/// The lab's databases on a PostgreSQL server, marked by their comment.
impl RemotePostgres {
    /// Whether `name` exists, refusing one the lab did not make.
    fn exists(&self, name: &str) -> Result<bool, Failure> {
        let rows = query_rows(
            &self.admin(),
            &format!(
                "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = {}",
                quote(name)
            ),
        )?;
        match rows.first() {
            None => Ok(false),
            Some(row) if row[0].as_deref() == Some(self.names.marker()) => Ok(true),
            Some(_) => Err(self.names.not_ours(name)),
        }
    }

    fn mark(&self, name: &str) -> Result<(), Failure> {
        sql(
            &self.admin(),
            &format!(
                "COMMENT ON DATABASE {name} IS {}",
                quote(self.names.marker())
            ),
        )
    }

    /// Every database of the lab's for this target on the server.
    fn all_ours(&self) -> Result<Vec<String>, Failure> {
        let rows = query_rows(
            &self.admin(),
            &format!(
                "SELECT datname FROM pg_database WHERE left(datname, {}) = {} AND shobj_description(oid, 'pg_database') = {} ORDER BY datname",
                self.names.prefix().len(),
                quote(self.names.prefix()),
                quote(self.names.marker())
            ),
        )?;
        Ok(rows.into_iter().filter_map(|row| row[0].clone()).collect())
    }
}

impl LabServer for RemotePostgres {
    fn describe(&self, target: &TargetSpec) -> Result<TargetRecord, Failure> {
        let identity = self.identity();
        Ok(TargetRecord {
            name: target.name.clone(),
            server: target.server.spec_text(),
            binary_source: identity.described,
            bin_dir: String::new(),
            server_version: self.sql.version()?,
            pg_config: self.sql.pg_config(),
            profile: target.profile.name(),
            restore_method: format!("{RESTORE_METHOD}{}", self.sql.copy_clause),
            settings: self.settings_seen()?,
            server_key: Some(identity.key),
            server_machine: identity.machine,
        })
    }

    fn conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(self.sql.control(&self.names.name(database)))
    }

    fn workload_conn(&self, database: &str) -> Endpoint {
        Endpoint::Postgres(self.sql.workload(&self.names.name(database)))
    }

    fn has_dataset(&self, database: &str) -> bool {
        let name = self.names.name(database);
        self.exists(&name).unwrap_or(false) && self.sql.has_dataset(&name)
    }

    fn create_empty(&self, database: &str) -> Result<(), Failure> {
        self.make(database, |name| self.sql.create(name))
    }

    fn seal_dataset(&self, database: &str) -> Result<(), Failure> {
        self.sql.seal(&self.names.name(database))
    }

    fn copy_database(&self, template: &str, copy: &str) -> Result<(), Failure> {
        let template = self.names.name(template);
        self.make(copy, |name| self.sql.copy(&template, name))
    }

    fn drop_database(&self, database: &str) -> Result<(), Failure> {
        let name = self.names.name(database);
        if self.exists(&name)? {
            self.sql.drop(&name)?;
        }
        Ok(())
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
        let run = run.postgres("the probes").ok()?;
        let probes: Box<dyn RunProbes> = Box::new(self.sql.probes(run, None));
        let probes = match &self.metrics {
            Some(metrics) => metrics.around(probes),
            None => probes,
        };
        Some(match &self.hooks {
            Some(hooks) => hooks.around(probes),
            None => probes,
        })
    }

    fn explain(&self, database: &str, statement: &str) -> Option<String> {
        self.sql.explain(&self.names.name(database), statement)
    }

    fn run_settings(&self, database: &str) -> Option<Vec<SettingRow>> {
        let rows = self.sql.settings_in(&self.names.name(database)).ok()?;
        Some(self.with_own(rows))
    }

    fn begin_run(&self, notes: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        if let Some(hooks) = &self.hooks {
            hooks.begin_run(&self.admin(), notes)?;
        }
        if self.settings.system.is_empty() {
            return Ok(());
        }
        let changes = system_settings::changes(&self.admin(), &self.settings.system)?;
        self.put_back.begin_run(changes, |changes| {
            system_settings::apply(&self.admin(), changes, &mut |_| {})
        })
    }

    fn end_run(&self) -> Result<(), Failure> {
        self.put_back
            .end_run(|applied| system_settings::restore(&self.admin(), applied, &mut |_| {}))
    }

    fn run_disturbed(&self) -> Option<String> {
        self.hooks.as_ref().and_then(|hooks| hooks.run_disturbed())
    }

    fn pod_load(&self) -> Option<PodLoad> {
        self.hooks.as_ref().and_then(|hooks| hooks.pod_load())
    }

    fn host(&self) -> Option<&dyn HostProcess> {
        None
    }

    fn release(&self, lab_ended: bool) {
        let _ = self.end_run();
        let _ = self.put_back_left_over();
        let discarded = self.hooks.as_ref().is_some_and(|h| h.discards_server());
        if lab_ended && !self.keep_data && !discarded {
            for name in self.all_ours().unwrap_or_default() {
                let _ = self.sql.drop(&name);
            }
        }
        if let Some(hooks) = &self.hooks {
            hooks.released(lab_ended);
        }
    }
}
