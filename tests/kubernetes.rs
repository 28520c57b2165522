//! Runs spread over the pods of a Kubernetes Indexed Job (`--pods N`), on a real one-node
//! Kubernetes the suite starts itself (tests/common/kube.rs). Every number is checked against
//! an independent source: pg_stat_statements' calls, the server's commit counter, and the
//! pods' own `-l` transaction logs, whose union must give the merged histogram. After each
//! test no Job, pod, Service or ConfigMap of stampede's is left.

#[path = "kubernetes/cloudnativepg.rs"]
mod cloudnativepg;
mod common;
#[path = "kubernetes/shards.rs"]
mod shards;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use common::kube::{kube, IMAGE};
use common::prometheus::Scraper;
use common::{free_port, server, PASSWORD};
use stampede::driver::LatencyStats;

const SECRET: &str = "stampede-test-pg";

/// A namespace of the test's own (tests run at once; each checks what it left), holding the
/// test server's password as a Secret the pods read by reference.
fn namespace(name: &str) -> String {
    let kube = kube();
    let namespace = name.replace('_', "-");
    kube.kubectl(&["create", "namespace", &namespace]);
    kube.kubectl(&[
        "create",
        "secret",
        "generic",
        SECRET,
        "--namespace",
        &namespace,
        &format!("--from-literal=password={PASSWORD}"),
    ]);
    namespace
}

/// The options that put a run on the suite's cluster: pods on the host's network, which find
/// pod 0 on 127.0.0.1 (no cluster DNS here) at a port of the suite's range.
fn pod_options(pods: usize, namespace: &str) -> Vec<String> {
    [
        "--pods",
        &pods.to_string(),
        "--namespace",
        namespace,
        "--host-network",
        "--coordinator-address",
        "127.0.0.1",
        "--coordinator-port",
        &free_port().to_string(),
        "--image",
        IMAGE,
        "--image-pull-policy",
        "Never",
        "--password-secret",
        SECRET,
        "--pod-start-timeout",
        "60s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `-h 127.0.0.1 -p PORT -U USER DB`: the server over TCP, as the pods reach it.
fn tcp_flags(db: &str) -> Vec<String> {
    let server = server();
    vec![
        "-h".into(),
        "127.0.0.1".into(),
        "-p".into(),
        server.port(),
        "-U".into(),
        server.user.clone(),
        db.into(),
    ]
}

/// `-h 127.0.0.1 -p PORT -U USER -d DB`: the same for commands that take the database as `-d`.
fn tcp_options(db: &str) -> Vec<String> {
    let mut flags = tcp_flags(db);
    flags.insert(6, "-d".into());
    flags
}

/// `stampede pgbench WORDS` against `db` over TCP, spread over `pods` pods in `namespace`.
fn spread_pgbench(words: &[&str], db: &str, pods: usize, namespace: &str) -> Vec<String> {
    let mut args = vec!["pgbench".to_string()];
    args.extend(words.iter().map(|w| w.to_string()));
    args.extend(tcp_flags(db));
    args.extend(pod_options(pods, namespace));
    args
}

fn stampede(args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    kube().stampede(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// No Job, pod, Service or ConfigMap of stampede's is left in the namespace, which goes.
fn assert_nothing_left(namespace: &str) {
    let left = kube().leftovers(namespace);
    assert!(left.is_empty(), "objects left behind: {left:?}");
    kube().kubectl(&["delete", "namespace", namespace, "--wait=false"]);
}

/// A fresh database with pgbench's tables at scale 1.
fn pgbench_database(name: &str) -> String {
    let server = server();
    let db = server.create_database(name);
    let mut init = vec!["pgbench".to_string(), "-i".into(), "-q".into()];
    init.extend(server.flags(&db));
    let output = stampede(&init);
    assert!(output.status.success(), "{}", text(&output.stderr));
    server.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    db
}

fn statement_calls(db: &str, query: &str) -> u64 {
    server()
        .psql(
            db,
            &format!(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND query = '{query}'"
            ),
        )
        .parse()
        .expect("a count")
}

/// A directory of the node the pods (user 65532) may write their logs into.
fn shared_directory() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// Every line of every pgbench log file in `dir`: (client id, latency in µs).
fn log_lines(dir: &std::path::Path) -> (usize, Vec<(usize, u64)>) {
    let mut files = 0;
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("pgbench_log.")
        {
            continue;
        }
        files += 1;
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            lines.push((fields[0].parse().unwrap(), fields[2].parse().unwrap()));
        }
    }
    (files, lines)
}

#[test]
fn pgbench_over_three_pods_is_the_run_one_host_would_make() {
    let namespace = namespace("kube-pgbench");
    let db = pgbench_database("kube_pgbench_select");
    let logs = shared_directory();
    let json = logs.path().join("run.json");
    let words = ["-S", "-c", "12", "-j", "6", "-T", "2", "-l"];
    let mut args = spread_pgbench(&words, &db, 3, &namespace);
    // The launcher serves the merged run's series, sent by pod 0 in its log's frames.
    let address = format!("127.0.0.1:{}", common::free_port());
    let prometheus = Scraper::start("stampede", &[&address], "1s", "900ms");
    prometheus.wait_scraping("stampede");
    args.extend([
        "--json".into(),
        json.display().to_string(),
        "--pod-workdir".into(),
        format!("hostPath:{}", logs.path().display()),
        "--metrics-addr".into(),
        address,
    ]);
    let output = stampede(&args);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("number of clients: 12\n"), "{stdout}");
    assert!(stdout.contains("number of threads: 6\n"), "{stdout}");
    assert!(stdout.contains("pods: 3 (one row each"), "{stdout}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let transactions = report["transactions"].as_u64().unwrap();
    assert!(transactions > 0);
    // The server ran exactly the merged transactions.
    assert_eq!(
        statement_calls(&db, "SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
        transactions
    );
    let counters = &report["server_counters"];
    assert_eq!(
        counters["xact_commit_delta"].as_u64().unwrap(),
        transactions + 12,
        "every transaction and client connection start, nothing else: {counters}"
    );
    // Each pod ran its third of the clients and threads; their transactions add up.
    let pods = report["spread"]["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 3);
    let sum = |field: &str| pods.iter().map(|p| p[field].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("transactions"), transactions);
    assert_eq!(sum("clients"), 12);
    assert_eq!(sum("threads"), 6);
    assert_scraped_as_reported(&prometheus, transactions, pods);

    // The pods' logs: one file per thread, every client id once, one line per transaction.
    let (files, lines) = log_lines(logs.path());
    assert_eq!(files, 6);
    assert_eq!(lines.len() as u64, transactions);
    let mut per_client: BTreeMap<usize, u64> = BTreeMap::new();
    lines
        .iter()
        .for_each(|(client, _)| *per_client.entry(*client).or_default() += 1);
    assert_eq!(
        per_client.keys().copied().collect::<Vec<_>>(),
        (0..12).collect::<Vec<_>>()
    );
    let reported: Vec<u64> = report["fairness"]["per_client"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(per_client.values().copied().collect::<Vec<_>>(), reported);

    // The merged histogram is the union's: every percentile, within the histogram's own
    // resolution (the log prints latency as printf's %.0f, which rounds half-microsecond ties to
    // even where the histogram rounds them up).
    let mut union = LatencyStats::default();
    lines
        .iter()
        .for_each(|(_, latency)| union.record(*latency as f64));
    let latency = &report["latency_ms"];
    for (field, percentile) in [
        ("p50", 50.0),
        ("p90", 90.0),
        ("p95", 95.0),
        ("p99", 99.0),
        ("p999", 99.9),
    ] {
        let merged_us = latency[field].as_f64().unwrap() * 1000.0;
        let union_us = union.percentile_us(percentile);
        let resolution = (union_us / 1000.0).max(1.0) + 1.0;
        assert!(
            (merged_us - union_us).abs() <= resolution,
            "{field}: merged {merged_us} µs, the logs' union {union_us} µs"
        );
    }
    assert_nothing_left(&namespace);
}

/// The merged counter's last sample is the report's transactions, and each pod's series its
/// share.
fn assert_scraped_as_reported(prometheus: &Scraper, transactions: u64, pods: &[serde_json::Value]) {
    let last = |selector: &str| {
        let answer = prometheus.query_at(&format!("max_over_time({selector}[5m])"), None);
        let json: serde_json::Value = serde_json::from_str(&answer).unwrap();
        json["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["metric"]["pod"].as_str().unwrap_or("").to_string(),
                    r["value"][1].as_str().unwrap().parse::<f64>().unwrap() as u64,
                )
            })
            .collect::<BTreeMap<String, u64>>()
    };
    common::wait_until("Prometheus holds the spread run's last sample", || {
        last("stampede_transactions_total{job=\"stampede\"}")
            .values()
            .sum::<u64>()
            == transactions
    });
    let by_pod = last("stampede_pod_transactions_total{job=\"stampede\"}");
    let reported: BTreeMap<String, u64> = pods
        .iter()
        .enumerate()
        .map(|(i, p)| (i.to_string(), p["transactions"].as_u64().unwrap()))
        .collect();
    assert_eq!(by_pod, reported);
}

/// While the suite's cluster runs, an address this machine does not hold — a ClusterIP nothing
/// answers for, a pod address outside the bridge — fails here at once (a blackhole route)
/// instead of being routed off the machine, whose network would answer for it.
#[test]
fn an_address_the_machine_does_not_hold_fails_locally() {
    kube();
    for address in ["10.96.0.77:5432", "10.244.9.9:5432"] {
        let error = std::net::TcpStream::connect_timeout(
            &address.parse().unwrap(),
            std::time::Duration::from_secs(30),
        )
        .expect_err(address);
        // EINVAL: the kernel's answer for a blackhole route (EHOSTUNREACH/ENETUNREACH for
        // others); never a timeout, a refusal or a connection made elsewhere.
        assert!(
            matches!(
                error.raw_os_error(),
                Some(libc::EINVAL | libc::EHOSTUNREACH | libc::ENETUNREACH)
            ),
            "{address}: {error}"
        );
    }
    let output = stampede(&[
        "pgbench".into(),
        "-S".into(),
        "-T".into(),
        "1".into(),
        "-h".into(),
        "10.96.0.77".into(),
        "-p".into(),
        "5432".into(),
        "postgres".into(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failed: error connecting to server: Invalid argument (os error 22)"),
        "{stderr}"
    );
}

#[test]
fn a_dry_run_prints_manifests_the_api_server_accepts_and_creates_nothing() {
    let namespace = namespace("kube-dry-run");
    let mut args = spread_pgbench(&["-S", "-c", "4", "-T", "1"], "postgres", 2, &namespace);
    args.extend(["--dry-run".into(), "--labels".into(), "team=db".into()]);
    let output = stampede(&args);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("the API server accepted these objects (dry run: nothing created)"),
        "{stderr}"
    );
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Service", "Job"]);
    let job = &list["items"][1];
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 2);
    assert_eq!(job["metadata"]["labels"]["team"], "db");
    // The password is a reference to the Secret, never a value.
    assert!(!text(&output.stdout).contains(PASSWORD));
    assert_nothing_left(&namespace);
}

#[test]
fn a_manifest_the_api_server_refuses_is_bad_input() {
    let namespace = namespace("kube-refused");
    let mut args = spread_pgbench(&["-S", "-c", "2", "-T", "1"], "postgres", 2, &namespace);
    args.extend(["--dry-run".into(), "--labels".into(), "bad key=x".into()]);
    let output = stampede(&args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("stampede: error: the API server refused the Service: "),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    assert_nothing_left(&namespace);
}

#[test]
fn a_node_selector_that_matches_nothing_fails_naming_the_pod() {
    let namespace = namespace("kube-unschedulable");
    let mut args = spread_pgbench(&["-S", "-c", "2", "-T", "1"], "postgres", 2, &namespace);
    args.extend([
        "--node-selector".into(),
        "pool=nowhere".into(),
        "--pod-start-timeout".into(),
        "2s".into(),
    ]);
    let output = stampede(&args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("stampede: error: "))
        .unwrap_or_default();
    assert!(
        error.starts_with("stampede: error: pod stampede-pgbench-"),
        "{stderr}"
    );
    assert!(
        error.contains(" could not be scheduled within 2 s: 0/1 nodes are available"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    assert_nothing_left(&namespace);
}

#[test]
fn a_pod_whose_run_fails_ends_the_run_with_its_reason() {
    let namespace = namespace("kube-run-fails");
    // Pods that cannot connect: every pod's run fails; the coordinator's account and exit
    // code come back.
    let args = spread_pgbench(
        &["-S", "-c", "2", "-T", "1"],
        "no_such_database_here",
        2,
        &namespace,
    );
    let output = stampede(&args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("database \"no_such_database_here\" does not exist"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    assert_nothing_left(&namespace);
}

#[test]
fn an_image_that_is_not_there_fails_at_once_naming_the_pod() {
    let namespace = namespace("kube-no-image");
    let mut args = spread_pgbench(&["-S", "-c", "2", "-T", "1"], "postgres", 2, &namespace);
    args.extend(["--image".into(), "localhost/not-an-image:0".into()]);
    let output = stampede(&args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not start its container: ErrImageNeverPull"),
        "{stderr}"
    );
    assert_nothing_left(&namespace);
}

#[test]
fn runs_that_cannot_be_spread_are_refused_before_anything_is_made() {
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), "function event() end\n").unwrap();
    let script = script.path().to_str().unwrap().to_string();
    let cases: [(&[&str], &str); 12] = [
        (
            &["sysbench", "oltp_point_select", "--threads=2", "--pods=3", "--db-driver=pgsql", "--pgsql-host=127.0.0.1", "run"],
            "stampede: error: 2 thread(s) cannot be spread over 3 pods: give --threads=3 or more\n",
        ),
        (
            &["sysbench", "oltp_point_select", "--pods=2", "--db-driver=pgsql", "--pgsql-host=h", "prepare"],
            "stampede: error: --pods spreads a run's load over pods; prepare from here, without --pods\n",
        ),
        (
            &["sysbench", &script, "--threads=4", "--pods=2", "--report-checkpoints=1", "--db-driver=pgsql", "--pgsql-host=h", "run"],
            "stampede: error: --report-checkpoints is not supported with --pods: the pods report \
             every second and the whole run\n",
        ),
        (
            &["sysbench", &script, "--threads=4", "--pods=2", "--db-driver=mysql", "run"],
            "stampede: error: --pods needs a server the pods can reach: give --mysql-host=HOST \
             (not localhost, which is this machine's socket)\n",
        ),
        (
            &["sysbench", "oltp_point_select", "--threads=4", "--pods=2", "--pgsql-host=h", "--pgsql-password=x", "--db-driver=pgsql", "run"],
            "stampede: error: a password on the command line would be written into the Job's \
             manifest: keep it in a Kubernetes Secret and give --password-secret SECRET[/KEY]\n",
        ),
        (
            &["dbstress", "run", "--sessions", "1", "--pods", "2", "-h", "127.0.0.1"],
            "stampede: error: 1 session(s) cannot be spread over 2 pods: give --sessions 2 or more\n",
        ),
        (
            &["pgbench", "-S", "-c", "2", "-T", "1", "--pods", "3", "-h", "127.0.0.1"],
            "stampede: error: 2 client(s) cannot be spread over 3 pods: give -c 3 or more\n",
        ),
        (
            &["pgbench", "-S", "-c", "2", "--pods", "2", "-h", "127.0.0.1", "--pod-start-timeout", "soon"],
            "stampede: error: --pod-start-timeout: \"soon\" is not a duration (such as 90s or 5m)\n",
        ),
        (
            &["tpcc", "run", "--vu", "1", "--pods", "2", "-h", "127.0.0.1"],
            "stampede: error: 1 virtual user(s) cannot be spread over 2 pods: give --vu 2 or more\n",
        ),
        (
            &[
                "pgbench",
                "-S",
                "-c",
                "4",
                "-j",
                "2",
                "-T",
                "1",
                "--pods",
                "3",
                "-h",
                "127.0.0.1",
            ],
            "stampede: error: 2 thread(s) cannot be spread over 3 pods: each pod runs at least \
             one (-j 3 or more)\n",
        ),
        (
            &["pgbench", "-S", "-T", "1", "--namespace", "bench"],
            "stampede: error: --namespace needs --pods N (the Kubernetes options shape the pods \
             of a spread run)\n",
        ),
        (
            &["pgbench", "-S", "-c", "2", "--pods", "2", "postgresql://u:secret@db/x"],
            "stampede: error: a password on the command line would be written into the Job's \
             manifest: keep it in a Kubernetes Secret and give --password-secret SECRET[/KEY]\n",
        ),
    ];
    for (args, expected) in cases {
        let command: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let output = stampede(&command);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&output.stderr), expected, "{args:?}");
        assert!(output.stdout.is_empty());
    }
    let left = kube().leftovers("default");
    assert!(left.is_empty(), "objects left behind: {left:?}");
}

#[test]
fn ctrl_c_deletes_the_job_and_its_pods() {
    use std::io::{BufRead, BufReader};
    let namespace = namespace("kube-interrupted");
    let db = pgbench_database("kube_interrupted");
    let args = spread_pgbench(
        &["-S", "-c", "2", "-T", "600", "-P", "1"],
        &db,
        2,
        &namespace,
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(&args)
        .env("KUBECONFIG", &kube().kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stampede starts");
    // The run is under way once the merged progress comes back through the API.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no progress: {seen}"
        );
        seen.push_str(&line);
        if line.starts_with("progress: ") {
            break;
        }
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{seen}{rest}");
    assert!(
        rest.contains("stampede: error: interrupted: Job stampede-pgbench-"),
        "{rest}"
    );
    assert!(rest.contains(" and its pods were deleted"), "{rest}");
    assert_nothing_left(&namespace);
}

/// `stampede tpcc WORDS` against `db` over TCP, spread over `pods` pods in `namespace`.
fn spread_tpcc(words: &[&str], db: &str, pods: usize, namespace: &str) -> Vec<String> {
    let mut args = vec!["tpcc".to_string()];
    args.extend(words.iter().map(|w| w.to_string()));
    args.extend(tcp_options(db));
    args.extend(pod_options(pods, namespace));
    args
}

#[test]
fn tpcc_over_two_pods_covers_each_home_warehouse_once_and_counts_new_orders_exactly() {
    let namespace = namespace("kube-tpcc");
    let server = server();
    let db = server.create_database("kube_tpcc");
    let mut build = vec![
        "tpcc".to_string(),
        "build".into(),
        "--warehouses".into(),
        "2".into(),
    ];
    build.extend(["--threads".into(), "2".into(), "--seed".into(), "4".into()]);
    build.extend(["-h".into(), server.socket_dir(), "-p".into(), server.port()]);
    build.extend(["-U".into(), server.user.clone(), "-d".into(), db.clone()]);
    let output = stampede(&build);
    assert!(output.status.success(), "{}", text(&output.stderr));

    // Payments only: each of the 4 users (ids 0-3 across both pods) pays 25 times at its home
    // warehouse, client % 2 + 1; ids repeated on each pod would leave warehouse 2 without rows.
    server.psql(&db, "TRUNCATE history");
    let payments = [
        "run",
        "--rampup",
        "0s",
        "--vu",
        "4",
        "--iterations",
        "25",
        "--mix",
        "0,100,0,0,0",
        "--seed",
        "1",
    ];
    let output = stampede(&spread_tpcc(&payments, &db, 2, &namespace));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let homes = server.psql(
        &db,
        "SELECT string_agg(h_w_id || ':' || rows, ',' ORDER BY h_w_id) \
         FROM (SELECT h_w_id, count(*) AS rows FROM history GROUP BY h_w_id) AS homes",
    );
    assert_eq!(homes, "1:50,2:50");

    // The default mix with a rampup: the New-Orders the pods committed in the measured window
    // are the server's Δ d_next_o_id, read by pod 0 while every pod's users were held.
    let json = tempfile::NamedTempFile::new().unwrap();
    let path = json.path().display().to_string();
    let timed = [
        "run",
        "--rampup",
        "1s",
        "--duration",
        "2s",
        "--vu",
        "2",
        "--json",
        &path,
    ];
    let orders_before: i64 = server
        .psql(&db, "SELECT count(*) FROM orders")
        .parse()
        .unwrap();
    let output = stampede(&spread_tpcc(&timed, &db, 2, &namespace));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("TEST RESULT : System achieved "),
        "{stdout}"
    );
    assert!(stdout.contains("pods: 2 (one row each"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    let committed = report["transactions"]["new-order"]["count"]
        .as_i64()
        .unwrap();
    assert!(committed > 0, "{report}");
    assert_eq!(
        report["new_orders_committed_server"].as_i64().unwrap(),
        committed
    );
    let minutes = report["minutes"].as_f64().unwrap();
    assert!((report["nopm"].as_f64().unwrap() * minutes - committed as f64).abs() < 1e-6);
    let orders: i64 = server
        .psql(&db, "SELECT count(*) FROM orders")
        .parse()
        .unwrap();
    assert!(
        orders >= orders_before + committed,
        "the rampup's orders come on top"
    );
    let pods = report["spread"]["pods"].as_array().unwrap();
    assert_eq!(
        pods.iter()
            .map(|p| p["clients"].as_u64().unwrap())
            .sum::<u64>(),
        2
    );
    assert_nothing_left(&namespace);
}

/// `stampede sysbench WORDS` in sysbench's own form (`--name=value`) against `db` over TCP,
/// spread over `pods` pods in `namespace`.
fn spread_sysbench(words: &[&str], db: &str, pods: usize, namespace: &str) -> Vec<String> {
    let server = server();
    let mut args = vec!["sysbench".to_string()];
    args.extend(words.iter().map(|w| w.to_string()));
    args.extend([
        "--db-driver=pgsql".into(),
        "--pgsql-host=127.0.0.1".into(),
        format!("--pgsql-port={}", server.port()),
        format!("--pgsql-user={}", server.user),
        format!("--pgsql-db={db}"),
    ]);
    args.extend(pod_options(pods, namespace));
    args.push("run".into());
    args
}

fn json_file(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A Lua script of the user's own: each event writes its thread's number (`sysbench.tid`) into
/// a table, so the server holds one row per event and every thread's count.
const TID_SCRIPT: &str = r#"
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  con:query("INSERT INTO spread_events(tid) VALUES (" .. sysbench.tid .. ")")
  con:query("SELECT 1")
end

function thread_done()
  con:disconnect()
end
"#;

#[test]
fn a_sysbench_lua_script_over_three_pods_runs_each_thread_once_and_counts_every_event() {
    let namespace = namespace("kube-sysbench-lua");
    let server = server();
    let db = server.create_database("kube_sysbench_lua");
    server.psql(&db, "CREATE TABLE spread_events (tid int NOT NULL)");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tids.lua");
    std::fs::write(&script, TID_SCRIPT).unwrap();
    let script = script.display().to_string();
    let json = dir.path().join("run.json");
    let json_option = format!("--json={}", json.display());

    // --events is the whole run's budget: the pods share it, 600 events in all.
    let words = [
        script.as_str(),
        "--threads=6",
        "--events=600",
        "--time=0",
        &json_option,
    ];
    let output = stampede(&spread_sysbench(&words, &db, 3, &namespace));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("Number of threads: 6\n"), "{stdout}");
    assert!(stdout.contains("pods: 3 (one row each"), "{stdout}");
    let report = json_file(&json);
    assert_eq!(report["events"].as_u64(), Some(600), "{report}");
    assert_eq!(report["queries"]["write"].as_u64(), Some(600), "{report}");
    assert_eq!(report["queries"]["read"].as_u64(), Some(600), "{report}");
    let per_tid = server.psql(
        &db,
        "SELECT string_agg(tid || ':' || rows, ',' ORDER BY tid) \
         FROM (SELECT tid, count(*) AS rows FROM spread_events GROUP BY tid) AS t",
    );
    let reported: Vec<u64> = report["fairness"]["per_client"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let expected: Vec<String> = reported
        .iter()
        .enumerate()
        .map(|(tid, rows)| format!("{tid}:{rows}"))
        .collect();
    // Threads 0-5 each ran on one pod, and the server holds exactly the events each counted.
    assert_eq!(per_tid, expected.join(","), "{report}");
    let pods = report["spread"]["pods"].as_array().unwrap();
    let field =
        |name: &str| -> Vec<u64> { pods.iter().map(|p| p[name].as_u64().unwrap()).collect() };
    assert_eq!(field("threads"), vec![2, 2, 2]);
    assert_eq!(field("transactions"), vec![200, 200, 200]);

    // A timed run: every second's line merges the three pods' six threads.
    server.psql(&db, "TRUNCATE spread_events");
    let words = [
        script.as_str(),
        "--threads=6",
        "--time=2",
        "--report-interval=1",
        &json_option,
    ];
    let output = stampede(&spread_sysbench(&words, &db, 3, &namespace));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    let seconds: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("[ ") && l.contains(" thds: 6 tps: "))
        .collect();
    assert_eq!(seconds.len(), 2, "{stdout}");
    let events = json_file(&json)["events"].as_u64().unwrap();
    let rows: u64 = server
        .psql(&db, "SELECT count(*) FROM spread_events")
        .parse()
        .unwrap();
    assert_eq!(rows, events);
    assert_nothing_left(&namespace);
}

#[test]
fn a_sysbench_test_over_two_pods_counts_the_statements_the_server_ran() {
    let namespace = namespace("kube-sysbench");
    let server = server();
    let db = server.create_database("kube_sysbench");
    let prepare = stampede(&[
        "sysbench".into(),
        "oltp_point_select".into(),
        "--db-driver=pgsql".into(),
        format!("--pgsql-host={}", server.socket_dir()),
        format!("--pgsql-port={}", server.port()),
        format!("--pgsql-user={}", server.user),
        format!("--pgsql-db={db}"),
        "--table-size=1000".into(),
        "prepare".into(),
    ]);
    assert!(prepare.status.success(), "{}", text(&prepare.stderr));
    server.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let json = tempfile::NamedTempFile::new().unwrap();
    let json_option = format!("--json={}", json.path().display());
    let words = [
        "oltp_point_select",
        "--table-size=1000",
        "--threads=4",
        "--time=2",
        "--report-interval=1",
        &json_option,
    ];
    let output = stampede(&spread_sysbench(&words, &db, 2, &namespace));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("pods: 2 (one row each"), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(" thds: 4 tps: "))
            .count(),
        2,
        "{stdout}"
    );
    let report = json_file(json.path());
    let events = report["events"].as_u64().unwrap();
    assert!(events > 0);
    assert_eq!(
        statement_calls(&db, "SELECT c FROM sbtest1 WHERE id=$1"),
        events
    );
    let per_thread = report["fairness"]["per_client"].as_array().unwrap();
    assert_eq!(per_thread.len(), 4);
    assert_nothing_left(&namespace);
}

#[test]
fn dbstress_over_two_pods_counts_what_the_server_ran_per_statement() {
    let namespace = namespace("kube-dbstress");
    let server = server();
    let db = server.create_database("kube_dbstress");
    let mut prepare = vec!["dbstress".to_string(), "prepare".into()];
    prepare.extend(["--objects".into(), "200".into()]);
    let flags = server.flags(&db);
    prepare.extend(flags[..6].iter().cloned());
    prepare.extend(["-d".into(), db.clone()]);
    let output = stampede(&prepare);
    assert!(output.status.success(), "{}", text(&output.stderr));
    server.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    let json = tempfile::NamedTempFile::new().unwrap();
    let mut args = vec!["dbstress".to_string(), "run".into()];
    let words = [
        "--mode",
        "rw",
        "--anti-dead",
        "--sessions",
        "4",
        "--time",
        "2",
        "--json",
    ];
    args.extend(words.iter().map(|w| w.to_string()));
    args.push(json.path().display().to_string());
    args.extend(tcp_options(&db));
    args.extend(pod_options(2, &namespace));
    let output = stampede(&args);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("dbSTRESS read+write"), "{stdout}");
    assert!(stdout.contains("pods: 2 (one row each"), "{stdout}");
    let report = json_file(json.path());
    let transactions = report["transactions"].as_u64().unwrap();
    assert!(transactions > 0);
    let calls = |pattern: &str| -> u64 {
        server
            .psql(
                &db,
                &format!(
                    "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
                     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                     AND query LIKE '{pattern}'"
                ),
            )
            .parse()
            .unwrap()
    };
    // Each statement's merged count is the server's, but for a statement per session that was
    // under way when the time ran out.
    for (name, pattern) in [
        ("SEL1", "SELECT S.REF, S.NAME, Z.REF%"),
        ("SEL2", "SELECT S.REF, S.NAME, H.HORDER%"),
        ("UPDATE", "UPDATE history%"),
    ] {
        let merged = report["statements"][name]["calls"].as_u64().unwrap();
        let server_calls = calls(pattern);
        assert!(
            (merged..=merged + 4).contains(&server_calls),
            "{name}: merged {merged}, the server ran {server_calls}"
        );
    }
    let pods = report["spread"]["pods"].as_array().unwrap();
    let sessions: Vec<u64> = pods
        .iter()
        .map(|p| p["clients"].as_u64().unwrap())
        .collect();
    assert_eq!(sessions, vec![2, 2]);
    assert_eq!(
        report["fairness"]["per_client"].as_array().unwrap().len(),
        4
    );
    assert_nothing_left(&namespace);
}

/// A lab workload with `pods = 2`: the lab coordinates, the pods run the clients, the lab's
/// window (statements, counters) opens while every pod is held between warmup and run.
#[test]
fn a_lab_workload_runs_its_clients_from_pods() {
    let namespace = namespace("kube-lab");
    let dir = common::LabDir::new("kube-lab");
    let spec = dir.join("lab.toml");
    let lab = format!(
        r#"name = "kube-lab"
runs = 1
duration = "2s"
warmup = "1s"
seed = 3

[kubernetes]
namespace = "{namespace}"
image = "{IMAGE}"
image_pull_policy = "Never"
host_network = true
coordinator_address = "127.0.0.1"
coordinator_port = {port}
pod_start_timeout = "60s"

[[target]]
name = "t"
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [4]
pods = 2
"#,
        port = free_port()
    );
    std::fs::write(&spec, lab).unwrap();
    let output = stampede(&["lab".into(), "run".into(), spec.display().to_string()]);
    assert!(
        output.status.success(),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let db = dir.join("kube-lab.db");
    let runs = common::sqlite(
        &db,
        "SELECT r.id, r.transactions, r.status, r.error FROM runs r",
    );
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0][2], "completed", "{runs:?}");
    let (id, transactions) = (&runs[0][0], common::number(&runs[0][1]));
    assert!(transactions > 0.0);
    // The server's count of the statement over the lab's window is the pods' merged
    // transactions, give or take one in flight per client at the window's end.
    let calls = common::sqlite(
        &db,
        &format!(
            "SELECT sum(calls) FROM run_statements WHERE run_id = {id} \
             AND query = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'"
        ),
    );
    let extra = common::number(&calls[0][0]) - transactions;
    assert!(
        (0.0..=4.0).contains(&extra),
        "{calls:?} against {transactions}"
    );
    let seconds = common::sqlite(
        &db,
        &format!("SELECT count(*) FROM run_series WHERE run_id = {id}"),
    );
    assert_eq!(seconds[0][0], "2", "one row per measured second");
    // Each pod's share is stored: two pods, two clients each, adding up to the run.
    let pods = common::sqlite(
        &db,
        &format!(
            "SELECT pod, clients, transactions FROM run_pods WHERE run_id = {id} ORDER BY pod"
        ),
    );
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert_eq!((pods[0][1].as_str(), pods[1][1].as_str()), ("2", "2"));
    let per_pod: f64 = pods.iter().map(|p| common::number(&p[2])).sum();
    assert_eq!(per_pod, transactions);
    assert_nothing_left(&namespace);
}
