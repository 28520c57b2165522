//! The measured path against a scripted server (`wire::scripted`): the client state machine,
//! its retries and failure classes, the thread's waits (solo, sweep, reactor), the watchdog,
//! time-up, pipelines, fairness and `-l`'s lines, each decided by what the server answered and
//! checked against what it received. Milliseconds each; no database.

use std::time::Duration;

use super::{run, DriverEvent, Protocol, RunLimit, RunPlan, RunResult, TxnLogSpec, WeightedScript};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::{parse_script, VarTable};
use stampede_wire::scripted::{Answer, ScriptedServer};

/// The UPDATE as the server receives it: parameterized, with the script's semicolon.
const UPDATE: &str = "UPDATE t SET v = v + 1 WHERE id = $1;";

/// A transaction block around one parameterized UPDATE, pgbench's shape.
const TRANSFER: &str =
    "\\set id random(1, 1000000)\nBEGIN;\nUPDATE t SET v = v + 1 WHERE id = :id;\nEND;\n";

fn plan(server: &ScriptedServer, script: &str, clients: usize, limit: RunLimit) -> RunPlan {
    let mut variables = VarTable::default();
    let script = parse_script("test", "test", script, &mut variables).expect("a valid script");
    let scripts = vec![WeightedScript { script, weight: 1 }];
    let endpoint = Endpoint::Postgres(server.spec());
    let mut plan = RunPlan::for_workload(
        &endpoint,
        clients,
        limit,
        Protocol::Extended,
        scripts,
        variables,
        7,
    );
    plan.threads = 1;
    plan
}

/// Runs the plan; the aborted clients' messages and the notices, in order.
pub(super) fn run_plan(plan: RunPlan) -> (Result<RunResult, Failure>, Vec<String>) {
    let mut said = Vec::new();
    let result = run(plan, &mut |event| match event {
        DriverEvent::ClientAborted(message, _) | DriverEvent::ClientNotice(message) => {
            said.push(message.to_string())
        }
        _ => {}
    });
    (result, said)
}

/// The length of the runs whose errors must come after their end.
const SHORT_RUN: Duration = Duration::from_millis(100);

/// `answer`, once a run of `SHORT_RUN` is over whatever the machine's speed: the statement is
/// sent after the run's start, and answered `SHORT_RUN` after it arrives.
fn after_the_end(answer: Answer) -> Answer {
    Answer::After(SHORT_RUN, Box::new(answer))
}

fn serialization_failure() -> Answer {
    Answer::error(
        "40001",
        "could not serialize access due to concurrent update",
    )
}

#[test]
fn a_serialization_failure_is_rolled_back_and_retried_with_the_same_random_draws() {
    let server = ScriptedServer::start(|call| {
        (call.text == UPDATE && call.nth <= 2).then(serialization_failure)
    });
    let mut plan = plan(&server, TRANSFER, 1, RunLimit::TransactionsPerClient(1));
    plan.errors.max_tries = 3;
    let (result, said) = run_plan(plan);
    let result = result.expect("the run");
    assert_eq!(said, Vec::<String>::new());
    assert_eq!(result.total.latency.count, 1, "one committed transaction");
    assert_eq!((result.total.retried, result.total.retries), (1, 2));
    assert_eq!(result.total.failures.total(), 0);
    assert_eq!(server.calls_of(UPDATE), 3);
    assert_eq!(
        server.calls_of("ROLLBACK"),
        2,
        "each failed try rolled back"
    );
    let ids: Vec<_> = server
        .calls()
        .into_iter()
        .filter(|c| c.text == UPDATE)
        .map(|c| c.params)
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "every try draws the first try's id: {ids:?}"
    );
}

#[test]
fn max_tries_ends_a_transaction_as_a_failure_of_its_class() {
    for (code, serialization, deadlock) in [("40001", 2, 0), ("40P01", 0, 2)] {
        let server = ScriptedServer::start(move |call| {
            (call.text == UPDATE).then(|| Answer::error(code, "conflict"))
        });
        let mut plan = plan(&server, TRANSFER, 1, RunLimit::TransactionsPerClient(2));
        plan.errors.max_tries = 2;
        let result = run_plan(plan).0.expect("the run");
        assert_eq!(result.total.latency.count, 0);
        let failures = &result.total.failures;
        assert_eq!(
            (failures.serialization, failures.deadlock, failures.other),
            (serialization, deadlock, 0),
            "{code}"
        );
        assert_eq!(
            (result.total.retried, result.total.retries),
            (2, 2),
            "{code}: one retry per transaction"
        );
        assert_eq!(
            server.calls_of(UPDATE),
            4,
            "{code}: two tries of two transactions"
        );
    }
}

#[test]
fn another_error_aborts_the_client_unless_errors_continue() {
    let duplicate = |call: &stampede_wire::scripted::Call| {
        (call.text == UPDATE).then(|| {
            Answer::error(
                "23505",
                "duplicate key value violates unique constraint \"t_pkey\"",
            )
        })
    };
    let server = ScriptedServer::start(duplicate);
    let mut aborting = plan(&server, TRANSFER, 1, RunLimit::TransactionsPerClient(3));
    aborting.errors.max_tries = 5;
    let (result, said) = run_plan(aborting);
    assert_eq!(result.expect("the run").aborted_clients, 1);
    assert_eq!(
        said,
        ["client 0 script 0 aborted in command 2 query 0: ERROR:  duplicate key value violates unique constraint \"t_pkey\""]
    );
    assert_eq!(
        server.calls_of(UPDATE),
        1,
        "not retried: not a serialization failure"
    );

    let server = ScriptedServer::start(duplicate);
    let mut counting = plan(&server, TRANSFER, 1, RunLimit::TransactionsPerClient(3));
    counting.errors.continue_on_error = true;
    let result = run_plan(counting).0.expect("the run");
    assert_eq!(
        (result.aborted_clients, result.total.failures.other),
        (0, 3)
    );
    assert_eq!(server.calls_of("ROLLBACK"), 3);
}

#[test]
fn the_watchdog_abandons_a_stalled_client_and_cancels_its_query() {
    let server =
        ScriptedServer::start(|call| (call.text.contains("pg_sleep")).then_some(Answer::Stall));
    let script = "SELECT 1;\nSELECT pg_sleep(1000);\n";
    let mut plan = plan(&server, script, 2, RunLimit::TransactionsPerClient(1));
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
    assert_eq!(
        server.cancels(),
        2,
        "each stuck query cancelled before its connection closed"
    );
}

#[test]
fn an_error_after_the_end_is_neither_retried_nor_counted() {
    let server = ScriptedServer::start(move |call| {
        (call.text == UPDATE).then(|| after_the_end(serialization_failure()))
    });
    let mut plan = plan(&server, TRANSFER, 2, RunLimit::Duration(SHORT_RUN));
    plan.errors.max_tries = 10;
    let result = run_plan(plan).0.expect("the run");
    assert_eq!(result.total.failures.total(), 0);
    assert_eq!((result.total.retried, result.total.latency.count), (0, 0));
    assert_eq!(
        server.calls_of(UPDATE),
        2,
        "one try per client, none after the end"
    );
}

const PIPELINE: &str =
    "\\startpipeline\nSELECT 1;\nUPDATE t SET v = 1;\nSELECT 2;\n\\endpipeline\n";

#[test]
fn a_pipeline_is_retried_whole_and_its_late_error_ends_the_client_uncounted() {
    let server = ScriptedServer::start(|call| {
        (call.text == "UPDATE t SET v = 1;" && call.nth == 1).then(serialization_failure)
    });
    let mut retried = plan(&server, PIPELINE, 1, RunLimit::TransactionsPerClient(1));
    retried.errors.max_tries = 2;
    let result = run_plan(retried).0.expect("the run");
    assert_eq!((result.total.latency.count, result.total.retries), (1, 1));
    assert_eq!(
        server.calls_of("SELECT 1;"),
        2,
        "the whole pipeline ran again"
    );
    assert_eq!(
        server.calls_of("SELECT 2;"),
        1,
        "skipped after the error until the Sync"
    );

    let server = ScriptedServer::start(move |call| {
        (call.text == "UPDATE t SET v = 1;").then(|| after_the_end(serialization_failure()))
    });
    let mut timed = plan(&server, PIPELINE, 1, RunLimit::Duration(SHORT_RUN));
    timed.errors.max_tries = 10;
    let result = run_plan(timed).0.expect("the run");
    assert_eq!(
        (result.total.failures.total(), result.total.retries),
        (0, 0)
    );
    assert_eq!(server.calls_of("SELECT 1;"), 1);
}

#[test]
fn every_way_of_waiting_runs_the_same_transactions() {
    // One client waits in the kernel (solo), three share the thread's sweep, and under -R the
    // runtime's reactor serves them.
    for (clients, rate) in [(1, None), (3, None), (3, Some(10_000.0))] {
        let server = ScriptedServer::start(|_| None);
        let mut plan = plan(
            &server,
            TRANSFER,
            clients,
            RunLimit::TransactionsPerClient(5),
        );
        plan.rate = rate;
        let result = run_plan(plan).0.expect("the run");
        assert_eq!(
            result.total.latency.count,
            5 * clients as u64,
            "{clients} clients, rate {rate:?}"
        );
        assert_eq!(result.client_transactions, vec![5; clients]);
        assert_eq!(result.total.statements, 15 * clients as u64);
        assert_eq!(server.calls_of(UPDATE), 5 * clients);
        assert_eq!(server.sessions(), clients);
    }
}

#[test]
fn each_clients_count_is_its_sessions_count_at_the_server() {
    // Three clients on one thread's sweep against a server that answers at once. How evenly
    // they are served is the run's to report (`RunResult::fairness`), not this test's to bound:
    // a client whose reply is there before it reads goes on (bench/results/pgbench.md, "Several clients
    // per thread"). What must hold is that the counts it reports are the server's.
    let server = ScriptedServer::start(|_| None);
    let plan = plan(
        &server,
        "SELECT 1;\n",
        3,
        RunLimit::Duration(Duration::from_millis(300)),
    );
    let result = run_plan(plan).0.expect("the run");
    let mut per_session = vec![0u64; 3];
    server
        .calls()
        .iter()
        .for_each(|call| per_session[call.session] += 1);
    let mut reported = result.client_transactions.clone();
    reported.sort_unstable();
    per_session.sort_unstable();
    assert_eq!(reported, per_session);
    assert!(reported[0] > 0, "every client was served: {reported:?}");
    let fairness = result.fairness().expect("transactions committed");
    assert_eq!((fairness.min, fairness.max), (reported[0], reported[2]));
}

#[test]
fn the_transaction_log_has_pgbenchs_lines() {
    let server = ScriptedServer::start(|call| {
        (call.text == UPDATE && call.nth == 2).then(serialization_failure)
    });
    let dir = tempfile::tempdir().expect("a folder");
    let prefix = dir.path().join("log").display().to_string();
    let mut plan = plan(&server, TRANSFER, 1, RunLimit::TransactionsPerClient(3));
    plan.log = Some(TxnLogSpec {
        prefix: prefix.clone(),
        pid: 42,
        sampling_rate: None,
        aggregate_interval: None,
        failures_detailed: true,
    });
    run_plan(plan).0.expect("the run");
    let text = std::fs::read_to_string(format!("{prefix}.42")).expect("the thread's log");
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    // client_id transaction_no latency|failure script_no epoch_s epoch_us (no retries column
    // under --max-tries 1).
    for (line, (number, outcome)) in
        lines
            .iter()
            .zip([("1", None), ("2", Some("serialization")), ("3", None)])
    {
        assert_eq!(line.len(), 6, "{line:?}");
        assert_eq!((line[0], line[1], line[3]), ("0", number, "0"));
        match outcome {
            Some(kind) => assert_eq!(line[2], kind),
            None => assert!(line[2].parse::<u64>().is_ok(), "{line:?}"),
        }
        assert!(
            line[4].parse::<u64>().is_ok() && line[5].parse::<u32>().is_ok_and(|us| us < 1_000_000)
        );
    }
}
