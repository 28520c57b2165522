//! `stampede sysbench` against the test server: the tables prepare creates, the statements each
//! test issues (pg_stat_statements), the real sysbench on the same tables, and bad input.

mod common;

use std::collections::BTreeMap;

use common::{server, stampede, stderr, stdout, TempFile};

fn connection(db: &str) -> Vec<String> {
    let s = server();
    vec![
        "--pgsql-host".into(),
        s.socket_dir(),
        "--pgsql-port".into(),
        s.port(),
        "--pgsql-user".into(),
        s.user.clone(),
        "--pgsql-db".into(),
        db.into(),
    ]
}

fn sysbench(db: &str, args: &[&str]) -> std::process::Output {
    let mut all: Vec<String> = vec!["sysbench".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend(connection(db));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    stampede(&refs)
}

/// `stampede sysbench` running Debian's /usr/share/sysbench/<script>.lua through the Lua path
/// on `db`, with `options`, then `run`.
fn bundled_script(db: &str, script: &str, options: &[&str]) -> std::process::Output {
    let mut all = common::bundled_lua(script, db);
    all.extend(options.iter().map(|o| o.to_string()));
    all.push("run".into());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    stampede(&refs)
}

/// A script's statement stuck behind a lock waits in the kernel without end, as sysbench's;
/// SIGINT then SIGTERM (two signals: the second ends the process) end the run there.
#[test]
fn a_second_signal_ends_a_script_stuck_in_a_statement() {
    let s = server();
    let db = s.create_database("sb_stuck");
    let prepare = sysbench(&db, &["prepare", "--table-size", "100"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let holder = common::hold_lock(s, &db, "sbtest1");
    let in_db = |condition: &str| common::sessions_in(s, &db, condition);
    let mut args = common::bundled_lua("oltp_point_select", &db);
    args.extend(["--tables=1", "--table-size=100", "--time=1", "run"].map(String::from));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut run = common::stampede_command(&refs)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until("the script's statement waiting on the lock", || {
        in_db("wait_event_type = 'Lock' AND query ~ 'sbtest1'") == "1"
    });
    let pid = nix::unistd::Pid::from_raw(run.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    // Bounded: without the second signal's exit the run would wait as long as the lock.
    let mut status = None;
    common::wait_until("the run's end", || {
        status = run.try_wait().unwrap();
        status.is_some()
    });
    common::release_lock(s, &db, holder);
    let status = status.unwrap();
    assert!(matches!(status.code(), Some(130 | 143)), "{status:?}");
}

/// A database with pg_stat_statements, its counters cleared for this database only.
fn database_with_statements(name: &str) -> String {
    let s = server();
    let db = s.create_database(name);
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    db
}

fn reset_statements(db: &str) {
    server().reset_statements(db);
}

/// The run's statements on the sbtest tables, and BEGIN/COMMIT, with their calls.
fn statements(db: &str) -> BTreeMap<String, i64> {
    server()
        .psql(
            db,
            "SELECT calls, query FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND (query LIKE '%sbtest%' OR query IN ('BEGIN', 'COMMIT'))",
        )
        .lines()
        .map(|line| {
            let (calls, query) = line.split_once('|').unwrap();
            (query.to_string(), calls.parse().unwrap())
        })
        .collect()
}

#[test]
fn prepare_creates_sysbench_tables_and_cleanup_drops_them() {
    let s = server();
    let db = s.create_database("sb_prepare");
    let output = sysbench(
        &db,
        &[
            "prepare",
            "--tables",
            "2",
            "--table-size",
            "1000",
            "--threads",
            "2",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Inserting 1000 records into 'sbtest2'"));
    for table in ["sbtest1", "sbtest2"] {
        assert_eq!(
            s.psql(&db, &format!("SELECT count(*), min(id), max(id), min(k) >= 1 AND max(k) <= 1000, min(length(c)), max(length(c)), min(length(pad)) FROM {table}")),
            "1000|1|1000|t|119|119|59"
        );
        // c: ten groups of eleven digits; the sequence continues after the loaded ids.
        assert_eq!(
            s.psql(
                &db,
                &format!(
                    "SELECT count(*) FROM {table} WHERE rtrim(c) !~ '^([0-9]{{11}}-){{9}}[0-9]{{11}}$'"
                )
            ),
            "0"
        );
        assert_eq!(
            s.psql(
                &db,
                &format!("SELECT nextval(pg_get_serial_sequence('{table}', 'id'))")
            ),
            "1001"
        );
    }
    assert_eq!(
        s.psql(&db, "SELECT string_agg(column_name || ' ' || data_type || coalesce('(' || character_maximum_length || ')', ''), ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'sbtest1'"),
        "id integer, k integer, c character(120), pad character(60)"
    );
    assert_eq!(
        s.psql(&db, "SELECT string_agg(indexdef, '; ' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'sbtest1'"),
        "CREATE INDEX k_1 ON public.sbtest1 USING btree (k); CREATE UNIQUE INDEX sbtest1_pkey ON public.sbtest1 USING btree (id)"
    );
    // Preparing again is refused, and changes nothing.
    let again = sysbench(&db, &["prepare", "--tables", "2", "--table-size", "10"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        stderr(&again).trim(),
        "stampede: error: table sbtest1 already exists; run `stampede sysbench cleanup` first"
    );
    assert_eq!(s.psql(&db, "SELECT count(*) FROM sbtest1"), "1000");
    let cleanup = sysbench(&db, &["cleanup", "--tables", "2"]);
    assert!(cleanup.status.success(), "{}", stderr(&cleanup));
    assert_eq!(
        s.psql(
            &db,
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'sbtest%'"
        ),
        "0"
    );
}

/// Every test issues exactly its statements, as many times per event as sysbench's Lua does.
#[test]
fn each_test_issues_its_sql_shape() {
    let db = database_with_statements("sb_shapes");
    let prepare = sysbench(&db, &["prepare", "--table-size", "1000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let point = "SELECT c FROM sbtest1 WHERE id=$1";
    let ranges = [
        "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN $1 AND $2",
        "SELECT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
    ];
    let writes = [
        // The constant 1 is normalized after the statement's own parameter.
        "UPDATE sbtest1 SET k=k+$2 WHERE id=$1",
        "UPDATE sbtest1 SET c=$1 WHERE id=$2",
        "DELETE FROM sbtest1 WHERE id=$1",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)",
    ];
    // pg_stat_statements counts a prepared utility statement (BEGIN, COMMIT) once per
    // connection, not per execution — for the real sysbench alike.
    let per_event = |list: &[(&str, i64)]| -> BTreeMap<String, i64> {
        list.iter()
            .map(|(q, n)| {
                let calls = if ["BEGIN", "COMMIT"].contains(q) {
                    1
                } else {
                    n * 20
                };
                (q.to_string(), calls)
            })
            .collect()
    };
    let trx = [("BEGIN", 1), ("COMMIT", 1)];
    let read_only: Vec<(&str, i64)> = trx
        .iter()
        .copied()
        .chain([(point, 10)])
        .chain(ranges.iter().map(|r| (*r, 1)))
        .collect();
    let write_only: Vec<(&str, i64)> = trx
        .iter()
        .copied()
        .chain(writes.iter().map(|w| (*w, 1)))
        .collect();
    let read_write: Vec<(&str, i64)> = read_only
        .iter()
        .copied()
        .chain(writes.iter().map(|w| (*w, 1)))
        .collect();
    let points: Vec<String> = (1..=10).map(|i| format!("${i}")).collect();
    let in_list = format!(
        "SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({})",
        points.join(", ")
    );
    let between: Vec<String> = (0..10)
        .map(|i| format!("k BETWEEN ${} AND ${}", 2 * i + 1, 2 * i + 2))
        .collect();
    let ranges_query = format!(
        "SELECT count(k) FROM sbtest1 WHERE {}",
        between.join(" OR ")
    );
    let expected: Vec<(&str, BTreeMap<String, i64>)> = vec![
        ("oltp_point_select", per_event(&[(point, 1)])),
        ("oltp_read_only", per_event(&read_only)),
        ("oltp_read_write", per_event(&read_write)),
        ("oltp_write_only", per_event(&write_only)),
        ("oltp_update_index", per_event(&[(writes[0], 1)])),
        ("oltp_update_non_index", per_event(&[(writes[1], 1)])),
        (
            "oltp_insert",
            per_event(&[("INSERT INTO sbtest1 (k, c, pad) VALUES ($1, $2, $3)", 1)]),
        ),
        ("oltp_delete", per_event(&[(writes[2], 1)])),
        ("select_random_points", per_event(&[(&in_list, 1)])),
        ("select_random_ranges", per_event(&[(&ranges_query, 1)])),
        (
            "oltp_scan",
            per_event(&[("SELECT * FROM sbtest1 WHERE LENGTH(c) < $1", 1)]),
        ),
    ];
    for (test, statements_expected) in expected {
        reset_statements(&db);
        let output = sysbench(
            &db,
            &[
                "run",
                test,
                "--table-size",
                "1000",
                "--events",
                "20",
                "--rand-seed",
                "5",
            ],
        );
        assert!(output.status.success(), "{test}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("    transactions:                        20 "),
            "{test}: {}",
            stdout(&output)
        );
        let seen = statements(&db);
        assert_eq!(seen, statements_expected, "{test}");
        // The report's read and write counts are the server's calls of those statements.
        let calls = |prefixes: &[&str]| -> i64 {
            seen.iter()
                .filter(|(q, _)| prefixes.iter().any(|p| q.starts_with(p)))
                .map(|(_, calls)| calls)
                .sum()
        };
        let text = stdout(&output);
        let count = |label: &str| -> i64 {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{label} in {text}"))
        };
        assert_eq!(count("read:"), calls(&["SELECT"]), "{test}");
        assert_eq!(
            count("write:"),
            calls(&["UPDATE", "DELETE", "INSERT"]),
            "{test}"
        );
    }
}

/// The real sysbench (Debian's 1.0.20, pgsql driver) and stampede on the same tables: the same
/// statements in pg_stat_statements, as many of them per event, and as many queries per event
/// in their reports. (Their speed is bench/'s question.)
#[test]
fn statements_and_qps_match_the_real_sysbench() {
    let db = database_with_statements("sb_differential");
    let prepare = sysbench(&db, &["prepare", "--tables", "2", "--table-size", "10000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let s = server();
    for test in ["oltp_point_select", "oltp_read_only"] {
        let common = [
            "--tables=2",
            "--table-size=10000",
            "--threads=2",
            "--time=2",
        ];
        reset_statements(&db);
        let real = std::process::Command::new("sysbench")
            .arg(test)
            .args(common)
            .args([
                "--db-driver=pgsql".to_string(),
                format!("--pgsql-host={}", s.socket_dir()),
                format!("--pgsql-port={}", s.port()),
                format!("--pgsql-user={}", s.user),
                format!("--pgsql-db={db}"),
                "run".into(),
            ])
            .output()
            .expect("sysbench runs (apt-get install sysbench)");
        assert!(real.status.success(), "{}", stderr(&real));
        let real_calls = statements(&db);
        reset_statements(&db);
        let mut args = vec!["run", test];
        args.extend(common);
        let ours = sysbench(&db, &args);
        assert!(ours.status.success(), "{}", stderr(&ours));
        let our_calls = statements(&db);
        assert!(
            our_calls.keys().eq(real_calls.keys()),
            "{test}: {our_calls:?} against {real_calls:?}"
        );
        // Per event: the statements on the tables as the server counted them (BEGIN and COMMIT
        // aside: prepared, the server counts them once per connection), and the queries as
        // each tool's report counts them.
        let table_calls_per_event = |calls: &BTreeMap<String, i64>, report: &str| -> f64 {
            let on_tables: i64 = calls
                .iter()
                .filter(|(query, _)| query.contains("sbtest"))
                .map(|(_, calls)| calls)
                .sum();
            on_tables as f64 / report_count(report, "transactions:") as f64
        };
        let queries_per_event = |report: &str| -> f64 {
            report_count(report, "queries:") as f64 / report_count(report, "transactions:") as f64
        };
        let (ours_text, real_text) = (stdout(&ours), stdout(&real));
        assert_eq!(
            table_calls_per_event(&our_calls, &ours_text),
            table_calls_per_event(&real_calls, &real_text),
            "{test}: statements on the tables per event"
        );
        assert_eq!(
            queries_per_event(&ours_text),
            queries_per_event(&real_text),
            "{test}: queries per event in the reports"
        );
    }
}

/// sysbench's own `oltp_read_write.lua` (Debian's), run unchanged by stampede's Lua path, sends
/// the statements the native `oltp_read_write` sends, as many per event, and its report counts
/// reads, writes and other queries as the server saw them; `--json` agrees.
#[test]
fn a_bundled_lua_script_sends_the_native_tests_statements() {
    let db = database_with_statements("sb_lua");
    let prepare = sysbench(&db, &["prepare", "--tables", "2", "--table-size", "10000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let common = [
        "--tables=2",
        "--table-size=10000",
        "--threads=1",
        "--events=200",
    ];
    reset_statements(&db);
    let mut args = vec!["run", "oltp_read_write"];
    args.extend(common);
    let native = sysbench(&db, &args);
    assert!(native.status.success(), "{}", stderr(&native));
    let native_calls = statements(&db);
    reset_statements(&db);
    let json = TempFile::new("sb_lua.json");
    let json_option = format!("--json={}", json.to_str().unwrap());
    let mut options = common.to_vec();
    options.push(&json_option);
    let lua = bundled_script(&db, "oltp_read_write", &options);
    assert!(lua.status.success(), "{}", stdout(&lua));
    let lua_calls = statements(&db);
    // The same statements; each event picks its tables at random, so the calls agree per
    // statement over all tables.
    assert!(
        lua_calls.keys().eq(native_calls.keys()),
        "{lua_calls:?} against {native_calls:?}"
    );
    let over_tables = |calls: &BTreeMap<String, i64>| -> BTreeMap<String, i64> {
        let mut sums = BTreeMap::new();
        for (query, count) in calls {
            let shape = query
                .replace("sbtest1", "sbtestN")
                .replace("sbtest2", "sbtestN");
            *sums.entry(shape).or_insert(0) += count;
        }
        sums
    };
    assert_eq!(over_tables(&lua_calls), over_tables(&native_calls));
    let text = stdout(&lua);
    let on_tables = |kind: &str| -> i64 {
        lua_calls
            .iter()
            .filter(|(query, _)| query.trim_start().to_uppercase().starts_with(kind))
            .map(|(_, calls)| calls)
            .sum()
    };
    assert_eq!(report_count(&text, "transactions:"), 200);
    let line = |label: &str| -> i64 {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {label}: {text}"))
    };
    assert_eq!(line("read:"), on_tables("SELECT"));
    assert_eq!(
        line("write:"),
        on_tables("UPDATE") + on_tables("DELETE") + on_tables("INSERT")
    );
    // BEGIN and COMMIT of every event (the server counts prepared ones once per connection).
    assert_eq!(line("other:"), 2 * 200);
    assert!(
        text.contains("Threads fairness:\n    events (avg/stddev):           200.0000/0.00\n"),
        "{text}"
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&*json).unwrap()).unwrap();
    assert_eq!(result["events"], 200);
    assert_eq!(result["queries"]["read"], line("read:"));
    assert_eq!(result["fairness"]["per_client"], serde_json::json!([200]));
}

/// N of a sysbench report's `label N (R per sec.)` line (`queries:`, `transactions:`).
fn report_count(report: &str, label: &str) -> i64 {
    report
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label} line: {report}"))
}

/// The JSON's numbers against the server's count of the statement each event runs.
#[test]
fn json_and_intervals_agree_with_the_server() {
    let db = database_with_statements("sb_json");
    let prepare = sysbench(&db, &["prepare", "--table-size", "1000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    reset_statements(&db);
    let json = TempFile::new("sb.json");
    let output = sysbench(
        &db,
        &[
            "run",
            "oltp_point_select",
            "--table-size",
            "1000",
            "--threads",
            "2",
            "--time",
            "3",
            "--report-interval",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let intervals: Vec<&str> = text.lines().filter(|l| l.starts_with("[ ")).collect();
    assert_eq!(intervals.len(), 3, "{text}");
    assert!(
        intervals[0].starts_with("[ 1s ] thds: 2 tps: "),
        "{}",
        intervals[0]
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let events = report["events"].as_u64().unwrap();
    let calls = statements(&db)["SELECT c FROM sbtest1 WHERE id=$1"];
    assert_eq!(events as i64, calls, "one SELECT per event");
    common::assert_fairness(&report, &text, 2, events);
    let tps = report["tps"].as_f64().unwrap();
    let time = report["time_s"].as_f64().unwrap();
    assert!((tps * time - events as f64).abs() < 1e-6);
    assert_eq!(report["qps"].as_f64().unwrap(), tps);
    let latency = &report["latency_ms"];
    let p = |name: &str| latency[name].as_f64().unwrap();
    assert!(
        p("min") <= p("p50")
            && p("p50") <= p("p95")
            && p("p95") <= p("p99")
            && p("p99") <= p("max")
    );
    // --events counts over all threads, each taking the next (not a multiple of --threads).
    reset_statements(&db);
    let output = sysbench(
        &db,
        &[
            "run",
            "oltp_point_select",
            "--table-size=1000",
            "--threads=3",
            "--events=100",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(report_count(&text, "transactions:"), 100, "{text}");
    assert_eq!(statements(&db)["SELECT c FROM sbtest1 WHERE id=$1"], 100);
    lua_intervals_and_json_agree_with_the_server(&db);
}

/// The same for sysbench's own oltp_point_select.lua through the Lua path: its `--json`
/// (events, reads, per-thread events, latency) against pg_stat_statements, and its
/// `--report-interval` lines against its events.
fn lua_intervals_and_json_agree_with_the_server(db: &str) {
    let s = server();
    reset_statements(db);
    let json = TempFile::new("sb_lua_intervals.json");
    let output = bundled_script(
        db,
        "oltp_point_select",
        &[
            "--tables=1",
            "--table-size=1000",
            "--threads=2",
            "--time=3",
            "--report-interval=1",
            &format!("--json={}", json.to_str().unwrap()),
        ],
    );
    assert!(output.status.success(), "{}", stdout(&output));
    let text = stdout(&output);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&*json).unwrap()).unwrap();
    let events = report["events"].as_u64().unwrap();
    assert_eq!(report_count(&text, "transactions:"), events as i64);
    let server_calls = s.psql(
        db,
        "SELECT calls, total_exec_time / calls FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND query = 'SELECT c FROM sbtest1 WHERE id=$1'",
    );
    let (calls, server_ms) = server_calls.split_once('|').expect("the statement's calls");
    assert_eq!(
        calls.parse::<u64>().unwrap(),
        events,
        "one SELECT per event"
    );
    assert_eq!(report["queries"]["read"].as_u64(), Some(events));
    let per_thread: Vec<u64> = report["fairness"]["per_client"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!((per_thread.len(), per_thread.iter().sum()), (2, events));
    // A client's latency holds the server's execution of its statement.
    let latency = &report["latency_ms"];
    let ms = |name: &str| latency[name].as_f64().unwrap();
    assert!(ms("avg") >= server_ms.parse::<f64>().unwrap(), "{latency}");
    // Percentiles are their buckets' lower edges (buckets ~1.8% wide).
    assert!(ms("p50") <= ms("p95") && ms("p95") <= ms("p99") && ms("p99") <= ms("max"));
    assert!(ms("min") <= ms("p50") * 1.02, "{latency}");
    assert!(
        ms("min") <= ms("avg") && ms("avg") <= ms("max"),
        "{latency}"
    );
    assert!((ms("sum") - ms("avg") * events as f64).abs() <= 1e-6 * ms("sum"));
    // Each interval line's rate covers one second of the run: together no more than the run's
    // events, and one statement per event. The reporter reads the counters while events run
    // (as sysbench's does): a thread's query may be counted in one second and its event in the
    // next, so a second's tps and qps differ by at most one per thread.
    let intervals: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| l.starts_with("[ ") && l.contains(" thds: 2 tps: "))
        .map(|l| {
            let field = |label: &str| -> f64 {
                let at = l.find(label).unwrap() + label.len();
                l[at..].split_whitespace().next().unwrap().parse().unwrap()
            };
            (field("tps: "), field("qps: "))
        })
        .collect();
    assert!((2..=3).contains(&intervals.len()), "{text}");
    assert!(
        intervals
            .iter()
            .all(|(tps, qps)| (tps - qps).abs() <= 2.0 + 0.01 && *tps > 0.0),
        "{text}"
    );
    let interval_events: f64 = intervals.iter().map(|(tps, _)| tps).sum();
    assert!(
        interval_events <= events as f64 + 1.0,
        "{interval_events} > {events}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let s = server();
    let db = s.create_database("sb_bad");
    let cases: [(&[&str], &str); 8] = [
        (
            &["run", "oltp_read_only", "--stall-timeout", "soon"],
            "invalid stall timeout: \"soon\" (a duration such as 90s or 5m, or 0 to wait forever)",
        ),
        (
            &["run", "oltp_nope"],
            "unknown test \"oltp_nope\"; the tests are: oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select, oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, select_random_points, select_random_ranges, bulk_insert, oltp_scan, oltp_inlist_select, oltp_inlist_update, oltp_points_covered, oltp_range_covered, oltp_read_only_count",
        ),
        (&["prepare", "--tables", "0"], "--tables must be at least 1 (not 0)"),
        (&["run", "oltp_read_only", "--tables", "-1"], "--tables must be at least 1 (not -1)"),
        (
            &["run", "oltp_read_only", "--table-size", "50"],
            "--range-size 100 is larger than the table (--table-size 50)",
        ),
        (
            &["run", "oltp_read_only", "--rand-pareto-h", "1.5"],
            "--rand-pareto-h must be between 0 and 1 (not 1.5)",
        ),
        (
            &["run", "oltp_read_only", "--rand-type", "normal"],
            "invalid random numbers distribution \"normal\"; use one of: uniform, gaussian, special, pareto, zipfian",
        ),
        (
            &["run", "oltp_read_only", "--tables", "2"],
            "tables sbtest1, sbtest2 do not exist; run `stampede sysbench prepare --tables 2` first",
        ),
    ];
    for (args, message) in cases {
        common::assert_refused(&sysbench(&db, args), message, &format!("{args:?}"));
    }
    assert_eq!(
        s.psql(
            &db,
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'sbtest%'"
        ),
        "0",
        "nothing created"
    );
}

/// The microbenchmark suite in Callaghan's order, with postwrite (VACUUM ANALYZE, CHECKPOINT)
/// between the writes and the reads after them, and its relative table.
#[test]
fn microbench_suite_runs_in_order_with_postwrite() {
    let s = server();
    let db = s.create_database("sb_suite");
    let prepare = sysbench(&db, &["prepare", "--table-size", "2000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let checkpoints = || -> i64 {
        s.psql(&db, "SELECT checkpoints_req FROM pg_stat_bgwriter")
            .parse()
            .unwrap()
    };
    let checkpoints_before = checkpoints();
    let json = TempFile::new("suite.json");
    let output = sysbench(
        &db,
        &[
            "run",
            "--suite",
            "microbench",
            "--table-size",
            "2000",
            "--threads",
            "2",
            "--read-secs",
            "1",
            "--write-secs",
            "1",
            "--postwrite-settle",
            "0",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let names = common::suite_steps(&text);
    assert_eq!(names.len(), 48, "47 tests and postwrite: {text}");
    assert_eq!(names[0], "point-query.pre_range=100");
    let postwrite = names.iter().position(|n| *n == "postwrite:").unwrap();
    assert_eq!(names[postwrite - 1], "read-write_range=100");
    assert_eq!(names[postwrite + 1], "scan_range=100");
    assert_eq!(names[47], "insert_range=100");
    // Postwrite vacuumed and analyzed the table once (autovacuum is off) and checkpointed.
    assert_eq!(
        s.psql(
            &db,
            "SELECT vacuum_count, analyze_count FROM pg_stat_user_tables WHERE relname = 'sbtest1'"
        ),
        "1|1"
    );
    assert!(checkpoints() > checkpoints_before);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let tests = report["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 47);
    let in_group = |g: &str| tests.iter().filter(|t| t["group"] == g).count();
    assert_eq!(
        [
            in_group("point"),
            in_group("range, no aggregation"),
            in_group("range, aggregation"),
            in_group("writes")
        ],
        [17, 9, 11, 10]
    );
    let scan = tests
        .iter()
        .find(|t| t["test"] == "scan_range=100")
        .unwrap();
    let rows = scan["rows_per_s"].as_f64().unwrap();
    assert!((rows - scan["tps"].as_f64().unwrap() * 2000.0).abs() < 1e-6);
    assert!(
        tests.iter().all(|t| t["events"].as_u64().unwrap() > 0),
        "every test ran"
    );

    // Relative to itself: every ratio and every group statistic is 1.00.
    let relative = stampede(&[
        "sysbench",
        "relative",
        json.to_str().unwrap(),
        json.to_str().unwrap(),
    ]);
    assert!(relative.status.success(), "{}", stderr(&relative));
    let table = stdout(&relative);
    let group_lines: Vec<&str> = table.lines().filter(|l| l.contains(" mean ")).collect();
    assert_eq!(group_lines.len(), 4, "{table}");
    assert!(group_lines.iter().all(|l| l.ends_with("1.00")), "{table}");

    let unknown = sysbench(&db, &["run", "--suite", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown).trim(),
        "stampede: error: unknown suite \"nope\"; the suites are: microbench"
    );
}

/// The server ends both sessions mid-run (pg_terminate_backend): each client counts one
/// failed event, connects again and goes on; the report's reconnects and errors say so.
#[test]
fn a_lost_connection_reconnects_and_is_counted() {
    let s = server();
    let db = s.create_database("sb_reconnect");
    let prepare = sysbench(&db, &["prepare", "--table-size", "1000"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    let json = TempFile::new("sb-reconnect.json");
    let mut args: Vec<String> = [
        "sysbench",
        "run",
        "oltp_point_select",
        "--table-size",
        "1000",
        "--threads",
        "2",
        "--time",
        "4",
        "--report-interval",
        "1",
        "--json",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.push(json.to_str().unwrap().into());
    args.extend(connection(&db));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = common::stampede_command(&refs)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut printed = common::Watch::new(child.stdout.take().unwrap());
    let sessions = || {
        s.psql(
            &db,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
               AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
        )
    };
    let wait_for_two = || {
        for _ in 0..100 {
            if sessions() == "2" {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the run's two sessions did not appear");
    };
    wait_for_two();
    // Measuring: the first interval's line is out.
    printed.wait_for("[ 1s ]");
    let terminated = s.psql(
        &db,
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND backend_type = 'client backend'",
    );
    assert_eq!(terminated, "2");
    wait_for_two();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = printed.finish();
    assert!(
        text.contains("    ignored errors:                      2 "),
        "{text}"
    );
    assert!(
        text.contains("    reconnects:                          2 "),
        "{text}"
    );
    let reconnect_rates: f64 = text
        .lines()
        .filter(|l| l.starts_with("[ "))
        .map(|l| {
            l.rsplit("reconn/s: ")
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        })
        .sum();
    assert_eq!(reconnect_rates, 2.0, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["reconnects"], 2);
    assert_eq!(report["errors"], 2);
}

/// bulk_insert: a table per thread, rows (n, n) buffered and sent as multi-row INSERTs of
/// sysbench's 512 KiB, the rest flushed when the thread ends; the same statement and batch size
/// as the real sysbench's.
#[test]
fn bulk_insert_buffers_rows_like_sysbench() {
    let s = server();
    let db = database_with_statements("sb_bulk");
    let prepare = sysbench(&db, &["prepare", "bulk_insert", "--threads", "2"]);
    assert!(prepare.status.success(), "{}", stderr(&prepare));
    assert_eq!(
        s.psql(
            &db,
            "SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
             FROM pg_attribute WHERE attrelid = 'sbtest2'::regclass AND attnum > 0"
        ),
        "id:integer,k:integer"
    );
    reset_statements(&db);
    let ours = sysbench(
        &db,
        &["run", "bulk_insert", "--threads", "2", "--events", "100000"],
    );
    assert!(ours.status.success(), "{}", stderr(&ours));
    let text = stdout(&ours);
    assert!(
        text.contains("    transactions:                        100000 "),
        "{text}"
    );
    // The threads take the events from one count (as sysbench's), so each table has as many
    // rows as its thread took, numbered from 1.
    let rows: Vec<u64> = ["sbtest1", "sbtest2"]
        .iter()
        .map(|table| {
            let found = s.psql(
                &db,
                &format!("SELECT count(*), min(id), max(id), bool_and(k = id) FROM {table}"),
            );
            let count: u64 = found.split('|').next().unwrap().parse().unwrap();
            assert_eq!(found, format!("{count}|1|{count}|t"), "{table}");
            count
        })
        .collect();
    assert_eq!(rows.iter().sum::<u64>(), 100000);
    // Each thread sends a full buffer (39033 rows of up to five digits), then the rest of its
    // rows when it ends.
    const FULL: u64 = 39033;
    let batches_of = |rows: u64| rows.div_ceil(FULL);
    let writes = batches_of(rows[0]) + batches_of(rows[1]);
    assert!(
        text.contains(&format!(
            "        write:                           {writes}\n"
        )),
        "{text}"
    );
    let batches = |db: &str| {
        s.psql(
            db,
            "SELECT sum(rows), sum(calls), max(rows / calls) FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND query LIKE 'INSERT INTO sbtest1 VALUES($1,$2)%'",
        )
    };
    assert_eq!(
        batches(&db),
        format!("{}|{}|{}", rows[0], batches_of(rows[0]), rows[0].min(FULL))
    );

    let cleanup = sysbench(&db, &["cleanup"]);
    assert!(cleanup.status.success(), "{}", stderr(&cleanup));
    let real = |action: &str| {
        std::process::Command::new("sysbench")
            .args([
                "bulk_insert",
                "--threads=1",
                "--events=40000",
                "--db-driver=pgsql",
            ])
            .args([
                format!("--pgsql-host={}", s.socket_dir()),
                format!("--pgsql-port={}", s.port()),
                format!("--pgsql-user={}", s.user),
                format!("--pgsql-db={db}"),
                action.to_string(),
            ])
            .output()
            .expect("sysbench runs (apt-get install sysbench)")
    };
    assert!(real("prepare").status.success());
    reset_statements(&db);
    let run = real("run");
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(batches(&db), "40000|2|39033", "the real sysbench's batches");
}
