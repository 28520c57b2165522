//! Study 002's additions to pgbench: `pgbench -i --extra-indexes` and the analytics builtins,
//! against the test server.

mod common;

use common::{assert_refused, server, stampede, stderr, TempFile};

/// Study 002's statements, as its author ran them (query 4 with the column its text lost).
const SEED_QUERIES: [&str; 4] = [
    "SELECT avg(abalance) FROM pgbench_accounts JOIN pgbench_branches USING (bid) WHERE bid % 2 = 0",
    "SELECT COUNT(DISTINCT aid) FROM pgbench_accounts",
    "SELECT count(*) FROM pgbench_accounts JOIN pgbench_accounts_copy USING (aid) WHERE aid % 2 = 0",
    "SELECT sum(a.abalance) FROM pgbench_accounts a JOIN pgbench_accounts_copy USING (aid) WHERE aid % 10 = 0",
];

fn pgbench(db: &str, args: &[&str]) -> std::process::Output {
    let flags = server().flags(db);
    let mut all = vec!["pgbench"];
    all.extend_from_slice(args);
    all.extend(flags.iter().map(String::as_str));
    stampede(&all)
}

/// The definitions of the indexes on pgbench's tables other than the primary keys.
fn extra_index_definitions(db: &str) -> String {
    server().psql(
        db,
        "SELECT string_agg(indexdef, E'\\n' ORDER BY indexname) FROM pg_indexes
         WHERE tablename LIKE 'pgbench%' AND indexname NOT LIKE '%pkey'",
    )
}

#[test]
fn extra_indexes_are_the_ones_study_002_created() {
    let s = server();
    let db = s.create_database("extra_indexes");
    let output = pgbench(&db, &["-i", "-s", "1", "--extra-indexes"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("extra indexes "),
        "{}",
        stderr(&output)
    );
    // The same four statements by hand, with the names PostgreSQL picks, on pgbench's own tables.
    let by_hand = s.create_database("extra_indexes_by_hand");
    let init = s.pgbench(&by_hand, &["-i", "-s", "1", "-q"]);
    assert!(init.status.success());
    for statement in [
        "CREATE INDEX ON pgbench_accounts (bid)",
        "CREATE INDEX ON pgbench_history (tid)",
        "CREATE INDEX ON pgbench_history (bid, aid)",
        "CREATE INDEX ON pgbench_history (mtime)",
    ] {
        s.psql(&by_hand, statement);
    }
    let expected = extra_index_definitions(&by_hand);
    assert_eq!(expected.lines().count(), 4, "{expected}");
    assert_eq!(extra_index_definitions(&db), expected);

    assert_refused(
        &pgbench(&db, &["--extra-indexes", "-T", "1"]),
        "some of the specified options cannot be used in benchmarking mode",
        "--extra-indexes in a run",
    );
}

#[test]
fn analytics_run_study_002s_queries_and_report_their_server_times() {
    let s = server();
    let db = s.create_database("analytics");
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    assert_refused(
        &pgbench(&db, &["-b", "analytics", "-t", "1"]),
        &format!("could not count number of branches: ERROR:  relation \"pgbench_branches\" does not exist\nstampede: hint: Perhaps you need to do initialization (\"stampede pgbench -i\") in database \"{db}\"."),
        "analytics before init",
    );
    let init = pgbench(&db, &["-i", "-s", "1"]);
    assert!(init.status.success(), "{}", stderr(&init));
    s.psql(
        &db,
        "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)",
    );
    let json = TempFile::new("analytics.json");
    let output = pgbench(
        &db,
        &[
            "-b",
            "analytics",
            "-t",
            "20",
            "-c",
            "2",
            // A fixed seed: a clock seed once drew no query 3 in 40 choices (1795470553064030).
            "--random-seed",
            "4",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("creating pgbench_accounts_copy"));
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pgbench_accounts_copy"),
        "100000"
    );
    assert_eq!(
        s.psql(&db, "SELECT indexdef FROM pg_indexes WHERE tablename = 'pgbench_accounts_copy'"),
        "CREATE UNIQUE INDEX pgbench_accounts_copy_aid_idx ON public.pgbench_accounts_copy USING btree (aid)"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let scripts = report["scripts"].as_array().unwrap();
    for (index, script) in scripts.iter().enumerate() {
        let name = script["name"].as_str().unwrap();
        assert!(
            name.starts_with(&format!("<builtin: analytics query {}", index + 1)),
            "{name}"
        );
    }
    let statements = report["statements"].as_array().unwrap();
    assert_eq!(statements.len(), 4, "{report}");
    // The server's own numbers for the database (reset before the run): calls per query equal
    // the driver's transactions of that script, and the report's mean and stddev are the
    // server's.
    let mut queryids = Vec::new();
    for (index, sql) in SEED_QUERIES.iter().enumerate() {
        let reported = statements
            .iter()
            .find(|st| shape(st["query"].as_str().unwrap()) == shape(sql))
            .unwrap_or_else(|| panic!("{sql} not in {report}"));
        let calls = reported["calls"].as_u64().unwrap();
        assert_eq!(
            calls,
            scripts[index]["transactions"].as_u64().unwrap(),
            "{sql}"
        );
        let row = s.psql(
            &db,
            &format!(
                "SELECT queryid, calls, mean_exec_time, stddev_exec_time FROM pg_stat_statements
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND query = '{}'",
                reported["query"].as_str().unwrap()
            ),
        );
        let fields: Vec<&str> = row.split('|').collect();
        assert_eq!(fields[1], calls.to_string(), "{row}");
        assert!(
            close(fields[2], reported["mean_ms"].as_f64().unwrap()),
            "{row}"
        );
        assert!(
            close(fields[3], reported["stddev_ms"].as_f64().unwrap()),
            "{row}"
        );
        queryids.push((fields[0].to_string(), calls));
    }
    let total: u64 = queryids.iter().map(|(_, calls)| calls).sum();
    assert_eq!(total, 40, "20 transactions of 2 clients");
    // Running the seed's SQL by hand lands on the same statements: the same queries.
    for sql in SEED_QUERIES {
        s.psql(&db, sql);
    }
    for (queryid, calls) in &queryids {
        let now = s.psql(
            &db,
            &format!("SELECT sum(calls) FROM pg_stat_statements WHERE queryid = {queryid}"),
        );
        assert_eq!(now, (calls + 1).to_string(), "queryid {queryid}");
    }
}

fn close(text: &str, value: f64) -> bool {
    text.parse::<f64>()
        .is_ok_and(|server| (server - value).abs() <= 1e-6 * server.abs().max(1.0))
}

/// A statement with its numbers and `$n` parameters as `?`: pg_stat_statements' text and the
/// seed's compare equal in this form.
fn shape(sql: &str) -> String {
    let mut out = String::new();
    let mut previous = ' ';
    for c in sql.chars() {
        let number = c.is_ascii_digit() && !previous.is_ascii_alphanumeric();
        if (c == '$' || number) && !out.ends_with('?') {
            out.push('?');
        } else if !(c.is_ascii_digit() && out.ends_with('?')) {
            out.push(c);
        }
        previous = c;
    }
    out
}
