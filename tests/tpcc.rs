//! `stampede tpcc build|check|drop` against the test server: row counts and TPC-C's value rules
//! after a two-warehouse build, HammerDB's physical order, statistics and values after another,
//! the consistency conditions (and a broken one), bad input.

mod common;

use common::{assert_refused, server, stampede_on, stderr, stdout, TempFile};
use stampede::family::tpcc::scripts::NAMES as TRANSACTIONS;

const NOT_BUILT: &str =
    "no TPROC-C database here (or its build did not finish); run `stampede tpcc build` first";

fn tpcc(db: &str, args: &[&str]) -> std::process::Output {
    stampede_on("tpcc", db, args)
}

/// A database `name` built with 2 warehouses over 2 connections and `options`: the server, the
/// database and what the build printed.
fn two_warehouses(name: &str, options: &[&str]) -> (&'static common::TestServer, String, String) {
    let s = server();
    let db = s.create_database(name);
    let mut args = vec!["build", "--warehouses", "2", "--threads", "2"];
    args.extend(options);
    let output = tpcc(&db, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    (s, db, stdout(&output))
}

#[test]
fn a_two_warehouse_build_follows_the_rules_and_passes_the_checks() {
    let (s, db, text) = two_warehouses(
        "tpcc_build",
        &["--cluster", "--seed", "11", "--rules", "tpc-c"],
    );
    assert!(text.contains("seed 11, tpc-c rules"), "{text}");
    assert!(text.contains("loaded stock (200000 rows)"), "{text}");
    assert!(
        text.contains("CLUSTER order_line USING order_line_i1"),
        "{text}"
    );
    assert!(text.contains("warehouses per minute"), "{text}");

    // Clause 4.3.3.1's cardinalities.
    let counts = s.psql(
        &db,
        "SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM warehouse),
                (SELECT count(*) FROM district), (SELECT count(*) FROM stock),
                (SELECT count(*) FROM customer), (SELECT count(*) FROM history),
                (SELECT count(*) FROM orders), (SELECT count(*) FROM new_order),
                (SELECT count(*) = (SELECT sum(o_ol_cnt) FROM orders) FROM order_line),
                (SELECT count(*) BETWEEN 5 * 60000 AND 15 * 60000 FROM order_line)",
    );
    assert_eq!(counts, "100000|2|20|200000|60000|60000|60000|18000|t|t");

    // Value rules, read back through the server (the loader writes binary COPY).
    let rule = |sql: &str| s.psql(&db, sql);
    assert_eq!(
        rule("SELECT min(i_price) >= 1.00, max(i_price) <= 100.00, min(i_im_id) >= 1, max(i_im_id) <= 10000,
                     min(length(i_name)) >= 14, max(length(i_name)) <= 24,
                     avg((i_data LIKE '%ORIGINAL%')::int) BETWEEN 0.08 AND 0.12 FROM item"),
        "t|t|t|t|t|t|t"
    );
    assert_eq!(
        rule("SELECT min(s_quantity), max(s_quantity), avg((s_data LIKE '%ORIGINAL%')::int) BETWEEN 0.08 AND 0.12,
                     min(length(s_dist_07)), sum(s_ytd + s_order_cnt + s_remote_cnt) FROM stock"),
        "10|100|t|24|0"
    );
    assert_eq!(
        rule("SELECT w_ytd, w_tax BETWEEN 0 AND 0.2, w_zip LIKE '____11111' FROM warehouse WHERE w_id = 1"),
        "300000.00|t|t"
    );
    assert_eq!(
        rule("SELECT DISTINCT d_next_o_id, d_ytd, d_tax BETWEEN 0 AND 0.2 FROM district"),
        "3001|30000.00|t"
    );
    assert_eq!(
        rule("SELECT c_last FROM customer WHERE c_w_id = 2 AND c_d_id = 3 AND c_id IN (1, 372, 1000) ORDER BY c_id"),
        "BARBARBAR\nPRICALLYOUGHT\nEINGEINGEING"
    );
    assert_eq!(
        rule("SELECT DISTINCT c_middle, c_balance, c_ytd_payment, c_credit_lim, c_payment_cnt, c_delivery_cnt FROM customer"),
        "OE|-10.00|10.00|50000.00|1|0"
    );
    assert_eq!(
        rule("SELECT avg((c_credit = 'BC')::int) BETWEEN 0.08 AND 0.12, min(c_discount) >= 0, max(c_discount) <= 0.5,
                     min(length(c_data)) >= 300, max(length(c_data)) <= 500,
                     bool_and(c_since > now() - interval '1 hour' AND c_since <= now()),
                     count(DISTINCT c_last) <= 1000
              FROM customer"),
        "t|t|t|t|t|t|t"
    );
    // Each district's orders: one per customer, carriers and delivery dates only before 2101.
    assert_eq!(
        rule("SELECT count(DISTINCT (o_w_id, o_d_id, o_c_id)), bool_and((o_carrier_id IS NULL) = (o_id >= 2101)),
                     min(o_ol_cnt), max(o_ol_cnt), bool_and(o_all_local = 1) FROM orders"),
        "60000|t|5|15|t"
    );
    assert_eq!(
        rule("SELECT bool_and((ol_delivery_d IS NULL) = (ol_o_id >= 2101)),
                     bool_and(CASE WHEN ol_o_id < 2101 THEN ol_amount = 0 ELSE ol_amount BETWEEN 0.01 AND 9999.99 END),
                     bool_and(ol_quantity = 5 AND ol_supply_w_id = ol_w_id) FROM order_line"),
        "t|t|t"
    );
    assert_eq!(
        rule("SELECT min(no_o_id), max(no_o_id) FROM new_order"),
        "2101|3000"
    );
    assert_eq!(
        rule("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid IN ('customer'::regclass, 'orders'::regclass) ORDER BY 1"),
        "customer_i1\ncustomer_i2\norders_i1\norders_i2"
    );
    assert_eq!(
        rule("SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('item', 'stock', 'order_line') AND vacuum_count > 0"),
        "3",
        "vacuumed after the load (all-visible too unless another test's snapshot held it back)"
    );

    assert_eq!(
        rule("SELECT count(*) FROM pg_proc WHERE proname IN ('neword', 'payment', 'ostat', 'delivery', 'slev', 'tpcc_last_name')"),
        "6"
    );
    assert_eq!(rule("SELECT tpcc_last_name(371)"), "PRICALLYOUGHT");
    let output = tpcc(&db, &["check", "--all", "--warehouses", "2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("3.3.2.1 W_YTD = sum(D_YTD) per warehouse: ok"),
        "{text}"
    );
    assert!(
        text.contains("2 warehouse(s): all 10 conditions hold"),
        "{text}"
    );

    // A broken condition names its clause and the offending key, exit 2.
    s.psql(&db, "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2");
    let output = tpcc(&db, &["check"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("3.3.2.1 W_YTD = sum(D_YTD) per warehouse: FAILED for 1 key(s):\n    w_id=2: w_ytd 300001.00, sum(d_ytd) 300000.00\n"),
        "{text}"
    );
    assert!(text.contains("3.3.2.2 D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district: ok"));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: consistency check failed: 3.3.2.1"
    );
    s.psql(&db, "UPDATE warehouse SET w_ytd = w_ytd - 1 WHERE w_id = 2");

    // One virtual user over all warehouses works on both.
    let output = tpcc(
        &db,
        &[
            "run",
            "--vu",
            "1",
            "--all-warehouses",
            "--rampup",
            "0s",
            "--iterations",
            "200",
            "--seed",
            "3",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("1 virtual user(s) on 2 warehouse(s) (all warehouses)"));
    assert_eq!(
        rule("SELECT count(DISTINCT d_w_id) FROM district WHERE d_next_o_id > 3001"),
        "2"
    );
    let output = tpcc(&db, &["check", "--all"]);
    assert!(output.status.success(), "{}", stdout(&output));

    // Bad input: exit 1, nothing written.
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "--stall-timeout", "soon"],
            "invalid stall timeout: \"soon\" (a duration such as 90s or 5m, or 0 to wait forever)",
        ),
        (
            &["check", "--warehouses", "3"],
            "the database was built with 2 warehouse(s), not 3",
        ),
        (
            &["build", "--warehouses", "1"],
            "table item already exists; run `stampede tpcc drop` first",
        ),
        (
            &["build", "--warehouses", "0"],
            "--warehouses must be at least 1 (not 0)",
        ),
    ];
    for (args, message) in cases {
        assert_refused(&tpcc(&db, args), message, &format!("{args:?}"));
    }
    let output = tpcc(&db, &["drop"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pg_class WHERE relname IN ('item', 'order_line', 'stampede_tpcc')"),
        "0"
    );
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pg_proc WHERE proname IN ('neword', 'payment', 'ostat', 'delivery', 'slev', 'tpcc_last_name', 'tpcc_customer')"),
        "0"
    );
    let output = tpcc(&db, &["check"]);
    assert_refused(&output, NOT_BUILT, "before build");
    assert_refused(
        &tpcc(&db, &["build", "--threads", "0"]),
        "--threads must be at least 1 (not 0)",
        "threads",
    );
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pg_class WHERE relname = 'item'"),
        "0"
    );
}

/// The default build is HammerDB's: every table in the order HammerDB's loader writes it
/// (warehouse, district, key), the statistics the planner reads the same as on a copy written
/// in that order, stock's key built row by row (HammerDB declares it before the rows), its
/// values where they differ from TPC-C's, and TPC-C's consistency conditions still hold.
#[test]
fn a_default_build_is_written_in_hammerdbs_order_with_its_values() {
    let (s, db, text) = two_warehouses("tpcc_hammerdb_order", &["--seed", "21"]);
    assert!(text.contains("seed 21, hammerdb rules"), "{text}");
    for (table, key) in [
        ("item", "i_id"),
        ("warehouse", "w_id"),
        ("district", "d_w_id, d_id"),
        ("stock", "s_w_id, s_i_id"),
        ("customer", "c_w_id, c_d_id, c_id"),
        ("history", "h_w_id, h_d_id, h_c_id"),
        ("orders", "o_w_id, o_d_id, o_id"),
        ("new_order", "no_w_id, no_d_id, no_o_id"),
        ("order_line", "ol_w_id, ol_d_id, ol_o_id, ol_number"),
    ] {
        // Rank correlation of the heap's order with the key's: COPY places a row that fits into
        // a page an earlier, larger row left behind, so a few rows step back even when they are
        // sent in order (as HammerDB's are); warehouses loaded side by side score below 0.3.
        let agreement: f64 = s
            .psql(
                &db,
                &format!(
                    "SELECT corr(heap_rank, key_rank) FROM (SELECT row_number() OVER (ORDER BY ctid) AS heap_rank, \
                     row_number() OVER (ORDER BY {key}) AS key_rank FROM {table}) AS ranks"
                ),
            )
            .parse()
            .unwrap();
        assert!(
            agreement > 0.999,
            "{table}: heap order against HammerDB's: {agreement}"
        );
    }
    s.psql(
        &db,
        "CREATE TABLE hammerdb_order AS SELECT * FROM order_line ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number;
         ANALYZE hammerdb_order",
    );
    let apart = s.psql(
        &db,
        "SELECT string_agg(ours.attname || ' ' || round(abs(ours.correlation - theirs.correlation)::numeric, 3), ', ')
         FROM pg_stats ours JOIN pg_stats theirs USING (attname)
         WHERE ours.tablename = 'order_line' AND theirs.tablename = 'hammerdb_order'
           AND attname IN ('ol_o_id', 'ol_d_id', 'ol_w_id') AND abs(ours.correlation - theirs.correlation) > 0.1",
    );
    assert_eq!(
        apart, "",
        "pg_stats.correlation further than 0.1 from HammerDB's order"
    );
    s.psql(
        &db,
        "CREATE INDEX stock_after_load ON stock (s_i_id, s_w_id)",
    );
    let ratio: f64 = s
        .psql(
            &db,
            "SELECT pg_relation_size('stock_i1')::float8 / pg_relation_size('stock_after_load')",
        )
        .parse()
        .unwrap();
    assert!(
        ratio > 1.3,
        "stock_i1 built row by row, as HammerDB's: {ratio}x an index built after"
    );
    assert_eq!(
        s.psql(
            &db,
            "SELECT avg((c_credit = 'BC')::int) BETWEEN 0.45 AND 0.55 FROM customer"
        ),
        "t",
        "half the customers with bad credit"
    );
    assert_eq!(
        s.psql(
            &db,
            "SELECT bool_and(o_c_id BETWEEN o_id AND 3000), count(DISTINCT (o_w_id, o_d_id, o_c_id)) < 50000 FROM orders"
        ),
        "t|t",
        "HammerDB's orders' customers: order i's in [i, 3000]"
    );
    // The server's own record that the build vacuumed and analysed them. Whether VACUUM could
    // mark every page all-visible depends on the oldest snapshot in the cluster, which the other
    // tests of this file (running beside it on the same server) hold at times.
    assert_eq!(
        s.psql(&db, "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('stock', 'order_line', 'customer') AND vacuum_count > 0 AND analyze_count > 0"),
        "3"
    );
    let output = tpcc(&db, &["check", "--all", "--warehouses", "2"]);
    assert!(output.status.success(), "{}", stdout(&output));
    home_warehouses_as_the_history_rows_show(s, &db);
}

/// Payments only (each writes one history row for its virtual user's home warehouse), 4 users
/// of 25 on 2 warehouses: spread homes give each warehouse 2 users; HammerDB's random homes
/// give each warehouse a multiple of 25 rows (a user keeps its home) as the seed draws them —
/// seed 1 puts three users on one warehouse — and the same seed draws the same homes.
fn home_warehouses_as_the_history_rows_show(s: &common::TestServer, db: &str) {
    let payments_per_warehouse = |options: &[&str]| -> String {
        s.psql(db, "TRUNCATE history");
        let mut args = vec![
            "run",
            "--rampup",
            "0s",
            "--vu",
            "4",
            "--iterations",
            "25",
            "--mix",
            "0,100,0,0,0",
        ];
        args.extend(options);
        let output = tpcc(db, &args);
        assert!(output.status.success(), "{}", stderr(&output));
        s.psql(
            db,
            "SELECT string_agg(rows::text, ',' ORDER BY rows) FROM (SELECT count(*) AS rows FROM history GROUP BY h_w_id) AS homes",
        )
    };
    assert_eq!(payments_per_warehouse(&["--seed", "1"]), "50,50");
    let random = ["--home-warehouses", "random", "--seed", "1"];
    assert_eq!(payments_per_warehouse(&random), "25,75");
    assert_eq!(payments_per_warehouse(&random), "25,75");
    let text = stdout(&tpcc(
        db,
        &[
            "run",
            "--rampup",
            "0s",
            "--iterations",
            "1",
            "--home-warehouses",
            "random",
        ],
    ));
    assert!(text.contains("(home warehouses drawn at random)"), "{text}");
}

#[test]
fn order_line_is_hash_partitioned_from_200_warehouses_only() {
    let s = server();
    let db = s.create_database("tpcc_partition");
    let output = tpcc(
        &db,
        &["build", "--warehouses", "1", "--partition", "--seed", "3"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output)
        .contains("order_line is not partitioned below 200 warehouses (as HammerDB)"));
    assert_eq!(
        s.psql(
            &db,
            "SELECT relkind FROM pg_class WHERE relname = 'order_line'"
        ),
        "r"
    );
    let output = tpcc(&db, &["check"]);
    assert!(output.status.success(), "{}", stdout(&output));
}

/// The value after `name` in `args`.
fn option(args: &[&str], name: &str) -> usize {
    let at = args.iter().position(|a| *a == name).expect("given");
    args[at + 1].parse().unwrap()
}

/// The transactions of a `--json` report's per-second series, summed.
fn series_transactions(report: &serde_json::Value) -> i64 {
    report["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|second| second["transactions"].as_i64().unwrap())
        .sum()
}

/// Runs `args` on `db` with `--json`, checks that the driver's counts agree with the server's
/// (NOPM from district.d_next_o_id, the orders table, TPM), and returns the JSON report.
fn run_checked(db: &str, args: &[&str], transactions: i64) -> serde_json::Value {
    let s = server();
    let json = TempFile::new(&format!("tpcc-{db}.json"));
    let mut all: Vec<&str> = vec!["run", "--rampup", "0s"];
    all.extend(args);
    all.extend(["--json", json.to_str().unwrap()]);
    let orders_before: i64 = s.psql(db, "SELECT count(*) FROM orders").parse().unwrap();
    let output = tpcc(db, &all);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("TEST RESULT : System achieved "), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let count = |name: &str| report["transactions"][name]["count"].as_i64().unwrap();
    let all: i64 = TRANSACTIONS.iter().map(|n| count(n)).sum();
    assert_eq!(all, transactions, "{report}");
    common::assert_fairness(&report, &text, option(args, "--vu"), all as u64);
    let per_second = series_transactions(&report);
    assert_eq!(
        per_second, all,
        "the per-second series covers every transaction"
    );
    let committed = count("new-order");
    assert_eq!(
        report["new_orders_committed_server"].as_i64().unwrap(),
        committed
    );
    assert_eq!(
        report["new_orders_committed_driver"].as_i64().unwrap(),
        committed
    );
    let orders: i64 = s.psql(db, "SELECT count(*) FROM orders").parse().unwrap();
    assert_eq!(
        orders,
        orders_before + committed,
        "rolled-back New-Orders leave no order"
    );
    let minutes = report["minutes"].as_f64().unwrap();
    let nopm = report["nopm"].as_f64().unwrap();
    assert!((nopm * minutes - committed as f64).abs() < 1e-6);
    // TPM counts every database's transactions (others run beside this test): at least ours.
    assert!(
        report["tpm"].as_f64().unwrap() * minutes >= all as f64,
        "{report}"
    );
    for name in ["payment", "delivery", "stock-level"] {
        assert_eq!(report["transactions"][name]["errors"], 0, "{report}");
    }
    let check = tpcc(db, &["check", "--all"]);
    assert!(check.status.success(), "{}", stdout(&check));
    report
}

/// The rampup runs in the measured run's sessions, as HammerDB's virtual users keep theirs (a
/// PL/pgSQL statement's plan choice, made at its sixth call, carries over): the database
/// counts as many new sessions (pg_stat_database.sessions) as for a run without one; the
/// measured transactions are the `--iterations` asked, the rampup's left out; and the
/// driver's New-Orders equal the server's Δ d_next_o_id read between rampup and measurement.
fn the_rampup_runs_in_the_measured_runs_sessions(s: &common::TestServer, db: &str) {
    let sessions = || -> i64 {
        s.psql(
            db,
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()",
        )
        .parse()
        .unwrap()
    };
    let run = |rampup: &str| -> (i64, serde_json::Value) {
        let json = TempFile::new(&format!("tpcc-rampup-{rampup}.json"));
        let before = sessions();
        let output = tpcc(
            db,
            &[
                "run",
                "--vu",
                "2",
                "--rampup",
                rampup,
                "--iterations",
                "100",
                "--seed",
                "9",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let report = std::fs::read_to_string(&json).unwrap();
        (sessions() - before, serde_json::from_str(&report).unwrap())
    };
    let (without_rampup, _) = run("0s");
    let (with_rampup, report) = run("2s");
    assert_eq!(with_rampup, without_rampup, "new sessions: {report}");
    let count = |name: &str| report["transactions"][name]["count"].as_i64().unwrap();
    assert_eq!(
        TRANSACTIONS.iter().map(|n| count(n)).sum::<i64>(),
        200,
        "{report}"
    );
    assert_eq!(report["new_orders_committed_server"], count("new-order"));
    assert_eq!(report["new_orders_committed_driver"], count("new-order"));
    let per_second = series_transactions(&report);
    assert_eq!(
        per_second, 200,
        "the series holds the measured part only: {report}"
    );
}

/// A run in each mode: NOPM's source (district.d_next_o_id) agrees with the New-Orders the
/// driver counted and with the orders table; the 1% rollback happens and leaves no order; the
/// database stays consistent; client mode sends the statements itself; bad input is refused.
#[test]
fn a_run_counts_new_orders_as_the_server_does_and_stays_consistent() {
    let s = server();
    let db = s.create_database("tpcc_run");
    let output = tpcc(
        &db,
        &["run", "--vu", "2", "--rampup", "0s", "--iterations", "10"],
    );
    assert_refused(&output, NOT_BUILT, "before build");
    let build = tpcc(&db, &["build", "--warehouses", "1", "--seed", "5"]);
    assert!(build.status.success(), "{}", stderr(&build));
    let server_mode = run_checked(
        &db,
        &["--vu", "2", "--iterations", "500", "--seed", "7"],
        1000,
    );
    assert_eq!(server_mode["mode"], "server");
    the_rampup_runs_in_the_measured_runs_sessions(s, &db);
    assert!(
        server_mode["transactions"]["new-order-rollback"]["count"]
            .as_i64()
            .unwrap()
            >= 1,
        "{server_mode}"
    );

    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    // Only this database's statements: other tests run beside this one.
    s.psql(
        &db,
        "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)",
    );
    let lines_before: i64 = s
        .psql(&db, "SELECT count(*) FROM order_line")
        .parse()
        .unwrap();
    let args = [
        "--mode",
        "client",
        "--vu",
        "2",
        "--iterations",
        "300",
        "--seed",
        "8",
    ];
    let client_mode = run_checked(&db, &args, 600);
    assert_eq!(client_mode["mode"], "client");
    let new_order = &client_mode["transactions"]["new-order"];
    let rollback = &client_mode["transactions"]["new-order-rollback"];
    let rolled_back = rollback["count"].as_i64().unwrap();
    assert!(rolled_back >= 1, "{client_mode}");
    // The client's own statements reached the server, and no procedure was called.
    let calls = |pattern: &str| -> i64 {
        s.psql(
            &db,
            &format!(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s \
                 JOIN pg_database d ON d.oid = s.dbid \
                 WHERE d.datname = current_database() AND query LIKE '{pattern}'"
            ),
        )
        .parse()
        .unwrap()
    };
    assert_eq!(calls("CALL %"), 0);
    // Each New-Order sends its header (district, order, new-order) and its lines (prices, stock,
    // order lines) as one statement each, set-wise; a deadlock's retry sends them again.
    let tries = new_order["count"].as_i64().unwrap()
        + new_order["retries"].as_i64().unwrap()
        + rolled_back
        + rollback["retries"].as_i64().unwrap();
    let headers = calls("WITH district_update AS (UPDATE district%");
    let line_sets = calls("WITH lines AS (%");
    assert!(
        headers >= new_order["count"].as_i64().unwrap() + rolled_back && headers <= tries,
        "{headers} headers: {client_mode}"
    );
    assert!(
        line_sets <= headers,
        "{line_sets} line sets, {headers} headers"
    );
    let lines: i64 = s
        .psql(&db, "SELECT count(*) FROM order_line")
        .parse()
        .unwrap();
    let new_orders: i64 = new_order["count"].as_i64().unwrap();
    assert!(
        (5 * new_orders..=15 * new_orders).contains(&(lines - lines_before)),
        "{} lines for {new_orders} New-Orders",
        lines - lines_before
    );

    let cases: [(&[&str], &str); 10] = [
        (&["run", "--vu", "0"], "--vu must be at least 1 (not 0)"),
        (
            &["run", "--rules", "tpcc"],
            "--rules \"tpcc\": the rules are hammerdb (HammerDB's values and inputs) and tpc-c (the specification's)",
        ),
        (
            &["build", "--rules", "TPC-C"],
            "--rules \"TPC-C\": the rules are hammerdb (HammerDB's values and inputs) and tpc-c (the specification's)",
        ),
        (
            &["run", "--mix", "50,50"],
            "--mix \"50,50\": give five weights summing to 100 (New-Order, Payment, Order-Status, Delivery, Stock-Level) or hammerdb",
        ),
        (&["run", "--duration", "soon"], "--duration \"soon\": give a duration such as 90s, 5m or 1h"),
        (&["run", "--warehouses", "3"], "the database was built with 1 warehouse(s), not 3"),
        (
            &["run", "--call", "extended"],
            "--call \"extended\": the calls are sent simple (literals, as HammerDB) or prepared",
        ),
        (
            &["run", "--mode", "client", "--call", "prepared"],
            "--call applies to --mode server; client mode prepares its own statements",
        ),
        (
            &["run", "--home-warehouses", "even"],
            "--home-warehouses \"even\": the home warehouses are spread (client % W + 1) or random (HammerDB's)",
        ),
        (
            &["run", "--all-warehouses", "--home-warehouses", "random"],
            "--home-warehouses applies to home warehouses; with all warehouses every transaction picks its own",
        ),
    ];
    for (args, message) in cases {
        assert_refused(&tpcc(&db, args), message, &format!("{args:?}"));
    }
    // -h is the host, as in pgbench; help is -? or --help.
    for subcommand in ["build", "run", "check", "drop"] {
        let help = common::stampede(&["tpcc", subcommand, "-?"]);
        let text = stdout(&help);
        assert!(help.status.success(), "{}", stderr(&help));
        assert_eq!(text.matches("-h,").count(), 1, "{text}");
        assert!(
            text.contains("-h, --host <HOST>") && text.contains("-?, --help"),
            "{text}"
        );
    }
}

/// With keying and thinking, 50 virtual users hold the New-Order rate the pauses imply: the
/// server's count (Δ d_next_o_id) against virtual users × New-Order share / mean cycle, where
/// the cycle is the mix-weighted keying, mean think time and measured response time. The
/// times are scaled by 0.02 (HammerDB's New-Order 18 s keying becomes 0.36 s) to fit a test.
#[test]
fn keying_and_thinking_hold_the_rate_the_pauses_imply() {
    let s = server();
    let db = s.create_database("tpcc_keying");
    let build = tpcc(&db, &["build", "--warehouses", "1", "--seed", "6"]);
    assert!(build.status.success(), "{}", stderr(&build));
    const SCALE: f64 = 0.02;
    let json = TempFile::new("tpcc-keying.json");
    let output = tpcc(
        &db,
        &[
            "run",
            "--vu",
            "50",
            "--rampup",
            "0s",
            "--duration",
            "12s",
            "--keying-thinking",
            "--keying-thinking-scale",
            "0.02",
            "--mix",
            "45,43,4,4,4",
            "--seed",
            "9",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("keying and thinking × 0.02"),
        "{}",
        stdout(&output)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // (weight, keying s, think s) per transaction, HammerDB's seconds, mix 45/43/4/4/4.
    let pauses = [
        (44.55, 18.0, 12.0),
        (0.45, 18.0, 12.0),
        (43.0, 3.0, 12.0),
        (4.0, 2.0, 5.0),
        (4.0, 2.0, 10.0),
        (4.0, 2.0, 5.0),
    ];
    let mean_cycle_s: f64 = TRANSACTIONS
        .iter()
        .zip(pauses)
        .map(|(name, (weight, keying, think))| {
            let response_s = report["transactions"][name]["latency_ms"]["mean"]
                .as_f64()
                .unwrap_or(0.0)
                / 1000.0;
            weight / 100.0 * ((keying + think) * SCALE + response_s)
        })
        .sum();
    let implied_per_s = 50.0 * 0.4455 / mean_cycle_s;
    let achieved_per_s = report["nopm"].as_f64().unwrap() / 60.0;
    let ratio = achieved_per_s / implied_per_s;
    assert!(
        (0.85..=1.10).contains(&ratio),
        "New-Orders {achieved_per_s:.1}/s against {implied_per_s:.1}/s implied: {report}"
    );
    // The pauses are not part of the latencies: a New-Order's keying alone is 360 ms.
    let p50 = report["transactions"]["new-order"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!(p50 < 100.0, "{report}");

    let refused = tpcc(&db, &["run", "--keying-thinking-scale", "0.5"]);
    assert_refused(
        &refused,
        "--keying-thinking-scale needs --keying-thinking",
        "scale alone",
    );
    let refused = tpcc(
        &db,
        &["run", "--keying-thinking", "--keying-thinking-scale", "0"],
    );
    assert_refused(
        &refused,
        "--keying-thinking-scale 0: give a factor above 0, at most 100",
        "scale 0",
    );
    let refused = tpcc(&db, &["run", "--mode", "both"]);
    assert_refused(
        &refused,
        "--mode \"both\": the modes are server (PL/pgSQL procedures) and client (prepared statements)",
        "bad mode",
    );
}

/// How often a statement runs per transaction of its type.
#[derive(Clone, Copy, Debug)]
enum Per {
    /// Every transaction (New-Order: the rolled-back ones too).
    Transaction,
    /// New-Orders that commit (the unused item stops the others before their stock).
    Committed,
    /// Transactions naming the customer by last name (60%).
    ByName,
    /// Transactions naming the customer by id.
    ById,
}

/// A transaction type, the mix that runs only it, and its statements, each by a fragment of
/// its text and how often it runs.
type TransactionStatements = (&'static str, &'static str, &'static [(&'static str, Per)]);

/// The statements HammerDB's PostgreSQL procedures run per transaction (`pgoltp.tcl`, stored
/// procedures).
const HAMMERDB_STATEMENTS: [TransactionStatements; 5] = [
    (
        "new-order",
        "100,0,0,0,0",
        &[
            ("FROM customer, warehouse", Per::Transaction),
            ("UPDATE district SET d_next_o_id", Per::Transaction),
            ("INSERT INTO orders", Per::Transaction),
            ("INSERT INTO new_order", Per::Transaction),
            ("LEFT JOIN item", Per::Transaction),
            ("UPDATE stock", Per::Committed),
            ("INSERT INTO order_line", Per::Committed),
        ],
    ),
    (
        "payment",
        "0,100,0,0,0",
        &[
            ("UPDATE warehouse", Per::Transaction),
            ("UPDATE district SET d_ytd", Per::Transaction),
            ("SELECT count(c_id)", Per::ByName),
            ("ORDER BY c_first", Per::ByName),
            ("SELECT c_last,", Per::ById),
            ("UPDATE customer", Per::Transaction),
            ("INSERT INTO history", Per::Transaction),
        ],
    ),
    (
        "order-status",
        "0,0,100,0,0",
        &[
            ("SELECT count(c_id)", Per::ByName),
            ("ORDER BY c_first", Per::ByName),
            ("SELECT c_balance, c_first, c_middle, c_last", Per::ById),
            ("ORDER BY o_id DESC", Per::Transaction),
            ("FROM order_line", Per::Transaction),
        ],
    ),
    (
        "delivery",
        "0,0,0,100,0",
        &[
            ("DELETE FROM new_order", Per::Transaction),
            ("UPDATE orders", Per::Transaction),
            ("UPDATE order_line", Per::Transaction),
            ("UPDATE customer", Per::Transaction),
        ],
    ),
    (
        "stock-level",
        "0,0,0,0,100",
        &[("count(DISTINCT s_i_id)", Per::Transaction)],
    ),
];

/// Server mode runs HammerDB's statements: per transaction type, the procedures' statements
/// as pg_stat_statements counts them (`track = all`, nested ones only) are exactly those of
/// HammerDB's procedures, each as often; the default call is HammerDB's CALL with literals.
#[test]
fn server_mode_runs_hammerdbs_statements_per_transaction() {
    let s = server();
    let db = s.create_database("tpcc_shapes");
    let build = tpcc(&db, &["build", "--warehouses", "2", "--seed", "12"]);
    assert!(build.status.success(), "{}", stderr(&build));
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    s.psql(
        &db,
        &format!("ALTER DATABASE {db} SET pg_stat_statements.track = 'all'"),
    );
    let reset = "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)";
    let ours = "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()";
    for (name, mix, expected) in HAMMERDB_STATEMENTS {
        s.psql(&db, reset);
        let report = run_checked(
            &db,
            &[
                "--vu",
                "1",
                "--iterations",
                "150",
                "--mix",
                mix,
                "--call",
                "prepared",
                "--seed",
                "13",
            ],
            150,
        );
        let count = |script: &str| report["transactions"][script]["count"].as_i64().unwrap();
        let nested: Vec<(String, i64)> = s
            .psql(
                &db,
                &format!("SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') {ours} AND NOT toplevel ORDER BY query"),
            )
            .lines()
            .map(|line| {
                let (calls, query) = line.split_once('|').unwrap();
                (query.to_string(), calls.parse().unwrap())
            })
            .collect();
        let calls = |fragment: &str| -> i64 {
            nested
                .iter()
                .filter(|(query, _)| query.contains(fragment))
                .map(|(_, calls)| calls)
                .sum()
        };
        let transactions = if name == "new-order" {
            count("new-order") + count("new-order-rollback")
        } else {
            count(name)
        };
        let by_name = calls("SELECT count(c_id)");
        for (fragment, per) in expected {
            let wanted = match per {
                Per::Transaction => transactions,
                Per::Committed => count("new-order"),
                Per::ByName => by_name,
                Per::ById => transactions - by_name,
            };
            assert_eq!(
                calls(fragment),
                wanted,
                "{name}: {fragment} ({per:?})\n{nested:?}"
            );
        }
        if expected.iter().any(|(_, per)| matches!(per, Per::ByName)) {
            let share = by_name as f64 / transactions as f64;
            assert!((0.45..=0.75).contains(&share), "{name}: {share} by name");
        }
        for (query, _) in &nested {
            let matching = expected.iter().filter(|(f, _)| query.contains(f)).count();
            assert_eq!(
                matching, 1,
                "{name}: a statement HammerDB does not run, or ambiguous: {query}"
            );
        }
        // One CALL per transaction, prepared.
        let toplevel_calls: i64 = s
            .psql(
                &db,
                &format!(
                    "SELECT coalesce(sum(calls), 0) {ours} AND toplevel AND query LIKE 'CALL %'"
                ),
            )
            .parse()
            .unwrap();
        assert_eq!(toplevel_calls, transactions, "{name}");
    }

    // By default the calls go as HammerDB sends them: the simple protocol, with literals.
    s.psql(&db, reset);
    run_checked(
        &db,
        &["--vu", "1", "--iterations", "40", "--seed", "14"],
        40,
    );
    let literal_calls: i64 = s
        .psql(&db, &format!("SELECT count(*) {ours} AND query ~ '^CALL (neword|payment)\\(\\d+, \\d+, \\d+, \\d+'"))
        .parse()
        .unwrap();
    assert!(literal_calls > 1, "{literal_calls}");

    // HammerDB's inputs keep one Stock-Level district per virtual user (two users, one per
    // warehouse); TPC-C's draw one per transaction.
    for (rules, one_district) in [("hammerdb", true), ("tpc-c", false)] {
        s.psql(&db, reset);
        run_checked(
            &db,
            &[
                "--vu",
                "2",
                "--iterations",
                "60",
                "--mix",
                "0,0,0,0,100",
                "--rules",
                rules,
                "--seed",
                "15",
            ],
            120,
        );
        let districts = s.psql(
            &db,
            &format!(
                "SELECT max(n) FROM (SELECT count(DISTINCT split_part(query, ',', 2)) AS n {ours} \
                 AND toplevel AND query LIKE 'CALL slev(%' GROUP BY split_part(query, ',', 1)) AS per_user"
            ),
        );
        let districts: i64 = districts.parse().unwrap();
        assert_eq!(districts == 1, one_district, "{rules}: {districts}");
    }
    by_name_customers_are_hammerdbs_or_tpccs(s, &db);
}

/// Which of the n customers with a last name Payment and Order-Status take, against the
/// customer table in C_FIRST order: `byname` 2 the ⌈n/2⌉-th (TPC-C's), 1 HammerDB's — Payment
/// the ⌊n/2⌋-th (none when n is 1: the customer id the client drew), Order-Status the one
/// after the ⌈n/2⌉-th (none when n is 1).
fn by_name_customers_are_hammerdbs_or_tpccs(s: &common::TestServer, db: &str) {
    let where_named = |name: &str| format!("c_w_id = 1 AND c_d_id = 1 AND c_last = '{name}'");
    let drawn_id = 2999;
    for n in 1..=4_i64 {
        let name = s.psql(
            db,
            &format!(
                "SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 1 GROUP BY c_last \
                 HAVING count(*) = {n} AND count(DISTINCT c_first) = {n} ORDER BY c_last LIMIT 1"
            ),
        );
        assert!(!name.is_empty(), "no last name with {n} customers");
        let nth = |position: i64| -> String {
            if position < 1 || position > n {
                return String::new();
            }
            s.psql(
                db,
                &format!(
                    "SELECT c_id FROM customer WHERE {} ORDER BY c_first OFFSET {} LIMIT 1",
                    where_named(&name),
                    position - 1
                ),
            )
        };
        let (tpcc, hammerdb_payment, hammerdb_order_status) = ((n + 1) / 2, n / 2, (n + 1) / 2 + 1);
        for (byname, payment_nth, order_status_nth) in [
            (2, tpcc, tpcc),
            (1, hammerdb_payment, hammerdb_order_status),
        ] {
            let order_status = s.psql(
                db,
                &format!("CALL ostat(1, 1, {drawn_id}, {byname}, '{name}', '', '', 0.0, 0, LOCALTIMESTAMP(0), 0, '')"),
            );
            let customer = order_status.split('|').next().unwrap();
            assert_eq!(
                customer,
                nth(order_status_nth),
                "Order-Status, byname {byname}, {n} named"
            );
            let payment = s.psql(
                db,
                &format!(
                    "CALL payment(1, 1, 1, 1, {byname}, 1.00, '0', '{name}', {drawn_id}{}, LOCALTIMESTAMP(0), 0.0, 0.0, 0.0, '', LOCALTIMESTAMP(0))",
                    ", ''".repeat(18)
                ),
            );
            let customer = payment.split('|').nth(2).unwrap();
            let expected = if payment_nth == 0 {
                drawn_id.to_string()
            } else {
                nth(payment_nth)
            };
            assert_eq!(customer, expected, "Payment, byname {byname}, {n} named");
        }
    }
}
