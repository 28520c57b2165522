//! `stampede capture` and `stampede replay` against real servers: a workload (pgbench's
//! tpcb-like in simple mode beside a custom script in prepared mode, several sessions, over
//! 10 s) logged by the server in its three formats, captured from each, replayed on a fresh
//! copy of its starting data — pg_stat_statements' calls per statement and the final table
//! contents equal the original run's — and bad input refused with the reason and nothing
//! written or sent.

#![allow(unsafe_code)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::scrape::{Answers, Scrapes};
use common::{stampede, stderr, stdout, succeeded, TempFile};
use serde_json::Value;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;

/// A server of the replay tests' own: the logging collector writes stderr (pgreplay's prefix),
/// csvlog and jsonlog at once, every statement, connection and disconnection.
struct LoggedServer {
    cluster: Cluster,
    user: String,
}

static LOGGED: OnceLock<LoggedServer> = OnceLock::new();

extern "C" fn stop_logged_at_exit() {
    if let Some(server) = LOGGED.get() {
        let _ = server.cluster.stop();
        let _ = std::fs::remove_dir_all(&server.cluster.root);
    }
}

fn start_cluster(name: &str, settings: &[(&str, String)]) -> LoggedServer {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries for the tests");
    let (cluster, user) =
        common::cluster::start_cluster(&format!("replay-{name}"), binaries, settings);
    LoggedServer { cluster, user }
}

fn logged() -> &'static LoggedServer {
    LOGGED.get_or_init(|| {
        let settings = [
            ("fsync", "off".to_string()),
            ("autovacuum", "off".to_string()),
            ("max_connections", "100".to_string()),
            ("shared_preload_libraries", "pg_stat_statements".to_string()),
            ("logging_collector", "on".to_string()),
            ("log_destination", "stderr,csvlog,jsonlog".to_string()),
            ("log_rotation_size", "0".to_string()),
            ("log_line_prefix", "%m|%u|%d|%c|".to_string()),
            ("log_statement", "all".to_string()),
            ("log_connections", "on".to_string()),
            ("log_disconnections", "on".to_string()),
        ];
        let server = start_cluster("logged", &settings);
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe { libc::atexit(stop_logged_at_exit) };
        server
    })
}

/// Stops a server of one test's own and removes its folder when the test ends, failed
/// assertions included.
struct Stopped<'a>(&'a LoggedServer);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        let _ = self.0.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.0.cluster.root);
    }
}

impl LoggedServer {
    fn program(&self, name: &str) -> Command {
        let mut command = Command::new(self.cluster.binaries.bin_dir.join(name));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .args(["-h", &self.socket(), "-p", &self.cluster.port.to_string()])
            .args(["-U", &self.user]);
        command
    }

    fn socket(&self) -> String {
        self.cluster.socket_dir().display().to_string()
    }

    fn psql(&self, db: &str, sql: &str) -> String {
        let output = self
            .program("psql")
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql])
            .output()
            .expect("psql runs");
        assert!(output.status.success(), "{sql}: {}", stderr(&output));
        stdout(&output).trim().to_string()
    }

    fn flags(&self, db: &str) -> Vec<String> {
        vec![
            "-h".into(),
            self.socket(),
            "-p".into(),
            self.cluster.port.to_string(),
            "-U".into(),
            self.user.clone(),
            "-d".into(),
            db.into(),
        ]
    }

    /// The collector's files of one format, in the order it wrote them.
    fn log_files(&self, extension: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.cluster.data_dir().join("log"))
            .expect("the log directory")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .collect();
        files.sort();
        files
    }

    /// `CREATE DATABASE name TEMPLATE pristine`, replacing one of that name.
    fn copy_of_pristine(&self, name: &str) {
        self.psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"));
        self.psql(
            "postgres",
            &format!("CREATE DATABASE {name} TEMPLATE pristine"),
        );
    }

    /// pg_stat_statements' calls by statement in `db` (statements that ran), the test's own
    /// contents query aside (the capture holds it: it ran on `app` before the capture).
    fn calls(&self, db: &str) -> Vec<String> {
        let rows = self.psql(
            "postgres",
            &format!(
                "SELECT s.calls || ' ' || regexp_replace(s.query, '\\s+', ' ', 'g') FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '{db}' AND s.calls > 0 AND s.query NOT LIKE '%md5(string_agg%' ORDER BY 1"
            ),
        );
        rows.lines().map(str::to_string).collect()
    }

    /// The tables' contents, as digests: balances (sums commute, so any order of the same
    /// updates gives them), history and notes as multisets (their times aside).
    fn contents(&self, db: &str) -> String {
        self.psql(
            db,
            "SELECT (SELECT md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts) || ' ' || \
             (SELECT md5(string_agg(tid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers) || ' ' || \
             (SELECT md5(string_agg(bid || ':' || bbalance, ',' ORDER BY bid)) FROM pgbench_branches) || ' ' || \
             (SELECT count(*) || md5(coalesce(string_agg(tid || ':' || bid || ':' || aid || ':' || delta, ',' ORDER BY tid, bid, aid, delta), '')) FROM pgbench_history) || ' ' || \
             (SELECT count(*) || md5(coalesce(string_agg(aid || ':' || k || ':' || note, ',' ORDER BY aid, k, note), '')) FROM replay_notes)",
        )
    }
}

/// The custom script: parameters of several kinds, a constant with quotes and a `$1` inside
/// it, an update that commutes, an insert of the values.
const CUSTOM_SCRIPT: &str = r#"\set id random(1, 100000)
\set k random(1, 1000)
\set tid random(1, 10)
SELECT abalance FROM pgbench_accounts WHERE aid = :id;
UPDATE pgbench_tellers SET tbalance = tbalance + :k WHERE tid = :tid;
INSERT INTO replay_notes (aid, k, note) VALUES (:id, :k, 'it''s $1, ' || :k::text);
"#;

/// What the original workload left: its pg_stat_statements calls and its tables' contents.
struct Original {
    calls: Vec<String>,
    contents: String,
}

static ORIGINAL: OnceLock<Original> = OnceLock::new();

/// The workload, run once: pgbench -i into `pristine`, a copy `app` of it, then on `app`
/// at once tpcb-like (simple protocol, 3 clients) and the custom script (prepared, 2
/// clients), rate-limited, for 11 s, and one failing statement from psql.
fn original() -> &'static Original {
    ORIGINAL.get_or_init(|| {
        let s = logged();
        s.psql("postgres", "CREATE EXTENSION pg_stat_statements");
        s.psql("postgres", "CREATE DATABASE pristine");
        let init = s
            .program("pgbench")
            .args(["-i", "-s", "1", "-q", "pristine"])
            .output()
            .unwrap();
        assert!(init.status.success(), "{}", stderr(&init));
        s.psql(
            "pristine",
            "CREATE TABLE replay_notes (aid int, k int, note text); CREATE EXTENSION pg_stat_statements",
        );
        s.copy_of_pristine("app");
        let script = TempFile::new("replay-custom.sql");
        std::fs::write(&*script, CUSTOM_SCRIPT).unwrap();
        let simple = s
            .program("pgbench")
            .args(["-b", "tpcb-like", "-M", "simple", "-c", "3", "-R", "60", "-T", "11", "app"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let prepared = s
            .program("pgbench")
            .args(["-M", "prepared", "-c", "2", "-R", "40", "-T", "11", "-n", "-f"])
            .arg(&*script)
            .arg("app")
            .output()
            .unwrap();
        let simple = simple.wait_with_output().unwrap();
        assert!(prepared.status.success(), "{}", stderr(&prepared));
        assert!(simple.status.success(), "{}", stderr(&simple));
        let failing = s
            .program("psql")
            .args(["-X", "-d", "app", "-c", "SELECT 1/0"])
            .output()
            .unwrap();
        assert!(!failing.status.success());
        Original {
            calls: s.calls("app"),
            contents: s.contents("app"),
        }
    })
}

fn capture(logs: &[PathBuf], output: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["capture".into()];
    args.extend(logs.iter().map(|p| p.display().to_string()));
    args.extend(["-o".to_string(), output.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    stampede(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn replay(file: &Path, db: &str, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["replay".into(), file.display().to_string()];
    args.extend(logged().flags(db));
    args.extend(extra.iter().map(|a| a.to_string()));
    stampede(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The summary's "statements: N over …" count.
fn captured_statements(summary: &str) -> u64 {
    common::line_value(summary, "statements: ")
        .and_then(|v| v.split_whitespace().next().map(|n| n.parse().unwrap()))
        .expect("the statements line")
}

/// `--metrics-addr` of a replay: its transactions, the statements answered and the failed one
/// by its SQLSTATE class, against the report (whose counts the server's calls are checked
/// against), and the lag behind the capture's times when it keeps them.
fn served_as_replayed(report: &Value, answers: &Answers, speed: &str) {
    let served = |name: &str, labels: &[(&str, &str)]| answers.value(name, labels);
    let number = |field: &str| report[field].as_u64().unwrap() as f64;
    let replay = [("script", "replay")];
    assert_eq!(
        served("stampede_transactions_total", &replay),
        number("transactions")
    );
    let failed = [("script", "replay"), ("kind", "other"), ("sqlstate", "22")];
    assert_eq!(served("stampede_failed_transactions_total", &failed), 1.0);
    assert_eq!(
        served("stampede_statements_total", &replay) + 1.0,
        number("statements_replayed")
    );
    assert_eq!(served("stampede_run_finished", &[]), 1.0);
    let lagged = answers.last("stampede_schedule_lag_seconds_count", &[]);
    match speed {
        "0" => assert_eq!(lagged, None),
        _ => assert_eq!(lagged, Some(number("statements_replayed"))),
    }
}

#[test]
fn each_log_format_captures_the_workload_and_its_replay_makes_the_same_calls_and_contents() {
    let original = original();
    let s = logged();
    assert!(
        original.calls.iter().any(|c| c.contains("replay_notes")),
        "{:?}",
        original.calls
    );
    let mut counts = Vec::new();
    for (extension, speed) in [("log", "1"), ("csv", "0"), ("json", "0")] {
        let file = TempFile::new(&format!("workload-{extension}.replay"));
        let summary = succeeded(capture(
            &s.log_files(extension),
            &file,
            &["--database", "app"],
        ));
        assert!(
            summary.contains("sessions: 9 (0 began before the log, 0 still connected"),
            "{summary}"
        );
        assert!(summary.contains("failed in the capture: 1"), "{summary}");
        counts.push(captured_statements(&summary));
        let db = format!("replayed_{extension}");
        s.copy_of_pristine(&db);
        let json = TempFile::new(&format!("replay-{extension}.json"));
        let json_path = json.display().to_string();
        let scrapes = Scrapes::start();
        let text = succeeded(replay(
            &file,
            &db,
            &[
                "--speed",
                speed,
                "--json",
                &json_path,
                "--metrics-addr",
                &scrapes.address,
            ],
        ));
        let answers = scrapes.answers();
        assert_eq!(s.calls(&db), original.calls, "{extension}: {text}");
        if speed == "1" {
            assert_eq!(s.contents(&db), original.contents, "{extension}");
        } else {
            // As fast as possible, sessions do not wait for each other as they did: pgbench's
            // TRUNCATE of pgbench_history may come after clients' first inserts, so the
            // history is the one table whose contents depend on the order across sessions.
            let without_history = |contents: &str| {
                let mut parts: Vec<&str> = contents.split(' ').collect();
                parts.remove(3);
                parts.join(" ")
            };
            assert_eq!(
                without_history(&s.contents(&db)),
                without_history(&original.contents),
                "{extension}"
            );
        }
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&*json).unwrap()).unwrap();
        assert_eq!(report["statements_replayed"], report["statements_captured"]);
        assert_eq!(report["statements_not_sent"], 0);
        assert_eq!(report["errors"], 1, "{text}");
        assert_eq!(report["captured_errors"], 1);
        assert_eq!(report["new_errors"], 0);
        assert_eq!(report["errors_by_class"][0]["class"], "22");
        served_as_replayed(&report, &answers, speed);
        assert_eq!(report["sessions"], 9);
        if speed == "1" {
            let lag = &report["lag"];
            assert!(lag["p50_ms"].as_f64().unwrap() >= 0.0, "{text}");
            assert!(text.contains("schedule lag: p50 "), "{text}");
        } else {
            assert!(report["lag"].is_null());
        }
        let calls: u64 = report["statements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["calls"].as_u64().unwrap())
            .sum();
        assert_eq!(calls, report["statements_replayed"].as_u64().unwrap());
    }
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
}

#[test]
fn log_min_duration_statement_logs_the_extended_protocol_whose_replay_makes_the_same_calls() {
    original();
    let s = logged();
    s.copy_of_pristine("timed");
    s.psql(
        "postgres",
        "ALTER DATABASE timed SET log_statement = 'none'; ALTER DATABASE timed SET log_min_duration_statement = 0",
    );
    let script = TempFile::new("replay-timed.sql");
    std::fs::write(&*script, CUSTOM_SCRIPT).unwrap();
    let extended = s
        .program("pgbench")
        .args([
            "-M", "extended", "-c", "2", "-R", "40", "-T", "3", "-n", "-f",
        ])
        .arg(&*script)
        .arg("timed")
        .output()
        .unwrap();
    assert!(extended.status.success(), "{}", stderr(&extended));
    let calls = s.calls("timed");
    let file = TempFile::new("timed.replay");
    let summary = succeeded(capture(
        &s.log_files("log"),
        &file,
        &["--database", "timed"],
    ));
    let sent = summary
        .lines()
        .find_map(|l| l.strip_prefix("sent as: "))
        .unwrap();
    let unnamed: u64 = sent
        .split(", ")
        .nth(1)
        .and_then(|part| part.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(unnamed > 100, "{summary}");
    s.copy_of_pristine("timed_replayed");
    let text = succeeded(replay(&file, "timed_replayed", &["--speed", "0"]));
    assert_eq!(s.calls("timed_replayed"), calls, "{text}");
}

/// The stderr log with the prefix the server writes by default (`%m [%p] `).
fn with_default_prefix(text: &str) -> String {
    text.lines()
        .map(|line| {
            let parts: Vec<&str> = line.splitn(5, '|').collect();
            match parts.as_slice() {
                [time, _, _, _, rest] => format!("{time} [4242] {rest}\n"),
                _ => format!("{line}\n"),
            }
        })
        .collect()
}

#[test]
fn a_log_without_the_prefix_or_its_parameters_is_refused_naming_the_lines() {
    original();
    let s = logged();
    let stderr_log = std::fs::read_to_string(&s.log_files("log")[0]).unwrap();
    let bad = TempFile::new("default-prefix.log");
    std::fs::write(&*bad, with_default_prefix(&stderr_log)).unwrap();
    let out = TempFile::new("refused.replay");
    let refused = capture(&[bad.to_path_buf()], &out, &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(message.contains("could not be used ("), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    assert!(
        message.contains(&format!("{}:1: no `%m|%u|%d|%c|` prefix", bad.display())),
        "{message}"
    );
    assert!(!out.exists());

    // Without its DETAIL lines, every prepared statement lacks its parameters.
    let no_params: String = stderr_log
        .lines()
        .filter(|line| !line.contains("|DETAIL:  parameters: "))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&*bad, no_params).unwrap();
    let refused = capture(&[bad.to_path_buf()], &out, &["--database", "app"]);
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(
        message.contains("a statement with $3 logged with 0 parameter(s)"),
        "{message}"
    );
    assert!(!out.exists());
}

#[test]
fn a_log_cut_off_in_its_last_message_is_captured_without_it_saying_which_line() {
    original();
    let s = logged();
    let files = s.log_files("csv");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    // Cut inside the last record of the workload's database.
    let last = text.rfind(",\"app\",").expect("a record of app");
    let cut = TempFile::new("cut.csv");
    std::fs::write(&*cut, &text[..last + 40]).unwrap();
    let line = text[..last].lines().count();
    let out = TempFile::new("cut.replay");
    let output = capture(&[cut.to_path_buf()], &out, &["--database", "app"]);
    let warned = stderr(&output);
    succeeded(output);
    assert!(
        warned.contains(&format!(
            "{}:{line}: the log ends inside this message (cut off: no final newline)",
            cut.display()
        )),
        "{warned}"
    );
    assert!(out.exists());
}

#[test]
fn a_replay_on_a_database_without_the_captured_tables_sends_nothing() {
    original();
    let s = logged();
    let file = TempFile::new("missing.replay");
    succeeded(capture(&s.log_files("json"), &file, &["--database", "app"]));
    s.psql("postgres", "DROP DATABASE IF EXISTS bare");
    s.psql("postgres", "CREATE DATABASE bare");
    let refused = replay(&file, "bare", &["--speed", "0"]);
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(
        message.contains("database \"bare\" has no relation \"pgbench_"),
        "{message}"
    );
    assert!(message.contains("(nothing was sent)"), "{message}");
    assert!(s.calls("bare").is_empty(), "{:?}", s.calls("bare"));

    let bad_speed = replay(&file, "bare", &["--speed", "-1"]);
    common::assert_refused(
        &bad_speed,
        "--speed -1: 1 replays as captured, 2 twice as fast, 0 as fast as possible",
        "speed",
    );
    let not_ours = stampede(&["replay", &s.log_files("json")[0].display().to_string()]);
    assert_eq!(not_ours.status.code(), Some(1));
    assert!(stderr(&not_ours).contains("is not a replay file"));
    let nothing = stampede(&["capture", "-o", &file.display().to_string()]);
    assert_eq!(nothing.status.code(), Some(1));
    assert!(stderr(&nothing).contains("give the server's log files, or --seconds N"));
}

/// The issue this test keeps fixed: on a server logging to stderr with the default prefix, the
/// capture's own prefix switch made unreadable lines that refused a short capture, and its own
/// ALTER SYSTEM and pg_reload_conf() were captured for replay.
#[test]
fn capture_seconds_logs_a_server_for_a_while_keeps_only_the_application_and_puts_its_settings_back()
{
    let settings = [
        ("fsync", "off".to_string()),
        ("logging_collector", "on".to_string()),
        ("log_destination", "stderr".to_string()),
    ];
    let server = start_cluster("live", &settings);
    let stopped = Stopped(&server);
    server.psql("postgres", "CREATE DATABASE shop");
    server.psql("shop", "CREATE TABLE items (id int PRIMARY KEY, name text)");
    let file = TempFile::new("live.replay");
    let mut args = vec![
        "capture".to_string(),
        "--seconds".into(),
        "600".into(),
        "-o".into(),
        file.display().to_string(),
    ];
    args.extend(server.flags("postgres"));
    let mut child = common::stampede_command(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut watch = common::Watch::new(child.stderr.take().unwrap());
    watch.wait_for("logging every statement");
    const INSERTS: u64 = 40;
    for id in 1..=INSERTS {
        server.psql(
            "shop",
            &format!("INSERT INTO items VALUES ({id}, 'item {id}')"),
        );
    }
    // Ctrl-C ends the logging early: the inserts are in, whatever the machine's speed.
    // SAFETY: kill(2) on the child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let said = watch.finish();
    let mut summary = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut summary).unwrap();
    assert!(status.success(), "{said}");
    for change in [
        "capture: set log_statement = 'all' (was 'none')",
        "capture: put back log_statement = 'none'",
        "capture: set log_connections = 'on' (was 'off')",
        "capture: set log_line_prefix = '%m|%u|%d|%c|' (was '%m [%p] ')",
    ] {
        assert!(said.contains(change), "{change}: {said}");
    }
    assert!(!said.contains("could not be used"), "{said}");
    assert_eq!(captured_statements(&summary), INSERTS, "{summary}");
    assert!(
        summary.contains(&format!("sessions: {INSERTS} (0 began before the log")),
        "{summary}"
    );
    assert!(!summary.contains("left out"), "{summary}");
    for own in ["ALTER SYSTEM", "pg_reload_conf", "stampede capture"] {
        assert!(!summary.contains(own), "{own}: {summary}");
    }
    // What is replayed is the application's alone: no statement needs --allow-admin.
    server.psql("shop", "TRUNCATE items");
    let mut replay_args = vec!["replay".to_string(), file.display().to_string()];
    replay_args.extend(["--speed".into(), "0".into()]);
    replay_args.extend(server.flags("shop"));
    succeeded(stampede(
        &replay_args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert_eq!(
        server.psql("shop", "SELECT count(*) FROM items"),
        INSERTS.to_string()
    );
    let _ = server.cluster.stop();
    let auto_conf =
        std::fs::read_to_string(server.cluster.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(!auto_conf.contains("log_statement"), "{auto_conf}");
    drop(stopped);
}

/// A session's lines in pgreplay's prefix.
fn session_log(session: &str, application: &str, statements: &[&str]) -> String {
    let line = |ms: usize, message: &str| {
        format!("2026-12-06 10:00:00.{ms:03} UTC|app|postgres|{session}|LOG:  {message}\n")
    };
    let mut text = line(
        0,
        &format!(
            "connection authorized: user=app database=postgres application_name={application}"
        ),
    );
    for (i, statement) in statements.iter().enumerate() {
        text += &line(10 * (i + 1), &format!("statement: {statement}"));
    }
    text + &line(
        900,
        "disconnection: session time: 0:00:00.900 user=app database=postgres host=[local]",
    )
}

#[test]
fn a_replay_refuses_statements_that_change_the_server_unless_allowed() {
    logged();
    let log = TempFile::new("admin.log");
    let text = session_log(
        "6750a1b0.1a2b",
        "psql",
        &["CHECKPOINT", "SELECT pg_reload_conf()", "SELECT 1"],
    ) + &session_log(
        "6750a1b0.1a2c",
        "stampede-lab",
        &["ALTER SYSTEM SET work_mem = '8MB'"],
    );
    std::fs::write(&*log, text).unwrap();
    let file = TempFile::new("admin.replay");
    let captured = capture(&[log.to_path_buf()], &file, &[]);
    let summary = stdout(&captured);
    succeeded(captured);
    assert_eq!(captured_statements(&summary), 3, "{summary}");
    assert!(!summary.contains("ALTER SYSTEM"), "{summary}");

    let refused = replay(&file, "postgres", &["--speed", "0"]);
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(
        message.contains("change the server rather than the data"),
        "{message}"
    );
    assert!(
        message.contains("told --allow-admin (nothing was sent)"),
        "{message}"
    );
    assert!(
        message.contains("  CHECKPOINT: 1 (first: CHECKPOINT)"),
        "{message}"
    );
    assert!(
        message.contains("  pg_reload_conf(): 1 (first: SELECT pg_reload_conf())"),
        "{message}"
    );
    succeeded(replay(
        &file,
        "postgres",
        &["--speed", "0", "--allow-admin"],
    ));
}

/// Point lookups by primary key beside a statement no index serves.
const LOOKUP_SCRIPT: &str = r#"\set id random(1, 100000)
SELECT abalance FROM pgbench_accounts WHERE aid = :id;
SELECT bbalance FROM pgbench_branches WHERE bid = 1;
"#;

#[test]
fn a_lab_replaying_a_capture_decides_the_statements_a_missing_index_slows() {
    original();
    let s = logged();
    let dir = common::LabDir::new("replay-lab");
    s.copy_of_pristine("lookup");
    let script = dir.join("lookup.sql");
    std::fs::write(&script, LOOKUP_SCRIPT).unwrap();
    let lookups = s
        .program("pgbench")
        .args(["-M", "prepared", "-c", "2", "-t", "100", "-n", "-f"])
        .arg(&script)
        .arg("lookup")
        .output()
        .unwrap();
    assert!(lookups.status.success(), "{}", stderr(&lookups));
    let capture_file = dir.join("lookup.replay");
    succeeded(capture(
        &s.log_files("log"),
        &capture_file,
        &["--database", "lookup"],
    ));
    // A directory-format dump: restored through pg_restore's script.
    let dump = dir.join("pristine.dump");
    let dumped = s
        .program("pg_dump")
        .args(["-d", "pristine", "-Fd", "-f"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(dumped.status.success(), "{}", stderr(&dumped));
    let spec = dir.join("replay.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"replay-index\"\nruns = 3\nseed = 5\nduration = \"1s\"\nwarmup = \"0s\"\n\
             [[target]]\nname = \"indexed\"\nsettings = {{ fsync = false }}\n\
             [[target]]\nname = \"noindex\"\nsettings = {{ fsync = false }}\n\
             dataset_sql = [\"ALTER TABLE pgbench_accounts DROP CONSTRAINT pgbench_accounts_pkey\"]\n\
             [[workload]]\nname = \"replay\"\nscripts = [\"{}\"]\nscale = [1]\nclients = [1]\n\
             options = {{ data = \"{}\", speed = 0 }}\n",
            capture_file.display(),
            dump.display()
        ),
    )
    .unwrap();
    let ran = common::stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", stderr(&ran));
    let db = dir.join("replay-index.db");
    let replayed = common::sqlite(
        &db,
        "SELECT c.target, r.status, m.value FROM runs r JOIN cells c ON c.id = r.cell_id \
         JOIN run_metrics m ON m.run_id = r.id AND m.name = 'replayed_pct' ORDER BY r.id",
    );
    assert_eq!(replayed.len(), 6, "{replayed:?}");
    assert!(replayed
        .iter()
        .all(|r| r[1] == "completed" && common::number(&r[2]) == 100.0));
    let report = stampede(&["report", db.to_str().unwrap(), "--format", "json"]);
    let report: Value = serde_json::from_str(&succeeded(report)).unwrap();
    let statements = report["statements"].as_array().unwrap();
    let lookup = statements
        .iter()
        .find(|st| {
            st["target"] == "noindex"
                && st["query"]
                    .as_str()
                    .unwrap()
                    .starts_with("SELECT abalance FROM pgbench_accounts")
        })
        .unwrap_or_else(|| panic!("{statements:?}"));
    assert_eq!(lookup["verdict"], "slower", "{lookup}");
    assert!(lookup["ratio"].as_f64().unwrap() > 2.0, "{lookup}");
    let why = report["why"].to_string();
    assert!(why.contains("Seq Scan on pgbench_accounts"), "{why}");
    // A replay's clients and data are its capture's: no "scale 1 × 1 clients" of the spec's.
    let compared = stampede(&["compare", db.to_str().unwrap(), "indexed", "noindex"]);
    let text = succeeded(compared);
    assert!(!text.contains("× 1 clients"), "{text}");
    let markdown = succeeded(stampede(&["report", db.to_str().unwrap()]));
    assert!(markdown.contains(" its own sessions |"), "{markdown}");
    assert!(!markdown.contains("scale 1 × 1 clients"), "{markdown}");
}
