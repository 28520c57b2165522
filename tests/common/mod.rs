//! A real PostgreSQL for the integration tests, started through stampede's own `server/` code on
//! a free port in 15400–15999 and stopped when the test binary exits.

// libc for signals and exit hooks the tests send and install.
#![allow(unsafe_code)]
#![allow(dead_code)]

pub mod browser;
pub mod cluster;
pub mod kube;
pub mod mariadb;
pub mod prometheus;
pub mod scrape;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use stampede::server::host::OsUser;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;

pub const PASSWORD: &str = "test-password-7d1";

pub struct TestServer {
    pub cluster: Cluster,
    pub user: String,
}

static SERVER: OnceLock<TestServer> = OnceLock::new();

extern "C" fn stop_server_at_exit() {
    if let Some(server) = SERVER.get() {
        let _ = server.cluster.stop();
        let _ = std::fs::remove_dir_all(&server.cluster.root);
    }
}

/// A port of 15400–15999 that nothing listens on and no other test program holds.
pub fn free_port() -> u16 {
    reserve_port(15400..16000)
}

/// A port of `range` this program holds until it exits. The suite runs test programs side by
/// side, and a port merely free now may be taken by another program before this one's server
/// listens on it: a program takes a port by locking a file named after it (flock, released
/// when the program exits, however it exits) and checking that nothing listens there yet.
pub fn reserve_port(range: std::ops::Range<u16>) -> u16 {
    use std::os::fd::AsRawFd;
    static HELD: Mutex<Vec<(u16, std::fs::File)>> = Mutex::new(Vec::new());
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join("stampede-test-ports");
    std::fs::create_dir_all(&dir).expect("the ports' lock folder");
    // Programs start their search at different places, so they seldom meet.
    let width = range.end - range.start;
    let offset = (std::process::id() % u32::from(width)) as u16;
    let candidates = (0..width).map(|i| range.start + (offset + i) % width);
    for port in candidates {
        if held.iter().any(|(taken, _)| *taken == port) {
            continue;
        }
        let Ok(lock) = std::fs::File::create(dir.join(port.to_string())) else {
            continue;
        };
        // SAFETY: flock on a descriptor this function owns.
        let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if locked && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            held.push((port, lock));
            return port;
        }
    }
    panic!("no free port in {}..{}", range.start, range.end)
}

pub fn server() -> &'static TestServer {
    SERVER.get_or_init(|| {
        let binaries = Binaries::find_best().expect("PostgreSQL binaries for the tests");
        // No autovacuum: its transactions would blur the commit-counter check.
        let settings = [
            ("max_connections", "200".to_string()),
            ("fsync", "off".to_string()),
            ("autovacuum", "off".to_string()),
            // Per-statement checks (the sysbench family); tests filter by their database.
            ("shared_preload_libraries", "pg_stat_statements".to_string()),
            // The database name in every line, so a test can count its own errors.
            ("log_line_prefix", "%m [%p] db=%d ".to_string()),
        ];
        let (cluster, user) = cluster::start_cluster("test", binaries, &settings);
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe { libc::atexit(stop_server_at_exit) };
        TestServer { cluster, user }
    })
}

impl TestServer {
    pub fn socket_dir(&self) -> String {
        self.cluster.socket_dir().display().to_string()
    }

    pub fn port(&self) -> String {
        self.cluster.port.to_string()
    }

    /// A libpq URI to `db` over TCP with the test user's password in it.
    pub fn url_with_password(&self, db: &str) -> String {
        format!(
            "postgresql://{}:{PASSWORD}@127.0.0.1:{}/{db}",
            self.user,
            self.port()
        )
    }

    /// Connection flags for stampede and pgbench: `-h <socket> -p <port> -U <user> <db>`.
    pub fn flags(&self, db: &str) -> Vec<String> {
        vec![
            "-h".into(),
            self.socket_dir(),
            "-p".into(),
            self.port(),
            "-U".into(),
            self.user.clone(),
            db.into(),
        ]
    }

    /// Creates a fresh database for one test, so tests run in parallel without sharing tables.
    pub fn create_database(&self, name: &str) -> String {
        self.psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name.to_string()
    }

    /// Runs several statements with psql, read from its standard input, and returns the
    /// unaligned, tuples-only rows they return (`-c` would show the last one's alone), NULL
    /// as `NULL`.
    pub fn psql_statements(&self, db: &str, sql: &str) -> String {
        use std::io::Write;
        let mut child = Command::new("psql")
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-P",
                "null=NULL",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
            ])
            .arg(self.socket_dir())
            .args(["-p", &self.port(), "-U", &self.user, "-d", db, "-f", "-"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("psql runs");
        let mut input = child.stdin.take().unwrap();
        input.write_all(sql.as_bytes()).unwrap();
        input.write_all(b";\n").unwrap();
        drop(input);
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "psql failed for {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Runs SQL with psql and returns its unaligned, tuples-only output.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let output = Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &self.port(), "-U", &self.user, "-d", db, "-c", sql])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql failed for {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Lines of the server log written for database `db` that contain `text`.
    pub fn log_lines(&self, db: &str, text: &str) -> usize {
        let log = std::fs::read_to_string(self.cluster.log_file()).unwrap_or_default();
        let tag = format!(" db={db} ");
        log.lines()
            .filter(|l| l.contains(&tag) && l.contains(text))
            .count()
    }

    pub fn pgbench(&self, db: &str, args: &[&str]) -> Output {
        self.pgbench_with_env(db, args, &[])
    }

    /// The real pgbench with `args`, the connection flags and only PATH and `env` set.
    pub fn pgbench_with_env(&self, db: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let pgbench = self.cluster.binaries.bin_dir.join("pgbench");
        let program = if pgbench.is_file() {
            pgbench
        } else {
            PathBuf::from("pgbench")
        };
        Command::new(program)
            .args(args)
            .args(self.flags(db))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .output()
            .expect("pgbench runs")
    }
}

/// Runs the stampede binary with a clean environment (no PG* variables).
/// `stampede COMMAND ARGS -h -p -U -d DB` against the test server (the tpcc and dbstress
/// subcommands take the connection as flags).
/// `stampede sysbench` with Debian's /usr/share/sysbench/<script>.lua (the Lua path) on `db`
/// of the suite's server: the words before the script's options and command.
pub fn bundled_lua(script: &str, db: &str) -> Vec<String> {
    let s = server();
    vec![
        "sysbench".to_string(),
        format!("/usr/share/sysbench/{script}.lua"),
        "--db-driver=pgsql".into(),
        format!("--pgsql-host={}", s.socket_dir()),
        format!("--pgsql-port={}", s.port()),
        format!("--pgsql-user={}", s.user),
        format!("--pgsql-db={db}"),
    ]
}

pub fn stampede_on(command: &str, db: &str, args: &[&str]) -> Output {
    let s = server();
    let (socket, port) = (s.socket_dir(), s.port());
    let mut all = vec![command];
    all.extend_from_slice(args);
    all.extend(["-h", &socket, "-p", &port, "-U", &s.user, "-d", db]);
    stampede(&all)
}

pub fn stampede(args: &[&str]) -> Output {
    stampede_with_env(args, &[])
}

/// The stampede binary with `args` and a clean environment (PATH, HOME and the machine's
/// `CCACHE_DIR`), not started.
pub fn stampede_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stampede"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "HOME",
            std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()),
        );
    // The machine's ccache (./test keeps one outside the clone): without it every clone's
    // source builds compile PostgreSQL cold into the clone's own test cache.
    if let Some(dir) = std::env::var_os("CCACHE_DIR") {
        command.env("CCACHE_DIR", dir);
    }
    command
}

/// Runs stampede with `args`, sends it SIGTERM once `text` is out on its standard error, and
/// returns its exit status with all it printed there.
pub fn interrupt_when(args: &[&str], text: &str) -> (std::process::ExitStatus, String) {
    let mut child = stampede_command(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = Watch::new(child.stderr.take().unwrap());
    progress.wait_for(text);
    sigterm(&child);
    let status = child.wait().unwrap();
    (status, progress.finish())
}

/// SIGTERM to a child the test started (as Ctrl-C's sibling, what `kill` sends).
pub fn sigterm(child: &std::process::Child) {
    // SAFETY: a signal to a process this test started and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

pub fn stampede_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = stampede_command(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("stampede runs")
}

/// The standard output of a command that must have succeeded (else both of its outputs).
pub fn succeeded(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A refusal of bad input: exit 1 and exactly `message` as stampede's one error line.
pub fn assert_refused(output: &Output, message: &str, context: &str) {
    assert_eq!(
        output.status.code(),
        Some(1),
        "{context}: {}",
        stderr(output)
    );
    assert_eq!(
        stderr(output).trim(),
        format!("stampede: error: {message}"),
        "{context}"
    );
}

/// The first word of each line after the header of `sysbench run --suite`: the tests' labels
/// and "postwrite:", in the order they ran.
pub fn suite_steps(text: &str) -> Vec<&str> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect()
}

/// The value after `prefix` on the line that starts with it, e.g. `tps = ` → "123.4".
pub fn line_value(text: &str, prefix: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
}

/// PostgreSQL 15's release tarball from Debian's source package: `STAMPEDE_TEST_PG_TARBALL`, or
/// `target/pgsrc/postgresql-15_*.orig.tar.bz2` where `.ci/fetch-pg-source` puts it.
pub fn pg15_tarball() -> PathBuf {
    if let Ok(path) = std::env::var("STAMPEDE_TEST_PG_TARBALL") {
        return PathBuf::from(path);
    }
    pg_tarball("15")
}

/// The release tarball of PostgreSQL `major` that .ci/fetch-pg-source put in target/pgsrc/.
pub fn pg_tarball(major: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pgsrc");
    let prefix = format!("postgresql-{major}_");
    std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with(&prefix) && name.ends_with(".orig.tar.bz2")
        })
        .unwrap_or_else(|| {
            panic!(
                "no PostgreSQL {major} tarball in {}: run .ci/fetch-pg-source",
                dir.display()
            )
        })
}

/// Rows of a query on a SQLite results database, every value as text (NULL as "NULL").
pub fn sqlite(db: &std::path::Path, query: &str) -> Vec<Vec<String>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn.prepare(query).unwrap();
    let columns = statement.column_count();
    statement
        .query_map([], |row| {
            (0..columns)
                .map(|i| {
                    row.get::<_, rusqlite::types::Value>(i).map(|v| match v {
                        rusqlite::types::Value::Null => "NULL".to_string(),
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Real(r) => r.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        rusqlite::types::Value::Blob(_) => "blob".into(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A lab's directory under the system's temp dir, reachable by the server users (0755), and
/// removed when dropped: after a failed assertion too. Declare it before any guard that stops
/// the lab's servers, so the servers stop first.
pub struct LabDir(PathBuf);

/// A path guard reads as the path it guards, wherever a path or an argument is taken.
macro_rules! reads_as_its_path {
    ($guard:ty) => {
        impl std::ops::Deref for $guard {
            type Target = std::path::Path;
            fn deref(&self) -> &std::path::Path {
                &self.0
            }
        }

        impl AsRef<std::path::Path> for $guard {
            fn as_ref(&self) -> &std::path::Path {
                &self.0
            }
        }

        impl AsRef<std::ffi::OsStr> for $guard {
            fn as_ref(&self) -> &std::ffi::OsStr {
                self.0.as_os_str()
            }
        }
    };
}

reads_as_its_path!(LabDir);
reads_as_its_path!(TempFile);

impl LabDir {
    pub fn new(name: &str) -> LabDir {
        let dir = std::env::temp_dir().join(format!("stampede-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chmod").arg("755").arg(&dir).status();
        LabDir(dir)
    }
}

impl Drop for LabDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a lab spec into `dir` and returns its path.
pub fn lab_spec(dir: &std::path::Path, text: &str) -> PathBuf {
    let spec = dir.join("lab.toml");
    std::fs::write(&spec, text).unwrap();
    spec
}

/// Whether `needle` occurs anywhere in the file's bytes.
pub fn file_holds(file: &std::path::Path, needle: &str) -> bool {
    let bytes = std::fs::read(file).unwrap_or_default();
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A number from a query's text output.
pub fn number(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("a number: {text:?}"))
}

/// How many of `db`'s sessions meet `condition` (SQL over pg_stat_activity's columns).
pub fn sessions_in(s: &TestServer, db: &str, condition: &str) -> String {
    s.psql(
        "postgres",
        &format!("SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' AND {condition}"),
    )
}

/// A psql session (application name `lock-holder`) that holds ACCESS EXCLUSIVE on `table` of
/// `db`, returned once the server shows it holding the lock; `release_lock` ends it.
pub fn hold_lock(s: &TestServer, db: &str, table: &str) -> std::process::Child {
    let holder = std::process::Command::new("psql")
        .args([
            "-X",
            "-q",
            "-h",
            &s.socket_dir(),
            "-p",
            &s.port(),
            "-U",
            &s.user,
            "-d",
            db,
        ])
        .arg("-c")
        .arg(format!(
            "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600); COMMIT;"
        ))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PGAPPNAME", "lock-holder")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the lock held", || {
        sessions_in(
            s,
            db,
            "application_name = 'lock-holder' AND query ~ 'pg_sleep'",
        ) == "1"
    });
    holder
}

/// Ends `hold_lock`'s session: psql and its backend.
pub fn release_lock(s: &TestServer, db: &str, mut holder: std::process::Child) {
    let _ = holder.kill();
    let _ = holder.wait();
    s.psql(
        "postgres",
        &format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}' AND application_name = 'lock-holder'"),
    );
}

/// Polls `event` until it holds. The deadline only ends a hung run (a lab that makes no
/// progress); it is no assertion on how long the event takes.
pub fn wait_until(what: &str, mut event: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while !event() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How long a watched child may print nothing before it counts as hung.
const SILENCE_OF_A_HANG: std::time::Duration = std::time::Duration::from_secs(600);

/// A child's output stream read on a thread as it comes, so that a test can wait for the text
/// that marks an event (a lab's `run 3/8:` line, a sysbench interval line) and place a fault
/// there, then take the whole text.
pub struct Watch {
    chunks: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl Watch {
    pub fn new(mut stream: impl std::io::Read + Send + 'static) -> Watch {
        let (send, chunks) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read @ 1..) = stream.read(&mut buffer) {
                let text = String::from_utf8_lossy(&buffer[..read]).into_owned();
                if send.send(text).is_err() {
                    break;
                }
            }
        });
        Watch {
            chunks,
            seen: String::new(),
        }
    }

    /// Waits until `text` has appeared in the stream; panics if the stream ends without it or
    /// a hung child prints nothing for 10 minutes (a deadline for a hang, not a timing
    /// assertion: a PostgreSQL build's `make` is silent for minutes on a busy machine).
    pub fn wait_for(&mut self, text: &str) {
        use std::sync::mpsc::RecvTimeoutError;
        while !self.seen.contains(text) {
            match self.chunks.recv_timeout(SILENCE_OF_A_HANG) {
                Ok(chunk) => self.seen.push_str(&chunk),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("nothing more came, and no {text:?}: {}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the stream ended without {text:?}: {}", self.seen)
                }
            }
        }
    }

    /// Waits until `text` has appeared after the first `marker` (a lab's `run` line of a later
    /// step, when earlier steps printed the same words).
    pub fn wait_for_after(&mut self, marker: &str, text: &str) {
        self.wait_for(marker);
        let start = self.seen.find(marker).expect("seen") + marker.len();
        while !self.seen[start..].contains(text) {
            match self.chunks.recv_timeout(SILENCE_OF_A_HANG) {
                Ok(chunk) => self.seen.push_str(&chunk),
                Err(_) => panic!("no {text:?} after {marker:?}: {}", self.seen),
            }
        }
    }

    /// Everything the stream carried, once it has ended.
    pub fn finish(mut self) -> String {
        while let Ok(chunk) = self.chunks.recv() {
            self.seen.push_str(&chunk);
        }
        self.seen
    }
}

/// The client sessions running one of `statement_pattern`'s statements (a POSIX regular
/// expression over `pg_stat_activity.query`) on a lab's cluster; 0 when the server is not up.
pub fn lab_sessions_running(data_dir: &std::path::Path, statement_pattern: &str) -> usize {
    lab_session_pids(
        data_dir,
        &format!("state = 'active' AND query ~ '{statement_pattern}'"),
    )
    .len()
}

/// The process ids of a lab cluster's client sessions (other than the query's own) that match
/// `condition` (SQL over `pg_stat_activity`), reached through the `postmaster.pid` in
/// `data_dir` (port on line 4, socket directory on line 5); none when the server is not up.
pub fn lab_session_pids(data_dir: &std::path::Path, condition: &str) -> Vec<i32> {
    let sql = format!(
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' \
         AND pid <> pg_backend_pid() AND {condition}"
    );
    lab_psql(data_dir, "postgres", &sql)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// A query's unaligned output on database `db` of the lab cluster whose data directory is
/// `data_dir` (its port and socket read from `postmaster.pid`); None when the server is not up
/// or the query fails.
pub fn lab_psql(data_dir: &std::path::Path, db: &str, sql: &str) -> Option<String> {
    let pid_file = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    let lines: Vec<&str> = pid_file.lines().collect();
    let (port, socket) = (lines.get(3)?, lines.get(4)?);
    let output = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-h", socket, "-p", port, "-U"])
        .arg(lab_superuser())
        .args(["-d", db, "-c", sql])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("psql runs");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Processes stopped with SIGSTOP (a server that hangs), continued when dropped: after a
/// failed assertion too, so that no test leaves a frozen backend behind.
pub struct Frozen(pub Vec<i32>);

impl Frozen {
    pub fn stop(pids: Vec<i32>) -> Frozen {
        for pid in &pids {
            unsafe { libc::kill(*pid, libc::SIGSTOP) };
        }
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for pid in &self.0 {
            unsafe { libc::kill(*pid, libc::SIGCONT) };
        }
    }
}

/// The superuser of a lab's clusters, as `server/provision.rs` chooses it: the server user
/// when stampede runs as root, else the user running it.
fn lab_superuser() -> String {
    match OsUser::for_server() {
        Ok(Some(user)) => user.name,
        _ => std::env::var("USER").unwrap_or_else(|_| "postgres".into()),
    }
}

impl TestServer {
    /// Resets pg_stat_statements for database `db` alone.
    pub fn reset_statements(&self, db: &str) {
        self.psql(
            db,
            "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)",
        );
    }
}

/// A file in the system's temp dir, named `stampede-<name>` with this process's id, absent at
/// first and removed when dropped: after a failed assertion too.
pub struct TempFile(PathBuf);

impl TempFile {
    pub fn new(name: &str) -> TempFile {
        let (stem, extension) = match name.rsplit_once('.') {
            Some((stem, extension)) => (stem, format!(".{extension}")),
            None => (name, String::new()),
        };
        let path =
            std::env::temp_dir().join(format!("stampede-{stem}-{}{extension}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A run the watchdog ended (`--stall-timeout 2s`) with both of its two clients stuck: exit 2
/// and the watchdog's sentence, with the cancelled queries.
pub fn assert_abandoned_by_the_watchdog(output: &Output) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    assert!(
        stderr(output).contains(
            "no progress for 2 s: 2 of 2 clients waited that long for the server, and the run was abandoned (their queries cancelled, their connections closed)"
        ),
        "{}",
        stderr(output)
    );
}

/// A `--json` report's `fairness`: `clients` per-client counts that add up to `total` (a count
/// the caller checked against the server), with min, max and Jain's index computed from them;
/// and the text summary's `client fairness:` line. Returns the per-client counts.
pub fn assert_fairness(
    report: &serde_json::Value,
    text: &str,
    clients: usize,
    total: u64,
) -> Vec<u64> {
    let fairness = &report["fairness"];
    let per_client: Vec<u64> = fairness["per_client"]
        .as_array()
        .unwrap_or_else(|| panic!("no fairness.per_client in {report}"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per_client.len(), clients, "{fairness}");
    assert_eq!(per_client.iter().sum::<u64>(), total, "{fairness}");
    assert_eq!(fairness["min"].as_u64(), per_client.iter().copied().min());
    assert_eq!(fairness["max"].as_u64(), per_client.iter().copied().max());
    let sum: f64 = per_client.iter().map(|&n| n as f64).sum();
    let squares: f64 = per_client.iter().map(|&n| (n as f64).powi(2)).sum();
    let index = fairness["jain_index"].as_f64().unwrap();
    assert!(
        (index - sum * sum / (clients as f64 * squares)).abs() < 1e-9,
        "{index}"
    );
    let line = format!(
        "client fairness: min {} / median ",
        fairness["min"].as_u64().unwrap()
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with(&line) && l.ends_with(&format!("Jain's index {index:.4}"))),
        "{text}"
    );
    per_client
}
