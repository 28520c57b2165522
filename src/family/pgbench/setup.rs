//! The setup connection of a `stampede pgbench` run: what pgbench does before the clients
//! start (the scale from pgbench_branches, the partitions, vacuum, analytics' accounts copy) and
//! the server's own counters around the run (pg_stat_database, pg_stat_statements).

use std::time::Duration;

use tokio_postgres::Client;

use super::analytics;
use super::args::ScriptChoice;
use super::report::ServerCounters;
use super::spec::{RunSpec, VacuumBeforeRun};
use crate::driver::RunResult;
use crate::probe::postgres::pgstat::{XactCounters, XactProbe};
use crate::probe::postgres::statement_window::{self, StatementTotals, StatementWindow};
use stampede_base::error::Failure;
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;
use stampede_control::postgres::{connect_quietly, connection_error, sql_error};

/// What the server's counters say about the run's window.
pub struct ServerObservations {
    pub counters: Option<ServerCounters>,
    /// Analytics runs: pg_stat_statements of the analytics queries over the window.
    pub statements: Option<Vec<StatementWindow>>,
}

/// What the setup connection learned before the run.
pub struct ServerSetup {
    client: Client,
    pub server_version: String,
    pub scale: i64,
    pub partitions: Option<(String, i64)>,
    probe: XactProbe,
    counters_before: Option<XactCounters>,
    /// pg_stat_statements before the run, for runs of study 002's analytics queries.
    statements_before: Option<Vec<StatementTotals>>,
}

/// pgbench's steps before a run: connect, read the scale and partitions from the tables,
/// vacuum, and take the server's counters that the run's window starts from.
pub async fn prepare(spec: &RunSpec, target: &ConnSpec) -> Result<ServerSetup, Failure> {
    prepare_as(spec, target, true).await
}

/// How the other pods of a spread run name their setup sessions.
const SHARE_ROLE: &str = "share";

/// A spread run's other pods: what their scripts need (the scale, the partitions), and no
/// vacuum or accounts copy — pod 0 did those before they joined.
pub async fn prepare_share(spec: &RunSpec, target: &ConnSpec) -> Result<ServerSetup, Failure> {
    prepare_as(spec, target, false).await
}

async fn prepare_as(
    spec: &RunSpec,
    target: &ConnSpec,
    changes_server: bool,
) -> Result<ServerSetup, Failure> {
    // Named apart from the clients, so that waiting for the clients' sessions to end works
    // (and a spread run's other pods apart from pod 0, which waits for theirs to end).
    let role = if changes_server {
        "control"
    } else {
        SHARE_ROLE
    };
    let mut control = ConnSpec {
        application_name: format!("{}-{role}", target.application_name),
        ..target.clone()
    };
    if spec.untracked_control {
        control = control.untracked();
    }
    let (client, connection) = control
        .connect_control()
        .await
        .map_err(|e| connection_error(target, e).into_input())?;
    tokio::spawn(connection);
    let server_version: String = client
        .query_one("SHOW server_version", &[])
        .await
        .map(|row| row.get(0))
        .map_err(|e| sql_error("SHOW server_version", e))?;
    let uses_builtin = spec
        .scripts
        .iter()
        .any(|(choice, _)| matches!(choice, ScriptChoice::Builtin(_)));
    let (scale, partitions) = if uses_builtin {
        let scale = read_scale(&client, target).await?;
        if spec.scale_given.is_some() {
            eprintln!("stampede: warning: scale option ignored, using count from pgbench_branches table ({scale})");
        }
        (scale, read_partitions(&client).await)
    } else {
        (spec.scale_given.unwrap_or(1), None)
    };
    let analytics = builtin_names(spec).any(|name| name.starts_with("analytics-"));
    if changes_server && builtin_names(spec).any(analytics::needs_accounts_copy) {
        if accounts_copy_missing(&client).await? {
            eprintln!("stampede: {CREATING_ACCOUNTS_COPY}");
        }
        create_accounts_copy(&client).await?;
    }
    if changes_server {
        vacuum(&client, spec.vacuum).await?;
    }
    let probe = XactProbe::new(&client)
        .await
        .map_err(|e| sql_error("server_version_num", e))?;
    let counters_before = probe.read(&client).await.ok();
    let statements_before = if analytics {
        let totals = statement_window::read_totals(&client).await;
        if totals.is_none() {
            eprintln!("stampede: warning: pg_stat_statements is not available in database \"{}\" (it needs shared_preload_libraries and CREATE EXTENSION): no per-statement execution times", target.dbname);
        }
        totals
    } else {
        None
    };
    Ok(ServerSetup {
        statements_before,
        probe,
        client,
        server_version,
        scale,
        partitions,
        counters_before,
    })
}

fn builtin_names(spec: &RunSpec) -> impl Iterator<Item = &str> {
    spec.scripts.iter().filter_map(|(choice, _)| match choice {
        ScriptChoice::Builtin(name) => Some(name.as_str()),
        ScriptChoice::File(_) => None,
    })
}

const CREATING_ACCOUNTS_COPY: &str = "creating pgbench_accounts_copy (a copy of pgbench_accounts with a unique index on aid) for the analytics queries";

/// `create_accounts_copy` over a connection of its own, for callers outside a runtime;
/// `note` hears when the copy is made rather than found.
pub fn create_accounts_copy_blocking(
    conn: &ConnSpec,
    note: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    let runtime = control_runtime();
    let (client, missing) = runtime.block_on(async {
        let client = connect_quietly(conn).await?;
        let missing = accounts_copy_missing(&client).await?;
        Ok::<_, Failure>((client, missing))
    })?;
    if missing {
        note(CREATING_ACCOUNTS_COPY);
    }
    runtime.block_on(create_accounts_copy(&client))
}

async fn accounts_copy_missing(client: &Client) -> Result<bool, Failure> {
    client
        .query_one("SELECT to_regclass('pgbench_accounts_copy') IS NULL", &[])
        .await
        .map(|row| row.get::<_, bool>(0))
        .map_err(|e| sql_error("to_regclass", e))
}

/// Study 002's copy of pgbench_accounts, which analytics queries 3 and 4 join with.
async fn create_accounts_copy(client: &Client) -> Result<(), Failure> {
    for statement in analytics::ACCOUNTS_COPY {
        client
            .batch_execute(statement)
            .await
            .map_err(|e| sql_error(statement, e))?;
    }
    Ok(())
}

/// pgbench's GetTableInfo: the scale is the number of branches.
async fn read_scale(client: &Client, target: &ConnSpec) -> Result<i64, Failure> {
    match client.query_one("select count(*) from pgbench_branches", &[]).await {
        Ok(row) => Ok(row.get(0)),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
            Err(Failure::input(format!(
                "could not count number of branches: ERROR:  relation \"pgbench_branches\" does not exist\nhint: Perhaps you need to do initialization (\"stampede pgbench -i\") in database \"{}\".",
                target.dbname
            )))
        }
        Err(e) => Err(Failure::input(format!(
            "could not count number of branches: {}",
            sql_error("select count(*) from pgbench_branches", e)
        ))),
    }
}

async fn read_partitions(client: &Client) -> Option<(String, i64)> {
    let row = client
        .query_opt(
            "select p.partstrat::text, count(i.inhparent)
             from pg_catalog.pg_class as c
             join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace)
             cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n)
             left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid)
             left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent)
             where c.relname = 'pgbench_accounts' and o.n is not null
             group by o.n, p.partstrat order by o.n asc limit 1",
            &[],
        )
        .await
        .ok()??;
    let method: Option<String> = row.get(0);
    let method = match method?.as_str() {
        "r" => "range",
        "h" => "hash",
        _ => return None,
    };
    Some((method.to_string(), row.get(1)))
}

async fn vacuum(client: &Client, mode: VacuumBeforeRun) -> Result<(), Failure> {
    if mode == VacuumBeforeRun::None {
        return Ok(());
    }
    eprint!("starting vacuum...");
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        // pgbench tolerates failures here (custom scripts may not have these tables).
        let _ = client.batch_execute(sql).await;
    }
    eprintln!("end.");
    if mode == VacuumBeforeRun::All {
        eprint!("starting vacuum pgbench_accounts...");
        client
            .batch_execute("vacuum analyze pgbench_accounts")
            .await
            .map_err(|e| sql_error("vacuum analyze pgbench_accounts", e))?;
        eprintln!("end.");
    }
    Ok(())
}

impl ServerSetup {
    /// Pod 0 of a spread run, once every pod has joined: the window starts again after the
    /// other pods' setup sessions (closed before they joined) have ended and flushed their
    /// commits, so the counters' delta is the run's alone.
    pub async fn restart_window(&mut self, target: &ConnSpec) {
        let others = format!("{}-{SHARE_ROLE}", target.application_name);
        let _ = self
            .probe
            .read_settled(&self.client, &others, Duration::from_secs(5))
            .await;
        self.counters_before = self.probe.read(&self.client).await.ok();
    }

    /// The counters after the run, as deltas from those read before it.
    pub async fn observe_after(
        &self,
        spec: &RunSpec,
        target: &ConnSpec,
        result: &RunResult,
    ) -> ServerObservations {
        let after = self
            .probe
            .read_settled(
                &self.client,
                &target.application_name,
                Duration::from_secs(5),
            )
            .await
            .ok();
        let counters = self
            .counters_before
            .zip(after)
            .map(|(before, after)| ServerCounters {
                xact_commit_delta: after.commits - before.commits,
                xact_rollback_delta: after.rollbacks - before.rollbacks,
                exact: self.probe.exact,
                connection_starts: if spec.connect_per_transaction {
                    result.reconnections
                } else {
                    spec.clients as u64
                },
            });
        ServerObservations {
            counters,
            statements: self.statements_window().await,
        }
    }

    async fn statements_window(&self) -> Option<Vec<StatementWindow>> {
        let before = self.statements_before.as_ref()?;
        let after = statement_window::read_totals(&self.client).await?;
        // Only the analytics queries: not the probes' own statements, nor anyone else's.
        let sent: Vec<String> = analytics::QUERIES
            .iter()
            .map(|(_, _, sql)| statement_window::comparable(sql))
            .collect();
        Some(
            statement_window::window(before, &after)
                .into_iter()
                .filter(|s| sent.contains(&statement_window::comparable(&s.query)))
                .collect(),
        )
    }
}
