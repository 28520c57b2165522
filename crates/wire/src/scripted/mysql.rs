//! The scripted MySQL server, as MariaDB speaks the protocol: the greeting (protocol 10,
//! `mysql_native_password`, no password checked), COM_QUERY with text result sets and OK and
//! ERR packets, COM_STMT_PREPARE / EXECUTE / CLOSE with binary result sets (the bound values
//! recorded as text), COM_PING, COM_INIT_DB and COM_QUIT; the transaction status in every OK
//! and EOF packet; `KILL QUERY n` from another connection interrupting a stalled statement
//! with 1317, as the watchdog cancels one on MariaDB.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{client_left, first_word, Answer, Call, Recorded, Shared};
use crate::mysql::packet::{put_lenenc_bytes, put_lenenc_int, Reader};
use stampede_conn::MysqlSpec;

const SOCKET: &str = "mysqld.sock";
const COM_QUIT: u8 = 0x01;
const COM_INIT_DB: u8 = 0x02;
const COM_QUERY: u8 = 0x03;
const COM_PING: u8 = 0x0e;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;
/// CLIENT_MYSQL (so no MariaDB extended capabilities), LONG_FLAG, CONNECT_WITH_DB, PROTOCOL_41,
/// TRANSACTIONS, SECURE_CONNECTION, MULTI_RESULTS, PS_MULTI_RESULTS, PLUGIN_AUTH: classic EOF
/// packets end column lists and rows.
const CAPABILITIES: u32 =
    0x1 | 0x4 | 0x8 | 0x200 | 0x2000 | 0x8000 | 0x2_0000 | 0x4_0000 | 0x8_0000;
const STATUS_IN_TRANS: u16 = 0x1;
const STATUS_AUTOCOMMIT: u16 = 0x2;
const TYPE_TINY: u8 = 0x01;
const TYPE_DOUBLE: u8 = 0x05;
const TYPE_NULL: u8 = 0x06;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_VAR_STRING: u8 = 0xfd;
/// ER_QUERY_INTERRUPTED, what a statement stopped by `KILL QUERY` gets.
const INTERRUPTED: u16 = 1317;
/// ER_LOCK_DEADLOCK: InnoDB rolls the whole transaction back.
const DEADLOCK: u16 = 1213;

/// A running scripted MySQL server; it reads as its record (`Recorded`: the calls, the
/// `KILL QUERY`s, the sessions, the prepares).
pub struct ScriptedMysqlServer {
    recorded: Recorded,
}

impl ScriptedMysqlServer {
    /// Starts a server that answers each statement with `script`'s answer, or when it returns
    /// None as MariaDB answers the usual ones: any `SELECT` with one row holding `1`, anything
    /// else with an OK packet.
    pub fn start(script: impl Fn(&Call) -> Option<Answer> + Send + Sync + 'static) -> Self {
        let recorded = Recorded::listen(SOCKET, Box::new(script), |connection, shared| {
            Session::open(connection, shared)?.serve()
        });
        ScriptedMysqlServer { recorded }
    }

    /// Where a client connects: the socket, user and database `test`, no password.
    pub fn spec(&self) -> MysqlSpec {
        MysqlSpec {
            socket: Some(self.recorded.socket.clone()),
            ..MysqlSpec::localhost("test", "test")
        }
    }
}

impl std::ops::Deref for ScriptedMysqlServer {
    type Target = Recorded;

    fn deref(&self) -> &Recorded {
        &self.recorded
    }
}

/// A statement prepared on a session: its text, its markers, the types last bound.
struct Statement {
    text: String,
    params: usize,
    types: Vec<u8>,
}

struct Session {
    socket: UnixStream,
    shared: Arc<Shared>,
    number: usize,
    killed: Arc<AtomicBool>,
    in_transaction: bool,
    statements: HashMap<u32, Statement>,
    sequence: u8,
    out: Vec<u8>,
}

impl Session {
    /// Greets the client and takes its handshake response (no password is checked).
    fn open(socket: UnixStream, shared: Arc<Shared>) -> io::Result<Session> {
        let (number, killed) = shared.new_session();
        let mut session = Session {
            socket,
            shared,
            number,
            killed,
            in_transaction: false,
            statements: HashMap::new(),
            sequence: 0,
            out: Vec::new(),
        };
        session.greet()?;
        session.read_packet()?;
        session.ok(0);
        session.flush()?;
        session.shared.seen().sessions += 1;
        Ok(session)
    }

    fn greet(&mut self) -> io::Result<()> {
        let mut payload = vec![10];
        payload.extend_from_slice(b"11.4.0-MariaDB-scripted\0");
        payload.extend_from_slice(&self.connection_id().to_le_bytes());
        payload.extend_from_slice(b"abcdefgh\0");
        payload.extend_from_slice(&(CAPABILITIES as u16).to_le_bytes());
        payload.push(45); // utf8mb4_general_ci
        payload.extend_from_slice(&STATUS_AUTOCOMMIT.to_le_bytes());
        payload.extend_from_slice(&((CAPABILITIES >> 16) as u16).to_le_bytes());
        payload.push(21);
        payload.extend_from_slice(&[0; 10]);
        payload.extend_from_slice(b"ijklmnopqrst\0");
        payload.extend_from_slice(b"mysql_native_password\0");
        self.sequence = 0;
        self.packet(&payload);
        self.flush()
    }

    /// `KILL QUERY n` names a session by this.
    fn connection_id(&self) -> u32 {
        self.number as u32 + 1
    }

    fn serve(mut self) -> io::Result<()> {
        loop {
            let Some(command) = self.read_packet()? else {
                return Ok(());
            };
            let (&code, body) = command.split_first().unwrap_or((&COM_QUIT, &[]));
            match code {
                COM_QUIT => return Ok(()),
                COM_PING | COM_INIT_DB => self.ok(0),
                COM_QUERY => {
                    let text = String::from_utf8_lossy(body).into_owned();
                    if !self.query(&text)? {
                        return Ok(());
                    }
                }
                COM_STMT_PREPARE => self.prepare(String::from_utf8_lossy(body).into_owned()),
                COM_STMT_EXECUTE => {
                    let Some((text, params)) = self.bound(body) else {
                        self.error(1243, "HY000", "Unknown prepared statement handler");
                        self.flush()?;
                        continue;
                    };
                    if !self.run(&text, params, true)? {
                        return Ok(());
                    }
                }
                COM_STMT_CLOSE => {
                    // A short packet closes nothing (a test's garbage must not panic the server).
                    if let Some(id) = Reader::new(body).u32() {
                        self.statements.remove(&id);
                    }
                    continue;
                }
                _ => self.error(1047, "08S01", "Unknown command"),
            }
            self.flush()?;
        }
    }

    /// A text query; `KILL QUERY n` stops session n's running statement.
    fn query(&mut self, text: &str) -> io::Result<bool> {
        let words: Vec<String> = text
            .split_whitespace()
            .map(|w| w.trim_end_matches(';').to_ascii_uppercase())
            .collect();
        if let [kill, query, id] = words.as_slice() {
            if kill == "KILL" && query == "QUERY" {
                let connection_id: usize = id.parse().unwrap_or(0);
                self.shared.interrupt(connection_id.checked_sub(1));
                self.ok(0);
                return Ok(true);
            }
        }
        self.run(text, Vec::new(), false)
    }

    /// COM_STMT_PREPARE_OK with its parameters' definitions; the columns come with each
    /// execute's result set.
    fn prepare(&mut self, text: String) {
        *self
            .shared
            .seen()
            .prepares
            .entry((self.number, text.clone()))
            .or_default() += 1;
        let id = self.statements.len() as u32 + 1;
        let params = text.matches('?').count();
        let mut payload = vec![0];
        payload.extend_from_slice(&id.to_le_bytes());
        payload.extend_from_slice(&0u16.to_le_bytes());
        payload.extend_from_slice(&(params as u16).to_le_bytes());
        payload.push(0);
        payload.extend_from_slice(&0u16.to_le_bytes());
        self.packet(&payload);
        for _ in 0..params {
            self.column_definition("?");
        }
        if params > 0 {
            self.eof();
        }
        let statement = Statement {
            text,
            params,
            types: Vec::new(),
        };
        self.statements.insert(id, statement);
    }

    /// COM_STMT_EXECUTE's statement and its bound values as text (None: NULL): the null
    /// bitmap, the types when the client sends them anew (else the last execute's), the values.
    fn bound(&mut self, body: &[u8]) -> Option<(String, Vec<Option<String>>)> {
        let mut reader = Reader::new(body);
        let id = reader.u32()?;
        reader.bytes(5)?; // flags, iteration count
        let statement = self.statements.get_mut(&id)?;
        let n = statement.params;
        if n == 0 {
            return Some((statement.text.clone(), Vec::new()));
        }
        let bitmap = reader.bytes(n.div_ceil(8))?;
        if reader.u8()? == 1 {
            let types = reader.bytes(2 * n)?;
            statement.types = types.chunks(2).map(|t| t[0]).collect();
        }
        let values = statement
            .types
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                let null = bitmap[i / 8] & (1 << (i % 8)) != 0 || *kind == TYPE_NULL;
                if null {
                    Some(None)
                } else {
                    binary_value(*kind, &mut reader).map(Some)
                }
            })
            .collect::<Option<Vec<_>>>()?;
        Some((statement.text.clone(), values))
    }

    /// Answers one statement; false when the connection is to close.
    fn run(&mut self, text: &str, params: Vec<Option<String>>, binary: bool) -> io::Result<bool> {
        let answer = self
            .shared
            .call(text, params, self.number)
            .unwrap_or_else(|| usual_answer(text));
        self.answer(text, answer, binary)
    }

    fn answer(&mut self, text: &str, answer: Answer, binary: bool) -> io::Result<bool> {
        match answer {
            Answer::Rows { columns, rows } => self.result_set(&columns, &rows, binary),
            Answer::Done(tag) => {
                self.in_transaction = match first_word(text).as_str() {
                    "BEGIN" | "START" => true,
                    "COMMIT" | "ROLLBACK" => false,
                    _ => self.in_transaction,
                };
                let affected = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                self.ok(affected.unwrap_or(0));
            }
            Answer::Error {
                code,
                message,
                number,
            } => {
                let number = number.unwrap_or(1105);
                if number == DEADLOCK {
                    self.in_transaction = false;
                }
                self.error(number, &code, &message);
            }
            Answer::After(delay, then) => {
                std::thread::sleep(delay);
                return self.answer(text, *then, binary);
            }
            Answer::Stall => return self.stall(text, binary),
            Answer::Hangup => return Ok(false),
        }
        Ok(true)
    }

    /// Waits for a `KILL QUERY` (then answers as an interrupted statement) or for the client
    /// to close its connection.
    fn stall(&mut self, text: &str, binary: bool) -> io::Result<bool> {
        loop {
            if self.killed.swap(false, Ordering::SeqCst) {
                let interrupted =
                    Answer::mysql_error(INTERRUPTED, "70100", "Query execution was interrupted");
                return self.answer(text, interrupted, binary);
            }
            if client_left(&self.socket)? {
                return Ok(false);
            }
        }
    }

    fn status(&self) -> u16 {
        STATUS_AUTOCOMMIT
            | if self.in_transaction {
                STATUS_IN_TRANS
            } else {
                0
            }
    }

    fn ok(&mut self, affected: u64) {
        let mut payload = vec![0];
        put_lenenc_int(&mut payload, affected);
        put_lenenc_int(&mut payload, 0);
        payload.extend_from_slice(&self.status().to_le_bytes());
        payload.extend_from_slice(&0u16.to_le_bytes());
        self.packet(&payload);
    }

    fn error(&mut self, number: u16, code: &str, message: &str) {
        let mut payload = vec![0xff];
        payload.extend_from_slice(&number.to_le_bytes());
        payload.push(b'#');
        payload.extend_from_slice(format!("{code:5.5}").as_bytes());
        payload.extend_from_slice(message.as_bytes());
        self.packet(&payload);
    }

    fn eof(&mut self) {
        let mut payload = vec![0xfe];
        payload.extend_from_slice(&0u16.to_le_bytes());
        payload.extend_from_slice(&self.status().to_le_bytes());
        self.packet(&payload);
    }

    /// Columns of VAR_STRING, then the rows: as text, or in the binary protocol's form
    /// (a null bitmap offset by 2, then each value as a length-encoded string).
    fn result_set(&mut self, columns: &[String], rows: &[Vec<Option<String>>], binary: bool) {
        let mut count = Vec::new();
        put_lenenc_int(&mut count, columns.len() as u64);
        self.packet(&count);
        for column in columns {
            self.column_definition(column);
        }
        self.eof();
        for row in rows {
            let mut payload = Vec::new();
            if binary {
                payload.push(0);
                let start = payload.len();
                payload.resize(start + (row.len() + 9) / 8, 0);
                for (i, value) in row.iter().enumerate() {
                    if value.is_none() {
                        payload[start + (i + 2) / 8] |= 1 << ((i + 2) % 8);
                    }
                }
            }
            for value in row {
                match value {
                    Some(value) => put_lenenc_bytes(&mut payload, value.as_bytes()),
                    None if !binary => payload.push(0xfb),
                    None => {}
                }
            }
            self.packet(&payload);
        }
        self.eof();
    }

    fn column_definition(&mut self, name: &str) {
        let mut payload = Vec::new();
        for part in ["def", "", "", "", name, name] {
            put_lenenc_bytes(&mut payload, part.as_bytes());
        }
        payload.push(0x0c);
        payload.extend_from_slice(&45u16.to_le_bytes());
        payload.extend_from_slice(&255u32.to_le_bytes());
        payload.push(TYPE_VAR_STRING);
        payload.extend_from_slice(&0u16.to_le_bytes());
        payload.push(0);
        payload.extend_from_slice(&0u16.to_le_bytes());
        self.packet(&payload);
    }

    fn packet(&mut self, payload: &[u8]) {
        self.out
            .extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        self.out.push(self.sequence);
        self.sequence = self.sequence.wrapping_add(1);
        self.out.extend_from_slice(payload);
    }

    /// The next packet's payload; None when the client closed the connection.
    fn read_packet(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut header = [0u8; 4];
        match self.socket.read_exact(&mut header) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            other => other?,
        }
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        self.sequence = header[3].wrapping_add(1);
        let mut payload = vec![0; length];
        self.socket.read_exact(&mut payload)?;
        Ok(Some(payload))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.write_all(&self.out)?;
        self.out.clear();
        Ok(())
    }
}

/// The usual answers: a `SELECT` gets one row holding `1`, anything else an OK packet.
fn usual_answer(text: &str) -> Answer {
    match first_word(text).as_str() {
        "SELECT" => Answer::value("1", "1"),
        word => Answer::Done(word.to_string()),
    }
}

/// One bound value of the binary protocol, as text.
fn binary_value(kind: u8, reader: &mut Reader<'_>) -> Option<String> {
    Some(match kind {
        TYPE_TINY => reader.u8()?.to_string(),
        TYPE_LONGLONG => (reader.u64()? as i64).to_string(),
        TYPE_DOUBLE => f64::from_bits(reader.u64()?).to_string(),
        _ => String::from_utf8_lossy(reader.lenenc_bytes()??).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql::{MyConn, Rows};
    use stampede_script::Value;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// What the client reads back is what the script answered, NULLs included, whether the
    /// rows come as text (a query) or in the binary protocol (an execute).
    #[test]
    fn rows_come_back_as_answered_as_text_and_as_binary() {
        let answer = Answer::Rows {
            columns: vec!["k".into(), "c".into(), "pad".into()],
            rows: vec![
                vec![Some("1".into()), None, Some("x".into())],
                vec![None, Some("it's".into()), None],
            ],
        };
        let answered = answer.clone();
        let server = ScriptedMysqlServer::start(move |call| {
            call.text.starts_with("SELECT k").then(|| answered.clone())
        });
        let Answer::Rows { columns, rows } = answer else {
            unreachable!("rows")
        };
        runtime().block_on(async {
            let mut conn = MyConn::connect(&server.spec(), std::time::Duration::from_secs(5))
                .await
                .expect("connected");
            let text = conn
                .query_all("SELECT k, c, pad FROM t")
                .await
                .unwrap()
                .unwrap();
            assert_eq!((&text.columns, &text.rows), (&columns, &rows));
            let statement = conn
                .prepare("SELECT k, c, pad FROM t WHERE id = ? AND c = ?")
                .await
                .unwrap()
                .unwrap();
            let values = [
                Value::Int(-7),
                Value::Text(std::sync::Arc::new("a'b".to_string())),
            ];
            // Lazy: the binary rows are kept as sent and read by the client's own parser.
            let mut binary = Rows::lazy();
            conn.execute_rows(statement, values.iter(), &mut binary)
                .await
                .unwrap();
            let read: Vec<Vec<Option<String>>> = (0..binary.len())
                .map(|i| binary.row(i).expect("a row"))
                .collect();
            assert_eq!(read, rows);
        });
        let executed = server.calls().pop().expect("the execute");
        assert_eq!(
            executed.params,
            [Some("-7".to_string()), Some("a'b".to_string())]
        );
        assert_eq!(server.sessions(), 1);
    }
}
