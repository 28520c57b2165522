//! Bad input: one line naming the problem on stderr, exit code 1, nothing on stdout, no JSON.

mod common;

use common::{server, stampede, stampede_with_env, stderr, stdout, LabDir, TempFile};

fn assert_rejected(output: &std::process::Output, expected: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(1), "stderr: {err}");
    assert!(stdout(output).is_empty(), "stdout: {}", stdout(output));
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("stampede: error: "))
        .collect();
    assert_eq!(lines.len(), 1, "expected one error line: {err}");
    assert!(
        lines[0].contains(expected),
        "expected {expected:?} in {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

/// Options are checked before any connection, so these need no server.
#[test]
fn option_errors_use_pgbench_wording() {
    let cases: [(&[&str], &str); 22] = [
        (&["-R", "0"], "invalid rate limit: \"0\""),
        (
            &["--stall-timeout", "soon"],
            "invalid stall timeout: \"soon\" (a duration such as 90s or 5m, or 0 to wait forever)",
        ),
        (&["-L", "-1"], "invalid latency limit: \"-1\""),
        (&["-c", "0"], "-c/--client must be in range 1..2147483647"),
        (&["-j", "0"], "-j/--jobs must be in range 1..2147483647"),
        (
            &["-c", "many"],
            "invalid value \"many\" for option -c/--client",
        ),
        (&["-b", "nope"], "no builtin script found for name \"nope\""),
        (
            &["-b", "s"],
            "ambiguous builtin name: 2 builtin scripts found for prefix \"s\"",
        ),
        (
            &["-T", "5", "-t", "5"],
            "specify either a number of transactions (-t) or a duration (-T), not both",
        ),
        (
            &["--frobnicate"],
            "unexpected argument '--frobnicate' found",
        ),
        (&["-M", "fast"], "invalid query mode (-M): \"fast\""),
        (
            &["--sampling-rate", "0.5"],
            "log sampling (--sampling-rate) is allowed only when logging transactions (-l)",
        ),
        (&["-l", "--sampling-rate", "2"], "invalid sampling rate: \"2\""),
        (
            &["-l", "--sampling-rate", "0.5", "--aggregate-interval", "1"],
            "log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time",
        ),
        (
            &["--aggregate-interval", "1"],
            "log aggregation is allowed only when actually logging transactions",
        ),
        (
            &["--log-prefix", "x"],
            "log file prefix (--log-prefix) is allowed only when logging transactions (-l)",
        ),
        (
            &["-l", "-T", "5", "--aggregate-interval", "10"],
            "number of seconds for aggregation (10) must not be higher than test duration (5)",
        ),
        (
            &["-l", "-T", "5", "--aggregate-interval", "2"],
            "duration (5) must be a multiple of aggregation interval (2)",
        ),
        (
            &["--progress-timestamp"],
            "--progress-timestamp is allowed only under --progress",
        ),
        (
            &["--max-tries", "-1"],
            "invalid number of maximum tries: \"-1\"",
        ),
        (
            &["--max-tries", "0"],
            "an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)",
        ),
        (
            &["-i", "-c", "2"],
            "some of the specified options cannot be used in initialization (-i) mode",
        ),
    ];
    for (args, expected) in cases {
        let json = TempFile::new("bad.json");
        let mut full = vec!["pgbench", "--json", json.to_str().unwrap()];
        if args[0] == "-i" {
            full.clear();
            full.push("pgbench");
        }
        full.extend_from_slice(args);
        full.extend_from_slice(&["-h", "127.0.0.1", "-p", "1"]);
        let output = stampede(&full);
        assert_rejected(&output, expected);
        assert!(!json.exists(), "{args:?} wrote a JSON file");
    }
}

#[test]
fn script_errors_point_at_line_and_column() {
    let script = TempFile::new("bad-script.sql");
    std::fs::write(&script, "\\set x 1\n\\set y (2 + :x\n").unwrap();
    let output = stampede(&[
        "pgbench",
        "-f",
        script.to_str().unwrap(),
        "-h",
        "127.0.0.1",
        "-p",
        "1",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "{}:2: syntax error in command \"set\"\n\\set y (2 + :x\n",
            script.display()
        )),
        "{err}"
    );
    assert!(err.contains("^ error found here"), "caret expected: {err}");
}

/// A port nothing listens on: one the system just gave out and took back (the suite's other
/// programs run beside this one, so no fixed port of 15400–15999 is sure to be free).
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    listener
        .local_addr()
        .expect("its address")
        .port()
        .to_string()
}

#[test]
fn unreachable_server_is_a_clean_error() {
    let port = &closed_port();
    let output = stampede(&[
        "pgbench",
        "-S",
        "-t",
        "1",
        "-h",
        "127.0.0.1",
        "-p",
        port,
        "postgres",
    ]);
    assert_rejected(
        &output,
        &format!("connection to server (host=127.0.0.1 port={port}"),
    );
}

/// A results database in PostgreSQL that refuses the password, that nothing answers for, or
/// that holds no stampede tables: each is the user's input (exit 1) with its own words, and
/// no password is echoed.
#[test]
fn results_database_errors_each_say_what_went_wrong() {
    let s = server();
    let db = s.create_database("foreign_results");
    s.psql(&db, "CREATE TABLE customers (id int)");
    let url = |password: &str, port: &str| {
        format!("postgresql://{}:{password}@127.0.0.1:{port}/{db}", s.user)
    };
    let closed = closed_port();
    let cases = [
        (
            url("not-the-password", &s.port()),
            "password authentication failed".to_string(),
        ),
        (
            url(common::PASSWORD, &closed),
            format!(":{closed}/{db}: error connecting to server: Connection refused"),
        ),
        (
            url(common::PASSWORD, &s.port()),
            "is not a stampede results database".to_string(),
        ),
    ];
    for (results, said) in cases {
        let output = stampede(&["report", &results]);
        assert_rejected(&output, &said);
        let err = stderr(&output);
        assert!(
            !err.contains("not-the-password") && !err.contains(common::PASSWORD),
            "{err}"
        );
    }
}

#[test]
fn wrong_password_is_a_clean_error_and_not_echoed() {
    let server = server();
    let output = stampede_with_env(
        &[
            "pgbench",
            "-S",
            "-t",
            "1",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port(),
            "-U",
            &server.user,
            "postgres",
        ],
        &[("PGPASSWORD", "not-the-password")],
    );
    assert_rejected(&output, "password authentication failed");
    assert!(!stderr(&output).contains("not-the-password"));
}

#[test]
fn missing_tables_hint_to_initialize() {
    let server = server();
    let db = server.create_database("bad_missing_tables");
    let flags = server.flags(&db);
    let mut args = vec!["pgbench", "-S", "-t", "1"];
    args.extend(flags.iter().map(String::as_str));
    let output = stampede(&args);
    assert_rejected(
        &output,
        "could not count number of branches: ERROR:  relation \"pgbench_branches\" does not exist",
    );
    assert!(stderr(&output).contains(&format!(
        "\nstampede: hint: Perhaps you need to do initialization (\"stampede pgbench -i\") in database \"{db}\".\n"
    )));
}

#[test]
fn uri_with_password_connects_over_tcp() {
    let server = server();
    let db = server.create_database("uri_connect");
    let uri = server.url_with_password(&db);
    let init = stampede(&["pgbench", "-i", "-s", "1", &uri]);
    assert!(init.status.success(), "{}", stderr(&init));
    let run = stampede(&["pgbench", "-S", "-t", "5", "-c", "4", "-j", "3", &uri]);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = stdout(&run);
    assert!(text.contains("number of threads: 3"), "{text}");
    assert!(!text.contains(common::PASSWORD) && !stderr(&run).contains(common::PASSWORD));
}

#[test]
fn sql_error_during_run_aborts_with_exit_code_2() {
    let server = server();
    let db = server.create_database("bad_sql_run");
    let script = TempFile::new("abort.sql");
    std::fs::write(&script, "SELECT * FROM no_such_table;\n").unwrap();
    let flags = server.flags(&db);
    let mut args = vec![
        "pgbench",
        "-f",
        script.to_str().unwrap(),
        "-t",
        "3",
        "-c",
        "2",
    ];
    args.extend(flags.iter().map(String::as_str));
    let output = stampede(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("aborted in command 0"), "{err}");
    assert!(
        err.contains("relation \"no_such_table\" does not exist"),
        "{err}"
    );
    assert!(
        err.contains("Run was aborted; the above results are incomplete."),
        "{err}"
    );
}

#[test]
fn a_run_that_cannot_connect_leaves_no_log_files() {
    let dir = LabDir::new("bad-log");
    let server = server();
    let prefix = dir.join("log");
    let output = stampede(&[
        "pgbench",
        "-S",
        "-t",
        "1",
        "-l",
        "--log-prefix",
        prefix.to_str().unwrap(),
        "-h",
        &server.socket_dir(),
        "-p",
        &server.port(),
        "-U",
        "no_such_role",
        "postgres",
    ]);
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "log files left behind: {left:?}");
}

/// A cloudnativepg target's plan shows the Cluster it would create from the spec alone; a dry
/// run needs the API server, and without a Kubernetes configuration it is refused.
#[test]
fn a_cluster_s_plan_needs_kubernetes_only_for_a_dry_run() {
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/cloudnativepg-sync-standby.toml"
    );
    let nowhere = [("KUBECONFIG", "/nonexistent/kubeconfig")];
    let plan = stampede_with_env(&["lab", "plan", spec], &nowhere);
    let said = stdout(&plan) + &stderr(&plan);
    assert!(plan.status.success(), "{said}");
    let manifest = said
        .lines()
        .find_map(|line| line.strip_prefix("target \"three-sync\": its manifest: "))
        .expect("the manifest");
    let manifest: serde_json::Value = serde_json::from_str(manifest).unwrap();
    assert_eq!(manifest["metadata"]["namespace"], "bench");
    assert_eq!(manifest["spec"]["instances"], 3);
    assert_eq!(
        manifest["spec"]["postgresql"]["synchronous"],
        serde_json::json!({"method": "any", "number": 1, "dataDurability": "required"})
    );
    let dry_run = stampede_with_env(&["lab", "plan", spec, "--dry-run"], &nowhere);
    assert_rejected(
        &dry_run,
        "target \"single\": [kubernetes]: no Kubernetes configuration found",
    );
}
