//! Scripted servers for unit tests (cargo feature `scripted-server`): PostgreSQL's
//! (`postgres.rs`) and MySQL's (`mysql.rs`, as MariaDB speaks it). Each listens on a Unix socket
//! in a folder of its own and speaks the server's side of its protocol, answering each
//! statement as the test's script says: rows, a command tag, an error with its SQLSTATE (and
//! MySQL's error number), an answer after a delay, no answer at all until cancelled or
//! disconnected, or a dropped connection. So the measured path (connections, the client state
//! machine, the thread's waits) runs as it runs against a server, in milliseconds, and a test
//! says exactly what the server did.

mod mysql;
mod postgres;

use std::collections::HashMap;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use mysql::ScriptedMysqlServer;
pub use postgres::ScriptedServer;

/// What the server does with one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Rows of text columns (`SELECT n` on PostgreSQL; a result set on MySQL).
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    /// No rows; this command tag (`UPDATE 1`; an OK packet on MySQL).
    Done(String),
    /// An error with this SQLSTATE and message; on MySQL with `number` (ER_UNKNOWN_ERROR's
    /// 1105 when None), which is what MySQL's clients classify by.
    Error {
        code: String,
        message: String,
        number: Option<u16>,
    },
    /// This answer after sleeping so long.
    After(Duration, Box<Answer>),
    /// Nothing until the statement is cancelled (PostgreSQL's cancel request, answered with
    /// `57014`; MySQL's `KILL QUERY`, answered with 1317) or the client goes away.
    Stall,
    /// The connection closes, as when a backend is terminated.
    Hangup,
}

impl Answer {
    pub fn error(code: &str, message: &str) -> Answer {
        Answer::Error {
            code: code.into(),
            message: message.into(),
            number: None,
        }
    }

    /// A MySQL error: its number, SQLSTATE and message (`1213`, `40001`, "Deadlock found…").
    pub fn mysql_error(number: u16, code: &str, message: &str) -> Answer {
        Answer::Error {
            code: code.into(),
            message: message.into(),
            number: Some(number),
        }
    }

    /// One row of one column.
    pub fn value(column: &str, value: &str) -> Answer {
        Answer::Rows {
            columns: vec![column.into()],
            rows: vec![vec![Some(value.into())]],
        }
    }
}

/// One statement as the server got it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub text: String,
    /// The parameters bound to it (PostgreSQL's extended protocol, MySQL's prepared
    /// statements), as text (None: NULL).
    pub params: Vec<Option<String>>,
    /// Which connection sent it (0, 1, … in the order they connected).
    pub session: usize,
    /// How many times this text has been received, this one included (1 for the first).
    pub nth: usize,
}

type Script = dyn Fn(&Call) -> Option<Answer> + Send + Sync;

/// What the server saw, for the test's checks.
#[derive(Default)]
struct Seen {
    calls: Vec<Call>,
    by_text: HashMap<String, usize>,
    cancels: usize,
    sessions: usize,
    /// Statements prepared (MySQL's COM_STMT_PREPARE), per session and text.
    prepares: HashMap<(usize, String), usize>,
}

impl Seen {
    /// Records one statement of session `session` and returns it as the script sees it.
    fn record(&mut self, text: &str, params: Vec<Option<String>>, session: usize) -> Call {
        let nth = self.by_text.entry(text.to_string()).or_default();
        *nth += 1;
        let call = Call {
            text: text.to_string(),
            params,
            session,
            nth: *nth,
        };
        self.calls.push(call.clone());
        call
    }
}

/// What a server's sessions share: the test's script, the record, and each session's flag
/// that a cancel request (PostgreSQL) or a `KILL QUERY` (MySQL) sets for its running statement.
struct Shared {
    script: Box<Script>,
    seen: Mutex<Seen>,
    interrupts: Mutex<Vec<Arc<AtomicBool>>>,
    stopping: AtomicBool,
}

impl Shared {
    /// Records one statement of `session`; the script's answer to it, if it has one.
    fn call(&self, text: &str, params: Vec<Option<String>>, session: usize) -> Option<Answer> {
        let call = self.seen().record(text, params, session);
        (self.script)(&call)
    }

    /// A new session's number and the flag that interrupts its running statement.
    fn new_session(&self) -> (usize, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        let mut flags = self
            .interrupts
            .lock()
            .expect("no thread panics holding this lock");
        flags.push(flag.clone());
        (flags.len() - 1, flag)
    }

    /// Counts an interruption and interrupts session `number`'s statement, if it exists.
    fn interrupt(&self, number: Option<usize>) {
        self.seen().cancels += 1;
        let flags = self
            .interrupts
            .lock()
            .expect("no thread panics holding this lock");
        if let Some(flag) = number.and_then(|n| flags.get(n)) {
            flag.store(true, Ordering::SeqCst);
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .expect("no session panics holding the record")
    }
}

/// A server's socket in a folder of its own, the thread accepting on it (each connection
/// served on a thread of its own), and what the test reads of it: the record. Stopped and
/// its folder removed when dropped.
pub struct Recorded {
    dir: PathBuf,
    socket: PathBuf,
    shared: Arc<Shared>,
    accepter: Option<std::thread::JoinHandle<()>>,
}

impl Recorded {
    fn listen(
        socket_name: &str,
        script: Box<Script>,
        serve: fn(UnixStream, Arc<Shared>) -> io::Result<()>,
    ) -> Recorded {
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let number = SERVERS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("stampede-scripted-{}-{number}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scripted server's folder");
        let socket = dir.join(socket_name);
        let listener = UnixListener::bind(&socket).expect("the scripted server's socket");
        let shared = Arc::new(Shared {
            script,
            seen: Mutex::default(),
            interrupts: Mutex::default(),
            stopping: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        let accepter = std::thread::spawn(move || {
            for connection in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(connection) = connection else { continue };
                let shared = accepting.clone();
                // A session's thread ends when its client goes away (tests close theirs).
                std::thread::spawn(move || serve(connection, shared));
            }
        });
        Recorded {
            dir,
            socket,
            shared,
            accepter: Some(accepter),
        }
    }

    /// How many times the server received `text`.
    pub fn calls_of(&self, text: &str) -> usize {
        self.shared.seen().by_text.get(text).copied().unwrap_or(0)
    }

    /// Every statement received, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.seen().calls.clone()
    }

    /// Statements interrupted from another connection: PostgreSQL's cancel requests,
    /// MySQL's `KILL QUERY`s.
    pub fn cancels(&self) -> usize {
        self.shared.seen().cancels
    }

    /// Connections that completed the start-up.
    pub fn sessions(&self) -> usize {
        self.shared.seen().sessions
    }

    /// How many times each session prepared `text` (MySQL's COM_STMT_PREPARE), in session
    /// order.
    pub fn prepares_of(&self, text: &str) -> Vec<usize> {
        let seen = self.shared.seen();
        let mut counts: Vec<(usize, usize)> = seen
            .prepares
            .iter()
            .filter(|((_, prepared), _)| prepared == text)
            .map(|((session, _), count)| (*session, *count))
            .collect();
        counts.sort();
        counts.into_iter().map(|(_, count)| count).collect()
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stopping`.
        let _ = UnixStream::connect(&self.socket);
        if let Some(accepter) = self.accepter.take() {
            let _ = accepter.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A statement's first word in capitals, without a semicolon: what decides its usual answer.
fn first_word(text: &str) -> String {
    let word = text.split_whitespace().next().unwrap_or("");
    word.trim_end_matches(';').to_ascii_uppercase()
}

/// Whether the client closed its connection, waiting up to 5 ms to see it (POLLRDHUP reports
/// the close without taking any byte the client sent).
fn client_left(socket: &UnixStream) -> io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags};
    use std::os::fd::AsFd;
    // Linux's POLLRDHUP, which nix names only on some targets.
    let peer_closed = PollFlags::from_bits_retain(0x2000);
    let mut wanted = [PollFd::new(socket.as_fd(), peer_closed)];
    poll(&mut wanted, 5u16).map_err(io::Error::from)?;
    let gone = peer_closed | PollFlags::POLLHUP | PollFlags::POLLERR;
    Ok(wanted[0]
        .revents()
        .is_some_and(|events| events.intersects(gone)))
}
