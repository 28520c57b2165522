//! A minimal PostgreSQL wire-protocol connection for the measured path.
//!
//! tokio-postgres puts a channel and a task between the caller and the socket and ends every
//! query with its own Sync; the driver instead writes protocol messages straight into one buffer
//! and reads replies itself, so a transaction costs a write, a read and a share of one epoll wait.
//! Authentication covers trust, password, md5 and SCRAM-SHA-256; TLS as `sslmode` asks
//! (`stream.rs`).

use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use crate::cancel::{CancelToken, PostgresCancel};
use crate::reply::{ConnError, DbError, QueryResult, Reply};
use crate::statement::{
    message_too_long, Progress, StatementReply, COPY_UNSUPPORTED, MAX_MESSAGE_BYTES,
};
use crate::stream::{open_stream, Stream, Waiting, READ_CHUNK};
use stampede_conn::hosts::{ServerState, SessionAttrs, SERVER_STATE_QUERY};
use stampede_conn::tls::SslMode;
use stampede_conn::ConnSpec;

impl DbError {
    /// A PostgreSQL `ErrorResponse`'s fields.
    pub(crate) fn from_body(body: &ErrorResponseBody) -> DbError {
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
}

pub struct PgConn {
    stream: Stream,
    read_buf: BytesMut,
    write_buf: BytesMut,
    server_version: String,
    /// The socket failed or the server closed it: nothing more can be sent or read.
    lost: bool,
    /// The backend's key, from its start-up: what cancels its running query.
    /// Boxed: a spec is large, and it is read once per run at most.
    cancel: Option<Box<PostgresCancel>>,
}

impl PgConn {
    /// A connection to the first host of `spec`'s list that answers and is the kind of server
    /// `target_session_attrs` asks for, as libpq goes through its hosts.
    pub async fn connect(spec: &ConnSpec) -> Result<PgConn, ConnError> {
        if !spec.has_failover() {
            return PgConn::connect_to_host(spec).await;
        }
        let mut reasons = Vec::new();
        for attrs in spec.failover.target_session_attrs.passes() {
            for candidate in spec.candidates() {
                match PgConn::connect_as(&candidate, attrs).await {
                    Ok(conn) => return Ok(conn),
                    Err(reason) => reasons.push(format!(
                        "connection to server ({candidate}) failed: {reason}"
                    )),
                }
            }
        }
        Err(ConnError::Protocol(reasons.join("\n")))
    }

    /// One host, its server's state checked when `attrs` asks.
    async fn connect_as(spec: &ConnSpec, attrs: SessionAttrs) -> Result<PgConn, ConnError> {
        let mut conn = PgConn::connect_to_host(spec).await?;
        if !attrs.needs_server_state() {
            return Ok(conn);
        }
        let state = conn.server_state().await?;
        match attrs.rejects(state) {
            None => Ok(conn),
            Some(reason) => {
                conn.close().await;
                Err(ConnError::Protocol(reason.to_string()))
            }
        }
    }

    async fn server_state(&mut self) -> Result<ServerState, ConnError> {
        let reply = self.execute_simple_captured(SERVER_STATE_QUERY).await?;
        let row = reply
            .results
            .first()
            .and_then(|result| result.last_row.clone())
            .unwrap_or_default();
        match row.as_slice() {
            [Some(in_recovery), Some(read_only)] => {
                Ok(ServerState::from_columns(in_recovery, read_only))
            }
            _ => Err(ConnError::Protocol(
                "the server did not say whether it is a standby".into(),
            )),
        }
    }

    /// A connection to `spec`'s one host.
    async fn connect_to_host(spec: &ConnSpec) -> Result<PgConn, ConnError> {
        match PgConn::connect_once(spec, false).await {
            // sslmode=allow: TLS only when the server refused the plain connection.
            Err(ConnError::Server(_)) if spec.tls.mode == SslMode::Allow => {
                PgConn::connect_once(spec, true).await
            }
            other => other,
        }
    }

    /// One attempt, bounded as a whole (socket, TLS and start-up) by `connect_timeout` as
    /// libpq's is: a server that accepts the socket and never answers must not hold a client.
    async fn connect_once(spec: &ConnSpec, force_tls: bool) -> Result<PgConn, ConnError> {
        let timeout = spec.connect_timeout.unwrap_or(Duration::from_secs(30));
        tokio::time::timeout(timeout, PgConn::connect_unbounded(spec, force_tls))
            .await
            .map_err(|_| ConnError::Protocol("timeout expired".into()))?
    }

    async fn connect_unbounded(spec: &ConnSpec, force_tls: bool) -> Result<PgConn, ConnError> {
        let stream = open_stream(spec, force_tls).await?;
        let mut conn = PgConn {
            stream,
            read_buf: BytesMut::with_capacity(READ_CHUNK),
            write_buf: BytesMut::with_capacity(4096),
            server_version: String::new(),
            lost: false,
            cancel: None,
        };
        conn.startup(spec).await?;
        Ok(conn)
    }

    /// What cancels this connection's running query from elsewhere.
    pub fn cancel_token(&self) -> Option<CancelToken> {
        self.cancel.as_deref().cloned().map(CancelToken::Postgres)
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
                Message::BackendKeyData(key) => {
                    self.cancel = Some(Box::new(PostgresCancel {
                        server: spec.clone(),
                        process_id: key.process_id(),
                        secret_key: key.secret_key(),
                    }))
                }
                Message::NoticeResponse(_) => {}
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
            if let Some(message) = parse_message(&mut self.read_buf)? {
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

    /// The socket leaves the runtime's reactor to wait as `waiting` says
    /// (`Stream::leave_reactor`).
    pub fn leave_reactor(&mut self, waiting: Waiting) -> Result<(), ConnError> {
        self.stream.leave_reactor(waiting).map_err(ConnError::Io)
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

    /// Closes a prepared statement, so that its name can be parsed again with another text.
    pub fn queue_close_statement(&mut self, statement: &str) -> Result<(), ConnError> {
        frontend::close(b'S', statement, &mut self.write_buf)?;
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
        self.assemble(ReplyAssembler::new(capture)).await
    }

    /// Reads one statement's reply into `reply` (emptied first), rows kept as sent: for
    /// scripts that read what they asked for (sysbench's Lua API).
    pub async fn read_statement_reply(
        &mut self,
        reply: &mut StatementReply,
    ) -> Result<(), ConnError> {
        reply.clear();
        loop {
            match reply.take_messages(&mut self.read_buf)? {
                Progress::More => {
                    if let Err(e) = self.fill().await {
                        self.lost = true;
                        return Err(e);
                    }
                }
                Progress::Done => return Ok(()),
                Progress::CopyIn => {
                    frontend::copy_fail(COPY_UNSUPPORTED, &mut self.write_buf)?;
                    self.flush().await?;
                    return Err(ConnError::Unsupported(COPY_UNSUPPORTED));
                }
            }
        }
    }

    async fn assemble(&mut self, mut assembler: ReplyAssembler) -> Result<Reply, ConnError> {
        loop {
            let message = self.next_message().await?;
            match assembler.accept(message)? {
                Step::More => {}
                Step::Done(reply) => return Ok(reply),
                Step::CopyIn => {
                    frontend::copy_fail(COPY_UNSUPPORTED, &mut self.write_buf)?;
                    self.flush().await?;
                    return Err(ConnError::Unsupported(COPY_UNSUPPORTED));
                }
            }
        }
    }

    /// Runs a statement with the simple protocol and fails on a server error.
    pub async fn execute_simple(&mut self, sql: &str) -> Result<Reply, ConnError> {
        self.execute_simple_reply(sql, false).await
    }

    /// As `execute_simple`, with the rows' values kept.
    async fn execute_simple_captured(&mut self, sql: &str) -> Result<Reply, ConnError> {
        self.execute_simple_reply(sql, true).await
    }

    async fn execute_simple_reply(&mut self, sql: &str, capture: bool) -> Result<Reply, ConnError> {
        self.queue_simple_query(sql)?;
        let reply = self.round_trip(capture).await?;
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

/// What one more message means for the reply being read.
enum Step {
    More,
    Done(Reply),
    /// A COPY FROM STDIN began: the caller fails it (pgbench refuses COPY in a script).
    CopyIn,
}

/// A reply put together from the server's messages, up to its ReadyForQuery.
struct ReplyAssembler {
    reply: Reply,
    capture: bool,
    /// The query whose rows are arriving, until its CommandComplete.
    current: Option<QueryResult>,
    /// A COPY TO STDOUT's data is skipped, then the client aborts as pgbench does. (A COPY FROM
    /// STDIN waits for data that never comes: it is failed at once and the client, which aborts
    /// on this error, drops the connection, since the Sync already sent was swallowed by copy
    /// mode and no ReadyForQuery would follow.)
    copy_seen: bool,
}

impl ReplyAssembler {
    fn new(capture: bool) -> ReplyAssembler {
        ReplyAssembler {
            reply: Reply::default(),
            capture,
            current: None,
            copy_seen: false,
        }
    }

    fn accept(&mut self, message: Message) -> Result<Step, ConnError> {
        let capture = self.capture;
        match message {
            Message::CopyInResponse(_) => return Ok(Step::CopyIn),
            Message::CopyOutResponse(_) => self.copy_seen = true,
            Message::DataRow(row) => {
                self.reply.rows += 1;
                if capture {
                    capture_row(self.current.get_or_insert_with(Default::default), &row)?;
                }
            }
            Message::RowDescription(description) if capture => {
                let mut fields = description.fields();
                let mut columns = Vec::new();
                while let Some(field) = fields.next()? {
                    columns.push(field.name().to_string());
                }
                self.current = Some(QueryResult {
                    columns,
                    ..Default::default()
                });
            }
            Message::CommandComplete(_) | Message::EmptyQueryResponse if capture => {
                let result = self.current.take().unwrap_or_default();
                self.reply.results.push(result);
            }
            Message::ErrorResponse(body) if self.reply.error.is_none() => {
                self.reply.error = Some(DbError::from_body(&body));
            }
            Message::ReadyForQuery(_) if self.copy_seen => {
                return Err(ConnError::Unsupported(COPY_UNSUPPORTED));
            }
            Message::ReadyForQuery(body) => {
                self.reply.transaction_status = body.status();
                return Ok(Step::Done(std::mem::take(&mut self.reply)));
            }
            _ => {}
        }
        Ok(Step::More)
    }
}

/// The next whole message in `buffer`, None when more bytes are needed; a length beyond
/// MAX_MESSAGE_BYTES is refused before anything is reserved for it.
fn parse_message(buffer: &mut BytesMut) -> Result<Option<Message>, ConnError> {
    if let Some(length) = buffer.get(1..5) {
        let length = u32::from_be_bytes(length.try_into().expect("a slice of four bytes")) as usize;
        if length > MAX_MESSAGE_BYTES {
            return Err(message_too_long(buffer[0], length));
        }
    }
    Ok(Message::parse(buffer)?)
}

/// The fuzzers' entry (cargo-fuzz's target and the CI smoke): the first byte chooses whether
/// rows are captured (bit 0) and where the bytes are cut in two reads (bits 4–7); the rest is
/// what a server sent. Each message goes through the parser and the reply assembler the
/// measured path uses, and the bytes, cut the same way, through the in-place reader of sysbench
/// scripts' statements (`StatementReply`). Returns whatever the bytes; a panic is a bug.
pub fn fuzz_reply(data: &[u8]) {
    let Some((&flags, bytes)) = data.split_first() else {
        return;
    };
    let cut = usize::from(flags >> 4) * bytes.len() / 16;
    fuzz_statement_reply(&bytes[..cut], &bytes[cut..]);
    let mut assembler = ReplyAssembler::new(flags & 1 != 0);
    let mut buffer = BytesMut::from(&bytes[..cut]);
    let mut rest = &bytes[cut..];
    loop {
        match parse_message(&mut buffer) {
            Ok(Some(message)) => match assembler.accept(message) {
                Ok(Step::More) => {}
                Ok(Step::Done(_)) => assembler = ReplyAssembler::new(flags & 1 != 0),
                Ok(Step::CopyIn) | Err(_) => return,
            },
            Ok(None) if !rest.is_empty() => {
                buffer.extend_from_slice(rest);
                rest = &[];
            }
            Ok(None) | Err(_) => return,
        }
    }
}

fn fuzz_statement_reply(first: &[u8], second: &[u8]) {
    let mut reply = StatementReply::default();
    let mut buffer = BytesMut::from(first);
    let mut rest = second;
    loop {
        match reply.take_messages(&mut buffer) {
            Ok(Progress::Done) => {
                for index in 0..reply.rows.len() {
                    let _ = reply.rows.row(index);
                }
                reply.clear();
            }
            Ok(Progress::More) if !rest.is_empty() => {
                buffer.extend_from_slice(rest);
                rest = &[];
            }
            Ok(Progress::More | Progress::CopyIn) | Err(_) => return,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_field_beyond_the_limit_is_refused_before_anything_is_reserved() {
        let mut buffer = BytesMut::from(&b"D\x7f\xff\xff\xff\0\x01"[..]);
        let error = parse_message(&mut buffer).err().expect("refused");
        assert_eq!(
            error.to_string(),
            "the server sent a message of 2147483647 bytes (type 'D'), more than the 1073741824 a message may have"
        );
        assert!(buffer.capacity() < 1024);
        // A length within the limit waits for the rest of its message.
        let mut partial = BytesMut::from(&b"Z\0\0\0\x05"[..]);
        assert!(parse_message(&mut partial).unwrap().is_none());
    }
}
