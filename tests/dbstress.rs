//! `stampede dbstress prepare|run|cleanup` against the test server: rows and indexes after
//! prepare, the statements' calls in pg_stat_statements against the driver's counts and the
//! rw ratio, and bad input.

mod common;

use common::{assert_refused, server, stampede_on, stderr, stdout, TempFile};

fn dbstress(db: &str, args: &[&str]) -> std::process::Output {
    stampede_on("dbstress", db, args)
}

/// Asserts that `calls` counts the driver's `transactions`, plus at most one statement per
/// session that was under way when the run's time ran out (begun, not counted as done).
fn assert_calls(calls: i64, transactions: i64, sessions: i64, what: &str) {
    assert!(
        (transactions..=transactions + sessions).contains(&calls),
        "{what}: {calls} calls, {transactions} transactions"
    );
}

/// pg_stat_statements' calls of this database's statements matching `pattern`.
fn calls(db: &str, pattern: &str) -> i64 {
    server()
        .psql(
            db,
            &format!(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND query LIKE '{pattern}'"
            ),
        )
        .parse()
        .unwrap()
}

fn reset_statements(db: &str) {
    server().reset_statements(db);
}

fn run_json(db: &str, args: &[&str]) -> serde_json::Value {
    let json = TempFile::new(&format!("dbstress-{db}.json"));
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--json", json.to_str().unwrap()]);
    let output = dbstress(db, &all);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("TPS"), "{}", stdout(&output));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Per session, adding up to the transactions the callers check against the server's calls.
    let sessions = args
        .iter()
        .position(|a| *a == "--sessions")
        .map_or(1, |at| args[at + 1].parse().unwrap());
    let transactions = report["transactions"].as_u64().unwrap();
    common::assert_fairness(&report, &stdout(&output), sessions, transactions);
    report
}

#[test]
fn prepare_run_and_cleanup() {
    let s = server();
    let db = s.create_database("dbstress");
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let not_prepared = "no dbSTRESS tables here (or their prepare did not finish); run `stampede dbstress prepare` first";
    // Tables of a prepare that did not finish (no marker) are refused too.
    s.psql(&db, "CREATE TABLE zone1 (ref char(2))");
    assert_refused(
        &dbstress(&db, &["prepare", "--objects", "10"]),
        "dbSTRESS tables exist here; run `stampede dbstress cleanup` first",
        "half-written prepare",
    );
    assert_refused(
        &dbstress(&db, &["prepare", "--sets", "1001"]),
        "--sets 1001: at most 1000",
        "too many sets",
    );
    assert!(dbstress(&db, &["cleanup"]).status.success());
    assert_refused(
        &dbstress(&db, &["run", "--time", "1"]),
        not_prepared,
        "run before prepare",
    );

    let output = dbstress(&db, &["prepare", "--objects", "1000", "--threads", "2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        s.psql(&db, "SELECT (SELECT count(*) FROM zone1), (SELECT count(*) FROM section1), (SELECT count(*) FROM stat1), (SELECT count(*) FROM object1), (SELECT count(*) FROM history1), (SELECT count(DISTINCT ref_object) FROM history1), (SELECT min(horder) || '-' || max(horder) FROM history1)"),
        "10|100|1000|1000|20000|1000|1-20"
    );
    // Every object's section and zone exist, as SEL1's join needs.
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM object1 o JOIN section1 s ON s.ref = o.ref_section JOIN zone1 z ON z.ref = s.ref_zone"),
        "1000"
    );
    assert_eq!(
        s.psql(&db, "SELECT string_agg(indexname || ':' || (indexdef LIKE '%UNIQUE%'), ',' ORDER BY indexname) FROM pg_indexes WHERE tablename ~ '1$'"),
        "history1_object_order:false,object1_ref:true,section1_ref:true,stat1_ref:true,zone1_ref:true"
    );
    assert_refused(
        &dbstress(&db, &["prepare", "--objects", "10"]),
        "dbSTRESS tables exist here; run `stampede dbstress cleanup` first",
        "prepare twice",
    );

    // Read+write, writes every 4th transaction of a session, simple protocol.
    reset_statements(&db);
    let report = run_json(
        &db,
        &[
            "--mode",
            "rw",
            "--sessions",
            "2",
            "--time",
            "2",
            "--rw-ratio",
            "4",
        ],
    );
    let transactions = report["transactions"].as_i64().unwrap();
    assert!(transactions > 8, "{report}");
    assert_calls(
        calls(&db, "SELECT S.REF, S.NAME, Z.REF%"),
        transactions,
        2,
        "SELECT S.REF, S.NAME, Z.REF%",
    );
    assert_calls(
        calls(&db, "SELECT S.REF, S.NAME, H.HORDER%"),
        transactions,
        2,
        "SELECT S.REF, S.NAME, H.HORDER%",
    );
    let writes = calls(&db, "UPDATE history1%");
    // Each of the 2 sessions writes in its 4th, 8th, … transaction.
    assert!(
        (transactions / 4 - 2..=transactions / 4).contains(&writes),
        "{writes} of {transactions}"
    );
    assert_eq!(calls(&db, "DELETE FROM history1%"), writes);
    assert_eq!(calls(&db, "INSERT INTO history1%"), writes);
    for (name, pattern) in [
        ("SEL1", "SELECT S.REF, S.NAME, Z.REF%"),
        ("UPDATE", "UPDATE history1%"),
    ] {
        assert_eq!(
            report["statements"][name]["calls"].as_i64(),
            Some(calls(&db, pattern)),
            "{report}"
        );
    }
    // Each DELETE + INSERT puts its row back. Two sessions that draw the same row at once
    // may both insert it (dbSTRESS's own race: the second DELETE waits for the first, finds
    // its row gone, deletes nothing, and inserts), so a key may be doubled, never lost.
    let counts = s.psql(
        &db,
        "SELECT count(*), count(DISTINCT (ref_object, horder)) FROM history1",
    );
    let (rows, keys) = counts.split_once('|').unwrap();
    let (rows, keys): (i64, i64) = (rows.parse().unwrap(), keys.parse().unwrap());
    assert_eq!(keys, 20000, "no history row is lost: {counts}");
    assert!(
        (20000..=20000 + writes).contains(&rows),
        "at most one extra row per concurrent rewrite: {counts}, {writes} writes"
    );

    // Read-only, prepared, one object per transaction from the session's own slice, FOR UPDATE.
    reset_statements(&db);
    let args = [
        "--mode",
        "ro",
        "--sessions",
        "2",
        "--time",
        "1",
        "--prepared",
        "--same-ref",
        "--anti-dead",
        "--for-update",
    ];
    let report = run_json(&db, &args);
    let transactions = report["transactions"].as_i64().unwrap();
    assert!(transactions > 0);
    assert_calls(
        calls(&db, "SELECT S.REF, S.NAME, Z.REF%FOR UPDATE"),
        transactions,
        2,
        "SELECT S.REF, S.NAME, Z.REF%FOR UPDATE",
    );
    assert_calls(
        calls(&db, "SELECT S.REF, S.NAME, H.HORDER%FOR UPDATE"),
        transactions,
        2,
        "SELECT S.REF, S.NAME, H.HORDER%FOR UPDATE",
    );
    assert_eq!(calls(&db, "UPDATE history1%"), 0);
    assert_eq!(report["errors"], 0);

    for (args, message) in [
        (
            &["run", "--mode", "wo"][..],
            "--mode \"wo\": the modes are ro (read-only) and rw (read+write)",
        ),
        (
            &["run", "--sessions", "0"][..],
            "--sessions must be at least 1 (not 0)",
        ),
        (
            &["run", "--rw-ratio", "0"][..],
            "--rw-ratio must be at least 1 (not 0)",
        ),
        (
            &["run", "--stall-timeout", "soon"][..],
            "invalid stall timeout: \"soon\" (a duration such as 90s or 5m, or 0 to wait forever)",
        ),
    ] {
        assert_refused(&dbstress(&db, args), message, &format!("{args:?}"));
    }

    let output = dbstress(&db, &["cleanup"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pg_tables WHERE tablename ~ '^(zone|section|stat|object|history)1$' OR tablename = 'dbstress_info'"),
        "0"
    );
}
