//! A minimal MySQL client-protocol connection for the measured path, as `pg.rs` is for
//! PostgreSQL: commands written into one buffer, replies read off the socket by the caller's
//! task, no channel or background task between. The text protocol (COM_QUERY) serves `simple`;
//! server-side prepared statements (COM_STMT_PREPARE / COM_STMT_EXECUTE, binary rows) serve
//! `prepared`. Authentication: mysql_native_password, caching_sha2_password (its full
//! exchange over a Unix socket), MariaDB's client_ed25519, and mysql_clear_password over a
//! Unix socket. The server's error numbers that a run retries are classified here.

mod auth;
pub(crate) mod packet;
mod reply;
mod rows;
pub use rows::Rows;

use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::net::TcpStream;

use crate::reply::{ConnError, DbError, FailureKind, Reply};
use crate::stream::{Stream, UnixSocket, Waiting, READ_CHUNK};
use packet::{put_lenenc_bytes, put_packet, Reader};
use stampede_conn::MysqlSpec;
use stampede_script::Value;

/// ER_LOCK_DEADLOCK.
pub const DEADLOCK: u16 = 1213;
/// ER_LOCK_WAIT_TIMEOUT.
pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// ER_CHECKREAD, "Record has changed since last read": MariaDB's write conflict under
/// `innodb_snapshot_isolation` (on by default from 11.6).
pub const RECORD_CHANGED: u16 = 1020;

/// The MySQL errors after which a transaction is tried again: sysbench's
/// `--mysql-ignore-errors`, whose default this is.
pub const RETRIED_BY_DEFAULT: [u16; 3] = [DEADLOCK, RECORD_CHANGED, LOCK_WAIT_TIMEOUT];

/// How a failure with this error number is counted: a lock wait timeout and a changed record
/// count with serialization failures, as each is a conflict that a later try may not meet.
pub fn failure_kind(number: u16) -> FailureKind {
    match number {
        DEADLOCK => FailureKind::Deadlock,
        LOCK_WAIT_TIMEOUT | RECORD_CHANGED => FailureKind::Serialization,
        _ => FailureKind::Other,
    }
}

/// How a reply is framed, as a connection negotiates it, and whether its results are kept.
#[derive(Debug, Clone, Copy)]
pub struct ReplyFraming {
    /// An execute's binary rows rather than a query's text rows.
    pub binary: bool,
    /// CLIENT_DEPRECATE_EOF: an OK packet, not an EOF packet, ends the rows.
    pub deprecates_eof: bool,
    /// MARIADB_CLIENT_CACHE_METADATA: a "metadata follows" byte after the column count.
    pub metadata_flag: bool,
    /// Keep each result's columns and last row (`\gset`).
    pub capture: bool,
}

/// Parses `bytes` as a server's reply the way a connection reads it: `Ok(None)` when more
/// bytes are needed. For the fuzz target: whatever the bytes, this returns, never panics.
pub fn parse_reply(bytes: &[u8], framing: ReplyFraming) -> Result<Option<Reply>, ConnError> {
    let format = reply::Format {
        binary: framing.binary,
        deprecates_eof: framing.deprecates_eof,
        metadata_flag: framing.metadata_flag,
    };
    let mut all = rows::Rows::default();
    let mut columns = Vec::new();
    let mut parser =
        reply::ReplyParser::new(framing.capture, format, Some(&mut all), Some(&mut columns));
    let mut buf = BytesMut::from(bytes);
    Ok(parser.parse(&mut buf)?.then(|| parser.into_reply()))
}

/// The fuzzers' entry (cargo-fuzz's target and the CI smoke): the first byte chooses the
/// framing (bits 0–3) and where the bytes are cut in two reads (bits 4–7), the rest is the
/// reply. Returns whatever the bytes; a panic is a bug.
pub fn fuzz_reply(data: &[u8]) {
    let Some((&flags, bytes)) = data.split_first() else {
        return;
    };
    let framing = ReplyFraming {
        binary: flags & 1 != 0,
        deprecates_eof: flags & 2 != 0,
        metadata_flag: flags & 4 != 0,
        capture: flags & 8 != 0,
    };
    let _ = parse_reply(bytes, framing);
    let cut = usize::from(flags >> 4) * bytes.len() / 16;
    let _ = parse_reply(&bytes[..cut], framing);
}

/// Where libmysqlclient looks for the server's socket when the host is `localhost`.
pub const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

const CLIENT_LONG_PASSWORD: u32 = 0x1;
const CLIENT_LONG_FLAG: u32 = 0x4;
const CLIENT_CONNECT_WITH_DB: u32 = 0x8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PS_MULTI_RESULTS: u32 = 0x4_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CLIENT_PLUGIN_AUTH_LENENC_DATA: u32 = 0x20_0000;
const CLIENT_DEPRECATE_EOF: u32 = 0x100_0000;
/// MariaDB's extended capability (the upper 32 bits, sent in the handshake's reserved bytes
/// when the server leaves CLIENT_MYSQL, bit 0, clear): a prepared statement's execute omits
/// its column definitions while they are unchanged (MariaDB 10.6+), as Connector/C asks.
const MARIADB_CLIENT_CACHE_METADATA: u32 = 0x10;

const SERVER_STATUS_IN_TRANS: u16 = 0x1;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;

/// utf8mb4_general_ci: every server from MySQL 5.5 and MariaDB 5.5 has it.
const CHARSET_UTF8MB4: u8 = 45;

/// A statement the server prepared on this connection.
#[derive(Debug, Clone, Copy)]
pub struct Prepared {
    pub id: u32,
    pub params: u16,
    /// Its place in the connection's `statements`.
    slot: u32,
}

/// What the connection remembers of a prepared statement between executions.
#[derive(Default)]
struct StatementState {
    /// The parameter types last sent: an execute with the same types omits them.
    bound_types: Vec<u8>,
    /// The columns as the server last described them (prepare or execute), for an execute
    /// whose metadata the server skipped.
    columns: Vec<rows::Column>,
}

pub struct MyConn {
    stream: Stream,
    read_buf: BytesMut,
    write_buf: BytesMut,
    /// Scratch for one command's payload before it is framed.
    payload: Vec<u8>,
    sequence: u8,
    capabilities: u32,
    /// MariaDB's extended capabilities both sides have (MARIADB_CLIENT_CACHE_METADATA).
    mariadb_capabilities: u32,
    statements: Vec<StatementState>,
    server_version: String,
    /// The last status the server reported: inside a transaction or not.
    in_transaction: bool,
    lost: bool,
    /// The server's id for this connection, from its greeting: what `KILL QUERY` names.
    connection_id: u32,
}

impl MyConn {
    /// Connects and logs in; `timeout` covers both, so a server that accepts but never
    /// greets cannot hang the caller.
    pub async fn connect(spec: &MysqlSpec, timeout: Duration) -> Result<MyConn, ConnError> {
        tokio::time::timeout(timeout, MyConn::connect_and_login(spec))
            .await
            .map_err(|_| ConnError::Protocol("timeout expired".into()))?
    }

    async fn connect_and_login(spec: &MysqlSpec) -> Result<MyConn, ConnError> {
        let stream = open(spec).await?;
        let mut conn = MyConn {
            stream,
            read_buf: BytesMut::with_capacity(READ_CHUNK),
            write_buf: BytesMut::with_capacity(4096),
            payload: Vec::with_capacity(256),
            sequence: 0,
            capabilities: 0,
            mariadb_capabilities: 0,
            statements: Vec::new(),
            server_version: String::new(),
            in_transaction: false,
            lost: false,
            connection_id: 0,
        };
        let over_socket = matches!(conn.stream, Stream::Unix(_));
        conn.handshake(spec, over_socket).await?;
        Ok(conn)
    }

    /// The server's version string, e.g. `10.11.6-MariaDB-0+deb12u1`.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The server's id for this connection (`KILL QUERY` takes it).
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// The socket leaves the runtime's reactor to wait as `waiting` says
    /// (`Stream::leave_reactor`).
    pub fn leave_reactor(&mut self, waiting: Waiting) -> Result<(), ConnError> {
        self.stream.leave_reactor(waiting).map_err(ConnError::Io)
    }

    /// The server said the session is inside a transaction.
    pub fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    async fn handshake(&mut self, spec: &MysqlSpec, over_socket: bool) -> Result<(), ConnError> {
        let greeting = self.read_packet().await?;
        if greeting.first() == Some(&0xFF) {
            return Err(ConnError::Server(server_error(&greeting)));
        }
        let greeting = parse_greeting(&greeting).ok_or_else(malformed)?;
        self.server_version = greeting.version.clone();
        self.connection_id = greeting.connection_id;
        self.capabilities = wanted_capabilities(spec) & greeting.capabilities;
        self.mariadb_capabilities = MARIADB_CLIENT_CACHE_METADATA & greeting.mariadb_capabilities;
        if self.capabilities & CLIENT_PROTOCOL_41 == 0 {
            return Err(ConnError::Protocol(format!(
                "server {} predates the 4.1 protocol",
                greeting.version
            )));
        }
        let password = spec.password.as_deref().unwrap_or("");
        let mut plugin = greeting.plugin.clone();
        if !auth::SUPPORTED.contains(&plugin.as_str()) || plugin == auth::ED25519 {
            // The server's default plugin is only a proposal; the account's decides (and
            // ed25519's nonce comes with the switch to it, not in the greeting).
            plugin = auth::NATIVE_PASSWORD.to_string();
        }
        let answer = auth::first_response(&plugin, password, &greeting.scramble);
        self.send_handshake_response(spec, &plugin, &answer);
        self.flush().await?;
        self.authenticate(password, plugin, over_socket).await
    }

    fn send_handshake_response(&mut self, spec: &MysqlSpec, plugin: &str, answer: &[u8]) {
        let payload = &mut self.payload;
        payload.clear();
        payload.extend_from_slice(&self.capabilities.to_le_bytes());
        payload.extend_from_slice(&(packet::MAX_PAYLOAD as u32).to_le_bytes());
        payload.push(CHARSET_UTF8MB4);
        payload.extend_from_slice(&[0; 19]);
        payload.extend_from_slice(&self.mariadb_capabilities.to_le_bytes());
        payload.extend_from_slice(spec.user.as_bytes());
        payload.push(0);
        if self.capabilities & CLIENT_PLUGIN_AUTH_LENENC_DATA != 0 {
            put_lenenc_bytes(payload, answer);
        } else {
            payload.push(answer.len() as u8);
            payload.extend_from_slice(answer);
        }
        if self.capabilities & CLIENT_CONNECT_WITH_DB != 0 {
            payload.extend_from_slice(spec.database.as_bytes());
            payload.push(0);
        }
        if self.capabilities & CLIENT_PLUGIN_AUTH != 0 {
            payload.extend_from_slice(plugin.as_bytes());
            payload.push(0);
        }
        put_packet(&mut self.write_buf, &mut self.sequence, payload);
    }

    /// The exchange after the handshake response: OK, an error, a switch to another plugin, or
    /// caching_sha2_password's fast/full authentication.
    async fn authenticate(
        &mut self,
        password: &str,
        mut plugin: String,
        over_socket: bool,
    ) -> Result<(), ConnError> {
        loop {
            let reply = self.read_packet().await?;
            match reply.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(ConnError::Server(server_error(&reply))),
                Some(0xFE) => {
                    let mut reader = Reader::new(&reply[1..]);
                    plugin = String::from_utf8_lossy(reader.null_terminated()).into_owned();
                    // ed25519's nonce is raw bytes (NULs among them); the others' scramble ends at one.
                    let scramble = if plugin == auth::ED25519 {
                        reader
                            .bytes(auth::ED25519_NONCE)
                            .unwrap_or_default()
                            .to_vec()
                    } else {
                        reader.null_terminated().to_vec()
                    };
                    if !auth::SUPPORTED.contains(&plugin.as_str()) {
                        return Err(unsupported_plugin(&plugin));
                    }
                    if plugin == auth::CLEAR_PASSWORD && !over_socket {
                        return Err(clear_text_refused(&plugin));
                    }
                    let answer = auth::first_response(&plugin, password, &scramble);
                    self.send_payload(&answer).await?;
                }
                Some(0x01) if plugin == auth::CACHING_SHA2 => match reply.get(1) {
                    // Fast authentication succeeded: the OK follows.
                    Some(0x03) => {}
                    Some(0x04) if over_socket => {
                        self.send_payload(&auth::clear_password(password)).await?;
                    }
                    _ => return Err(clear_text_refused(&plugin)),
                },
                _ => return Err(malformed()),
            }
        }
    }

    /// Sends one payload as the next packet of the exchange under way.
    async fn send_payload(&mut self, payload: &[u8]) -> Result<(), ConnError> {
        put_packet(&mut self.write_buf, &mut self.sequence, payload);
        self.flush().await
    }

    /// COM_QUERY: the text protocol. Results are counted, and with `capture` each result's
    /// columns and last row are kept.
    pub async fn query(&mut self, sql: &str, capture: bool) -> Result<Reply, ConnError> {
        self.start_command(COM_QUERY, sql.as_bytes());
        self.flush().await?;
        self.read_results(capture, false).await
    }

    /// COM_QUERY keeping every row of the last result, for control work.
    pub async fn query_all(&mut self, sql: &str) -> Result<Result<rows::Rows, DbError>, ConnError> {
        self.start_command(COM_QUERY, sql.as_bytes());
        self.flush().await?;
        let mut all = rows::Rows::default();
        let reply = self.read_results_into(true, false, Some(&mut all)).await?;
        Ok(match reply.error {
            Some(error) => Err(error),
            None => Ok(all),
        })
    }

    /// COM_QUERY keeping every row of the last result in `rows` (a lazy one: as sent, read when
    /// asked for by `Rows::row`; its buffers reused), and the reply (its error, the rows it
    /// changed; no column names): for sysbench's Lua API.
    pub async fn query_rows(
        &mut self,
        sql: &str,
        rows: &mut rows::Rows,
    ) -> Result<Reply, ConnError> {
        self.start_command(COM_QUERY, sql.as_bytes());
        self.flush().await?;
        rows.restart();
        self.read_results_into(false, false, Some(rows)).await
    }

    /// As `execute`, keeping every row of the result in `rows`, as `query_rows`.
    pub async fn execute_rows(
        &mut self,
        statement: Prepared,
        values: impl ExactSizeIterator<Item = &Value> + Clone,
        rows: &mut rows::Rows,
    ) -> Result<Reply, ConnError> {
        rows.restart();
        self.execute_into(statement, values, false, Some(rows))
            .await
    }

    /// COM_STMT_PREPARE. A statement the server refuses comes back as `Err(DbError)` inside
    /// `Ok`, as replies do.
    pub async fn prepare(&mut self, sql: &str) -> Result<Result<Prepared, DbError>, ConnError> {
        self.start_command(COM_STMT_PREPARE, sql.as_bytes());
        self.flush().await?;
        let reply = self.read_packet().await?;
        if reply.first() == Some(&0xFF) {
            return Ok(Err(server_error(&reply)));
        }
        let mut reader = Reader::new(&reply);
        let (Some(0x00), Some(id), Some(columns), Some(params)) =
            (reader.u8(), reader.u32(), reader.u16(), reader.u16())
        else {
            return Err(malformed());
        };
        // Parameter definitions, then column definitions, each list ended by an EOF packet
        // unless the EOF was negotiated away. The columns are kept: the first execute may
        // skip them.
        let mut state = StatementState::default();
        for (count, are_columns) in [(params, false), (columns, true)] {
            if count == 0 {
                continue;
            }
            for _ in 0..count {
                let definition = self.read_packet().await?;
                if are_columns && self.caches_metadata() {
                    state
                        .columns
                        .push(rows::parse_column(&definition).ok_or_else(malformed)?);
                }
            }
            if !self.deprecates_eof() {
                self.read_packet().await?;
            }
        }
        let slot = self.statements.len() as u32;
        self.statements.push(state);
        Ok(Ok(Prepared { id, params, slot }))
    }

    /// COM_STMT_EXECUTE with the values bound by type: integers as BIGINT, doubles as DOUBLE,
    /// text as strings, NULL in the null bitmap, as libmysqlclient's typed binds do; the types
    /// only when they differ from the last execute's, as Connector/C sends them.
    pub async fn execute(
        &mut self,
        statement: Prepared,
        values: impl ExactSizeIterator<Item = &Value> + Clone,
        capture: bool,
    ) -> Result<Reply, ConnError> {
        self.execute_into(statement, values, capture, None).await
    }

    async fn execute_into(
        &mut self,
        statement: Prepared,
        values: impl ExactSizeIterator<Item = &Value> + Clone,
        capture: bool,
        all: Option<&mut rows::Rows>,
    ) -> Result<Reply, ConnError> {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        payload.push(COM_STMT_EXECUTE);
        payload.extend_from_slice(&statement.id.to_le_bytes());
        payload.push(0); // no cursor
        payload.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        let state = &mut self.statements[statement.slot as usize];
        if statement.params > 0 {
            rows::put_bound_values(&mut payload, values, &mut state.bound_types);
        }
        self.sequence = 0;
        put_packet(&mut self.write_buf, &mut self.sequence, &payload);
        self.payload = payload;
        self.flush().await?;
        if !self.caches_metadata() {
            return self.read_results_with(capture, true, all, None).await;
        }
        let slot = statement.slot as usize;
        let mut columns = std::mem::take(&mut self.statements[slot].columns);
        let reply = self
            .read_results_with(capture, true, all, Some(&mut columns))
            .await;
        self.statements[slot].columns = columns;
        reply
    }

    fn caches_metadata(&self) -> bool {
        self.mariadb_capabilities & MARIADB_CLIENT_CACHE_METADATA != 0
    }

    /// Runs a statement whose result is of no interest, for control work (DDL, loading).
    pub async fn execute_simple(&mut self, sql: &str) -> Result<Reply, ConnError> {
        self.query(sql, false).await
    }

    pub async fn close(mut self) {
        self.start_command(COM_QUIT, b"");
        let _ = self.flush().await;
    }

    fn start_command(&mut self, command: u8, body: &[u8]) {
        self.payload.clear();
        self.payload.push(command);
        self.payload.extend_from_slice(body);
        self.sequence = 0;
        put_packet(&mut self.write_buf, &mut self.sequence, &self.payload);
    }

    fn deprecates_eof(&self) -> bool {
        self.capabilities & CLIENT_DEPRECATE_EOF != 0
    }

    /// Reads every result of one command (several for a CALL or a multi-statement string).
    async fn read_results(&mut self, capture: bool, binary: bool) -> Result<Reply, ConnError> {
        self.read_results_into(capture, binary, None).await
    }

    /// As `read_results`; `all`, when given, receives the last result's columns and rows.
    async fn read_results_into(
        &mut self,
        capture: bool,
        binary: bool,
        all: Option<&mut rows::Rows>,
    ) -> Result<Reply, ConnError> {
        self.read_results_with(capture, binary, all, None).await
    }

    /// As `read_results_into`; `columns`, for an execute, holds the statement's columns as the
    /// server last described them and receives any new description.
    async fn read_results_with(
        &mut self,
        capture: bool,
        binary: bool,
        all: Option<&mut rows::Rows>,
        columns: Option<&mut Vec<rows::Column>>,
    ) -> Result<Reply, ConnError> {
        let format = reply::Format {
            binary,
            deprecates_eof: self.deprecates_eof(),
            metadata_flag: self.caches_metadata(),
        };
        let mut parser = reply::ReplyParser::new(capture, format, all, columns);
        while !parser.parse(&mut self.read_buf)? {
            if let Err(e) = self.fill().await {
                self.lost = true;
                return Err(e);
            }
        }
        if let Some(status) = parser.last_status {
            self.in_transaction = status & SERVER_STATUS_IN_TRANS != 0;
        }
        let mut reply = parser.into_reply();
        reply.transaction_status = if self.in_transaction { b'T' } else { b'I' };
        Ok(reply)
    }

    /// One packet's payload (packets of a payload over 16 MiB joined).
    async fn read_packet(&mut self) -> Result<BytesMut, ConnError> {
        let mut payload = self.read_one_packet().await?;
        let mut length = payload.len();
        while length == packet::MAX_PAYLOAD {
            let next = self.read_one_packet().await?;
            length = next.len();
            payload.extend_from_slice(&next);
        }
        Ok(payload)
    }

    async fn read_one_packet(&mut self) -> Result<BytesMut, ConnError> {
        let length = self.buffer_packet().await?;
        self.read_buf.advance(4);
        Ok(self.read_buf.split_to(length))
    }

    /// Waits until one whole packet is in the buffer and returns its payload's length; the
    /// packet (header included) stays at the buffer's front.
    async fn buffer_packet(&mut self) -> Result<usize, ConnError> {
        loop {
            if self.read_buf.len() >= 4 {
                let header = &self.read_buf[..4];
                let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
                if self.read_buf.len() >= 4 + length {
                    self.sequence = header[3].wrapping_add(1);
                    return Ok(length);
                }
                self.read_buf.reserve(4 + length - self.read_buf.len());
            }
            if let Err(e) = self.fill().await {
                self.lost = true;
                return Err(e);
            }
        }
    }

    async fn fill(&mut self) -> Result<(), ConnError> {
        self.stream.fill(&mut self.read_buf).await
    }

    async fn flush(&mut self) -> Result<(), ConnError> {
        if let Err(e) = self.stream.write_all(&self.write_buf).await {
            self.lost = true;
            return Err(e.into());
        }
        self.write_buf.clear();
        Ok(())
    }
}

const LOCAL_INFILE_UNSUPPORTED: &str = "LOAD DATA LOCAL INFILE is not supported, aborting";

/// The server's first packet (HandshakeV10).
struct Greeting {
    version: String,
    connection_id: u32,
    capabilities: u32,
    /// MariaDB's extended capabilities (0 from MySQL).
    mariadb_capabilities: u32,
    scramble: Vec<u8>,
    plugin: String,
}

fn parse_greeting(payload: &[u8]) -> Option<Greeting> {
    let mut reader = Reader::new(payload);
    if reader.u8()? != 10 {
        return None;
    }
    let version = String::from_utf8_lossy(reader.null_terminated()).into_owned();
    let connection_id = reader.u32()?;
    let mut scramble = reader.bytes(8)?.to_vec();
    reader.u8()?;
    let low = reader.u16()? as u32;
    let _charset = reader.u8()?;
    let _status = reader.u16()?;
    let high = reader.u16()? as u32;
    let capabilities = low | (high << 16);
    let scramble_length = reader.u8()? as usize;
    let reserved = reader.bytes(10)?;
    let mariadb_capabilities = if capabilities & CLIENT_LONG_PASSWORD == 0 {
        u32::from_le_bytes(reserved[6..10].try_into().ok()?)
    } else {
        0
    };
    if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let second = scramble_length.saturating_sub(8).max(13);
        let part = reader.bytes(second.min(reader.rest.len()))?;
        // The second part ends with a NUL that is not part of the scramble.
        scramble.extend_from_slice(part.strip_suffix(&[0]).unwrap_or(part));
    }
    let plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
        String::from_utf8_lossy(reader.null_terminated()).into_owned()
    } else {
        auth::NATIVE_PASSWORD.to_string()
    };
    Some(Greeting {
        version,
        connection_id,
        capabilities,
        mariadb_capabilities,
        scramble,
        plugin,
    })
}

fn wanted_capabilities(spec: &MysqlSpec) -> u32 {
    let mut wanted = CLIENT_LONG_PASSWORD
        | CLIENT_LONG_FLAG
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_RESULTS
        | CLIENT_PS_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH
        | CLIENT_PLUGIN_AUTH_LENENC_DATA
        | CLIENT_DEPRECATE_EOF;
    if !spec.database.is_empty() {
        wanted |= CLIENT_CONNECT_WITH_DB;
    }
    wanted
}

/// The status flags of an OK packet's body (after its header byte).
fn ok_status(body: &[u8]) -> Option<u16> {
    let mut reader = Reader::new(body);
    reader.lenenc_int()?; // affected rows
    reader.lenenc_int()?; // last insert id
    reader.u16()
}

/// The status flags of the packet that ends a result set: an OK with a 0xFE header when EOF
/// packets were negotiated away, else an EOF (warnings, then status).
fn end_status(packet: &[u8], deprecates_eof: bool) -> Option<u16> {
    if deprecates_eof {
        return ok_status(&packet[1..]);
    }
    let mut reader = Reader::new(&packet[1..]);
    reader.u16()?;
    reader.u16()
}

/// An ERR packet: `0xFF`, the error number, `#` and the SQLSTATE, the message.
fn server_error(packet: &[u8]) -> DbError {
    let mut reader = Reader::new(&packet[1..]);
    let number = reader.u16().unwrap_or(0);
    let mut sqlstate = "HY000".to_string();
    if reader.rest.first() == Some(&b'#') && reader.rest.len() >= 6 {
        sqlstate = String::from_utf8_lossy(&reader.rest[1..6]).into_owned();
        reader.bytes(6);
    }
    DbError::from_mysql(
        number,
        sqlstate,
        String::from_utf8_lossy(reader.rest).into_owned(),
    )
}

fn malformed() -> ConnError {
    ConnError::Protocol("malformed packet from the MySQL server".into())
}

fn unsupported_plugin(plugin: &str) -> ConnError {
    ConnError::Protocol(format!(
        "authentication plugin \"{plugin}\" is not supported; stampede answers {}",
        auth::SUPPORTED.join(", ")
    ))
}

fn clear_text_refused(plugin: &str) -> ConnError {
    ConnError::Protocol(format!(
        "{plugin} wants the password in clear text, which stampede sends only over a Unix socket; connect through the server's socket"
    ))
}

/// A Unix socket when one is named or the host is `localhost` (as libmysqlclient does), else
/// TCP without Nagle.
async fn open(spec: &MysqlSpec) -> Result<Stream, ConnError> {
    let socket = spec
        .socket
        .clone()
        .or_else(|| (spec.host == "localhost").then(|| std::path::PathBuf::from(DEFAULT_SOCKET)));
    if let Some(path) = socket {
        return UnixSocket::connect(&path)
            .await
            .map(Stream::Unix)
            .map_err(|e| {
                ConnError::Protocol(format!(
                    "could not connect to the server's socket \"{}\": {e}",
                    path.display()
                ))
            });
    }
    let stream = TcpStream::connect((spec.host.as_str(), spec.port))
        .await
        .map_err(|e| {
            ConnError::Protocol(format!(
                "could not connect to {}:{}: {e}",
                spec.host, spec.port
            ))
        })?;
    stream.set_nodelay(true)?;
    Ok(Stream::Tcp(stream))
}

/// A string literal in single quotes, with the characters MySQL's parser treats specially
/// escaped (mysql_real_escape_string's set).
pub fn push_quoted(out: &mut String, value: &str) {
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{1a}' => out.push_str("\\Z"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole OK packet is a reply, a cut one asks for more, an ERR packet is the server's
    /// error with its number and SQLSTATE; bytes that are no reply end in an error.
    #[test]
    fn replies_parse_from_bytes_alone() {
        let framing = ReplyFraming {
            binary: false,
            deprecates_eof: true,
            metadata_flag: false,
            capture: false,
        };
        let ok = [7, 0, 0, 1, 0x00, 0, 0, 0x02, 0, 0, 0];
        let reply = parse_reply(&ok, framing).unwrap().expect("a whole reply");
        assert!(reply.error.is_none());
        assert!(parse_reply(&ok[..6], framing).unwrap().is_none());
        let mut err = vec![0xff, 0x28, 0x04, b'#'];
        err.extend_from_slice(b"42000syntax");
        let mut framed = vec![err.len() as u8, 0, 0, 1];
        framed.extend(err);
        let reply = parse_reply(&framed, framing)
            .unwrap()
            .expect("a whole reply");
        let error = reply.error.expect("the server's error");
        assert_eq!(
            (error.mysql_errno, error.code.as_str()),
            (Some(1064), "42000")
        );
        assert_eq!(error.message, "syntax");
        // A column count of 1 followed by a packet that is no column definition.
        let garbage = [1, 0, 0, 1, 0x01, 1, 0, 0, 2, 0xfe];
        assert!(parse_reply(&garbage, framing).is_err());
    }

    /// A peer that accepts and never sends its greeting: the timeout ends the wait.
    #[test]
    fn a_silent_server_times_out() {
        let dir = std::env::temp_dir().join(format!("stampede-silent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mysqld.sock");
        let _ = std::fs::remove_file(&path);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = runtime.block_on(async {
            let listener = tokio::net::UnixListener::bind(&path).unwrap();
            let accept = tokio::spawn(async move { listener.accept().await });
            let spec = MysqlSpec {
                socket: Some(path.clone()),
                ..MysqlSpec::localhost("root", "")
            };
            let result = MyConn::connect(&spec, Duration::from_millis(200)).await;
            drop(accept);
            result
        });
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Err(e) => assert_eq!(e.to_string(), "timeout expired"),
            Ok(_) => panic!("connected to a silent server"),
        }
    }
}
