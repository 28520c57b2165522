//! `stampede tproch build|run|check|drop` against the test server at scale factor 0.01: dbgen's
//! row counts, the power test and a two-stream throughput test with their refresh functions
//! (orders kept, lineitem as dbgen's update sets make it), each query's time against the
//! server's own (pg_stat_statements), bad input.

mod common;

use common::scrape::{Answers, Scrapes};
use common::{assert_refused, server, stampede_on, stderr, stdout, TempFile};

fn tproch(db: &str, args: &[&str]) -> std::process::Output {
    stampede_on("tproch", db, args)
}

fn count(db: &str, table: &str) -> i64 {
    server()
        .psql(db, &format!("SELECT count(*) FROM {table}"))
        .parse()
        .unwrap()
}

fn run_json(db: &str, args: &[&str]) -> serde_json::Value {
    let json = TempFile::new(&format!("tproch-{db}.json"));
    let mut all = vec!["run", "--json", json.to_str().unwrap(), "--seed", "3"];
    all.extend(args);
    let output = tproch(db, &all);
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    serde_json::from_str(&std::fs::read_to_string(&*json).unwrap()).unwrap()
}

/// dbgen's SF 0.01 row counts, as its `.tbl` files hold them.
const SF_001: [(&str, i64); 8] = [
    ("region", 5),
    ("nation", 25),
    ("supplier", 100),
    ("customer", 1_500),
    ("part", 2_000),
    ("partsupp", 8_000),
    ("orders", 15_000),
    ("lineitem", 60_175),
];

#[test]
fn a_build_holds_dbgen_s_rows_and_the_power_and_throughput_tests_keep_them_consistent() {
    let s = server();
    // A fresh server has no database "tproch_sf001": the build creates it and says so.
    let db = s.create_database("tproch_sf001");
    s.psql("postgres", &format!("DROP DATABASE {db}"));
    let output = tproch(&db, &["build", "--scale-factor", "0.01", "--threads", "2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with(&format!(
            "created database \"{db}\" (it did not exist on the server)\n"
        )),
        "{}",
        stdout(&output)
    );
    for (table, rows) in SF_001 {
        assert_eq!(count(&db, table), rows, "{table}");
    }
    let indexes: i64 = s
        .psql(
            &db,
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public'",
        )
        .parse()
        .unwrap();
    assert_eq!(indexes, 16, "HammerDB's 8 primary keys and 8 indexes");
    let check = tproch(&db, &["check"]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );

    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    s.reset_statements(&db);
    let power = run_json(&db, &["--refresh"]);
    power_test_timed_as_the_server_saw_it(&db, &power);
    assert_eq!(
        count(&db, "orders"),
        15_000,
        "RF1 adds as many orders as RF2 deletes"
    );
    // Update set 1: order indexes 1..=10, inserted with sequence 1, deleted with 0.
    assert_eq!(count(&db, "orders WHERE o_orderkey IN (1, 9)"), 1);
    let lines_after_one_set = count(&db, "lineitem");
    assert_ne!(lines_after_one_set, 60_175);

    let scrapes = Scrapes::start();
    let throughput = run_json(
        &db,
        &[
            "--vu",
            "3",
            "--refresh",
            "--update-sets",
            "2",
            "--trickle-refresh",
            "0",
            "--metrics-addr",
            &scrapes.address,
        ],
    );
    throughput_served_as_it_ran(&throughput, &scrapes.answers());
    let test = &throughput["tests"][0];
    assert_eq!(test["test"], "throughput");
    assert_eq!(test["query_streams"], 2);
    let sets = test["query_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2);
    for set in sets {
        assert_eq!(set["queries"].as_array().unwrap().len(), 22, "{set}");
    }
    let refreshed: Vec<i64> = test["refreshes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["update_set"].as_i64().unwrap())
        .collect();
    assert_eq!(refreshed, [2, 2, 3, 3]);
    assert!(
        throughput["derived_metrics"]["throughput_at_size"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(count(&db, "orders"), 15_000);
    let check = tproch(&db, &["check"]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
    assert!(
        stdout(&check).contains("3 update set(s) applied"),
        "{}",
        stdout(&check)
    );

    let dropped = tproch(&db, &["drop"]);
    assert!(dropped.status.success(), "{}", stderr(&dropped));
    assert_eq!(
        s.psql(
            &db,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );
}

/// `--metrics-addr` of the throughput test: each query's and refresh function's count, the
/// histogram's count and sum against the report's timings, the run ended.
fn throughput_served_as_it_ran(report: &serde_json::Value, answers: &Answers) {
    let test = &report["tests"][0];
    let total = |name: &str| answers.value(name, &[("command", "tproch")]);
    let mut seconds = 0.0;
    for query in 1..=22 {
        let script = format!("Q{query}");
        let timings: Vec<f64> = test["query_sets"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|set| set["queries"].as_array().unwrap())
            .filter(|q| q["query"] == query)
            .map(|q| q["seconds"].as_f64().unwrap())
            .collect();
        seconds += timings.iter().sum::<f64>();
        let served = answers.value("stampede_transactions_total", &[("script", &script)]);
        assert_eq!(served, timings.len() as f64, "{script}");
    }
    for function in ["RF1", "RF2"] {
        let runs = test["refreshes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["function"] == function)
            .inspect(|r| seconds += r["seconds"].as_f64().unwrap())
            .count();
        let served = answers.value("stampede_transactions_total", &[("script", function)]);
        assert_eq!((served, runs), (2.0, 2), "{function}");
    }
    assert_eq!(total("stampede_transaction_latency_seconds_count"), 48.0);
    let sum = total("stampede_transaction_latency_seconds_sum");
    assert!(
        (sum - seconds).abs() < 1e-3,
        "served {sum} s, reported {seconds} s"
    );
    assert_eq!(total("stampede_clients"), 3.0);
    assert_eq!(total("stampede_run_finished"), 1.0);
}

/// The power test: RF1 of 10 orders, the 22 queries in stream 0's order, RF2; each query's
/// time holds the server's execution of it (pg_stat_statements), with little more.
fn power_test_timed_as_the_server_saw_it(db: &str, report: &serde_json::Value) {
    let test = &report["tests"][0];
    assert_eq!(test["test"], "power");
    let refreshes = test["refreshes"].as_array().unwrap();
    assert_eq!(refreshes.len(), 2);
    assert_eq!(refreshes[0]["function"], "RF1");
    assert_eq!(refreshes[0]["orders"], 10, "dbgen's update set at SF 0.01");
    assert_eq!(refreshes[1]["function"], "RF2");
    let queries = test["query_sets"][0]["queries"].as_array().unwrap();
    let order: Vec<i64> = queries
        .iter()
        .map(|q| q["query"].as_i64().unwrap())
        .collect();
    assert_eq!(
        order,
        [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12]
    );
    assert!(report["derived_metrics"]["power_at_size"].as_f64().unwrap() > 0.0);
    let server_ms: f64 = server()
        .psql(
            db,
            "SELECT sum(total_exec_time) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query ILIKE 'select%' AND query NOT ILIKE '%pg_stat_statements%' AND query NOT ILIKE '%o_orderkey = $1%' AND query NOT ILIKE '%current_setting%' AND query NOT ILIKE '%count(%) FROM supplier%' AND query NOT ILIKE '%pg_class%' AND query NOT ILIKE '%FROM ONLY%'",
        )
        .parse()
        .unwrap();
    let client_s: f64 = queries.iter().map(|q| q["seconds"].as_f64().unwrap()).sum();
    // The server executed each of the 22 queries once: every timed query is one it counted.
    let calls = server().psql(
        db,
"SELECT sum(calls) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query ILIKE 'select%' AND query NOT ILIKE '%pg_stat_statements%' AND query NOT ILIKE '%o_orderkey = $1%' AND query NOT ILIKE '%current_setting%' AND query NOT ILIKE '%count(%) FROM supplier%' AND query NOT ILIKE '%pg_class%' AND query NOT ILIKE '%FROM ONLY%'",
    );
    assert_eq!(calls, "22", "statements the server counted: {}", server().psql(db, "SELECT calls || ' ' || left(query, 70) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query ILIKE 'select%'"));
    assert!(
        server_ms / 1000.0 <= client_s,
        "server {server_ms} ms, client {client_s} s"
    );
    for query in queries {
        assert!(query["error"].is_null(), "{query}");
        assert!(
            query["server"]["cpu_s"].as_f64().is_some(),
            "a local server is measured: {query}"
        );
    }
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let s = server();
    let db = s.create_database("tproch_refusals");
    // Another schema's table of a TPROC-H name (TPROC-C has customer).
    s.psql(&db, "CREATE TABLE customer (c_id int)");
    assert_refused(
        &tproch(&db, &["build", "--scale-factor", "0.01"]),
        "table customer already exists and is not TPROC-H's (it has no c_custkey column): build into another database",
        "foreign table",
    );
    assert_eq!(
        s.psql(
            &db,
            "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public'"
        ),
        "customer"
    );
    for (sf, message) in [
        ("0", "--scale-factor 0: must be from 0.01 to 100000 (below 0.01 dbgen's update sets hold no order)"),
        (
            "-1",
            "--scale-factor -1: must be from 0.01 to 100000 (below 0.01 dbgen's update sets hold no order)",
        ),
    ] {
        assert_refused(&tproch(&db, &["build", "--scale-factor", sf]), message, sf);
    }
    assert_refused(
        &tproch(&db, &["run", "--queries", "3,23"]),
        "--queries 3,23: 23 is not a TPC-H query (1 to 22)",
        "query 23",
    );
    assert_refused(
        &tproch(&db, &["run", "--vu", "0"]),
        "--vu must be at least 1 (not 0)",
        "no streams",
    );
    assert_refused(
        &tproch(&db, &["run"]),
        "no TPROC-H tables here (lineitem is missing): run `stampede tproch build` first",
        "nothing built",
    );
    let dropped = tproch(&db, &["drop"]);
    assert!(
        stdout(&dropped).contains("left customer: not TPROC-H's"),
        "{}",
        stdout(&dropped)
    );
    assert_eq!(s.psql(&db, "SELECT count(*) FROM customer"), "0");
}

/// `tproch generate` writes dbgen's files without a server: every table's rows, `|` after each
/// field, the big tables in numbered parts; a folder that already holds one is refused.
#[test]
fn generate_writes_dbgen_s_files_and_refuses_to_overwrite() {
    let dir = common::LabDir::new("tproch-generate");
    let folder = dir.join("out");
    let args = [
        "tproch",
        "generate",
        "--scale-factor",
        "0.01",
        "--threads",
        "2",
        "--dir",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.push(folder.to_str().unwrap());
    let output = common::stampede(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    for (table, rows) in SF_001 {
        let text = std::fs::read_to_string(folder.join(format!("{table}.tbl"))).unwrap();
        assert_eq!(text.lines().count() as i64, rows, "{table}");
        assert!(text.lines().all(|l| l.ends_with('|')), "{table}");
    }
    let again = common::stampede(&all);
    assert_refused(
        &again,
        &format!(
            "{} already exists: generate into an empty folder",
            folder.join("lineitem.tbl").display()
        ),
        "second generate",
    );
}
