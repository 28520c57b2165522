//! `stampede pgbench` runs checked against the server's own state and counters, and against
//! pgbench's output format.

mod common;

use common::{line_value, server, stampede, stderr, stdout, TempFile};

fn init(db: &str, scale: &str) {
    let server = server();
    let flags = server.flags(db);
    let mut args = vec!["pgbench", "-i", "-q", "-s", scale];
    args.extend(flags.iter().map(String::as_str));
    let output = stampede(&args);
    assert!(output.status.success(), "{}", stderr(&output));
}

fn run(db: &str, extra: &[&str]) -> std::process::Output {
    let flags = server().flags(db);
    let mut args = vec!["pgbench"];
    args.extend_from_slice(extra);
    args.extend(flags.iter().map(String::as_str));
    stampede(&args)
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn json_file(name: &str) -> TempFile {
    TempFile::new(&format!("{name}.json"))
}

#[test]
fn tpcb_balances_agree_and_history_matches_reported_transactions() {
    let server = server();
    let db = server.create_database("run_tpcb");
    init(&db, "1");
    let json = json_file("tpcb");
    let output = run(
        &db,
        &[
            "-c",
            "4",
            "-j",
            "2",
            "-T",
            "3",
            "-M",
            "prepared",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let reported: u64 = line_value(&text, "number of transactions actually processed: ")
        .unwrap()
        .parse()
        .unwrap();
    assert!(reported > 0);
    let sums = server.psql(
        &db,
        "select (select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches), (select sum(tbalance) from pgbench_tellers), (select sum(delta) from pgbench_history)",
    );
    let values: Vec<&str> = sums.split('|').collect();
    assert!(
        values.iter().all(|v| *v == values[0]),
        "balances differ: {sums}"
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_history"),
        reported.to_string()
    );
    let doc = read_json(&json);
    assert_eq!(doc["transactions"], reported);
    assert_eq!(doc["transaction_type"], "<builtin: TPC-B (sort of)>");
    assert_eq!(doc["query_mode"], "prepared");
}

#[test]
fn transaction_count_matches_server_commit_counter() {
    let server = server();
    let db = server.create_database("run_counters");
    init(&db, "1");
    // Returns the commit count once it stops moving, and how many commits were this function's
    // own: each psql call commits twice (its connection start and its query).
    let commits = |db: &str| -> (i64, i64) {
        let mut last = -1;
        for reads in 1..=50 {
            let now: i64 = server
                .psql(
                    db,
                    "select xact_commit from pg_stat_database where datname = current_database()",
                )
                .parse()
                .unwrap();
            // Settled when only our own previous read was committed in between.
            if last >= 0 && now - last <= 2 {
                return (now, 2 * reads);
            }
            last = now;
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        (last, 100)
    };
    let (before, _) = commits(&db);
    let json = json_file("counters");
    let output = run(
        &db,
        &[
            "-S",
            "-c",
            "3",
            "-T",
            "2",
            "-M",
            "prepared",
            "-n",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let reported: i64 = line_value(
        &stdout(&output),
        "number of transactions actually processed: ",
    )
    .unwrap()
    .parse()
    .unwrap();
    let (after, own_reads) = commits(&db);
    // Besides the measured transactions the server committed stampede's setup queries and
    // connection starts (about 20) and this test's own reads; nothing else may be unreported.
    let extra = after - before - reported - own_reads;
    assert!((0..=30).contains(&extra), "server commits {} vs reported {reported} (before {before}, after {after}, own reads {own_reads})", after - before);
    let doc = read_json(&json);
    let delta = doc["server_counters"]["xact_commit_delta"]
        .as_i64()
        .unwrap();
    // Exactly the run's transactions plus one commit per client connection start (3 clients).
    assert_eq!(
        delta,
        reported + 3,
        "server counted {delta} commits for {reported} transactions"
    );
    assert_eq!(doc["server_counters"]["connection_starts"], 3);
    assert!(stdout(&output).contains(&format!("server counters: {delta} commits, 0 rollbacks")));
}

#[test]
fn summary_has_every_pgbench_line_and_percentiles() {
    let server = server();
    let db = server.create_database("run_summary");
    init(&db, "1");
    let ours = run(&db, &["-c", "2", "-t", "30", "-S"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let ours = stdout(&ours);
    let theirs = server.pgbench(&db, &["-c", "2", "-t", "30", "-S", "-P", "1"]);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    // Every line of pgbench's summary (after its version banner) exists in ours, by its label.
    for line in theirs.lines().skip(1) {
        let label = line.split([':', '=']).next().unwrap().trim_end();
        assert!(
            ours.lines().any(|l| l.starts_with(label)),
            "missing pgbench line {label:?} in:\n{ours}"
        );
    }
    for (theirs_line, ours_value) in [
        (
            "transaction type: <builtin: select only>",
            "transaction type: <builtin: select only>",
        ),
        ("scaling factor: 1", "scaling factor: 1"),
        ("number of clients: 2", "number of clients: 2"),
        (
            "number of transactions actually processed: 60/60",
            "number of transactions actually processed: 60/60",
        ),
    ] {
        assert!(theirs.contains(theirs_line), "pgbench changed: {theirs}");
        assert!(ours.contains(ours_value), "{ours}");
    }
    assert!(ours.contains("tps = ") && ours.contains("(without initial connection time)"));
    let percentiles = ours
        .lines()
        .find(|l| l.starts_with("latency percentiles: "))
        .unwrap();
    for label in ["p50 = ", "p90 = ", "p95 = ", "p99 = ", "p99.9 = ", "max = "] {
        assert!(percentiles.contains(label), "{percentiles}");
    }
    assert!(ours.contains("client CPU: user "), "{ours}");
}

#[test]
fn mixed_builtins_json_has_scripts_series_and_consistent_numbers() {
    let server = server();
    let db = server.create_database("run_json");
    init(&db, "1");
    let json = json_file("mixed");
    let output = run(
        &db,
        &[
            "-c",
            "4",
            "-j",
            "3",
            "-T",
            "3",
            "-b",
            "simple-update@1",
            "-b",
            "tpcb@3",
            "--random-seed",
            "42",
            "-P",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("number of threads: 3"), "{text}");
    assert!(text.contains("transaction type: multiple scripts"));
    assert!(text.contains("SQL script 2: <builtin: TPC-B (sort of)>"));
    assert_eq!(
        text.matches("\n - latency percentiles: p50 = ").count(),
        2,
        "percentiles per script: {text}"
    );
    assert!(
        stderr(&output).contains("progress: 1.0 s, "),
        "{}",
        stderr(&output)
    );
    let doc = read_json(&json);
    let scripts = doc["scripts"].as_array().unwrap();
    assert_eq!(scripts.len(), 2);
    assert_eq!(scripts[0]["weight"], 1);
    assert_eq!(scripts[1]["weight"], 3);
    let total = doc["transactions"].as_u64().unwrap();
    let per_script: u64 = scripts
        .iter()
        .map(|s| s["transactions"].as_u64().unwrap())
        .sum();
    assert_eq!(total, per_script);
    // Weighted 1:3, so the TPC-B share is far above half.
    assert!(scripts[1]["transactions"].as_u64().unwrap() * 2 > total);
    let series = doc["series"].as_array().unwrap();
    assert!((3..=4).contains(&series.len()), "{} points", series.len());
    let tps = doc["tps"].as_f64().unwrap();
    let duration = doc["bench_duration_s"].as_f64().unwrap();
    assert!((tps * duration - total as f64).abs() < 1.0);
    let counted: f64 = series
        .iter()
        .map(|p| p["tps"].as_f64().unwrap() * 1.0)
        .take(3)
        .sum();
    assert!(
        counted <= total as f64 * 1.01,
        "series adds up to more than the total"
    );
    for key in ["p50", "p90", "p95", "p99", "p999", "max", "avg", "stddev"] {
        assert!(doc["latency_ms"][key].as_f64().unwrap() > 0.0, "{key}");
    }
    assert_eq!(doc["random_seed"], 42);
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_history"),
        total.to_string()
    );
}

#[test]
fn protocols_and_new_connection_per_transaction() {
    let server = server();
    let db = server.create_database("run_modes");
    init(&db, "1");
    for mode in ["simple", "extended", "prepared"] {
        let output = run(&db, &["-N", "-c", "2", "-t", "20", "-M", mode]);
        assert!(output.status.success(), "{mode}: {}", stderr(&output));
        assert!(stdout(&output).contains(&format!("query mode: {mode}")));
    }
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_history"),
        "40"
    );
    let output = run(&db, &["-S", "-C", "-c", "2", "-t", "10"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("average connection time = "), "{text}");
    assert!(text.contains("(including reconnection times)"), "{text}");
}

#[test]
fn custom_script_with_define_runs() {
    let server = server();
    let db = server.create_database("run_script");
    init(&db, "1");
    let script = TempFile::new("script.sql");
    std::fs::write(
        &script,
        "\\set n :base + 2 * 3\nINSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (:client_id, 1, 1, :n);\n",
    )
    .unwrap();
    let output = run(
        &db,
        &[
            "-f",
            script.to_str().unwrap(),
            "-D",
            "base=10",
            "-c",
            "2",
            "-t",
            "5",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        server.psql(
            &db,
            "select count(*), min(delta), max(delta), count(distinct tid) from pgbench_history"
        ),
        "10|16|16|2"
    );
}

#[test]
fn pipelines_send_every_statement_and_sync_points_commit() {
    let server = server();
    let db = server.create_database("run_pipeline");
    server.psql(&db, "CREATE TABLE log (client int, n int)");
    let script = TempFile::new("pipeline.sql");
    std::fs::write(
        &script,
        "\\startpipeline\nINSERT INTO log VALUES (:client_id, 1);\nINSERT INTO log VALUES (:client_id, 2);\n\\syncpipeline\nINSERT INTO log VALUES (:client_id, 3);\n\\endpipeline\n",
    )
    .unwrap();
    for mode in ["prepared", "extended"] {
        let output = run(
            &db,
            &[
                "-n",
                "-f",
                script.to_str().unwrap(),
                "-c",
                "3",
                "-t",
                "7",
                "-M",
                mode,
            ],
        );
        assert!(output.status.success(), "{mode}: {}", stderr(&output));
        assert!(stdout(&output).contains("number of transactions actually processed: 21/21"));
    }
    assert_eq!(
        server.psql(&db, "select count(*), sum(n) from log"),
        "126|252"
    );
    let simple = run(
        &db,
        &[
            "-n",
            "-f",
            script.to_str().unwrap(),
            "-t",
            "1",
            "-M",
            "simple",
        ],
    );
    assert_eq!(simple.status.code(), Some(2));
    assert!(stderr(&simple).contains("cannot use pipeline mode with the simple query protocol"));
}

#[test]
fn rate_limit_holds_the_rate_and_reports_lag() {
    let server = server();
    let db = server.create_database("run_rate");
    init(&db, "1");
    let json = json_file("rate");
    // The schedule comes from the seeded throttle sequence, so the count is deterministic and
    // the same sequence pgbench draws for this seed.
    let args = [
        "-S",
        "-R",
        "200",
        "-T",
        "10",
        "-c",
        "2",
        "-j",
        "2",
        "-n",
        "--random-seed",
        "11",
    ];
    let mut ours = args.to_vec();
    ours.extend(["-P", "1", "--json", json.to_str().unwrap()]);
    let output = run(&db, &ours);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    // How closely the rate is held and how small the lag is are a clock's questions:
    // bench/clock.py measures them beside pgbench. Here: the lines and the counts.
    assert!(text.contains("rate limit schedule lag: avg "), "{text}");
    assert!(stderr(&output).contains(", lag "), "{}", stderr(&output));
    let doc = read_json(&json);
    let lag = doc["lag_avg_ms"].as_f64().unwrap();
    assert!(lag >= 0.0, "lag {lag} ms");
    // The server saw exactly the transactions the rate produced.
    let transactions = doc["transactions"].as_i64().unwrap();
    assert_eq!(
        doc["server_counters"]["xact_commit_delta"]
            .as_i64()
            .unwrap(),
        transactions + 2
    );
    let theirs = server.pgbench(&db, &args);
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let processed = |text: &str| -> i64 {
        line_value(text, "number of transactions actually processed: ")
            .unwrap()
            .parse()
            .unwrap()
    };
    let pgbench_transactions = processed(&stdout(&theirs));
    assert!(
        (transactions - pgbench_transactions).abs() <= 2,
        "same seed, same schedule: {transactions} vs pgbench's {pgbench_transactions}"
    );
}

#[test]
fn latency_limit_counts_late_and_skips_under_a_slow_server() {
    let server = server();
    let db = server.create_database("run_latency_limit");
    let script = TempFile::new("slow.sql");
    std::fs::write(&script, "SELECT pg_sleep(0.02);\n").unwrap();
    let json = json_file("limit");
    let output = run(
        &db,
        &[
            "-f",
            script.to_str().unwrap(),
            "-R",
            "100",
            "-L",
            "5",
            "-T",
            "2",
            "-c",
            "1",
            "-n",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let doc = read_json(&json);
    let (processed, skipped, late) = (
        doc["transactions"].as_u64().unwrap(),
        doc["skipped"].as_u64().unwrap(),
        doc["late"].as_u64().unwrap(),
    );
    // Each query takes 20 ms against a 10 ms schedule and a 5 ms limit: all late, many skipped.
    assert_eq!(late, processed);
    assert!(
        skipped > processed / 2,
        "skipped {skipped}, processed {processed}"
    );
    assert!(
        text.contains(&format!("number of transactions skipped: {skipped} (")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "number of transactions above the 5.0 ms latency limit: {late}/{processed} (100.000%)"
        )),
        "{text}"
    );
}

/// Progress comes on time while no transaction completes: every client sleeps 2.5 s in the
/// server, yet the 1.0 s line arrives before the first transaction ends (the collector's
/// tick closes the threads' idle intervals), reporting no transactions. "Before" is read from
/// the server, not a clock: each transaction inserts a row as it ends, and when the line
/// arrives the table is still empty.
#[test]
fn progress_comes_on_time_while_no_transaction_completes() {
    let server = server();
    let db = server.create_database("run_idle_progress");
    server.psql(&db, "CREATE TABLE ended (n int)");
    let ended = || -> i64 {
        server
            .psql(&db, "SELECT count(*) FROM ended")
            .parse()
            .unwrap()
    };
    progress_comes_on_time(&server.flags(&db), "socket", &ended);
    progress_comes_on_time(&[tcp_uri(server, &db)], "TCP", &ended);
}

/// `postgresql://user:password@127.0.0.1:port/db` for the test server.
fn tcp_uri(server: &common::TestServer, db: &str) -> String {
    server.url_with_password(db)
}

/// Two threads of one client each (each waits for its server alone, out of the reactor): the
/// 1.0 s line still comes before the first 2.5 s transaction ends.
fn progress_comes_on_time(connection: &[String], over: &str, ended: &dyn Fn() -> i64) {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("idle.sql");
    std::fs::write(&script, "INSERT INTO ended SELECT 1 FROM pg_sleep(2.5);\n").unwrap();
    let before = ended();
    let mut args = vec!["pgbench", "-n", "-f", script.to_str().unwrap()];
    args.extend(["-c", "2", "-j", "2", "-T", "3", "-P", "1"]);
    args.extend(connection.iter().map(String::as_str));
    let mut child = common::stampede_command(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut first_progress = None;
    let mut all = Vec::new();
    for line in lines.map_while(Result::ok) {
        if line.starts_with("progress: 1.0 s") {
            first_progress = Some((ended() - before, line.clone()));
        }
        all.push(line);
    }
    assert!(child.wait().unwrap().success(), "{over}: {all:?}");
    let (ended_by_then, line) =
        first_progress.unwrap_or_else(|| panic!("{over}: no 1.0 s progress: {all:?}"));
    assert!(
        line.starts_with("progress: 1.0 s, 0.0 tps"),
        "{over}: {line}"
    );
    assert_eq!(
        ended_by_then, 0,
        "{over}: the 1.0 s line came after a transaction had ended"
    );
    assert!(
        ended() - before >= 2,
        "{over}: every client ended a transaction"
    );
}

/// A statement far larger than a socket's buffer (4 MiB against some 200 KiB) goes out whole
/// through the paths where a write would block: the server stores its exact length.
#[test]
fn a_statement_larger_than_the_socket_buffer_arrives_whole() {
    let server = server();
    let db = server.create_database("run_big_statement");
    server.psql(&db, "CREATE TABLE sizes (n int)");
    let script = TempFile::new("big.sql");
    let literal = "x".repeat(4 << 20);
    std::fs::write(
        &script,
        format!("INSERT INTO sizes SELECT length('{literal}');\n"),
    )
    .unwrap();
    // One client on one thread (its socket out of the reactor) and two on one (in it), over
    // the Unix socket and over TCP.
    let uri = tcp_uri(server, &db);
    let socket = server.flags(&db);
    let mut runs = 0;
    for connection in [&socket[..], &[uri][..]] {
        for protocol in ["simple", "prepared"] {
            for clients in ["1", "2"] {
                let mut args = vec!["pgbench", "-n", "-f", script.to_str().unwrap(), "-t", "2"];
                args.extend(["-M", protocol, "-c", clients, "-j", "1"]);
                args.extend(connection.iter().map(String::as_str));
                let output = stampede(&args);
                assert!(output.status.success(), "{args:?}: {}", stderr(&output));
                runs += 2 * clients.parse::<usize>().unwrap();
            }
        }
    }
    let stored = server.psql(&db, "SELECT count(*), min(n), max(n) FROM sizes");
    assert_eq!(stored.trim(), format!("{runs}|{}|{}", 4 << 20, 4 << 20));
}
