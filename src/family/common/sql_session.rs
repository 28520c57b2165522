//! A session on either engine for a family's own statements sent as text (HammerDB's TPROC-H
//! queries, the Insert Benchmark's statements): every row kept as text, a server error handed
//! back as one line. An enum, so each call is a plain match.

use std::time::Duration;

use tokio_postgres::{Client, SimpleQueryMessage};

use stampede_base::error::Failure;
use stampede_conn::{Endpoint, MysqlSpec};
use stampede_control::mysql::sql_failure;
use stampede_control::postgres::{connect_quietly, sql_error};
use stampede_wire::mysql::MyConn;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a statement did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Rows it returned.
    pub returned: u64,
    /// Rows it inserted, updated or deleted (PostgreSQL: its command tag's count).
    pub changed: u64,
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

    /// Runs one statement counting what it did (rows returned, rows changed) without keeping
    /// rows; a server error is handed back as one line, a lost connection fails.
    pub async fn counted(&mut self, sql: &str) -> Result<Result<Counted, String>, Failure> {
        match self {
            Session::Postgres(client) => match client.simple_query(sql).await {
                Ok(messages) => {
                    let mut counted = Counted::default();
                    for message in &messages {
                        match message {
                            SimpleQueryMessage::Row(_) => counted.returned += 1,
                            SimpleQueryMessage::CommandComplete(rows) => counted.changed = *rows,
                            _ => {}
                        }
                    }
                    Ok(Ok(counted))
                }
                Err(e) if e.as_db_error().is_some() => {
                    Ok(Err(sql_error(&shown(sql), e).into_message()))
                }
                Err(e) => Err(sql_error(&shown(sql), e)),
            },
            Session::Mysql(conn) => match conn.query(sql, false).await {
                Ok(reply) => Ok(match reply.error {
                    Some(error) => Err(sql_failure(sql, &error).into_message()),
                    None => Ok(Counted {
                        returned: reply.rows,
                        changed: reply.affected,
                    }),
                }),
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

/// The start of a statement, for an error message (an INSERT can be megabytes).
fn shown(sql: &str) -> String {
    sql.chars().take(200).collect()
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

/// PostgreSQL's invalid_catalog_name: the database named does not exist.
const NO_SUCH_DATABASE: &str = "3D000";
/// MySQL's ER_BAD_DB_ERROR: unknown database.
const MYSQL_NO_SUCH_DATABASE: u16 = 1049;

/// Creates the endpoint's database when the server says it does not exist, as HammerDB's
/// builds create theirs, and says so on `note`: a build on a fresh server needs no
/// `createdb` first. Any other failure to connect is left to the caller's own connection.
pub async fn create_database_if_missing(
    endpoint: &Endpoint,
    note: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    let (name, created) = match endpoint {
        Endpoint::Postgres(conn) => (conn.dbname.as_str(), create_postgres(conn).await?),
        Endpoint::Mysql(spec) => (spec.database.as_str(), create_mysql(spec).await?),
    };
    if created {
        note(&format!(
            "created database \"{name}\" (it did not exist on the server)"
        ));
    }
    Ok(())
}

async fn create_postgres(conn: &stampede_conn::ConnSpec) -> Result<bool, Failure> {
    let missing = match conn.connect_control().await {
        Ok(_) => false,
        Err(e) => e
            .as_db_error()
            .is_some_and(|e| e.code().code() == NO_SUCH_DATABASE),
    };
    if !missing {
        return Ok(false);
    }
    let maintenance = stampede_conn::ConnSpec {
        dbname: "postgres".into(),
        ..conn.clone()
    };
    let client = connect_quietly(&maintenance).await?;
    let statement = format!("CREATE DATABASE \"{}\"", conn.dbname.replace('"', "\"\""));
    client.batch_execute(&statement).await.map_err(|e| {
        sql_error(&statement, e).map_message(|m| {
            format!("{m} (the database \"{}\" does not exist and could not be created: create it, or grant CREATEDB)", conn.dbname)
        })
    })?;
    Ok(true)
}

async fn create_mysql(spec: &MysqlSpec) -> Result<bool, Failure> {
    let missing = match MyConn::connect(spec, CONNECT_TIMEOUT).await {
        Ok(_) => false,
        Err(stampede_wire::reply::ConnError::Server(e)) => {
            e.mysql_errno == Some(MYSQL_NO_SUCH_DATABASE)
        }
        Err(_) => false,
    };
    if !missing {
        return Ok(false);
    }
    let mut conn = connect_mysql(&spec.with_database("")).await?;
    let statement = format!("CREATE DATABASE `{}`", spec.database.replace('`', "``"));
    match conn.query_all(&statement).await {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(error)) => Err(sql_failure(&statement, &error)),
        Err(error) => Err(Failure::run(format!("lost the connection: {error}"))),
    }
}
