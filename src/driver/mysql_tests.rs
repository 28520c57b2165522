//! The measured path on MySQL's protocol against the scripted MariaDB (`wire::scripted`), as
//! `tests.rs` runs it against the scripted PostgreSQL: statements prepared once per connection
//! and executed with their values bound by type, or sent as text with the values inlined; a
//! deadlock (1213) tried again with the first try's draws and, past `max_tries`, counted as a
//! deadlock; another error aborting the client with MySQL's message; a lost connection; the
//! watchdog's `KILL QUERY` for a stalled statement. Milliseconds each; no database.

use std::time::Duration;

use super::tests::run_plan;
use super::{Protocol, RunLimit, RunPlan, WeightedScript};
use stampede_conn::Endpoint;
use stampede_script::{parse_script, VarTable};
use stampede_wire::scripted::{Answer, Call, ScriptedMysqlServer};

/// The UPDATE as a prepared statement's text: a `?` marker for the variable.
const UPDATE: &str = "UPDATE t SET v = v + 1 WHERE id = ?;";

/// A transaction around one UPDATE, sysbench's shape.
const TRANSFER: &str =
    "\\set id random(1, 1000000)\nBEGIN;\nUPDATE t SET v = v + 1 WHERE id = :id;\nCOMMIT;\n";

fn plan(
    server: &ScriptedMysqlServer,
    script: &str,
    clients: usize,
    limit: RunLimit,
    protocol: Protocol,
) -> RunPlan {
    let mut variables = VarTable::default();
    let script = parse_script("test", "test", script, &mut variables).expect("a valid script");
    let scripts = vec![WeightedScript { script, weight: 1 }];
    let endpoint = Endpoint::Mysql(server.spec());
    let mut plan =
        RunPlan::for_workload(&endpoint, clients, limit, protocol, scripts, variables, 7);
    plan.threads = 1;
    plan
}

/// TRANSFER's transactions on `clients` clients, prepared and bound.
fn transfers(server: &ScriptedMysqlServer, clients: usize, transactions: u64) -> RunPlan {
    let limit = RunLimit::TransactionsPerClient(transactions);
    plan(server, TRANSFER, clients, limit, Protocol::Prepared)
}

fn deadlock() -> Answer {
    Answer::mysql_error(
        1213,
        "40001",
        "Deadlock found when trying to get lock; try restarting transaction",
    )
}

fn updates(server: &ScriptedMysqlServer) -> Vec<Call> {
    server
        .calls()
        .into_iter()
        .filter(|call| call.text.starts_with("UPDATE"))
        .collect()
}

#[test]
fn statements_are_prepared_once_per_connection_and_bound_by_type() {
    let server = ScriptedMysqlServer::start(|_| None);
    let plan = transfers(&server, 2, 3);
    let (result, said) = run_plan(plan);
    let result = result.expect("the run");
    assert_eq!(said, Vec::<String>::new());
    assert_eq!(result.total.latency.count, 6);
    assert_eq!(server.calls_of(UPDATE), 6);
    assert_eq!(server.prepares_of(UPDATE), [1, 1], "once per connection");
    for call in updates(&server) {
        let id: i64 = call.params[0]
            .as_deref()
            .expect("a bound id")
            .parse()
            .unwrap();
        assert!((1..=1_000_000).contains(&id), "{call:?}");
    }
}

#[test]
fn the_simple_protocol_inlines_the_values_as_literals() {
    let server = ScriptedMysqlServer::start(|_| None);
    let script = "\\set id random(1, 9)\nUPDATE t SET v = v + 1 WHERE id = :id;\n";
    let plan = plan(
        &server,
        script,
        1,
        RunLimit::TransactionsPerClient(2),
        Protocol::Simple,
    );
    run_plan(plan).0.expect("the run");
    let sent = updates(&server);
    assert_eq!(sent.len(), 2);
    for call in sent {
        assert!(call.params.is_empty(), "{call:?}");
        let id = call
            .text
            .strip_prefix("UPDATE t SET v = v + 1 WHERE id = ")
            .and_then(|rest| rest.strip_suffix(';'))
            .unwrap_or_else(|| panic!("{call:?}"));
        assert!((1..=9).contains(&id.parse::<i64>().unwrap()), "{call:?}");
    }
    assert!(server.prepares_of(UPDATE).is_empty());
}

#[test]
fn a_deadlock_is_tried_again_with_the_first_trys_draws_then_counted_as_one() {
    let server =
        ScriptedMysqlServer::start(|call| (call.text == UPDATE && call.nth <= 2).then(deadlock));
    let mut retrying = transfers(&server, 1, 1);
    retrying.errors.max_tries = 3;
    let result = run_plan(retrying).0.expect("the run");
    assert_eq!(result.total.latency.count, 1, "committed on the third try");
    assert_eq!((result.total.retried, result.total.retries), (1, 2));
    let ids: Vec<_> = updates(&server).into_iter().map(|c| c.params).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");

    let server = ScriptedMysqlServer::start(|call| (call.text == UPDATE).then(deadlock));
    let mut failing = transfers(&server, 1, 2);
    failing.errors.max_tries = 2;
    let result = run_plan(failing).0.expect("the run");
    let failures = &result.total.failures;
    assert_eq!(
        (failures.deadlock, failures.serialization, failures.other),
        (2, 0, 0)
    );
    assert_eq!(server.calls_of(UPDATE), 4, "two tries of two transactions");
}

#[test]
fn another_error_aborts_the_client_with_mysqls_message() {
    let server = ScriptedMysqlServer::start(|call| {
        (call.text == UPDATE)
            .then(|| Answer::mysql_error(1146, "42S02", "Table 'test.t' doesn't exist"))
    });
    let mut plan = transfers(&server, 1, 3);
    plan.errors.max_tries = 5;
    let (result, said) = run_plan(plan);
    assert_eq!(result.expect("the run").aborted_clients, 1);
    assert_eq!(
        said,
        ["client 0 script 0 aborted in command 2 query 0: ERROR 1146 (42S02): Table 'test.t' doesn't exist"]
    );
    assert_eq!(server.calls_of(UPDATE), 1, "not tried again");
}

#[test]
fn a_lost_connection_aborts_the_client() {
    let server = ScriptedMysqlServer::start(|call| (call.text == UPDATE).then_some(Answer::Hangup));
    let plan = transfers(&server, 1, 3);
    let (result, said) = run_plan(plan);
    let result = result.expect("the run");
    assert_eq!((result.aborted_clients, result.total.latency.count), (1, 0));
    assert_eq!(
        said,
        ["client 0 script 0 aborted in command 2 query 0: server closed the connection unexpectedly"]
    );
    assert_eq!(server.calls_of(UPDATE), 1);
}

#[test]
fn the_watchdog_abandons_a_stalled_client_and_kills_its_query() {
    let server =
        ScriptedMysqlServer::start(|call| call.text.contains("SLEEP").then_some(Answer::Stall));
    let script = "SELECT 1;\nSELECT SLEEP(1000);\n";
    let mut plan = plan(
        &server,
        script,
        2,
        RunLimit::TransactionsPerClient(1),
        Protocol::Simple,
    );
    plan.stall_timeout = Some(Duration::from_millis(200));
    let failure = run_plan(plan).0.err().expect("an abandoned run");
    assert!(super::is_stall(&failure), "{}", failure.message());
    assert!(
        failure
            .message()
            .contains("2 of 2 clients waited that long"),
        "{}",
        failure.message()
    );
    assert_eq!(server.cancels(), 2, "each stuck query killed");
}
