//! A script's connection (`sysbench.sql`'s, without its Lua) against the scripted server
//! (`stampede_wire::scripted`): results and their rows, sysbench's error classes (an ignorable
//! error rolled back, another fatal), a lost connection (sysbench's pgsql driver does not
//! reconnect). Milliseconds; no database.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use super::connection::Connection;
use super::context::{Script, Shared, ThreadContext};
use super::log::Log;
use super::target::Target;
use crate::family::sysbench::sysbench_cmdline::{general_options, CommandLine, Options};
use stampede_wire::scripted::{Answer, ScriptedServer};

/// sysbench's error classes (`sql_error_t`).
const IGNORABLE: u8 = 1;
const FATAL: u8 = 2;

fn connect(server: &ScriptedServer) -> Connection {
    let options = Options::new(CommandLine::default(), general_options());
    let shared = Shared::new(Script::Stdin(String::new()), options, Log::new(0));
    let context = ThreadContext {
        shared: Arc::new(shared),
        tid: 0,
        worker: false,
        runtime: OnceLock::new(),
        declared: RefCell::new(None),
        at_exit: RefCell::new(Vec::new()),
    };
    Connection::open(Rc::new(context), &Target::Postgres(server.spec())).expect("connected")
}

#[test]
fn a_query_keeps_its_rows_until_fetched() {
    let server = ScriptedServer::start(|call| {
        (call.text == "SELECT k, c FROM sbtest1").then(|| Answer::Rows {
            columns: vec!["k".into(), "c".into()],
            rows: vec![
                vec![Some("1".into()), Some("a".into())],
                vec![Some("2".into()), None],
            ],
        })
    });
    let mut conn = connect(&server);
    let statement = conn.run("SELECT k, c FROM sbtest1").expect("a result");
    assert_eq!(conn.result_field(statement, "nrows"), Some(2));
    assert_eq!(conn.result_field(statement, "nfields"), Some(2));
    let first = conn.fetch_row(statement);
    assert_eq!(first, Some(vec![Some("1".into()), Some("a".into())]));
    assert_eq!(
        conn.fetch_row(statement),
        Some(vec![Some("2".into()), None])
    );
    assert_eq!(conn.fetch_row(statement), None);
    assert!(conn.free_result(statement));
    assert!(!conn.free_result(statement), "freed once");
    assert_eq!(server.calls_of("SELECT k, c FROM sbtest1"), 1);
}

#[test]
fn sysbenchs_ignorable_errors_are_rolled_back_and_others_are_fatal() {
    let server = ScriptedServer::start(|call| match call.text.as_str() {
        "UPDATE sbtest1 SET k = k + 1 WHERE id = 7" => Some(Answer::error("40001", "conflict")),
        "SELECT * FROM missing" => Some(Answer::error(
            "42P01",
            "relation \"missing\" does not exist",
        )),
        _ => None,
    });
    let mut conn = connect(&server);
    assert!(conn.run("BEGIN").is_some());
    assert_eq!(conn.run("UPDATE sbtest1 SET k = k + 1 WHERE id = 7"), None);
    let (class, _, state, _) = conn.last_error();
    assert_eq!((class, state.as_deref()), (IGNORABLE, Some("40001")));
    assert_eq!(
        server.calls_of("ROLLBACK"),
        1,
        "sysbench's driver rolls back"
    );
    assert_eq!(conn.run("SELECT * FROM missing"), None);
    let (class, _, state, message) = conn.last_error();
    assert_eq!((class, state.as_deref()), (FATAL, Some("42P01")));
    assert_eq!(
        message.as_deref(),
        Some("relation \"missing\" does not exist")
    );
}

#[test]
fn a_lost_connection_stays_lost_as_sysbenchs_pgsql_driver_has_no_reconnect() {
    let server = ScriptedServer::start(|call| {
        (call.text == "SELECT pg_terminate_backend(pg_backend_pid())").then_some(Answer::Hangup)
    });
    let mut conn = connect(&server);
    assert_eq!(
        conn.run("SELECT pg_terminate_backend(pg_backend_pid())"),
        None
    );
    assert_eq!(conn.last_error().0, FATAL);
    // sysbench's pgsql driver: "reconnect is not supported by the current driver", and true.
    assert!(conn.reconnect());
    assert_eq!(conn.run("SELECT 1"), None, "an already closed connection");
    assert_eq!(conn.last_error().0, FATAL);
    assert_eq!((server.sessions(), server.calls_of("SELECT 1")), (1, 0));
}
