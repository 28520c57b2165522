//! A minimal PostgreSQL wire-protocol connection for the measured path.
//!
//! tokio-postgres puts a channel and a task between the caller and the socket and ends every
//! query with its own Sync; the driver instead writes protocol messages straight into one buffer
//! and reads replies itself, so a transaction costs a write, a read and a share of one epoll wait.
//! Authentication covers trust, password, md5 and SCRAM-SHA-256; TLS as `sslmode` asks
//! (`stream.rs`).

use std::io;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use super::stats::FailureKind;
use super::stream::{open_stream, Stream, READ_CHUNK};
use crate::conn::ConnSpec;
use crate::tls::SslMode;

const MYSQL_DEADLOCK: u16 = 1213;
const MYSQL_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// ER_CHECKREAD, "Record has changed since last read": MariaDB's write conflict under
/// `innodb_snapshot_isolation` (on by default from 11.6).
const MYSQL_RECORD_CHANGED: u16 = 1020;

/// The MySQL errors after which a transaction is tried again: sysbench's
/// `--mysql-ignore-errors`, whose default this is.
pub const MYSQL_RETRIED_BY_DEFAULT: [u16; 3] = [
    MYSQL_DEADLOCK,
    MYSQL_RECORD_CHANGED,
    MYSQL_LOCK_WAIT_TIMEOUT,
];

/// pgbench's words for a script statement that starts a COPY.
const COPY_UNSUPPORTED: &str = "COPY is not supported in pgbench, aborting";

/// An error the server reported (`ErrorResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    pub severity: String,
    pub code: String,
    pub message: String,
    /// The fields libpq prints after the message at its default verbosity, in its order:
    /// DETAIL, HINT, QUERY (an internal query) and CONTEXT.
    pub details: Vec<(&'static str, String)>,
    /// Where in the statement (1-based, in characters) the error lies, if the server said.
    pub position: Option<u32>,
    /// The same within an internal query (the QUERY field), e.g. a PL/pgSQL statement.
    pub internal_position: Option<u32>,
    /// A MySQL/MariaDB server's error number (1213 deadlock, 1205 lock wait timeout); `code`
    /// then holds its SQLSTATE.
    pub mysql_errno: Option<u16>,
}

impl DbError {
    fn from_body(body: &ErrorResponseBody) -> DbError {
        let mut error = DbError {
            severity: String::new(),
            code: String::new(),
            message: String::new(),
            details: Vec::new(),
            position: None,
            internal_position: None,
            mysql_errno: None,
        };
        let mut fields = body.fields();
        while let Ok(Some(field)) = fields.next() {
            let value = String::from_utf8_lossy(field.value_bytes()).into_owned();
            match field.type_() {
                b'V' | b'S' if error.severity.is_empty() => error.severity = value,
                b'C' => error.code = value,
                b'M' => error.message = value,
                b'D' => error.details.push(("DETAIL", value)),
                b'H' => error.details.push(("HINT", value)),
                b'q' => error.details.push(("QUERY", value)),
                b'W' => error.details.push(("CONTEXT", value)),
                b'P' => error.position = value.parse().ok(),
                b'p' => error.internal_position = value.parse().ok(),
                _ => {}
            }
        }
        // The server sends the fields in no promised order; libpq prints them in this one.
        let rank = |label: &str| {
            ["DETAIL", "HINT", "QUERY", "CONTEXT"]
                .iter()
                .position(|l| *l == label)
        };
        error.details.sort_by_key(|(label, _)| rank(label));
        error
    }

    /// A MySQL/MariaDB ERR packet's number, SQLSTATE and message.
    pub fn from_mysql(number: u16, sqlstate: String, message: String) -> DbError {
        DbError {
            severity: "ERROR".to_string(),
            code: sqlstate,
            message,
            details: Vec::new(),
            position: None,
            internal_position: None,
            mysql_errno: Some(number),
        }
    }

    /// Serialization failure or deadlock (on MySQL also a lock wait timeout and a changed
    /// record, which sysbench treats alike): the failures counted and tried again instead of
    /// aborting. A run may choose other MySQL errors (`ErrorPolicy::retries`).
    pub fn is_retryable(&self) -> bool {
        match self.mysql_errno {
            Some(number) => MYSQL_RETRIED_BY_DEFAULT.contains(&number),
            None => self.code == "40001" || self.code == "40P01",
        }
    }

    /// How a retryable failure is counted: a lock wait timeout and a changed record count with
    /// serialization failures, as each is a conflict that a later try may not meet.
    pub fn failure_kind(&self) -> FailureKind {
        match self.mysql_errno {
            Some(MYSQL_DEADLOCK) => FailureKind::Deadlock,
            Some(MYSQL_LOCK_WAIT_TIMEOUT | MYSQL_RECORD_CHANGED) => FailureKind::Serialization,
            Some(_) => FailureKind::Other,
            None => FailureKind::of_sqlstate(&self.code),
        }
    }
}

impl DbError {
    /// libpq's PQerrorMessage at the default verbosity, without its final newline. `query` is
    /// the statement as sent: a position in it is shown as libpq's `LINE n:` line and caret;
    /// without it, as " at character N" after the message, as libpq does then.
    pub fn render(&self, query: Option<&str>) -> String {
        if let Some(number) = self.mysql_errno {
            // The mysql client's form.
            return format!("ERROR {number} ({}): {}", self.code, self.message);
        }
        let mut text = format!("{}:  {}", self.severity, self.message);
        let internal_query = self
            .details
            .iter()
            .find(|(label, _)| *label == "QUERY")
            .map(|(_, query)| query.as_str());
        let cursor = match (self.position, self.internal_position) {
            (Some(position), _) => match query {
                Some(query) => Some((query, position)),
                None => {
                    text.push_str(&format!(" at character {position}"));
                    None
                }
            },
            (None, Some(position)) => match internal_query {
                Some(query) => Some((query, position)),
                None => {
                    text.push_str(&format!(" at character {position}"));
                    None
                }
            },
            (None, None) => None,
        };
        text.push('\n');
        if let Some((query, position)) = cursor {
            text.push_str(&super::error_position::render(query, position as usize));
        }
        for (label, value) in &self.details {
            text.push_str(&format!("{label}:  {value}\n"));
        }
        text.pop();
        text
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(None))
    }
}

#[derive(Debug)]
pub enum ConnError {
    Io(io::Error),
    Server(DbError),
    Protocol(String),
    /// A statement whose reply the driver does not handle (pgbench's: COPY); the client aborts
    /// with this message alone, as pgbench does.
    Unsupported(&'static str),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            // The mysql client's form (number and SQLSTATE) for MySQL; libpq's message alone.
            ConnError::Server(e) if e.mysql_errno.is_some() => write!(f, "{}", e.render(None)),
            ConnError::Server(e) => write!(f, "{}", e.message),
            ConnError::Protocol(m) => write!(f, "{m}"),
            ConnError::Unsupported(m) => write!(f, "{m}"),
        }
    }
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        ConnError::Io(e)
    }
}

/// What came back for one Sync (or one simple Query): rows and the first error, if any.
#[derive(Debug, Default)]
pub struct Reply {
    pub rows: u64,
    pub error: Option<DbError>,
    /// Transaction status from ReadyForQuery: b'I' idle, b'T' in a block, b'E' failed block.
    pub transaction_status: u8,
    /// With capture on: each query's column names, row count and last row (text; None = NULL).
    pub results: Vec<QueryResult>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: u64,
    pub last_row: Option<Vec<Option<String>>>,
}

pub struct PgConn {
    stream: Stream,
    read_buf: BytesMut,
    write_buf: BytesMut,
    server_version: String,
    /// The socket failed or the server closed it: nothing more can be sent or read.
    lost: bool,
}

impl PgConn {
    pub async fn connect(spec: &ConnSpec) -> Result<PgConn, ConnError> {
        match PgConn::connect_once(spec, false).await {
            // sslmode=allow: TLS only when the server refused the plain connection.
            Err(ConnError::Server(_)) if spec.tls.mode == SslMode::Allow => {
                PgConn::connect_once(spec, true).await
            }
            other => other,
        }
    }

    async fn connect_once(spec: &ConnSpec, force_tls: bool) -> Result<PgConn, ConnError> {
        let timeout = spec.connect_timeout.unwrap_or(Duration::from_secs(30));
        let stream = tokio::time::timeout(timeout, open_stream(spec, force_tls))
            .await
            .map_err(|_| ConnError::Protocol("timeout expired".into()))??;
        let mut conn = PgConn {
            stream,
            read_buf: BytesMut::with_capacity(READ_CHUNK),
            write_buf: BytesMut::with_capacity(4096),
            server_version: String::new(),
            lost: false,
        };
        conn.startup(spec).await?;
        Ok(conn)
    }

    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    async fn startup(&mut self, spec: &ConnSpec) -> Result<(), ConnError> {
        let params = [
            ("user", spec.user.as_str()),
            ("database", spec.dbname.as_str()),
            ("application_name", spec.application_name.as_str()),
            ("client_encoding", "UTF8"),
        ];
        // libpq's `options` (PGOPTIONS): server settings for the session, e.g. `-c x=y`.
        let options = spec.options.as_deref().map(|options| ("options", options));
        frontend::startup_message(params.iter().copied().chain(options), &mut self.write_buf)?;
        self.flush().await?;
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            match self.next_message().await? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    let password = require_password(spec)?;
                    frontend::password_message(password.as_bytes(), &mut self.write_buf)?;
                    self.flush().await?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let password = require_password(spec)?;
                    let hash = md5_hash(spec.user.as_bytes(), password.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.write_buf)?;
                    self.flush().await?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut offers_scram = false;
                    while let Some(mechanism) = mechanisms.next()? {
                        offers_scram |= mechanism == sasl::SCRAM_SHA_256;
                    }
                    if !offers_scram {
                        return Err(ConnError::Protocol(
                            "server offers no supported SASL mechanism".into(),
                        ));
                    }
                    let password = require_password(spec)?;
                    let state = sasl::ScramSha256::new(
                        password.as_bytes(),
                        sasl::ChannelBinding::unsupported(),
                    );
                    frontend::sasl_initial_response(
                        sasl::SCRAM_SHA_256,
                        state.message(),
                        &mut self.write_buf,
                    )?;
                    scram = Some(state);
                    self.flush().await?;
                }
                Message::AuthenticationSaslContinue(body) => {
                    let state = scram.as_mut().ok_or_else(unexpected)?;
                    state.update(body.data())?;
                    frontend::sasl_response(state.message(), &mut self.write_buf)?;
                    self.flush().await?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    scram.as_mut().ok_or_else(unexpected)?.finish(body.data())?;
                }
                Message::ParameterStatus(body) => {
                    if body.name()? == "server_version" {
                        self.server_version = body.value()?.to_string();
                    }
                }
                Message::BackendKeyData(_) | Message::NoticeResponse(_) => {}
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(body) => {
                    return Err(ConnError::Server(DbError::from_body(&body)))
                }
                _ => {
                    return Err(ConnError::Protocol(
                        "unsupported authentication method requested by the server".into(),
                    ))
                }
            }
        }
    }

    /// Waits for the next complete message, reading from the socket only when the buffer holds
    /// none.
    async fn next_message(&mut self) -> Result<Message, ConnError> {
        loop {
            if let Some(message) = Message::parse(&mut self.read_buf)? {
                return Ok(message);
            }
            if let Err(e) = self.fill().await {
                self.lost = true;
                return Err(e);
            }
        }
    }

    /// Whether the connection is gone (the server ended the session, or the socket failed).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The socket leaves the runtime's reactor: blocking reads and writes for a thread's only
    /// client (`Stream::go_solo`).
    pub fn go_solo(&mut self) -> Result<(), ConnError> {
        self.stream.go_solo().map_err(ConnError::Io)
    }

    async fn fill(&mut self) -> Result<(), ConnError> {
        self.stream.fill(&mut self.read_buf).await
    }

    pub async fn flush(&mut self) -> Result<(), ConnError> {
        if let Err(e) = self.stream.write_all(&self.write_buf).await {
            self.lost = true;
            return Err(e.into());
        }
        self.write_buf.clear();
        Ok(())
    }

    pub fn queue_simple_query(&mut self, sql: &str) -> Result<(), ConnError> {
        frontend::query(sql, &mut self.write_buf)?;
        Ok(())
    }

    pub fn queue_parse(&mut self, statement: &str, sql: &str) -> Result<(), ConnError> {
        frontend::parse(statement, sql, std::iter::empty(), &mut self.write_buf)?;
        Ok(())
    }

    pub fn queue_describe_portal(&mut self) -> Result<(), ConnError> {
        frontend::describe(b'P', "", &mut self.write_buf)?;
        Ok(())
    }

    /// Bind parameters (as text; `None` is SQL NULL) to the unnamed portal, asking for the
    /// results in text or in binary.
    pub fn queue_bind<'p, I>(
        &mut self,
        statement: &str,
        params: I,
        binary_results: bool,
    ) -> Result<(), ConnError>
    where
        I: IntoIterator<Item = Option<&'p [u8]>>,
    {
        frontend::bind(
            "",
            statement,
            std::iter::empty(),
            params,
            |param, buf| match param {
                Some(bytes) => {
                    buf.put_slice(bytes);
                    Ok(IsNull::No)
                }
                None => Ok(IsNull::Yes),
            },
            // One format code applies to every column.
            binary_results.then_some(1),
            &mut self.write_buf,
        )
        .map_err(|_| ConnError::Protocol("could not encode parameters".into()))?;
        Ok(())
    }

    pub fn queue_execute(&mut self) -> Result<(), ConnError> {
        frontend::execute("", 0, &mut self.write_buf)?;
        Ok(())
    }

    pub fn queue_sync(&mut self) {
        frontend::sync(&mut self.write_buf);
    }

    /// Sends what is queued and reads until ReadyForQuery; `capture` keeps result rows.
    pub async fn round_trip(&mut self, capture: bool) -> Result<Reply, ConnError> {
        self.flush().await?;
        self.read_reply(capture).await
    }

    pub async fn read_reply(&mut self, capture: bool) -> Result<Reply, ConnError> {
        let mut reply = Reply::default();
        // The query whose rows are arriving, until its CommandComplete.
        let mut current: Option<QueryResult> = None;
        // pgbench refuses COPY in a script. A COPY FROM STDIN waits for data that never comes:
        // it is failed at once and the client, which aborts on this error, drops the connection
        // (the Sync already sent was swallowed by copy mode, so no ReadyForQuery would follow).
        let mut copy_seen = false;
        loop {
            match self.next_message().await? {
                Message::CopyInResponse(_) => {
                    frontend::copy_fail(COPY_UNSUPPORTED, &mut self.write_buf)?;
                    self.flush().await?;
                    return Err(ConnError::Unsupported(COPY_UNSUPPORTED));
                }
                Message::CopyOutResponse(_) => copy_seen = true,
                Message::DataRow(row) => {
                    reply.rows += 1;
                    if capture {
                        capture_row(current.get_or_insert_with(Default::default), &row)?;
                    }
                }
                Message::RowDescription(description) if capture => {
                    let mut fields = description.fields();
                    let mut columns = Vec::new();
                    while let Some(field) = fields.next()? {
                        columns.push(field.name().to_string());
                    }
                    current = Some(QueryResult {
                        columns,
                        ..Default::default()
                    });
                }
                Message::CommandComplete(_) | Message::EmptyQueryResponse if capture => {
                    reply.results.push(current.take().unwrap_or_default());
                }
                Message::ErrorResponse(body) if reply.error.is_none() => {
                    reply.error = Some(DbError::from_body(&body));
                }
                Message::ReadyForQuery(_) if copy_seen => {
                    return Err(ConnError::Unsupported(COPY_UNSUPPORTED));
                }
                Message::ReadyForQuery(body) => {
                    reply.transaction_status = body.status();
                    return Ok(reply);
                }
                _ => {}
            }
        }
    }

    /// Runs a statement with the simple protocol and fails on a server error.
    pub async fn execute_simple(&mut self, sql: &str) -> Result<Reply, ConnError> {
        self.queue_simple_query(sql)?;
        let reply = self.round_trip(false).await?;
        match reply.error {
            Some(error) => Err(ConnError::Server(error)),
            None => Ok(reply),
        }
    }

    pub async fn close(mut self) {
        frontend::terminate(&mut self.write_buf);
        let _ = self.flush().await;
    }
}

fn capture_row(
    result: &mut QueryResult,
    row: &postgres_protocol::message::backend::DataRowBody,
) -> Result<(), ConnError> {
    let buffer = row.buffer();
    let mut ranges = row.ranges();
    let mut values = Vec::new();
    while let Some(range) = ranges.next()? {
        values.push(range.map(|r| String::from_utf8_lossy(&buffer[r]).into_owned()));
    }
    result.rows += 1;
    result.last_row = Some(values);
    Ok(())
}

fn unexpected() -> ConnError {
    ConnError::Protocol("unexpected authentication message".into())
}

fn require_password(spec: &ConnSpec) -> Result<&str, ConnError> {
    spec.password
        .as_deref()
        .ok_or_else(|| ConnError::Protocol("fe_sendauth: no password supplied".into()))
}
