//! Where sysbench's tables live: PostgreSQL (`--db-driver pgsql`, the default) or
//! MySQL/MariaDB (`--db-driver mysql`), with sysbench's own options for each.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::oltp_options::OltpOptions;
use super::schema::mysql::MysqlPreparer;
use super::schema::postgres::Preparer;
use super::schema::{self, require_tables};
use super::subcommands::SysbenchArgs;
use crate::server::resolve_target;
use stampede_base::error::Failure;
use stampede_conn::control_runtime;
use stampede_conn::Endpoint;
use stampede_conn::MysqlSpec;
use stampede_conn::{ConnFlags, ConnSpec};
use stampede_control::mysql::ControlSession;

#[derive(Debug, Clone)]
pub enum SysbenchTarget {
    Postgres(ConnSpec),
    Mysql {
        spec: MysqlSpec,
        storage_engine: String,
    },
}

impl SysbenchTarget {
    pub fn from_args(args: &SysbenchArgs) -> Result<SysbenchTarget, Failure> {
        match args.db_driver.as_str() {
            "pgsql" => postgres(args).map(SysbenchTarget::Postgres),
            "mysql" => Ok(SysbenchTarget::Mysql {
                spec: MysqlSpec {
                    socket: args.mysql_socket.clone(),
                    host: args.mysql_host.clone(),
                    port: args.mysql_port,
                    user: args.mysql_user.clone(),
                    password: args.mysql_password.clone(),
                    database: args.mysql_db.clone(),
                },
                storage_engine: args.mysql_storage_engine.clone(),
            }),
            other => Err(Failure::input(format!(
                "--db-driver {other} is not supported; use pgsql (PostgreSQL) or mysql (MySQL, MariaDB)"
            ))),
        }
    }

    /// The target of a lab run: sysbench's default storage engine on MySQL.
    pub fn of(endpoint: &Endpoint) -> SysbenchTarget {
        match endpoint {
            Endpoint::Postgres(conn) => SysbenchTarget::Postgres(conn.clone()),
            Endpoint::Mysql(spec) => SysbenchTarget::Mysql {
                spec: spec.clone(),
                storage_engine: "innodb".into(),
            },
        }
    }

    /// Where a run plan's clients connect.
    pub fn endpoint(&self) -> Endpoint {
        match self {
            SysbenchTarget::Postgres(conn) => Endpoint::Postgres(conn.clone()),
            SysbenchTarget::Mysql { spec, .. } => Endpoint::Mysql(spec.clone()),
        }
    }

    /// The sbtest tables that exist, by number.
    pub fn existing_tables(&self) -> Result<Vec<u32>, Failure> {
        match self {
            SysbenchTarget::Postgres(conn) => control_runtime().block_on(async {
                let client = schema::postgres::connect(conn)
                    .await
                    .map_err(Failure::into_input)?;
                schema::postgres::existing_tables(&client).await
            }),
            SysbenchTarget::Mysql { spec, .. } => {
                schema::mysql::existing_tables(&mut ControlSession::connect(spec)?)
            }
        }
    }

    /// Refuses to run before prepare: every table the test reads must exist.
    pub fn check_prepared(&self, tables: u32) -> Result<(), Failure> {
        let existing = self.existing_tables()?;
        require_tables(&existing, tables)
    }

    /// Creates and loads the tables, `connections` at a time.
    pub fn prepare(
        &self,
        options: &OltpOptions,
        connections: usize,
        seed: u64,
        announce: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let rows_loaded = Arc::new(AtomicU64::new(0));
        match self {
            SysbenchTarget::Postgres(conn) => {
                let preparer = Preparer {
                    conn: conn.clone(),
                    options: options.clone(),
                    connections,
                    seed,
                    rows_loaded,
                };
                control_runtime().block_on(preparer.prepare(announce))
            }
            SysbenchTarget::Mysql {
                spec,
                storage_engine,
            } => MysqlPreparer {
                spec: spec.clone(),
                options: options.clone(),
                storage_engine: storage_engine.clone(),
                connections,
                seed,
                rows_loaded,
            }
            .prepare(announce),
        }
    }

    /// Callaghan's postwrite step; says what it did.
    pub fn postwrite(&self, tables: u32) -> Result<String, Failure> {
        match self {
            SysbenchTarget::Postgres(conn) => control_runtime().block_on(async {
                let client = schema::postgres::connect(conn)
                    .await
                    .map_err(Failure::into_input)?;
                let vacuum = schema::postgres::postwrite(&client, tables).await?;
                Ok(format!("{vacuum}, CHECKPOINT"))
            }),
            SysbenchTarget::Mysql { spec, .. } => {
                let done = schema::mysql::postwrite(&mut ControlSession::connect(spec)?, tables)?;
                Ok(done.to_string())
            }
        }
    }

    /// bulk_insert's tables, one per thread.
    pub fn create_bulk_insert_tables(&self, threads: u32) -> Result<Vec<String>, Failure> {
        match self {
            SysbenchTarget::Postgres(conn) => control_runtime().block_on(async {
                let client = schema::postgres::connect(conn)
                    .await
                    .map_err(Failure::into_input)?;
                schema::postgres::create_bulk_insert_tables(&client, threads).await
            }),
            SysbenchTarget::Mysql { spec, .. } => schema::mysql::create_bulk_insert_tables(
                &mut ControlSession::connect(spec)?,
                threads,
            ),
        }
    }

    /// Reads each table whole, by its primary key and by its rows, as sysbench's prewarm does
    /// (MySQL only: the caller refuses PostgreSQL as sysbench does).
    pub fn prewarm(
        &self,
        tables: u32,
        table_size: u32,
        announce: &dyn Fn(String),
    ) -> Result<(), Failure> {
        let SysbenchTarget::Mysql { spec, .. } = self else {
            return Err(Failure::input("prewarm is currently MySQL only"));
        };
        let mut session = ControlSession::connect(spec)?;
        session.execute("SET tmp_table_size=2*1024*1024*1024")?;
        session.execute("SET max_heap_table_size=2*1024*1024*1024")?;
        for table in (1..=tables).map(|i| format!("sbtest{i}")) {
            announce(format!("Prewarming table {table}"));
            session.rows(&format!("ANALYZE TABLE {table}"))?;
            session.rows(&format!(
                "SELECT AVG(id) FROM (SELECT * FROM {table} FORCE KEY (PRIMARY) LIMIT {table_size}) t"
            ))?;
            session.rows(&format!(
                "SELECT COUNT(*) FROM (SELECT * FROM {table} WHERE k LIKE '%0%' LIMIT {table_size}) t"
            ))?;
        }
        Ok(())
    }

    /// Drops the tables (and any further sbtest tables).
    pub fn cleanup(&self, tables: u32) -> Result<Vec<String>, Failure> {
        match self {
            SysbenchTarget::Postgres(conn) => control_runtime().block_on(async {
                let client = schema::postgres::connect(conn)
                    .await
                    .map_err(Failure::into_input)?;
                schema::postgres::cleanup(&client, tables).await
            }),
            SysbenchTarget::Mysql { spec, .. } => {
                schema::mysql::cleanup(&mut ControlSession::connect(spec)?, tables)
            }
        }
    }
}

fn postgres(args: &SysbenchArgs) -> Result<ConnSpec, Failure> {
    let mut conn = resolve_target(&ConnFlags {
        host: args.pgsql_host.clone(),
        port: args.pgsql_port.clone(),
        user: args.pgsql_user.clone(),
        dbname: args.pgsql_db.clone(),
    })?;
    if args.pgsql_password.is_some() {
        conn.password = args.pgsql_password.clone();
    }
    Ok(conn)
}
