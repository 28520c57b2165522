//! One TPROC-H session on either engine, as the query streams, the refresh functions and the
//! checks use it: statements sent as text (HammerDB sends its queries as literals over the
//! simple/text protocol), every row kept as text. An enum, so each call is a plain match.

use std::time::Duration;

use tokio_postgres::{Client, SimpleQueryMessage};

use stampede_base::error::Failure;
use stampede_conn::{ConnSpec, Endpoint, MysqlSpec};
use stampede_control::mysql::sql_failure;
use stampede_control::postgres::{connect_quietly, sql_error};
use stampede_wire::mysql::MyConn;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Which dialect the engine speaks: HammerDB's texts and names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Mariadb,
}

impl Dialect {
    pub fn of(endpoint: &Endpoint) -> Dialect {
        match endpoint {
            Endpoint::Postgres(_) => Dialect::Postgres,
            Endpoint::Mysql(_) => Dialect::Mariadb,
        }
    }

    /// A table's name as HammerDB created it: lower case on PostgreSQL (unquoted), upper case
    /// on MariaDB (whose table names are case-sensitive on Linux).
    pub fn table(self, name: &str) -> String {
        match self {
            Dialect::Postgres => name.to_string(),
            Dialect::Mariadb => name.to_uppercase(),
        }
    }
}

pub enum Session {
    Postgres(Client),
    Mysql(MyConn),
}

/// A query's rows as text (NULL as None), or the server's error as one line.
pub type QueryResult = Result<Vec<Vec<Option<String>>>, String>;

impl Session {
    pub async fn connect(endpoint: &Endpoint) -> Result<Session, Failure> {
        match endpoint {
            Endpoint::Postgres(conn) => Ok(Session::Postgres(connect_quietly(conn).await?)),
            Endpoint::Mysql(spec) => Ok(Session::Mysql(connect_mysql(spec).await?)),
        }
    }

    /// Runs one statement (PostgreSQL: several, `;`-separated); a server error fails with it.
    pub async fn execute(&mut self, sql: &str) -> Result<(), Failure> {
        match self {
            Session::Postgres(client) => client
                .batch_execute(sql)
                .await
                .map_err(|e| sql_error(sql, e)),
            Session::Mysql(conn) => match conn.query_all(sql).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(sql_failure(sql, &error)),
                Err(error) => Err(Failure::run(format!("lost the connection: {error}"))),
            },
        }
    }

    /// Runs a query keeping its rows; a server error is handed back, a lost connection fails.
    pub async fn query(&mut self, sql: &str) -> Result<QueryResult, Failure> {
        match self {
            Session::Postgres(client) => Ok(match client.simple_query(sql).await {
                Ok(messages) => Ok(messages
                    .iter()
                    .filter_map(|m| match m {
                        SimpleQueryMessage::Row(row) => Some(
                            (0..row.len())
                                .map(|i| row.get(i).map(str::to_string))
                                .collect(),
                        ),
                        _ => None,
                    })
                    .collect()),
                Err(e) if e.as_db_error().is_some() => Err(sql_error(sql, e).into_message()),
                Err(e) => return Err(sql_error(sql, e)),
            }),
            Session::Mysql(conn) => match conn.query_all(sql).await {
                Ok(Ok(rows)) => Ok(Ok(rows.rows)),
                Ok(Err(error)) => Ok(Err(sql_failure(sql, &error).into_message())),
                Err(error) => Err(Failure::run(format!("lost the connection: {error}"))),
            },
        }
    }

    /// The first column of the first row of a query that must succeed, parsed.
    pub async fn value<T: std::str::FromStr>(&mut self, sql: &str) -> Result<Option<T>, Failure> {
        let rows = self.query(sql).await?.map_err(Failure::run)?;
        Ok(rows
            .first()
            .and_then(|row| row.first().cloned().flatten())
            .and_then(|text| text.parse().ok()))
    }
}

/// A MySQL/MariaDB connection for control work; a refusal names the server.
pub async fn connect_mysql(spec: &MysqlSpec) -> Result<MyConn, Failure> {
    MyConn::connect(spec, CONNECT_TIMEOUT).await.map_err(|e| {
        Failure::input(format!(
            "could not connect to MySQL/MariaDB at {}: {e}",
            spec.describe()
        ))
    })
}

/// The PostgreSQL connection of an endpoint, if it is one.
pub fn postgres(endpoint: &Endpoint) -> Option<&ConnSpec> {
    match endpoint {
        Endpoint::Postgres(conn) => Some(conn),
        Endpoint::Mysql(_) => None,
    }
}
