//! Control-plane SQL against a target (setup, loading checks, probes): one short connection
//! per call on the shared control runtime, errors as one line. Never on the measured path.

use stampede_base::error::Failure;
use stampede_conn::ConnSpec;

/// Control-plane SQL in a session of its own, closed (Terminate sent) before returning.
fn with_client<T>(
    conn: &ConnSpec,
    work: impl for<'c> FnOnce(
        &'c tokio_postgres::Client,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + 'c>,
    >,
) -> Result<T, Failure> {
    stampede_conn::control_runtime().block_on(async {
        let (client, connection) = conn
            .connect_control()
            .await
            .map_err(|e| super::connection_error(conn, e))?;
        let driver = tokio::spawn(connection);
        let result = work(&client).await.map_err(|e| {
            let text = match e.as_db_error() {
                Some(db) => format!("{}: {}", db.severity(), db.message()),
                None => e.to_string(),
            };
            Failure::run(text).caused_by(e)
        });
        drop(client);
        let _ = driver.await;
        result
    })
}

pub fn sql(conn: &ConnSpec, statement: &str) -> Result<(), Failure> {
    let owned = statement.to_string();
    with_client(conn, move |c| {
        Box::pin(async move { c.batch_execute(&owned).await })
    })
    .map_err(|e| e.map_message(|text| format!("{statement}: {text}")))
}

/// Rows as text, whatever the columns' types (the simple protocol sends every value as text).
pub fn query_rows(conn: &ConnSpec, query: &str) -> Result<Vec<Vec<Option<String>>>, Failure> {
    Ok(named_rows(conn, query)?
        .into_iter()
        .map(|row| row.into_iter().map(|(_, value)| value).collect())
        .collect())
}

pub fn query_string(conn: &ConnSpec, query: &str) -> Result<String, Failure> {
    let rows = query_rows(conn, query)?;
    Ok(rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_default())
}

/// A row as (column name, value as text).
pub type NamedRow = Vec<(String, Option<String>)>;

/// Rows of a simple-protocol query (any column types, as text) with their column names, for
/// views whose columns vary between major versions. Several statements may be given; the rows
/// of all of them are returned.
pub fn named_rows(conn: &ConnSpec, query: &str) -> Result<Vec<NamedRow>, Failure> {
    let query = query.to_string();
    with_client(conn, move |c| {
        Box::pin(async move {
            let messages = c.simple_query(&query).await?;
            Ok(messages
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                        row.columns()
                            .iter()
                            .enumerate()
                            .map(|(i, column)| {
                                (column.name().to_string(), row.get(i).map(str::to_string))
                            })
                            .collect(),
                    ),
                    _ => None,
                })
                .collect())
        })
    })
}

/// `server_version_num`, e.g. 150018.
pub fn server_version_num(conn: &ConnSpec) -> Result<i64, Failure> {
    query_string(conn, "SHOW server_version_num")?
        .parse()
        .map_err(|e| Failure::run(format!("server_version_num: {e}")))
}
