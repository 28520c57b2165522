//! The second engine against a real MariaDB (Debian's mariadb-server, managed by stampede's
//! own server code): the statements `stampede sysbench --db-driver mysql` sends, checked
//! against the real sysbench's in the server's general log; the tables prepare creates; the
//! counts the report prints, checked against the server's own counters; and bad input.

mod common;

use std::collections::BTreeMap;
use std::process::Output;

use common::mariadb::{create_database, mariadb, socket, sql};
use common::{assert_refused, stampede, stderr, stdout, TempFile};

/// The server's global counters and general log see every test: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    mariadb();
    guard
}

fn connection(db: &str) -> Vec<String> {
    connection_as("root", db)
}

fn connection_as(user: &str, db: &str) -> Vec<String> {
    vec![
        "--db-driver=mysql".into(),
        format!("--mysql-socket={}", socket()),
        format!("--mysql-user={user}"),
        format!("--mysql-db={db}"),
    ]
}

fn stampede_sysbench(db: &str, args: &[&str]) -> Output {
    let mut all: Vec<String> = vec!["sysbench".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend(connection(db));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    stampede(&refs)
}

fn real_sysbench(db: &str, args: &[&str]) -> Output {
    real_sysbench_as("root", db, args)
}

fn real_sysbench_as(user: &str, db: &str, args: &[&str]) -> Output {
    let output = std::process::Command::new("sysbench")
        .args(connection_as(user, db))
        .args(args)
        .output()
        .expect("sysbench runs");
    assert!(
        output.status.success(),
        "sysbench {args:?}: {}",
        stdout(&output)
    );
    output
}

fn succeeded(output: Output, what: &str) -> Output {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        stdout(&output),
        stderr(&output)
    );
    output
}

/// Literals replaced by `?`: the shape of a statement, as a digest has it.
fn normalize(statement: &str) -> String {
    let mut out = String::new();
    let mut chars = statement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            while let Some(next) = chars.next() {
                match next {
                    '\\' => {
                        chars.next();
                    }
                    '\'' => break,
                    _ => {}
                }
            }
            out.push('?');
        } else if c.is_ascii_digit() && !out.ends_with(|p: char| p.is_alphanumeric() || p == '_') {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// The account whose statements the general log is read for (other tests run beside).
const LOGGED_USER: &str = "sb_log";

/// What a tool sent as `LOGGED_USER` while the general log was on: (command type,
/// normalized statement) and how often, for the statements on sysbench's tables and the
/// transaction brackets.
fn logged_statements(run: impl FnOnce()) -> BTreeMap<(String, String), usize> {
    sql(
        "",
        "SET GLOBAL log_output='TABLE'; TRUNCATE mysql.general_log; SET GLOBAL general_log=ON",
    );
    run();
    sql("", "SET GLOBAL general_log=OFF");
    let log = sql(
        "",
        &format!("SELECT command_type, REPLACE(REPLACE(argument, '\\n', ' '), '\\t', ' ') FROM mysql.general_log WHERE command_type IN ('Prepare', 'Execute', 'Query') AND user_host LIKE '{LOGGED_USER}[%'"),
    );
    let mut counts = BTreeMap::new();
    for line in log.lines() {
        let Some((kind, statement)) = line.split_once('\t') else {
            continue;
        };
        let relevant = (statement.contains("sbtest") && !statement.starts_with("SHOW"))
            || statement == "BEGIN"
            || statement == "COMMIT";
        if relevant {
            *counts
                .entry((kind.to_string(), normalize(statement)))
                .or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn oltp_read_write_sends_sysbenchs_statements_per_event() {
    let _serial = exclusive();
    let db = create_database("sb_statements");
    sql("", &format!("CREATE USER IF NOT EXISTS '{LOGGED_USER}'@'localhost'; GRANT ALL ON {db}.* TO '{LOGGED_USER}'@'localhost'"));
    let table = ["--tables=1", "--table-size=200"];
    real_sysbench(&db, &[&table[..], &["oltp_read_write", "prepare"]].concat());
    for mode in ["auto", "disable"] {
        let ps_mode = format!("--db-ps-mode={mode}");
        let run = [
            &table[..],
            &["--events=20", "--threads=1", ps_mode.as_str()],
        ]
        .concat();
        let theirs = logged_statements(|| {
            real_sysbench_as(
                LOGGED_USER,
                &db,
                &[&run[..], &["oltp_read_write", "run"]].concat(),
            );
        });
        let ours = logged_statements(|| {
            let mut args: Vec<String> =
                vec!["sysbench".into(), "run".into(), "oltp_read_write".into()];
            args.extend(run.iter().map(|a| a.to_string()));
            args.extend(connection_as(LOGGED_USER, &db));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            succeeded(stampede(&refs), "stampede sysbench run");
        });
        assert!(!theirs.is_empty(), "the general log recorded sysbench");
        assert_eq!(ours, theirs, "--db-ps-mode={mode}");
        // 20 events of 14 reads, 4 writes and BEGIN/COMMIT.
        let executed: usize = ours
            .iter()
            .filter(|((kind, _), _)| kind != "Prepare")
            .map(|(_, n)| n)
            .sum();
        assert_eq!(executed, 20 * 20, "--db-ps-mode={mode}: {ours:#?}");
    }
}

#[test]
fn prepare_creates_sysbenchs_tables_and_rows() {
    let _serial = exclusive();
    let theirs = create_database("sb_theirs");
    let ours = create_database("sb_ours");
    let table = ["--tables=2", "--table-size=500"];
    real_sysbench(
        &theirs,
        &[&table[..], &["oltp_read_write", "prepare"]].concat(),
    );
    let output = succeeded(
        stampede_sysbench(
            &ours,
            &[&["prepare", "oltp_read_write"], &table[..]].concat(),
        ),
        "prepare",
    );
    assert_eq!(
        stdout(&output),
        "Creating table 'sbtest1'...\nInserting 500 records into 'sbtest1'\nCreating a secondary index on 'sbtest1'...\nCreating table 'sbtest2'...\nInserting 500 records into 'sbtest2'\nCreating a secondary index on 'sbtest2'...\n"
    );
    for t in 1..=2 {
        // The same definition, but for the AUTO_INCREMENT counter's position.
        let definition = |db: &str| {
            let text = sql(db, &format!("SHOW CREATE TABLE sbtest{t}"));
            text.split_whitespace()
                .filter(|word| !word.starts_with("AUTO_INCREMENT="))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(definition(&ours), definition(&theirs));
        let stats = "SELECT COUNT(*), MIN(id), MAX(id), COUNT(DISTINCT id), MIN(LENGTH(c)), MAX(LENGTH(pad)), MIN(k) >= 1, MAX(k) <= 500";
        assert_eq!(
            sql(&ours, &format!("{stats} FROM sbtest{t}")).trim(),
            "500\t1\t500\t500\t119\t59\t1\t1"
        );
    }
    // prewarm: sysbench's statements on each table, in the general log, and its lines.
    sql("", &format!("CREATE USER IF NOT EXISTS '{LOGGED_USER}'@'localhost'; GRANT ALL ON {theirs}.* TO '{LOGGED_USER}'@'localhost'; GRANT ALL ON {ours}.* TO '{LOGGED_USER}'@'localhost'"));
    let prewarm = [&table[..], &["oltp_read_write", "prewarm"]].concat();
    let theirs_sent = logged_statements(|| {
        real_sysbench_as(LOGGED_USER, &theirs, &prewarm);
    });
    let mut printed = String::new();
    let ours_sent = logged_statements(|| {
        let mut args: Vec<String> = vec!["sysbench".into()];
        args.extend(prewarm.iter().map(|a| a.to_string()));
        args.extend(connection_as(LOGGED_USER, &ours));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        printed = stdout(&succeeded(stampede(&refs), "stampede sysbench prewarm"));
    });
    assert_eq!(ours_sent.len(), 6, "{ours_sent:#?}");
    assert_eq!(ours_sent, theirs_sent);
    assert!(
        printed.ends_with("Prewarming table sbtest1\nPrewarming table sbtest2\n"),
        "{printed}"
    );
    let output = succeeded(
        stampede_sysbench(&ours, &["cleanup", "--tables=2"]),
        "cleanup",
    );
    assert_eq!(
        stdout(&output),
        "Dropping table 'sbtest1'...\nDropping table 'sbtest2'...\n"
    );
    assert_eq!(sql(&ours, "SHOW TABLES").trim(), "");
}

/// The server's Com_* counters over a run, for the counts the report prints.
fn counters() -> BTreeMap<String, u64> {
    status(&[
        "Com_commit",
        "Com_select",
        "Com_stmt_execute",
        "Com_update",
        "Com_insert",
        "Com_delete",
        "Com_begin",
    ])
}

/// Global status counters by name.
fn status(names: &[&str]) -> BTreeMap<String, u64> {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    sql(
        "",
        &format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
            quoted.join(", ")
        ),
    )
    .lines()
    .filter_map(|line| {
        let (name, value) = line.split_once('\t')?;
        Some((name.to_string(), value.parse().ok()?))
    })
    .collect()
}

/// The count on a report line that starts with `label`.
fn reported(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in {text}"));
    line.split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a count")
}

#[test]
fn the_reported_counts_are_the_servers() {
    let _serial = exclusive();
    let db = create_database("sb_counts");
    let table = ["--tables=1", "--table-size=1000"];
    succeeded(
        stampede_sysbench(&db, &[&["prepare", "oltp_read_write"], &table[..]].concat()),
        "prepare",
    );
    let before = counters();
    // One thread: a deadlock's rolled-back statements would reach the server uncounted.
    let output = succeeded(
        stampede_sysbench(
            &db,
            &[
                &["run", "oltp_read_write", "--time=2", "--threads=1"],
                &table[..],
            ]
            .concat(),
        ),
        "run",
    );
    let after = counters();
    let delta = |name: &str| after[name] - before[name];
    let text = stdout(&output);
    let reported = |label: &str| reported(&text, label);
    // Every statement is a prepared execution; every event commits once.
    let transactions = reported("transactions:");
    assert!(transactions > 0, "{text}");
    assert_eq!(delta("Com_commit"), transactions, "{text}");
    // The control connection's SHOW TABLES is the one query outside the run.
    assert_eq!(delta("Com_stmt_execute"), reported("total:"), "{text}");
    assert_eq!(
        delta("Com_update") + delta("Com_insert") + delta("Com_delete"),
        reported("write:")
    );
}

/// oltp_read_write with `extra` options on ten rows at eight threads, by a number of events
/// (no transaction is cut off mid-retry at the end): its report, and the server's deadlocks
/// and commits over it.
fn deadlocking_run(db: &str, extra: &[&str]) -> (String, u64, u64) {
    let table = [
        "--tables=1",
        "--table-size=10",
        "--range-size=5",
        "--rand-type=uniform",
    ];
    let run = [
        "run",
        "oltp_read_write",
        "--events=3000",
        "--time=0",
        "--threads=8",
    ];
    let counters = ["Innodb_deadlocks", "Com_commit"];
    let before = status(&counters);
    let output = succeeded(
        stampede_sysbench(db, &[&run[..], &table[..], extra].concat()),
        "run",
    );
    let after = status(&counters);
    let delta = |name: &str| after[name] - before[name];
    (
        stdout(&output),
        delta("Innodb_deadlocks"),
        delta("Com_commit"),
    )
}

/// Eight threads updating ten rows deadlock: every deadlock InnoDB counts is one of
/// sysbench's "ignored errors", and the event is tried again until it commits.
#[test]
fn ignored_errors_are_the_servers_deadlocks() {
    let _serial = exclusive();
    let db = create_database("sb_deadlocks");
    succeeded(
        stampede_sysbench(
            &db,
            &[
                "prepare",
                "oltp_read_write",
                "--tables=1",
                "--table-size=10",
            ],
        ),
        "prepare",
    );
    let (text, deadlocks, commits) = deadlocking_run(&db, &[]);
    assert!(deadlocks > 0, "ten rows, eight threads: {text}");
    assert_eq!(reported(&text, "ignored errors:"), deadlocks, "{text}");
    assert_eq!(reported(&text, "transactions:"), 3000, "{text}");
    assert_eq!(commits, 3000, "{text}");

    // --mysql-ignore-errors=none: a deadlocked event fails instead of starting again; it is
    // still counted, and only the others commit.
    let (text, deadlocks, commits) = deadlocking_run(&db, &["--mysql-ignore-errors=none"]);
    assert!(deadlocks > 0, "{text}");
    assert_eq!(reported(&text, "ignored errors:"), deadlocks, "{text}");
    let committed = reported(&text, "transactions:");
    assert_eq!(committed + deadlocks, 3000, "{text}");
    assert_eq!(commits, committed, "{text}");
}

/// The microbenchmark suite on MariaDB: every test in Callaghan's order, and postwrite as his
/// MySQL runs do it (ANALYZE TABLE, then OPTIMIZE TABLE), seen in the server's counters.
#[test]
fn microbench_suite_runs_with_analyze_and_optimize() {
    let _serial = exclusive();
    let db = create_database("sb_suite");
    let table = ["--tables=2", "--table-size=2000"];
    succeeded(
        stampede_sysbench(&db, &[&["prepare", "oltp_read_write"], &table[..]].concat()),
        "prepare",
    );
    let json = TempFile::new("my-suite.json");
    let json_arg = format!("--json={}", json.display());
    let before = status(&["Com_analyze", "Com_optimize"]);
    let output = succeeded(
        stampede_sysbench(
            &db,
            &[
                &[
                    "run",
                    "--suite=microbench",
                    "--threads=2",
                    "--read-secs=1",
                    "--write-secs=1",
                    "--postwrite-settle=0",
                    &json_arg,
                ],
                &table[..],
            ]
            .concat(),
        ),
        "suite",
    );
    let after = status(&["Com_analyze", "Com_optimize"]);
    let text = stdout(&output);
    let names = common::suite_steps(&text);
    assert_eq!(names.len(), 48, "47 tests and postwrite: {text}");
    let postwrite = names.iter().position(|n| *n == "postwrite:").unwrap();
    assert_eq!(names[postwrite - 1], "read-write_range=100");
    assert_eq!(names[postwrite + 1], "scan_range=100");
    assert!(
        text.contains("postwrite: ANALYZE TABLE + OPTIMIZE TABLE, settle 0 s"),
        "{text}"
    );
    // Once per table, and only in postwrite.
    assert_eq!(after["Com_analyze"] - before["Com_analyze"], 2);
    assert_eq!(after["Com_optimize"] - before["Com_optimize"], 2);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let tests = report["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 47);
    assert!(
        tests.iter().all(|t| t["events"].as_u64().unwrap() > 0),
        "every test ran: {text}"
    );
}

/// Prepared statements as Connector/C runs them on MariaDB: parameter types sent once, and
/// the column definitions skipped while unchanged (MARIADB_CLIENT_CACHE_METADATA). Captured
/// rows still carry every column, also after ALTER TABLE changes them; the server's own byte
/// count shows the definitions sent once after the change, then skipped.
#[test]
fn prepared_statements_skip_unchanged_metadata_and_follow_a_changed_table() {
    use stampede_script::Value;
    use stampede_wire::mysql::{MyConn, Prepared};
    use stampede_wire::QueryResult;

    /// One execute with capture: its result and the bytes the server sent for it (plus the
    /// status query's own reply, the same each time).
    async fn execute(conn: &mut MyConn, statement: Prepared, id: i64) -> (QueryResult, u64) {
        let status = "SHOW SESSION STATUS LIKE 'Bytes_sent'";
        let bytes_sent = |rows: stampede_wire::mysql::Rows| -> u64 {
            rows.rows[0][1].as_deref().unwrap().parse().unwrap()
        };
        let before = bytes_sent(conn.query_all(status).await.unwrap().unwrap());
        let values = [Value::Int(id)];
        let mut reply = conn.execute(statement, values.iter(), true).await.unwrap();
        let after = bytes_sent(conn.query_all(status).await.unwrap().unwrap());
        (reply.results.remove(0), after - before)
    }

    let _serial = exclusive();
    let db = create_database("sb_metadata");
    sql(
        &db,
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO t VALUES (1, 'one'), (2, 'two')",
    );
    let mut spec = mariadb().spec();
    spec.database = db.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut conn = MyConn::connect(&spec, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        let statement = conn
            .prepare("SELECT * FROM t WHERE id = ?")
            .await
            .unwrap()
            .unwrap();
        let mut sizes = Vec::new();
        for (id, name) in [(1, "one"), (2, "two"), (1, "one")] {
            let (result, size) = execute(&mut conn, statement, id).await;
            assert_eq!(result.columns, vec!["id", "name"]);
            let row = vec![Some(id.to_string()), Some(name.to_string())];
            assert_eq!(result.last_row, Some(row));
            sizes.push(size);
        }
        // The prepare described the columns: no execute sends them again (the status value's
        // own digits may grow by one).
        let spread = sizes.iter().max().unwrap() - sizes.iter().min().unwrap();
        assert!(spread <= 2, "{sizes:?}");

        sql(&db, "ALTER TABLE t ADD COLUMN extra INT NOT NULL DEFAULT 7");
        let row = Some(vec![Some("2".into()), Some("two".into()), Some("7".into())]);
        let (changed, described) = execute(&mut conn, statement, 2).await;
        let (same, skipped) = execute(&mut conn, statement, 2).await;
        for result in [&changed, &same] {
            assert_eq!(result.columns, vec!["id", "name", "extra"]);
            assert_eq!(result.last_row, row);
        }
        // Three column definitions of some 40 bytes each, then none.
        assert!(
            described > skipped + 3 * 30,
            "{described} against {skipped}"
        );
        assert!(
            skipped.abs_diff(sizes[1]) < 10,
            "{skipped} against {sizes:?}"
        );
        conn.close().await;
    });
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let _serial = exclusive();
    let db = create_database("sb_bad");
    assert_refused(
        &stampede(&["sysbench", "run", "oltp_point_select", "--db-driver=oracle"]),
        "--db-driver oracle is not supported; use pgsql (PostgreSQL) or mysql (MySQL, MariaDB)",
        "unknown driver",
    );
    let output = stampede_sysbench(&db, &["run", "oltp_point_select", "--time=1"]);
    assert_refused(
        &output,
        "table sbtest1 does not exist; run `stampede sysbench prepare --tables 1` first",
        "not prepared",
    );
    let output = stampede_sysbench(
        &db,
        &[
            "run",
            "oltp_point_select",
            "--time=1",
            "--mysql-ignore-errors=1213,dead",
        ],
    );
    assert_refused(
        &output,
        "--mysql-ignore-errors: \"dead\" is not a MySQL error number; give numbers separated by commas, all or none",
        "an ignored error that is not a number",
    );
    let output = stampede(&[
        "sysbench",
        "run",
        "oltp_point_select",
        "--db-driver=mysql",
        "--mysql-socket=/nonexistent/mysqld.sock",
        "--mysql-user=root",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("stampede: error: could not connect to MySQL/MariaDB at root@/nonexistent/mysqld.sock (socket): could not connect to the server's socket \"/nonexistent/mysqld.sock\":"),
        "{}",
        stderr(&output)
    );
    // A wrong password: the server's own words, and no password in them.
    sql("", "CREATE USER IF NOT EXISTS 'sb_pw'@'localhost' IDENTIFIED BY 'right-pw'; GRANT ALL ON *.* TO 'sb_pw'@'localhost'");
    let output = stampede(&[
        "sysbench",
        "prepare",
        "oltp_point_select",
        "--db-driver=mysql",
        &format!("--mysql-socket={}", socket()),
        "--mysql-user=sb_pw",
        "--mysql-password=wrong-pw",
        &format!("--mysql-db={db}"),
    ]);
    assert_refused(
        &output,
        &format!("could not connect to MySQL/MariaDB at sb_pw@{} (socket): ERROR 1045 (28000): Access denied for user 'sb_pw'@'localhost' (using password: YES)", socket()),
        "wrong password",
    );
}

#[test]
fn a_password_account_over_tcp_runs_in_both_protocols() {
    let _serial = exclusive();
    let server = mariadb();
    let db = create_database("sb_tcp");
    sql("", "CREATE USER IF NOT EXISTS 'sb_tcp'@'127.0.0.1' IDENTIFIED BY 'tcp-secret'; GRANT ALL ON sb_tcp.* TO 'sb_tcp'@'127.0.0.1'");
    let tcp = [
        "--db-driver=mysql".to_string(),
        "--mysql-host=127.0.0.1".to_string(),
        format!("--mysql-port={}", server.port),
        "--mysql-user=sb_tcp".to_string(),
        "--mysql-password=tcp-secret".to_string(),
        format!("--mysql-db={db}"),
    ];
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = vec!["sysbench"];
        all.extend(args);
        all.extend(tcp.iter().map(String::as_str));
        stampede(&all)
    };
    succeeded(
        run(&["prepare", "oltp_point_select", "--table-size=100"]),
        "prepare",
    );
    for mode in ["auto", "disable"] {
        let ps_mode = format!("--db-ps-mode={mode}");
        let output = succeeded(
            run(&[
                "run",
                "oltp_point_select",
                "--table-size=100",
                "--events=50",
                &ps_mode,
            ]),
            "run",
        );
        assert!(
            stdout(&output).contains("transactions:                        50 "),
            "{}",
            stdout(&output)
        );
    }
}

/// `stampede COMMAND ACTION --engine mariadb` on `db` over the test server's socket as root.
fn stampede_on_mariadb(command: &str, action: &str, db: &str, args: &[&str]) -> Output {
    let socket = socket();
    let mut all = vec![
        command, action, "--engine", "mariadb", "--socket", &socket, "-U", "root", "-d", db,
    ];
    all.extend(args);
    stampede(&all)
}

fn stampede_dbstress(action: &str, db: &str, args: &[&str]) -> Output {
    stampede_on_mariadb("dbstress", action, db, args)
}

/// dbSTRESS on its original engine: the same rows as on PostgreSQL (one digest over every
/// HISTORY row, computed by each server), and the report's transactions equal to the server's
/// commits.
#[test]
fn dbstress_loads_the_same_rows_as_on_postgresql_and_counts_commits() {
    let _one = exclusive();
    let db = create_database("dbstress_same");
    succeeded(
        stampede_dbstress("prepare", &db, &["--objects", "300"]),
        "prepare",
    );
    let pg = common::server();
    let pg_db = pg.create_database("dbstress_same");
    succeeded(
        common::stampede_on("dbstress", &pg_db, &["prepare", "--objects", "300"]),
        "prepare on PostgreSQL",
    );
    let mariadb_digest = sql(
        &db,
        "SET SESSION group_concat_max_len = 100000000; \
         SELECT MD5(GROUP_CONCAT(CONCAT_WS('|', ref_object, horder, ref_stat, begin_date, end_date, note) \
         ORDER BY ref_object + 0, horder SEPARATOR ',')), COUNT(*) FROM history1",
    );
    let pg_digest = pg.psql(
        &pg_db,
        // bpchar keeps its padding in concat_ws; text (as MariaDB returns CHAR) does not.
        "SELECT md5(string_agg(concat_ws('|', ref_object::text, horder, ref_stat::text, begin_date::text, \
         end_date::text, note::text), ',' \
         ORDER BY ref_object::int, horder)) || E'\\t' || count(*) FROM history1",
    );
    assert_eq!(mariadb_digest.trim(), pg_digest.trim());
    assert!(
        mariadb_digest.trim().ends_with("\t6000"),
        "{mariadb_digest}"
    );
    for table in ["zone1", "section1", "stat1", "object1"] {
        let count = sql(&db, &format!("SELECT COUNT(*) FROM {table}"));
        let expected = pg.psql(&pg_db, &format!("SELECT count(*) FROM {table}"));
        assert_eq!(count.trim(), expected.trim(), "{table}");
    }

    for prepared in [false, true] {
        let json = TempFile::new("dbstress.json");
        let before = counters();
        let mut args = vec!["--mode", "rw", "--sessions", "1", "--time", "2", "--json"];
        let json_path = json.to_str().unwrap().to_string();
        args.push(&json_path);
        if prepared {
            args.push("--prepared");
        }
        succeeded(stampede_dbstress("run", &db, &args), "run");
        let after = counters();
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let delta = |name: &str| after[name] - before.get(name).copied().unwrap_or(0);
        let transactions = report["transactions"].as_u64().unwrap();
        assert!(transactions > 0);
        assert_eq!(delta("Com_commit"), transactions, "prepared: {prepared}");
        let statements = report["statements"]["SEL1"]["calls"].as_u64().unwrap() * 7;
        if prepared {
            assert_eq!(delta("Com_stmt_execute"), statements);
        } else {
            assert_eq!(delta("Com_update"), transactions);
        }
    }
    succeeded(stampede_dbstress("cleanup", &db, &[]), "cleanup");
    assert_eq!(sql(&db, "SHOW TABLES").trim(), "");
    let refused = stampede(&["dbstress", "run", "--engine", "oracle"]);
    assert_refused(
        &refused,
        "--engine oracle: use postgres or mariadb (MariaDB, MySQL)",
        "an unknown engine",
    );
}

/// MariaDB's ed25519 plugin over TCP: the right password runs, a wrong one is the server's
/// access-denied error.
#[test]
fn an_ed25519_account_authenticates() {
    let _serial = exclusive();
    let server = mariadb();
    let db = create_database("sb_ed");
    sql(
        "",
        "INSTALL PLUGIN IF NOT EXISTS ed25519 SONAME 'auth_ed25519'; \
         CREATE USER IF NOT EXISTS 'sb_ed'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('ed-secret'); \
         GRANT ALL ON sb_ed.* TO 'sb_ed'@'127.0.0.1'",
    );
    let run = |password: &str, args: &[&str]| {
        let port = format!("--mysql-port={}", server.port);
        let password = format!("--mysql-password={password}");
        let database = format!("--mysql-db={db}");
        let mut all: Vec<&str> = vec!["sysbench"];
        all.extend(args);
        all.extend([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &port,
            "--mysql-user=sb_ed",
            &password,
            &database,
        ]);
        stampede(&all)
    };
    succeeded(
        run(
            "ed-secret",
            &["prepare", "oltp_point_select", "--table-size=100"],
        ),
        "prepare as an ed25519 account",
    );
    let output = succeeded(
        run(
            "ed-secret",
            &[
                "run",
                "oltp_point_select",
                "--table-size=100",
                "--events=20",
            ],
        ),
        "run as an ed25519 account",
    );
    assert!(stdout(&output).contains("transactions:                        20 "));
    let refused = run(
        "wrong",
        &[
            "run",
            "oltp_point_select",
            "--table-size=100",
            "--events=20",
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("ERROR 1045 (28000): Access denied for user 'sb_ed'@'localhost'")
            || stderr(&refused)
                .contains("ERROR 1045 (28000): Access denied for user 'sb_ed'@'127.0.0.1'"),
        "{}",
        stderr(&refused)
    );
    assert!(!stderr(&refused).contains("wrong"));
}

/// The watchdog on MariaDB: with the table locked by another session, the run's point selects
/// wait on the lock; `--stall-timeout` abandons the run (exit 2) and kills their queries
/// (`KILL QUERY`) before closing the connections, so none of them stays queued on the lock.
#[test]
fn the_watchdog_kills_queries_stuck_on_a_lock() {
    let _one = exclusive();
    let db = create_database("stall_kill");
    let prepared = stampede_sysbench(
        &db,
        &[
            "prepare",
            "oltp_point_select",
            "--tables=1",
            "--table-size=100",
        ],
    );
    assert!(prepared.status.success(), "{}", stderr(&prepared));
    let mut holder = std::process::Command::new("mariadb")
        .args(["-uroot", &format!("--socket={}", socket()), &db, "-e"])
        .arg("LOCK TABLES sbtest1 WRITE; SELECT SLEEP(600)")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sessions = |condition: &str| {
        sql(
            "",
            &format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND {condition}"
            ),
        )
        .trim()
        .to_string()
    };
    common::wait_until("the lock held", || {
        sessions("INFO LIKE 'SELECT SLEEP%'") == "1"
    });
    let output = stampede_sysbench(
        &db,
        &[
            "run",
            "oltp_point_select",
            "--tables=1",
            "--table-size=100",
            "--threads=2",
        ]
        .into_iter()
        .chain(["--time=1", "--stall-timeout=2s"])
        .collect::<Vec<_>>(),
    );
    common::wait_until("the run's queries gone", || {
        sessions("INFO LIKE '%FROM sbtest1%'") == "0"
    });
    let _ = holder.kill();
    let _ = holder.wait();
    for id in sql(
        "",
        &format!("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND INFO LIKE 'SELECT SLEEP%'"),
    )
    .lines()
    {
        sql("", &format!("KILL {id}"));
    }
    common::assert_abandoned_by_the_watchdog(&output);
}

fn stampede_tpcc(action: &str, db: &str, args: &[&str]) -> Output {
    stampede_on_mariadb("tpcc", action, db, args)
}

/// TPROC-C on MariaDB as HammerDB's MariaDB build and driver have it: the loader's rows equal
/// PostgreSQL's for the same seed (a digest over every customer, computed by each server),
/// TPC-C's conditions hold before and after a run, the run's NOPM and TPM are the server's
/// sum(d_next_o_id) and Com_commit + Com_rollback, and every call commits or rolls back once.
#[test]
fn tpcc_loads_postgresqls_rows_runs_hammerdbs_calls_and_counts_the_servers_transactions() {
    let _one = exclusive();
    let db = create_database("tpcc_maria");
    succeeded(
        stampede_tpcc("build", &db, &["-w", "1", "--seed", "7"]),
        "build",
    );
    let pg = common::server();
    let pg_db = pg.create_database("tpcc_maria");
    succeeded(
        common::stampede_on("tpcc", &pg_db, &["build", "-w", "1", "--seed", "7"]),
        "build on PostgreSQL",
    );
    let columns = "c_w_id, c_d_id, c_id, c_first, c_middle, c_last, c_street_1, c_street_2, \
                   c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, \
                   c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data";
    let mariadb_digest = sql(
        &db,
        &format!(
            "SET SESSION group_concat_max_len = 100000000; \
             SELECT MD5(GROUP_CONCAT(CONCAT_WS('|', {columns}) ORDER BY c_w_id, c_d_id, c_id SEPARATOR ',')), \
             COUNT(*) FROM customer"
        ),
    );
    let pg_digest = pg.psql(
        &pg_db,
        &format!(
            "SELECT md5(string_agg(concat_ws('|', {}), ',' ORDER BY c_w_id, c_d_id, c_id)) || E'\\t' || count(*) FROM customer",
            columns.replace("c_middle,", "c_middle::text,").replace("c_state,", "c_state::text,").replace("c_zip,", "c_zip::text,").replace("c_phone,", "c_phone::text,").replace("c_credit,", "c_credit::text,")
        ),
    );
    assert_eq!(mariadb_digest.trim(), pg_digest.trim());
    assert!(
        mariadb_digest.trim().ends_with("\t30000"),
        "{mariadb_digest}"
    );
    for (table, rows) in [
        ("item", 100_000),
        ("stock", 100_000),
        ("district", 10),
        ("orders", 30_000),
        ("new_order", 9_000),
        ("history", 30_000),
    ] {
        let count = sql(&db, &format!("SELECT COUNT(*) FROM {table}"));
        assert_eq!(count.trim(), rows.to_string(), "{table}");
    }
    let lines = sql(
        &db,
        "SELECT (SELECT SUM(o_ol_cnt) FROM orders) = (SELECT COUNT(*) FROM order_line)",
    );
    assert_eq!(lines.trim(), "1");
    let procedures = sql(
        "",
        &format!("SELECT GROUP_CONCAT(ROUTINE_NAME ORDER BY ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{db}'"),
    );
    assert_eq!(procedures.trim(), "DELIVERY,NEWORD,OSTAT,PAYMENT,SLEV");
    succeeded(
        stampede_tpcc("check", &db, &["--all"]),
        "check before the run",
    );

    let json = TempFile::new("tpcc.json");
    let before = status(&["Com_commit", "Com_rollback"]);
    let next_order_ids = || -> u64 {
        sql(&db, "SELECT SUM(d_next_o_id) FROM district")
            .trim()
            .parse()
            .unwrap()
    };
    let orders_before = next_order_ids();
    let output = succeeded(
        stampede_tpcc(
            "run",
            &db,
            &[
                "--vu",
                "2",
                "--rampup",
                "0",
                "--duration",
                "4s",
                "--json",
                json.to_str().unwrap(),
            ],
        ),
        "run",
    );
    let after = status(&["Com_commit", "Com_rollback"]);
    let new_orders = next_order_ids() - orders_before;
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let minutes = report["minutes"].as_f64().unwrap();
    let ended = |name: &str| after[name] - before.get(name).copied().unwrap_or(0);
    let server_transactions = ended("Com_commit") + ended("Com_rollback");
    let calls: u64 = report["transactions"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["count"].as_u64().unwrap())
        .sum();
    let text = stdout(&output);
    assert!(new_orders > 0, "{text}");
    assert_eq!(calls, server_transactions, "{text}");
    assert_eq!(
        report["new_orders_committed_server"].as_u64(),
        Some(new_orders)
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.max(1.0);
    assert!(
        close(
            report["nopm"].as_f64().unwrap() * minutes,
            new_orders as f64
        ),
        "{text}"
    );
    assert!(
        close(
            report["tpm"].as_f64().unwrap() * minutes,
            server_transactions as f64
        ),
        "{text}"
    );
    // The procedure rolls back about 1% of New-Orders: the driver's calls are those and more.
    let new_order_calls = report["transactions"]["new-order"]["count"]
        .as_u64()
        .unwrap();
    assert!(
        new_order_calls >= new_orders && new_orders * 10 >= new_order_calls * 9,
        "{text}"
    );
    succeeded(
        stampede_tpcc("check", &db, &["--all"]),
        "check after the run",
    );

    for (args, message) in [
        (
            vec!["run", "--mode", "client"],
            "--mode client runs on PostgreSQL only: on MariaDB/MySQL, TPROC-C is HammerDB's procedures called with HammerDB's inputs (--mode server, --call simple, --rules hammerdb)",
        ),
        (
            vec!["build", "--partition"],
            "--partition builds on PostgreSQL only: on MariaDB/MySQL, TPROC-C is HammerDB's MariaDB schema and procedures",
        ),
    ] {
        let refused = stampede_tpcc(args[0], &db, &args[1..]);
        assert_refused(&refused, message, &format!("{args:?}"));
    }
    succeeded(stampede_tpcc("drop", &db, &[]), "drop");
    assert_eq!(sql(&db, "SHOW TABLES").trim(), "");
    let procedures = sql(
        "",
        &format!("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{db}'"),
    );
    assert_eq!(procedures.trim(), "0");
}

fn stampede_tproch(action: &str, db: &str, args: &[&str]) -> Output {
    stampede_on_mariadb("tproch", action, db, args)
}

/// TPROC-H on MariaDB as HammerDB's MariaDB build and driver have it: dbgen's rows at SF 0.01
/// in HammerDB's upper-case tables, the power test (RF1, stream 0's 22 queries, RF2) and a
/// two-stream throughput test keeping the orders and passing the checks, every query's time
/// holding the server's own (performance_schema's statement digests).
#[test]
fn tproch_builds_dbgen_s_rows_and_runs_the_power_and_throughput_tests() {
    let _one = exclusive();
    let db = create_database("tproch_maria");
    succeeded(
        stampede_tproch("build", &db, &["--scale-factor", "0.01", "--threads", "2"]),
        "build",
    );
    for (table, rows) in [
        ("REGION", 5),
        ("NATION", 25),
        ("SUPPLIER", 100),
        ("CUSTOMER", 1_500),
        ("PART", 2_000),
        ("PARTSUPP", 8_000),
        ("ORDERS", 15_000),
        ("LINEITEM", 60_175),
    ] {
        assert_eq!(
            sql(&db, &format!("SELECT COUNT(*) FROM {table}")).trim(),
            rows.to_string(),
            "{table}"
        );
    }
    succeeded(stampede_tproch("check", &db, &[]), "check");

    sql(
        "",
        "TRUNCATE performance_schema.events_statements_summary_by_digest",
    );
    let json = TempFile::new("tproch-maria-power.json");
    succeeded(
        stampede_tproch(
            "run",
            &db,
            &["--refresh", "--seed", "5", "--json", json.to_str().unwrap()],
        ),
        "power test",
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let test = &report["tests"][0];
    assert_eq!(test["test"], "power");
    assert_eq!(test["refreshes"][0]["orders"], 10);
    let queries = test["query_sets"][0]["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 22);
    for query in queries {
        assert!(query["error"].is_null(), "{query}");
        assert!(
            query["server"]["cpu_s"].as_f64().is_some(),
            "a local server is measured: {query}"
        );
    }
    let client_s: f64 = queries.iter().map(|q| q["seconds"].as_f64().unwrap()).sum();
    let server_s: f64 = sql(
        "",
        &format!(
            "SELECT SUM(SUM_TIMER_WAIT) / 1e12 FROM performance_schema.events_statements_summary_by_digest \
             WHERE SCHEMA_NAME = '{db}' AND DIGEST_TEXT LIKE 'SELECT%' AND DIGEST_TEXT NOT LIKE '%COUNT ( * )%'"
        ),
    )
    .trim()
    .parse()
    .unwrap();
    assert!(
        server_s <= client_s,
        "server {server_s} s, client {client_s} s"
    );
    assert_eq!(sql(&db, "SELECT COUNT(*) FROM ORDERS").trim(), "15000");

    let json = TempFile::new("tproch-maria-throughput.json");
    succeeded(
        stampede_tproch(
            "run",
            &db,
            &[
                "--vu",
                "3",
                "--refresh",
                "--update-sets",
                "2",
                "--trickle-refresh",
                "0",
                "--json",
                json.to_str().unwrap(),
            ],
        ),
        "throughput test",
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sets = report["tests"][0]["query_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2);
    assert!(sets
        .iter()
        .all(|s| s["queries"].as_array().unwrap().len() == 22));
    let check = succeeded(stampede_tproch("check", &db, &[]), "check after refreshes");
    assert!(
        stdout(&check).contains("3 update set(s) applied"),
        "{}",
        stdout(&check)
    );
    succeeded(stampede_tproch("drop", &db, &[]), "drop");
    assert_eq!(
        sql(
            "",
            &format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}'")
        )
        .trim(),
        "0"
    );
}
