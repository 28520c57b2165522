//! `stampede ibench step|run|cleanup` against real servers: each step's rows, indexes and
//! statements checked against the server (row counts, pg_indexes, pg_stat_statements; MariaDB's
//! statement counters), the inserts with deletes leaving the row count as it was, the
//! rate-limited writer within 2% of its target, and bad input refused with nothing written.

#![allow(unsafe_code)]

mod common;

use common::scrape::{Answers, Scrapes};

use common::mariadb::{create_database as create_mariadb_database, socket, sql as mariadb_sql};
use common::{assert_refused, server, stampede, stampede_on, stderr, stdout, succeeded, TempFile};
use serde_json::Value;

/// `ibench step` with iibench.py's connection flags for `db` of the test server, then `args`.
fn step_command(db: &str, args: &[&str]) -> Vec<String> {
    let s = server();
    let mut all: Vec<String> = vec![
        "ibench".into(),
        "step".into(),
        format!("--db_host={}", s.socket_dir()),
        format!("--db_port={}", s.port()),
        format!("--db_user={}", s.user),
        format!("--db_name={db}"),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// `stampede ibench step` (iibench.py's flags) on `db` of the test server.
fn step(db: &str, args: &[&str]) -> std::process::Output {
    let all = step_command(db, args);
    stampede(&all.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A fresh database with pg_stat_statements, for one test.
fn database(name: &str) -> String {
    let db = server().create_database(name);
    server().psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    db
}

fn psql_number(db: &str, query: &str) -> i64 {
    server().psql(db, query).trim().parse().unwrap()
}

/// pg_stat_statements' calls and rows of this database's statements matching `pattern`.
fn statements(db: &str, pattern: &str) -> (i64, i64) {
    let row = server().psql(
        db,
        &format!(
            "SELECT coalesce(sum(calls), 0) || ' ' || coalesce(sum(rows), 0) FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND query LIKE '{pattern}'"
        ),
    );
    let mut numbers = row.split_whitespace().map(|n| n.parse().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

/// The value after `label` on iibench.py's Totals line ("Totals: 3.0 secs, 500.1 rows/sec, …").
fn totals(text: &str) -> (f64, f64, u64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("Totals: "))
        .unwrap_or_else(|| panic!("no Totals line in {text}"));
    let fields: Vec<&str> = line.split([' ', ',']).filter(|f| !f.is_empty()).collect();
    (
        fields[1].parse().unwrap(),
        fields[3].parse().unwrap(),
        fields[5].parse().unwrap(),
    )
}

/// Every interval line's 17 columns (i_sec, t_sec, i_ips, …), in order.
fn intervals(text: &str) -> Vec<Vec<f64>> {
    text.lines()
        .filter(|l| l.split('\t').count() == 17 && !l.starts_with("i_sec"))
        .map(|line| line.split('\t').map(|f| f.parse().unwrap()).collect())
        .collect()
}

/// The last interval line's 17 columns.
fn last_interval(text: &str) -> Vec<f64> {
    intervals(text)
        .pop()
        .unwrap_or_else(|| panic!("no interval line in {text}"))
}

#[test]
fn a_load_inserts_max_rows_then_builds_the_three_indexes() {
    let db = database("ibench_load");
    server().reset_statements(&db);
    let text = succeeded(step(
        &db,
        &[
            "--setup",
            "--max_rows=20000",
            "--rows_per_commit=1000",
            "--secondary_at_end",
            "--secs_per_report=1",
            "--table_name=pi1",
        ],
    ));
    assert!(text.starts_with("i_sec\tt_sec\ti_ips\t"), "{text}");
    assert_eq!(totals(&text).2, 20_000);
    assert_eq!(last_interval(&text)[11], 20_000.0, "{text}");
    assert!(text.contains("Created secondary indexes in "), "{text}");
    assert_eq!(psql_number(&db, "SELECT count(*) FROM pi1"), 20_000);
    assert_eq!(
        psql_number(
            &db,
            "SELECT max(transactionid) - min(transactionid) + 1 FROM pi1"
        ),
        20_000
    );
    assert_eq!(
        server().psql(
            &db,
            "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'pi1'"
        ),
        "pi1_marketsegment,pi1_pdc,pi1_pkey,pi1_registersegment"
    );
    // Twenty INSERTs of 1000 rows, one CREATE INDEX per index.
    assert_eq!(statements(&db, "insert into pi1 %"), (20, 20_000));
    assert_eq!(statements(&db, "create index pi1_%").0, 3);
    // The data column is 10 long, half of that times 0.75 random (iibench.py's defaults).
    assert_eq!(
        server().psql(
            &db,
            "SELECT min(length(data)) || ' ' || max(length(data)) FROM pi1"
        ),
        "10 10"
    );
    assert_eq!(
        psql_number(
            &db,
            "SELECT count(*) FROM pi1 WHERE data NOT LIKE 'aaaaaa%'"
        ),
        0
    );
}

#[test]
fn inserts_with_deletes_leave_the_row_count_as_it_was() {
    let db = database("ibench_deletes");
    succeeded(step(
        &db,
        &["--setup", "--max_rows=10000", "--table_name=pi1"],
    ));
    server().reset_statements(&db);
    let text = succeeded(step(
        &db,
        &[
            "--max_rows=5000",
            "--rows_per_commit=50",
            "--delete_per_insert",
            "--table_name=pi1",
            "--secs_per_report=1",
        ],
    ));
    assert!(text.contains("get_min_trxid = 1 in "), "{text}");
    let last = last_interval(&text);
    assert_eq!((last[11], last[12]), (5000.0, 5000.0), "{text}");
    assert_eq!(statements(&db, "insert into pi1 %"), (100, 5000));
    assert_eq!(statements(&db, "delete from pi1 %"), (100, 5000));
    // One min(transactionid) at the start; the next is due after 1000 more INSERTs.
    assert_eq!(statements(&db, "select min(transactionid) from pi1").0, 1);
    assert!(text.contains("getmin 1 queries, "), "{text}");
    assert_eq!(psql_number(&db, "SELECT count(*) FROM pi1"), 10_000);
    assert_eq!(psql_number(&db, "SELECT min(transactionid) FROM pi1"), 5001);
    assert_eq!(
        psql_number(&db, "SELECT max(transactionid) FROM pi1"),
        15_000
    );
}

#[test]
fn range_queries_run_beside_a_writer_held_to_its_rate() {
    let db = database("ibench_range");
    succeeded(step(
        &db,
        &[
            "--setup",
            "--max_rows=20000",
            "--secondary_at_end",
            "--table_name=pi1",
        ],
    ));
    server().reset_statements(&db);
    let text = succeeded(step(
        &db,
        &[
            "--max_rows=1500",
            "--rows_per_commit=50",
            "--inserts_per_second=500",
            "--query_threads=1",
            "--delete_per_insert",
            "--use_prepared_query",
            "--table_name=pi1",
            "--secs_per_report=1",
        ],
    ));
    let (seconds, rate, rows) = totals(&text);
    assert_eq!(rows, 1500);
    // Rows count as their commit of 50 lands: the writer is on its schedule within one commit,
    // over the whole run (whose end also waits for the query thread's last query: 268 ms once
    // on a loaded machine, 1500 rows in 3.2 s) and at each whole second while it writes.
    let one_commit = 50.0;
    assert!(
        seconds >= (1500.0 - one_commit) / 500.0,
        "{rate} rows/s over {seconds} s: {text}"
    );
    let whole_seconds: Vec<Vec<f64>> = intervals(&text)
        .into_iter()
        .filter(|columns| columns[0] >= 0.99)
        .collect();
    assert!(whole_seconds.len() >= 2, "{text}");
    for columns in &whole_seconds {
        let (at, inserted) = (columns[1], columns[11]);
        assert!(
            (inserted - 500.0 * at).abs() <= one_commit,
            "{inserted} rows by {at} s: {text}"
        );
    }
    let queries = last_interval(&text)[13] as i64;
    assert!(queries > 0, "{text}");
    // The three prepared range queries, executed as many times as the queries counted.
    let (market, market_rows) = statements(&db, "PREPARE market_query_ps (int) as SELECT %");
    let (register, register_rows) = statements(&db, "PREPARE register_query_ps (int) as SELECT %");
    let (pdc, pdc_rows) = statements(&db, "PREPARE pdc_query_ps (int) as SELECT %");
    assert_eq!(market + register + pdc, queries, "{text}");
    assert!(market > 0 && register > 0 && pdc > 0);
    let fetched = market_rows + register_rows + pdc_rows;
    assert!(
        text.contains(&format!(
            "Query thread: {queries} queries, fetched/query(expected, actual) = ( 10 , {:.3} )",
            fetched as f64 / queries as f64
        )),
        "{text}"
    );
    assert_eq!(psql_number(&db, "SELECT count(*) FROM pi1"), 20_000);
}

#[test]
fn point_queries_read_by_primary_key() {
    let db = database("ibench_point");
    succeeded(step(
        &db,
        &["--setup", "--max_rows=5000", "--table_name=pi1"],
    ));
    server().reset_statements(&db);
    let text = succeeded(step(
        &db,
        &[
            "--max_rows=1000",
            "--rows_per_commit=100",
            "--inserts_per_second=1000",
            "--query_threads=1",
            "--query_pk_only",
            "--table_name=pi1",
        ],
    ));
    let queries = last_interval(&text)[13] as i64;
    let (calls, rows) = statements(
        &db,
        "SELECT transactionid, productid, data FROM pi1 WHERE transactionid in (%",
    );
    assert_eq!(calls, queries, "{text}");
    // Ten ids a query, each of a row that is there (no deletes): duplicates fetch once.
    assert!(
        rows <= 10 * calls && rows > 5 * calls,
        "{rows} rows, {calls} calls"
    );
    assert!(statements(&db, "select max(transactionid) from pi1").0 >= 1);
}

/// The report and what the run said on standard error (its plan first).
fn run_json_saying(args: &[&str], db: &str, json: &TempFile) -> (Value, String) {
    let mut all = vec!["run", "--json", json.to_str().unwrap(), "--settle", "0"];
    all.extend_from_slice(args);
    let output = stampede_on("ibench", db, &all);
    let said = common::stderr(&output);
    let text = succeeded(output);
    assert!(text.contains("step "), "{text}");
    let report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (report, said)
}

fn step_named<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {report}"))
}

/// `--metrics-addr`: each step a run of its own, its rows inserted and deleted and its
/// queries as the report counts them (which the server's counts are checked against below).
fn steps_served_as_they_ran(report: &Value, answers: &Answers) {
    for step in report["steps"].as_array().unwrap() {
        let name = step["step"].as_str().unwrap();
        let served = |metric: &str, script: &str| {
            answers.value(metric, &[("step", name), ("script", script)])
        };
        let number = |field: &str| step[field].as_u64().unwrap() as f64;
        assert_eq!(
            served("stampede_rows_total", "insert"),
            number("inserted"),
            "{name}"
        );
        assert_eq!(
            served("stampede_rows_total", "delete"),
            number("deleted"),
            "{name}"
        );
        assert_eq!(
            served("stampede_transactions_total", "query"),
            number("queries"),
            "{name}"
        );
        let finished = answers.value("stampede_run_finished", &[("step", name)]);
        assert_eq!(finished, 1.0, "{name}");
    }
}

#[test]
fn the_steps_load_index_write_and_query_as_his_scripts_do() {
    // On a fresh server the database is not there: the run creates it, after its plan.
    let db = server().create_database("ibench_run");
    server().psql("postgres", &format!("DROP DATABASE {db}"));
    let json = TempFile::new("ibench-run.json");
    let scrapes = Scrapes::start();
    let (report, said) = run_json_saying(
        &[
            "--clients",
            "2",
            "--rows",
            "20000",
            "--writes",
            "5000",
            "--query-seconds",
            "2",
            "--steps",
            "l.i0,l.x,l.i1,l.i2,qr200,qp200",
            "--metrics-addr",
            &scrapes.address,
        ],
        &db,
        &json,
    );
    steps_served_as_they_ran(&report, &scrapes.answers());
    let steps: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["l.i0", "l.x", "l.i1", "l.i2", "qr200", "qp200"]);
    assert!(
        said.contains("ibench run: 6 step(s) over 2 client(s), a table each (pi1..pi2)\n  l.i0    load 20000 rows\n"),
        "{said}"
    );
    assert!(
        said.contains("  qr200   2 s of range queries beside 200 inserts/s a client\n"),
        "{said}"
    );
    assert!(said.contains("takes 4 s of fixed-length steps, plus as long as the server takes to write the rows above"), "{said}");
    assert!(
        said.contains(&format!(
            "created database \"{db}\" (it did not exist on the server)"
        )),
        "{said}"
    );
    let number = |step: &str, field: &str| step_named(&report, step)[field].as_u64().unwrap();
    assert_eq!(number("l.i0", "inserted"), 20_000);
    assert_eq!(number("l.i0", "deleted"), 0);
    // l.x: 100 rows over two clients, each one INSERT of 100 rows (the last INSERT is whole).
    assert_eq!(number("l.x", "inserted"), 200);
    assert_eq!(number("l.i1", "inserted"), 4000);
    assert_eq!(number("l.i2", "inserted"), 1000);
    for name in ["l.i1", "l.i2", "qr200", "qp200"] {
        assert_eq!(number(name, "inserted"), number(name, "deleted"), "{name}");
    }
    // Each table kept its l.i0 and l.x rows through the writes.
    for table in ["pi1", "pi2"] {
        assert_eq!(
            psql_number(&db, &format!("SELECT count(*) FROM {table}")),
            10_100
        );
        assert_eq!(
            psql_number(
                &db,
                &format!("SELECT count(*) FROM pg_indexes WHERE tablename = '{table}'")
            ),
            4
        );
    }
    // Every row inserted and deleted, and every query, is the server's (a new database's
    // statements are counted from its first; the view is read once its extension is there).
    server().psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let all_steps = report["steps"].as_array().unwrap();
    let sum = |field: &str| {
        all_steps
            .iter()
            .map(|s| s[field].as_i64().unwrap())
            .sum::<i64>()
    };
    let inserted_rows = statements(&db, "insert into pi_ %").1;
    assert_eq!(inserted_rows, sum("inserted"));
    assert_eq!(statements(&db, "delete from pi_ %").1, sum("deleted"));
    let queries = statements(&db, "PREPARE %_query_ps %").0;
    assert_eq!(queries, sum("queries"));
    for name in ["qr200", "qp200"] {
        let s = step_named(&report, name);
        let (writer, target) = (
            s["writer_per_s"].as_f64().unwrap(),
            s["writer_target_per_s"].as_f64().unwrap(),
        );
        assert_eq!(target, 400.0);
        assert!(
            (writer - target).abs() <= 0.02 * target,
            "{name}: {writer} of {target}"
        );
        assert_eq!(s["writer_fell_behind"], false);
        assert!(s["queries"].as_u64().unwrap() > 0);
        assert_eq!(s["operation"], "query");
        // Whole seconds at 400 rows a second, 50 rows per INSERT (an INSERT finishing just
        // past a second's end counts in the next).
        let seconds = s["per_second"].as_array().unwrap();
        assert!((1..=2).contains(&seconds.len()), "{s}");
        for second in seconds {
            let rows = second["insert"]["count"].as_u64().unwrap();
            assert!(rows % 50 == 0 && (300..=500).contains(&rows), "{second}");
            assert!(second["query"]["count"].as_u64().unwrap() > 0, "{second}");
            assert!(
                second["query"]["p99_ms"].as_f64().unwrap()
                    >= second["query"]["p50_ms"].as_f64().unwrap()
            );
        }
    }
    // The whole seconds hold no more rows than the step inserted (the part of a second at its
    // end is left out of them).
    for s in all_steps {
        let in_seconds: u64 = s["per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|second| second["insert"]["count"].as_u64().unwrap())
            .sum();
        assert!(in_seconds <= s["inserted"].as_u64().unwrap(), "{s}");
        // A server on this machine: its CPU per operation is read.
        assert!(s["server"]["cpu_us"].as_f64().unwrap() > 0.0, "{s}");
    }
    let point = step_named(&report, "qp200");
    assert!(point["query_ms"]["count"].as_u64().unwrap() > 0);
    assert!(step_named(&report, "l.x")["index_seconds"]
        .as_f64()
        .is_some());
    assert!(
        step_named(&report, "l.i0")["longest_insert_stall_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn partitions_split_the_table_and_a_held_transaction_comes_and_goes() {
    let db = database("ibench_partitions");
    server().reset_statements(&db);
    let text = succeeded(step(
        &db,
        &[
            "--setup",
            "--max_rows=3000",
            "--rows_per_commit=100",
            "--num_partitions=3",
            "--htap_transaction_seconds=1",
            "--table_name=pi1",
        ],
    ));
    assert_eq!(totals(&text).2, 3000);
    // Three range partitions of 1000 ids each, as iibench.py bounds them.
    assert_eq!(
        server().psql(
            &db,
            "SELECT string_agg(c.relname || ':' || (SELECT count(*) FROM pi1 p WHERE p.tableoid = c.oid), ',' ORDER BY c.relname)
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pi1'::regclass"
        ),
        "pi1_p0:999,pi1_p1:1000,pi1_p2:1001"
    );
    // The HTAP connection's transactions: BEGIN, a read, COMMIT, at least once.
    let (begins, _) = statements(&db, "BEGIN");
    let (commits, _) = statements(&db, "COMMIT");
    assert!(
        begins >= 1 && begins == commits,
        "{begins} BEGIN, {commits} COMMIT"
    );
    assert_eq!(statements(&db, "select * from pi1 limit $1").0, begins);
}

#[test]
fn cleanup_drops_the_tables() {
    let db = database("ibench_cleanup");
    succeeded(step(
        &db,
        &["--setup", "--max_rows=100", "--table_name=pi1"],
    ));
    succeeded(step(
        &db,
        &["--setup", "--max_rows=100", "--table_name=pi2"],
    ));
    succeeded(stampede_on("ibench", &db, &["cleanup", "--clients", "2"]));
    assert_eq!(
        psql_number(
            &db,
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('pi1', 'pi2')"
        ),
        0
    );
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let db = database("ibench_bad");
    let json = TempFile::new("ibench-bad.json");
    let run = |extra: &[&str]| {
        let mut all = vec!["run"];
        if !extra.contains(&"--json") {
            all.extend(["--json", json.to_str().unwrap()]);
        }
        all.extend_from_slice(extra);
        stampede_on("ibench", &db, &all)
    };
    for (args, message) in [
        (
            &["--steps", "l.i0,l.i3"][..],
            "unknown step \"l.i3\": the steps are l.i0, l.x, l.i1, l.i2, qrN and qpN (N rows a second, e.g. qr100)",
        ),
        (
            &["--steps", "qr0"][..],
            "unknown step \"qr0\": the steps are l.i0, l.x, l.i1, l.i2, qrN and qpN (N rows a second, e.g. qr100)",
        ),
        (&["--clients", "0"][..], "--clients must be at least 1 (not 0)"),
        (&["--rows", "-5"][..], "--rows must be at least 1 (not -5)"),
        (&["--settle", "-1"][..], "--settle must be at least 0 (not -1)"),
        (
            &["--json", "/nonexistent-ibench/out.json"][..],
            "--json /nonexistent-ibench/out.json: the folder /nonexistent-ibench is not there",
        ),
        (
            &["--clients", "2", "--shared-table"][..],
            "--shared-table deletes other clients' rows: add --no-deletes (his iq.sh refuses delete_per_insert with only1t)",
        ),
    ] {
        assert_refused(&run(args), message, &format!("{args:?}"));
    }
    for (args, message) in [
        (
            &["--inserts_per_second=-5"][..],
            "--inserts_per_second must be at least 0 (not -5)",
        ),
        (&["--max_rows=0"][..], "--max_rows must be at least 1 (not 0)"),
        (
            &["--rows_per_query=1000000"][..],
            "--rows_per_query must be at most 65535 (not 1000000)",
        ),
        (
            &["--num_partitions=100000"][..],
            "--num_partitions must be at most 8192 (not 100000)",
        ),
        (
            &["--num_secondary_indexes=4"][..],
            "--num_secondary_indexes must be 0 to 3 (not 4)",
        ),
        (
            &["--dbms=mongo"][..],
            "--dbms mongo: one of postgres, mysql (MariaDB, MySQL); stampede does not run MongoDB",
        ),
        (
            &["--data_length_min=30", "--data_length_max=20"][..],
            "--data_length_min 30 is above --data_length_max 20",
        ),
        (
            &["--table_name=pi;drop"][..],
            "--table_name \"pi;drop\": letters, digits and _ only, starting with a letter, at most 48",
        ),
        (
            &["--no_inserts", "--query_threads=1"][..],
            "--no_inserts needs --max_seconds: with no inserts nothing ends the run (iibench.py runs until killed)",
        ),
        (
            &["--dbms=mysql", "--use_prepared_query"][..],
            "--use_prepared_query: PostgreSQL only, as in iibench.py",
        ),
    ] {
        let mut all = vec!["--setup"];
        all.extend_from_slice(args);
        assert_refused(&step(&db, &all), message, &format!("{args:?}"));
    }
    assert!(!json.exists());
    assert_eq!(
        psql_number(
            &db,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        0
    );
}

#[test]
fn a_signal_ends_a_step_with_every_inserted_row_counted() {
    let db = database("ibench_signal");
    // Two hours at 100 rows a second, stopped after its first second.
    let all = step_command(
        &db,
        &[
            "--setup",
            "--table_name=pi1",
            "--max_rows=720000",
            "--rows_per_commit=10",
            "--inserts_per_second=100",
            "--secs_per_report=1",
        ],
    );
    let args: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut child = common::stampede_command(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = common::Watch::new(child.stdout.take().unwrap());
    out.wait_for("\n1.0\t1.0\t");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let text = out.finish();
    assert_eq!(status.code(), Some(2), "{text}");
    let inserted = totals(&text).2;
    // At least what the first second's line counted, far from all of it.
    let first_second: u64 = text
        .lines()
        .find(|l| l.starts_with("1.0\t1.0\t"))
        .and_then(|l| l.split('\t').nth(11))
        .unwrap()
        .parse()
        .unwrap();
    assert!((first_second..720_000).contains(&inserted), "{text}");
    assert_eq!(last_interval(&text)[11] as u64, inserted, "{text}");
    assert_eq!(
        psql_number(&db, "SELECT count(*) FROM pi1") as u64,
        inserted
    );
}

#[test]
fn a_run_after_l_i0_needs_its_tables() {
    let db = database("ibench_missing");
    let output = stampede_on("ibench", &db, &["run", "--steps", "qr100"]);
    assert_refused(
        &output,
        "step qr100: table pi1 is not there; start with l.i0, which creates the tables",
        "qr100 alone",
    );
}

/// MariaDB's statement counters (global: this binary's only MariaDB test reads them).
fn com_counters() -> (u64, u64) {
    let text = mariadb_sql(
        "",
        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('COM_INSERT', 'COM_DELETE') ORDER BY VARIABLE_NAME",
    );
    let values: Vec<u64> = text
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().parse().unwrap())
        .collect();
    (values[1], values[0])
}

#[test]
fn the_steps_run_on_mariadb_with_forced_indexes() {
    let db = create_mariadb_database("ibench");
    let json = TempFile::new("ibench-mariadb.json");
    let socket = socket();
    let before = com_counters();
    let text = succeeded(stampede(&[
        "ibench",
        "run",
        "--engine",
        "mariadb",
        "--socket",
        &socket,
        "-U",
        "root",
        "-d",
        &db,
        "--rows",
        "10000",
        "--writes",
        "2000",
        "--query-seconds",
        "2",
        "--settle",
        "0",
        "--steps",
        "l.i0,l.x,l.i1,l.i2,qr100,qp100",
        "--json",
        json.to_str().unwrap(),
    ]));
    let after = com_counters();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(text.contains("qp100: 1 client(s)"), "{text}");
    assert_eq!(mariadb_sql(&db, "SELECT count(*) FROM pi1").trim(), "10100");
    let indexes = mariadb_sql(
        &db,
        "SELECT GROUP_CONCAT(DISTINCT INDEX_NAME ORDER BY INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pi1'",
    );
    assert_eq!(
        indexes.trim(),
        "pi1_marketsegment,pi1_pdc,pi1_registersegment,PRIMARY"
    );
    let steps = report["steps"].as_array().unwrap();
    let statements = |field: &str| {
        steps
            .iter()
            .map(|s| s[field]["count"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(
        after.0 - before.0,
        statements("insert_ms"),
        "INSERT statements"
    );
    assert_eq!(
        after.1 - before.1,
        statements("delete_ms"),
        "DELETE statements"
    );
    for name in ["qr100", "qp100"] {
        let s = step_named(&report, name);
        let writer = s["writer_per_s"].as_f64().unwrap();
        assert!((writer - 100.0).abs() <= 2.0, "{name}: {writer}");
        assert!(s["queries"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(s["retries"], serde_json::json!([0, 0, 0]), "{name}");
    }
}

/// A lab cluster started again after its lab stopped it, to read what the steps left; stopped
/// when dropped.
struct Reopened(stampede::server::postgres::cluster::Cluster);

impl Reopened {
    fn start(root: std::path::PathBuf) -> Reopened {
        let cluster = stampede::server::postgres::cluster::Cluster {
            binaries: stampede::server::postgres::binaries::Binaries::find_best().unwrap(),
            root,
            port: common::free_port(),
            run_as: stampede::server::host::OsUser::for_server().unwrap(),
            cpus: None,
        };
        cluster.start().unwrap();
        Reopened(cluster)
    }

    fn number(&self, sql: &str) -> i64 {
        let text = common::lab_psql(&self.0.data_dir(), "stampede_run", sql).unwrap();
        text.parse().unwrap_or_else(|_| panic!("{sql}: {text:?}"))
    }
}

impl Drop for Reopened {
    fn drop(&mut self) {
        let _ = self.0.stop();
    }
}

/// Runs the lab of `spec` and sends it SIGTERM once its run line `run` is out and `rows_in`
/// (pi1's rows above qr100's mark, None before there are any) reaches 100 of the step's 600:
/// the lab exits 2 with the step stopped half-way.
fn interrupt_qr100(spec: &std::path::Path, run: &str, mut rows_in: impl FnMut() -> Option<i64>) {
    let mut lab = common::stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = common::Watch::new(lab.stderr.take().unwrap());
    progress.wait_for(run);
    let mut seen = 0;
    common::wait_until("qr100's writer 100 rows in", || {
        seen = rows_in().unwrap_or(0);
        seen >= 100
    });
    unsafe { libc::kill(lab.id() as i32, libc::SIGTERM) };
    let status = lab.wait().unwrap();
    let log = progress.finish();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        seen < 600,
        "the step was stopped before its 600 rows: {seen}"
    );
}

/// Rows in `table` above the mark the step `step` recorded when it began.
fn rows_above_mark(step: &str, table: &str) -> String {
    format!(
        "select count(*) from {table} where transactionid > (select start_max from stampede_ibench_progress where step = '{step}' and tbl = '{table}')"
    )
}

/// The Insert Benchmark in the lab: his steps as one sequence per target, each a cell whose
/// stored rate is the rows of its INSERTs in pg_stat_statements over its seconds; a SIGTERM in
/// the middle of target a's rate-limited qr100 step, then `lab resume`: the finished steps are
/// kept, the stopped one continues on the tables as the signal left them and inserts only the
/// rows it had not — every table ends with the rows an uninterrupted step leaves (target b's).
#[test]
fn in_the_lab_each_step_is_a_cell_and_a_stopped_step_resumes_in_place() {
    let dir = common::LabDir::new("lab-ibench");
    let spec = dir.join("ib.toml");
    std::fs::write(
        &spec,
        "name = \"ib\"\nruns = 1\nduration = \"6s\"\nwarmup = \"0s\"\nseed = 3\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[target]]\nname = \"b\"\nsettings = { fsync = false, shared_buffers = \"64MB\" }\n\
         [[workload]]\nname = \"ibench\"\nscripts = [\"l.i0\", \"l.x\", \"l.i1\", \"l.i2\", \"qr100\"]\n\
         scale = [60000]\nclients = [2]\noptions = { writes = 10000, settle = 0 }\n",
    )
    .unwrap();
    let a_data = dir.join("ib.db.servers/a/data");
    // Run 9 is a's qr100 (the steps in order, a before b in the first round).
    interrupt_qr100(&spec, "run 9/10:", || {
        common::lab_psql(&a_data, "stampede_run", &rows_above_mark("qr100", "pi1"))
            .and_then(|text| text.parse().ok())
    });

    let output = common::stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let resumed = stderr(&output);
    assert!(output.status.success(), "{resumed}");
    assert!(
        resumed.contains("resuming: 8 of 10 runs already finished"),
        "{resumed}"
    );
    let db = dir.join("ib.db");
    let runs = common::sqlite(
        &db,
        "SELECT c.target, c.script, c.family, r.status, r.id, r.transactions, r.duration_s FROM runs r \
         JOIN cells c ON c.id = r.cell_id ORDER BY r.id",
    );
    let cells: Vec<(&str, &str, &str)> = runs
        .iter()
        .filter(|r| r[3] == "completed")
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("a", "l.i0", "load"),
            ("b", "l.i0", "load"),
            ("a", "l.x", "load"),
            ("b", "l.x", "load"),
            ("a", "l.i1", "write"),
            ("b", "l.i1", "write"),
            ("a", "l.i2", "write"),
            ("b", "l.i2", "write"),
            ("a", "qr100", "range query"),
            ("b", "qr100", "range query"),
        ],
        "{runs:?}"
    );
    assert_eq!(runs.iter().filter(|r| r[3] == "interrupted").count(), 1);
    let metric = |run: &str, name: &str| {
        common::sqlite(
            &db,
            &format!("SELECT value FROM run_metrics WHERE run_id = {run} AND name = '{name}'"),
        )
        .first()
        .map(|row| common::number(&row[0]))
    };
    let statement_rows = |run: &str, pattern: &str| {
        common::number(
            &common::sqlite(
                &db,
                &format!(
                    "SELECT coalesce(sum(rows), 0) FROM run_statements WHERE run_id = {run} AND lower(query) LIKE '{pattern}'"
                ),
            )[0][0],
        )
    };
    let statement_calls = |run: &str, pattern: &str| {
        common::number(
            &common::sqlite(
                &db,
                &format!(
                    "SELECT coalesce(sum(calls), 0) FROM run_statements WHERE run_id = {run} AND lower(query) LIKE '{pattern}'"
                ),
            )[0][0],
        )
    };
    let completed: Vec<&Vec<String>> = runs.iter().filter(|r| r[3] == "completed").collect();
    for run in &completed {
        let (id, step, operations) = (&run[4], &run[1], common::number(&run[5]));
        let rows = statement_rows(id, "insert into pi%");
        let expected = match step.as_str() {
            "l.i0" => 60_000.0,
            // 50 rows a client, one INSERT of 100 each: iibench.py's loop inserts whole commits.
            "l.x" => 200.0,
            "l.i1" => 8_000.0,
            "l.i2" => 2_000.0,
            _ => rows,
        };
        assert_eq!(rows, expected, "{step} of {}: INSERT rows", run[0]);
        match step.as_str() {
            // l.x's rate counts the rows it indexed, as his reports do.
            "l.x" => assert_eq!(operations, 60_200.0),
            "qr100" => assert_eq!(operations, statement_calls(id, "prepare %"), "queries"),
            _ => assert_eq!(operations, rows, "{step}: the stored rate's rows"),
        }
        if step == "l.i1" || step == "l.i2" {
            assert_eq!(
                statement_rows(id, "delete from pi%"),
                expected,
                "{step}: as many rows deleted as inserted"
            );
            // The stored deletes a second are the server's deleted rows over the step.
            let dps = metric(id, "dps").unwrap() * common::number(&run[6]);
            assert_eq!(dps.round(), expected, "{step}: dps");
        }
    }
    // The resumed step: the rows it had inserted before the signal, then the rest.
    let a_qr = completed
        .iter()
        .find(|r| r[0] == "a" && r[1] == "qr100")
        .unwrap();
    let b_qr = completed
        .iter()
        .find(|r| r[0] == "b" && r[1] == "qr100")
        .unwrap();
    let before = metric(&a_qr[4], "resumed_rows").expect("a resumed run says so");
    assert!((200.0..1200.0).contains(&before), "{before}");
    assert_eq!(before + statement_rows(&a_qr[4], "insert into pi%"), 1200.0);
    assert_eq!(metric(&b_qr[4], "resumed_rows"), None);
    assert_eq!(statement_rows(&b_qr[4], "insert into pi%"), 1200.0);
    for run in [a_qr, b_qr] {
        let writer = metric(&run[4], "writer_pct").unwrap();
        assert!(
            (98.0..=102.0).contains(&writer),
            "{}: writer {writer}%",
            run[0]
        );
    }
    // b's qr100 second by second: its 6 s of queries (the part of a second at the end left out).
    let series = common::sqlite(
        &db,
        &format!(
            "SELECT count(*), sum(tps) FROM run_series WHERE run_id = {}",
            b_qr[4]
        ),
    );
    assert!(common::number(&series[0][0]) >= 5.0, "{series:?}");
    let queried = common::number(&series[0][1]);
    assert!(
        queried > 0.0 && queried <= common::number(&b_qr[5]),
        "{series:?}"
    );

    check_step_report(&db, b_qr);

    // Both targets' tables as the steps leave them: the load's rows and l.x's, each step's rows
    // above its mark, the deletes keeping the count.
    for target in ["a", "b"] {
        let server = Reopened::start(dir.join(format!("ib.db.servers/{target}")));
        for table in ["pi1", "pi2"] {
            assert_eq!(
                server.number(&format!("select count(*) from {table}")),
                30_100
            );
            assert_eq!(
                server.number(&rows_above_mark("qr100", table)),
                600,
                "{target} {table}"
            );
            assert_eq!(
                server.number(&format!(
                    "select count(*) from pg_indexes where tablename = '{table}'"
                )),
                4
            );
        }
    }
}

/// The report's per-step table: a row per target, a column per step in run order; the base's
/// numbers are its medians, b's its ratios; qr100's cv is the stored series' own.
fn check_step_report(db: &std::path::Path, b_qr: &[String]) {
    let report = |format: &str| {
        let output = common::stampede_command(&[
            "report",
            db.to_str().unwrap(),
            "--base",
            "a",
            "--format",
            format,
        ])
        .output()
        .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let tables = json["steps"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let table = &tables[0];
    assert_eq!(
        table["steps"],
        serde_json::json!(["l.i0", "l.x", "l.i1", "l.i2", "qr100"])
    );
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(
        (rows[0]["target"].as_str(), rows[1]["target"].as_str()),
        (Some("a"), Some("b"))
    );
    let comparisons = json["comparisons"][0]["cells"].as_array().unwrap();
    for (k, step) in ["l.i0", "l.x", "l.i1", "l.i2", "qr100"].iter().enumerate() {
        let compared = comparisons
            .iter()
            .find(|c| c["cell"]["script"] == *step)
            .unwrap();
        assert_eq!(
            rows[0]["cells"][k]["value"], compared["base_median"],
            "{step}"
        );
        assert_eq!(rows[1]["cells"][k]["value"], compared["ratio"], "{step}");
    }
    let per_second: Vec<f64> = common::sqlite(
        db,
        &format!(
            "SELECT tps FROM run_series WHERE run_id = {} ORDER BY second",
            b_qr[4]
        ),
    )
    .iter()
    .map(|row| common::number(&row[0]))
    .collect();
    let mean = per_second.iter().sum::<f64>() / per_second.len() as f64;
    let sd = (per_second.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
        / (per_second.len() - 1) as f64)
        .sqrt();
    let cv = rows[1]["cells"][4]["cv"].as_f64().unwrap();
    assert!((cv - sd / mean).abs() < 1e-9, "{cv} against {}", sd / mean);
    let markdown = report("markdown");
    assert!(
        markdown.contains(
            "## ibench per step at scale 60000, 2 clients (base a: its tps; others: ratio to it)"
        ),
        "{markdown}"
    );
    assert!(
        markdown.contains("| target | l.i0 | l.x | l.i1 | l.i2 | qr100 |"),
        "{markdown}"
    );
}

/// A lab spec the ibench workload cannot run is refused by `lab run` before anything starts:
/// exit 1, the reason with the spec's line and column, no results database.
#[test]
fn a_lab_spec_it_cannot_run_is_refused_before_anything_starts() {
    let dir = common::LabDir::new("lab-ibench-refused");
    let spec = dir.join("bad.toml");
    let refused = |workload: &str, message: &str| {
        std::fs::write(
            &spec,
            format!(
                "name = \"bad\"\nruns = 1\nduration = \"1s\"\n[[target]]\nname = \"t\"\n\
                 [[workload]]\nname = \"ibench\"\nclients = [1]\n{workload}\n"
            ),
        )
        .unwrap();
        let output = common::stampede_command(&["lab", "run", spec.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let at = spec.display().to_string();
        assert_eq!(
            stderr(&output).trim(),
            format!("stampede: error: {}", message.replace("SPEC", &at))
        );
        assert!(!dir.join("bad.db").exists());
        assert!(!dir.join("bad.db.servers").exists());
    };
    refused(
        "scripts = [\"l.i0\", \"qr0\"]",
        "SPEC:9:20: workload \"ibench\": unknown step \"qr0\": the steps are l.i0, l.x, l.i1, l.i2, qrN and qpN (N rows a second, e.g. qr100)",
    );
    refused(
        "scale = [\"buffers\"]",
        "SPEC:9:9: scale: workload \"ibench\" takes numbers only: its load is not the data its scale measures",
    );
    refused(
        "options = { shared_table = true }",
        "SPEC:9:13: workload \"ibench\": options: shared_table = true deletes other clients' rows: add deletes = false (his iq.sh refuses delete_per_insert with only1t)",
    );
    refused(
        "options = { writes = -5 }",
        "SPEC:9:13: workload \"ibench\": options: writes = -5: must be at least 1",
    );
}

/// A query's one value on a lab's MariaDB through its socket; None while the server is down or
/// the query fails.
fn lab_mariadb_value(socket: &std::path::Path, sql: &str) -> Option<i64> {
    let output = std::process::Command::new("mariadb")
        .args(["--batch", "--skip-column-names", "-uroot"])
        .arg(format!("--socket={}", socket.display()))
        .args(["-e", sql])
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

/// The same on MariaDB: the sequence's steps with InnoDB's statements, the progress rows in
/// the run's database, a SIGTERM in qr100 and `lab resume` inserting only the rows not yet
/// inserted (the rows the server counted above the mark, then the rest).
#[test]
fn in_the_lab_on_mariadb_a_stopped_step_resumes_in_place() {
    let dir = common::LabDir::new("lab-ibench-mariadb");
    let spec = dir.join("ibm.toml");
    std::fs::write(
        &spec,
        "name = \"ibm\"\nruns = 1\nduration = \"6s\"\nwarmup = \"0s\"\nseed = 3\n\
         [[target]]\nname = \"m\"\nmariadb = \"system\"\n\
         settings = { innodb_buffer_pool_size = \"256M\", innodb_flush_log_at_trx_commit = 2 }\n\
         [[workload]]\nname = \"ibench\"\nscripts = [\"l.i0\", \"l.x\", \"l.i1\", \"l.i2\", \"qr100\"]\n\
         scale = [20000]\nclients = [1]\noptions = { writes = 5000, settle = 0 }\n",
    )
    .unwrap();
    let socket = dir.join("ibm.db.servers/m/run/mysqld.sock");
    let above = "select count(*) from stampede_run.pi1 where transactionid > \
                 (select start_max from stampede_run.stampede_ibench_progress where step = 'qr100')";
    interrupt_qr100(&spec, "run 5/5:", || lab_mariadb_value(&socket, above));
    let output = common::stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("ibm.db");
    let runs = common::sqlite(
        &db,
        "SELECT c.script, r.transactions, r.id, r.tps FROM runs r JOIN cells c ON c.id = r.cell_id \
         WHERE r.status = 'completed' ORDER BY r.id",
    );
    let steps: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        &steps[..4],
        [
            ("l.i0", "20000"),
            ("l.x", "20100"),
            ("l.i1", "4000"),
            ("l.i2", "1000")
        ],
        "{runs:?}"
    );
    let metric = |name: &str| {
        common::sqlite(
            &db,
            &format!(
                "SELECT value FROM run_metrics WHERE run_id = {} AND name = '{name}'",
                runs[4][2]
            ),
        )
        .first()
        .map(|row| common::number(&row[0]))
    };
    let before = metric("resumed_rows").expect("the resumed run says so");
    assert!((100.0..600.0).contains(&before), "{before}");
    let duration = common::number(
        &common::sqlite(
            &db,
            &format!("SELECT duration_s FROM runs WHERE id = {}", runs[4][2]),
        )[0][0],
    );
    let inserted = (metric("ips").unwrap() * duration).round();
    assert_eq!(before + inserted, 600.0, "{before} + {inserted}");
    let writer = metric("writer_pct").unwrap();
    assert!((98.0..=102.0).contains(&writer), "writer {writer}%");
}
