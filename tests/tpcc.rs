//! `stampede tpcc build|check|drop` against the test server: row counts and TPC-C's value rules
//! after a two-warehouse build, the consistency conditions (and a broken one), bad input.

mod common;

use common::{assert_refused, server, stampede, stderr, stdout};

const NOT_BUILT: &str =
    "no TPROC-C database here (or its build did not finish); run `stampede tpcc build` first";

fn tpcc(db: &str, args: &[&str]) -> std::process::Output {
    let s = server();
    let mut all: Vec<String> = vec!["tpcc".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend([
        "-h".into(),
        s.socket_dir(),
        "-p".into(),
        s.port(),
        "-U".into(),
        s.user.clone(),
        "-d".into(),
        db.into(),
    ]);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    stampede(&refs)
}

#[test]
fn a_two_warehouse_build_follows_the_rules_and_passes_the_checks() {
    let s = server();
    let db = s.create_database("tpcc_build");
    let output = tpcc(
        &db,
        &[
            "build",
            "--warehouses",
            "2",
            "--threads",
            "2",
            "--cluster",
            "--seed",
            "11",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("loaded warehouse 2"), "{text}");
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
        rule("SELECT count(*) FROM pg_class WHERE relname IN ('item', 'stock', 'order_line') AND relfrozenxid::text::bigint > 3"),
        "3",
        "frozen by VACUUM FREEZE"
    );

    assert_eq!(
        rule("SELECT count(*) FROM pg_proc WHERE proname IN ('neword', 'payment', 'ostat', 'delivery', 'slev', 'tpcc_last_name', 'tpcc_customer')"),
        "7"
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
        text.contains("2 warehouse(s): all 9 conditions hold"),
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
    let cases: [(&[&str], &str); 3] = [
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

/// A run in server mode: NOPM's source (district.d_next_o_id) agrees with the New-Orders the
/// driver counted and with the orders table; the 1% rollback happens and leaves no order; the
/// database stays consistent; bad input is refused.
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
    let json = std::env::temp_dir().join(format!("stampede-tpcc-{}.json", std::process::id()));
    let output = tpcc(
        &db,
        &[
            "run",
            "--vu",
            "2",
            "--rampup",
            "0s",
            "--iterations",
            "500",
            "--seed",
            "7",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("TEST RESULT : System achieved "), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let count = |name: &str| report["transactions"][name]["count"].as_i64().unwrap();
    let all: i64 = [
        "new-order",
        "new-order-rollback",
        "payment",
        "order-status",
        "delivery",
        "stock-level",
    ]
    .iter()
    .map(|n| count(n))
    .sum();
    assert_eq!(all, 1000, "500 iterations of 2 virtual users");
    let per_second: i64 = report["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["transactions"].as_i64().unwrap())
        .sum();
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
    let orders: i64 = s.psql(&db, "SELECT count(*) FROM orders").parse().unwrap();
    assert_eq!(
        orders,
        30_000 + committed,
        "rolled-back New-Orders leave no order"
    );
    assert!(count("new-order-rollback") >= 1, "{report}");
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
    let check = tpcc(&db, &["check", "--all"]);
    assert!(check.status.success(), "{}", stdout(&check));
    let _ = std::fs::remove_file(json);

    let cases: [(&[&str], &str); 4] = [
        (&["run", "--vu", "0"], "--vu must be at least 1 (not 0)"),
        (
            &["run", "--mix", "50,50"],
            "--mix \"50,50\": give five weights summing to 100 (New-Order, Payment, Order-Status, Delivery, Stock-Level) or hammerdb",
        ),
        (&["run", "--duration", "soon"], "--duration \"soon\": give a duration such as 90s, 5m or 1h"),
        (&["run", "--warehouses", "3"], "the database was built with 1 warehouse(s), not 3"),
    ];
    for (args, message) in cases {
        assert_refused(&tpcc(&db, args), message, &format!("{args:?}"));
    }
}
