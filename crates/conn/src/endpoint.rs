//! Which engine a server is and where to reach it: what the lab hands a workload, so that a
//! family that runs on both engines picks its statements and loader by it, and one that runs
//! on PostgreSQL alone says so instead of connecting.

use crate::mysql::MysqlSpec;
use crate::postgres::ConnSpec;
use stampede_base::error::Failure;

/// A database engine stampede drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    Postgres,
    /// MariaDB or MySQL: one client protocol and one SQL dialect for our purposes.
    Mysql,
}

impl Engine {
    /// As messages and reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Postgres => "PostgreSQL",
            Engine::Mysql => "MariaDB/MySQL",
        }
    }

    /// The key that declares a lab target of this engine.
    pub fn spec_key(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Mysql => "mariadb",
        }
    }
}

/// A database on a server of either engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Postgres(ConnSpec),
    Mysql(MysqlSpec),
}

impl Endpoint {
    pub fn engine(&self) -> Engine {
        match self {
            Endpoint::Postgres(_) => Engine::Postgres,
            Endpoint::Mysql(_) => Engine::Mysql,
        }
    }

    /// The PostgreSQL connection, or why `what` cannot use this server.
    pub fn postgres(&self, what: &str) -> Result<&ConnSpec, Failure> {
        match self {
            Endpoint::Postgres(conn) => Ok(conn),
            Endpoint::Mysql(spec) => Err(Failure::input(format!(
                "{what} runs on PostgreSQL only, not on the MariaDB/MySQL server at {}",
                spec.describe()
            ))),
        }
    }

    pub fn database(&self) -> &str {
        match self {
            Endpoint::Postgres(conn) => &conn.dbname,
            Endpoint::Mysql(spec) => &spec.database,
        }
    }

    /// The same server, another database.
    pub fn with_database(&self, database: &str) -> Endpoint {
        match self {
            Endpoint::Postgres(conn) => Endpoint::Postgres(ConnSpec {
                dbname: database.to_string(),
                ..conn.clone()
            }),
            Endpoint::Mysql(spec) => Endpoint::Mysql(spec.with_database(database)),
        }
    }
}
