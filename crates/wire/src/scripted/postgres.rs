//! The scripted PostgreSQL server: start-up without a password, the simple and the extended
//! query flow, Sync, cancel requests, transaction status.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{client_left, first_word, Answer, Call, Recorded, Shared};
use stampede_conn::ConnSpec;

/// A running scripted PostgreSQL server; it reads as its record (`Recorded`: the calls, the
/// cancel requests, the sessions).
pub struct ScriptedServer {
    recorded: Recorded,
    port: u16,
}

impl ScriptedServer {
    /// Starts a server that answers each statement with `script`'s answer, or when it returns
    /// None as a server would answer the usual ones: `BEGIN`, `COMMIT`, `ROLLBACK`, `END`
    /// with their tags, any `SELECT` with one row holding `1`, anything else with its first
    /// word as the tag. A statement inside a failed transaction block gets `25P02`.
    pub fn start(script: impl Fn(&Call) -> Option<Answer> + Send + Sync + 'static) -> Self {
        let port = 5432;
        let socket = format!(".s.PGSQL.{port}");
        let recorded = Recorded::listen(&socket, Box::new(script), |connection, shared| {
            Session::open(connection, shared)?.serve()
        });
        ScriptedServer { recorded, port }
    }

    /// Where a client connects: the socket's folder and port, user and database `test`.
    pub fn spec(&self) -> ConnSpec {
        ConnSpec::on_socket(&self.recorded.dir, self.port, "test", "test")
    }
}

impl std::ops::Deref for ScriptedServer {
    type Target = Recorded;

    fn deref(&self) -> &Recorded {
        &self.recorded
    }
}

const PROTOCOL_3: i32 = 196_608;
const CANCEL_REQUEST: i32 = 80_877_102;
const SSL_REQUEST: i32 = 80_877_103;
const KEY_BASE: i32 = 1000;

struct Session {
    socket: UnixStream,
    shared: Arc<Shared>,
    number: usize,
    cancelled: Arc<AtomicBool>,
    /// ReadyForQuery's status: idle, in a block, in a failed block.
    status: u8,
    /// Extended protocol: prepared texts by name, and the bound statement and parameters.
    prepared: HashMap<String, String>,
    bound: Option<(String, Vec<Option<String>>)>,
    /// An error in the extended flow: messages are skipped until Sync.
    skipping: bool,
    /// The bound portal was described: its RowDescription (or NoData) precedes its rows.
    describe: bool,
    out: Vec<u8>,
}

impl Session {
    /// Reads the start-up (answering an SSL request with "no", taking a cancel request) and
    /// greets the client; None for a cancel request's connection.
    fn open(mut socket: UnixStream, shared: Arc<Shared>) -> io::Result<Session> {
        loop {
            let length = read_i32(&mut socket)?;
            // A start-up packet holds at least its length and a code; a cancel request 16 bytes.
            if !(8..=10_000).contains(&length) {
                return Err(io::ErrorKind::InvalidData.into());
            }
            let mut body = vec![0; length as usize - 4];
            socket.read_exact(&mut body)?;
            let code = i32::from_be_bytes(body[..4].try_into().expect("a slice of 4 is 4 bytes"));
            match code {
                SSL_REQUEST => socket.write_all(b"N")?,
                CANCEL_REQUEST if body.len() >= 12 => {
                    let key =
                        i32::from_be_bytes(body[4..8].try_into().expect("a slice of 4 is 4 bytes"));
                    shared.interrupt(usize::try_from(key - KEY_BASE).ok());
                    return Err(io::ErrorKind::ConnectionAborted.into());
                }
                PROTOCOL_3 => break,
                _ => return Err(io::ErrorKind::InvalidData.into()),
            }
        }
        let (number, cancelled) = shared.new_session();
        shared.seen().sessions += 1;
        let mut session = Session {
            socket,
            shared,
            number,
            cancelled,
            status: b'I',
            prepared: HashMap::new(),
            bound: None,
            skipping: false,
            describe: false,
            out: Vec::new(),
        };
        session.message(b'R', &0i32.to_be_bytes());
        session.message(b'S', b"server_version\x0017.0 (scripted)\x00");
        let mut key = (KEY_BASE + number as i32).to_be_bytes().to_vec();
        key.extend_from_slice(&7i32.to_be_bytes());
        session.message(b'K', &key);
        session.ready();
        session.flush()?;
        Ok(session)
    }

    fn serve(mut self) -> io::Result<()> {
        loop {
            let mut tag = [0u8; 1];
            if self.socket.read(&mut tag)? == 0 {
                return Ok(());
            }
            let length = read_i32(&mut self.socket)?;
            let mut body = vec![0; (length - 4).max(0) as usize];
            self.socket.read_exact(&mut body)?;
            let mut fields = Fields(&body);
            match tag[0] {
                b'Q' => {
                    let text = fields.text();
                    if !self.run(&text, Vec::new(), true)? {
                        return Ok(());
                    }
                    self.skipping = false;
                    self.ready();
                }
                b'X' => return Ok(()),
                b'S' => {
                    self.skipping = false;
                    self.ready();
                }
                _ if self.skipping => {}
                b'P' => {
                    let name = fields.text();
                    let text = fields.text();
                    self.prepared.insert(name, text);
                    self.message(b'1', &[]);
                }
                b'B' => {
                    let _portal = fields.text();
                    let statement = fields.text();
                    let formats = fields.i16();
                    for _ in 0..formats {
                        fields.i16();
                    }
                    let params = (0..fields.i16()).map(|_| fields.value()).collect();
                    let text = self.prepared.get(&statement).cloned().unwrap_or_default();
                    self.bound = Some((text, params));
                    self.message(b'2', &[]);
                }
                // The portal's description goes out with its rows (`run`), in the same order.
                b'D' => self.describe = true,
                b'E' => {
                    let (text, params) = self.bound.take().unwrap_or_default();
                    let describe = std::mem::take(&mut self.describe);
                    if !self.run(&text, params, describe)? {
                        return Ok(());
                    }
                }
                b'C' => self.message(b'3', &[]),
                b'H' => {}
                _ => return Err(io::ErrorKind::InvalidData.into()),
            }
            if matches!(tag[0], b'Q' | b'S' | b'H') {
                self.flush()?;
            }
        }
    }

    /// Answers one statement; false when the connection is to close.
    fn run(&mut self, text: &str, params: Vec<Option<String>>, describe: bool) -> io::Result<bool> {
        let answer = self
            .shared
            .call(text, params, self.number)
            .unwrap_or_else(|| self.usual_answer(text));
        self.answer(text, answer, describe)
    }

    fn usual_answer(&self, text: &str) -> Answer {
        let word = first_word(text);
        match word.as_str() {
            "COMMIT" | "END" if self.status == b'E' => Answer::Done("ROLLBACK".into()),
            "COMMIT" | "END" | "ROLLBACK" => {
                Answer::Done(if word == "END" { "COMMIT".into() } else { word })
            }
            _ if self.status == b'E' => Answer::error(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ),
            "SELECT" => Answer::value("?column?", "1"),
            "" => Answer::Done(String::new()),
            _ => Answer::Done(word),
        }
    }

    fn answer(&mut self, text: &str, answer: Answer, describe: bool) -> io::Result<bool> {
        match answer {
            Answer::Rows { columns, rows } => {
                if describe {
                    self.row_description(&columns);
                }
                for row in &rows {
                    self.data_row(row);
                }
                self.complete(text, &format!("SELECT {}", rows.len()));
            }
            Answer::Done(tag) => {
                if describe {
                    self.message(b'n', &[]);
                }
                self.complete(text, &tag);
            }
            Answer::Error { code, message, .. } => {
                let mut body = Vec::new();
                for (field, value) in [
                    (b'S', "ERROR"),
                    (b'V', "ERROR"),
                    (b'C', &code),
                    (b'M', &message),
                ] {
                    body.push(field);
                    body.extend_from_slice(value.as_bytes());
                    body.push(0);
                }
                body.push(0);
                self.message(b'E', &body);
                if self.status == b'T' {
                    self.status = b'E';
                }
                self.skipping = true;
            }
            Answer::After(delay, then) => {
                std::thread::sleep(delay);
                return self.answer(text, *then, describe);
            }
            Answer::Stall => return self.stall(text, describe),
            Answer::Hangup => return Ok(false),
        }
        Ok(true)
    }

    /// Waits for a cancel request (then answers as a cancelled backend) or for the client to
    /// close its connection.
    fn stall(&mut self, text: &str, describe: bool) -> io::Result<bool> {
        self.flush()?;
        loop {
            if self.cancelled.swap(false, Ordering::SeqCst) {
                let cancelled = Answer::error("57014", "canceling statement due to user request");
                return self.answer(text, cancelled, describe);
            }
            if client_left(&self.socket)? {
                return Ok(false);
            }
        }
    }

    fn complete(&mut self, text: &str, tag: &str) {
        let word = first_word(text);
        self.status = match (word.as_str(), self.status) {
            ("BEGIN" | "START", _) => b'T',
            ("COMMIT" | "END" | "ROLLBACK", _) => b'I',
            (_, status) => status,
        };
        let mut body = tag.as_bytes().to_vec();
        body.push(0);
        self.message(b'C', &body);
    }

    fn row_description(&mut self, columns: &[String]) {
        let mut body = (columns.len() as i16).to_be_bytes().to_vec();
        for column in columns {
            body.extend_from_slice(column.as_bytes());
            body.push(0);
            body.extend_from_slice(&0i32.to_be_bytes()); // table
            body.extend_from_slice(&0i16.to_be_bytes()); // column number
            body.extend_from_slice(&25i32.to_be_bytes()); // text
            body.extend_from_slice(&(-1i16).to_be_bytes());
            body.extend_from_slice(&(-1i32).to_be_bytes());
            body.extend_from_slice(&0i16.to_be_bytes()); // text format
        }
        self.message(b'T', &body);
    }

    fn data_row(&mut self, row: &[Option<String>]) {
        let mut body = (row.len() as i16).to_be_bytes().to_vec();
        for value in row {
            match value {
                Some(value) => {
                    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
                    body.extend_from_slice(value.as_bytes());
                }
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        self.message(b'D', &body);
    }

    fn ready(&mut self) {
        let status = self.status;
        self.message(b'Z', &[status]);
    }

    fn message(&mut self, tag: u8, body: &[u8]) {
        self.out.push(tag);
        self.out
            .extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        self.out.extend_from_slice(body);
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.write_all(&self.out)?;
        self.out.clear();
        Ok(())
    }
}

fn read_i32(socket: &mut UnixStream) -> io::Result<i32> {
    let mut bytes = [0u8; 4];
    socket.read_exact(&mut bytes)?;
    Ok(i32::from_be_bytes(bytes))
}

/// A frontend message's body, read field by field.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn text(&mut self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        let text = String::from_utf8_lossy(&self.0[..end]).into_owned();
        self.0 = &self.0[(end + 1).min(self.0.len())..];
        text
    }

    fn i16(&mut self) -> i16 {
        let value = i16::from_be_bytes(self.0[..2].try_into().expect("a slice of 2 is 2 bytes"));
        self.0 = &self.0[2..];
        value
    }

    fn value(&mut self) -> Option<String> {
        let length = i32::from_be_bytes(self.0[..4].try_into().expect("a slice of 4 is 4 bytes"));
        self.0 = &self.0[4..];
        if length < 0 {
            return None;
        }
        let (value, rest) = self.0.split_at(length as usize);
        self.0 = rest;
        Some(String::from_utf8_lossy(value).into_owned())
    }
}
