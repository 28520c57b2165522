//! What stampede shows while it runs, read by the real consumers: a Prometheus of the test's
//! own (Debian's package) scraping `--metrics-addr` every second, and the Grafana dashboard in
//! the repository checked against what that Prometheus holds.

mod common;

use common::prometheus::Scraper;
use common::scrape::Scrapes;
use common::{
    free_port, lab_spec, line_value, server, sqlite, stampede_command, stderr, stdout, wait_until,
    LabDir,
};

const DASHBOARD: &str = include_str!("../docs/grafana/stampede.json");

/// The lab's probes reset pg_stat_statements on the server it visits (the suite's): the
/// tests that read it or run a lab take turns.
static STATEMENTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Served for spread runs alone: tests/kubernetes.rs' spread run has Prometheus read it.
const SPREAD_ONLY: [&str; 1] = ["stampede_pod_transactions_total"];

/// The one number of an instant query's vector answer.
fn scalar(answer: &str) -> Option<f64> {
    let json: serde_json::Value = serde_json::from_str(answer).ok()?;
    let value = &json["data"]["result"][0]["value"][1];
    value.as_str()?.parse().ok()
}

/// The bucket (of the endpoint's bounds) a latency in seconds falls in.
fn bucket_of(seconds: f64) -> usize {
    stampede::live::metrics::bucket_bounds_s()
        .iter()
        .position(|&bound| seconds <= bound)
        .unwrap_or(usize::MAX)
}

/// The metric names a dashboard's queries read (`stampede_…` words in every `expr`).
fn dashboard_metrics() -> Vec<String> {
    let dashboard: serde_json::Value =
        serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let mut names = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("each target has an expr");
            let words = expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            names.extend(
                words
                    .filter(|w| w.starts_with("stampede_"))
                    .map(str::to_string),
            );
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn prometheus_scraping_a_rate_limited_pgbench_run_reads_its_transactions_and_p99() {
    let _turn = STATEMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = server();
    let db = s.create_database("live_prometheus");
    let init = stampede_command(&["pgbench", "-i", "-s", "1"])
        .args(s.flags(&db))
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    s.reset_statements(&db);
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let prometheus = Scraper::start("stampede", &[&address], "1s", "900ms");
    prometheus.wait_scraping("stampede");
    let mut run = stampede_command(&[
        "pgbench",
        "-S",
        "-c",
        "2",
        "-T",
        "10",
        "-R",
        "2000",
        "--metrics-addr",
        &address,
    ]);
    let output = run.args(s.flags(&db)).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("stampede: metrics at http://{address}/metrics")),
        "{}",
        stderr(&output)
    );
    let text = stdout(&output);
    let transactions: f64 = line_value(&text, "number of transactions actually processed: ")
        .unwrap()
        .parse()
        .unwrap();
    let p99_ms: f64 = text
        .split("p99 = ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let selector = "stampede_transactions_total{job=\"stampede\",command=\"pgbench\"}";
    // The process served its final numbers until a scrape read them: the last sample is
    // the run's count exactly, and increase() over the run is within a scrape's worth.
    wait_until("Prometheus holds the run's last sample", || {
        scalar(&prometheus.query_at(&format!("max_over_time({selector}[5m])"), None))
            == Some(transactions)
    });
    let increase =
        scalar(&prometheus.query_at(&format!("increase({selector}[5m])"), None)).unwrap();
    let per_scrape = transactions / 10.0;
    assert!(
        (increase - transactions).abs() <= per_scrape,
        "increase() {increase} against the run's {transactions} (a scrape's worth: {per_scrape})"
    );
    let quantile = scalar(&prometheus.query_at(
        "histogram_quantile(0.99, sum by (le) (max_over_time(stampede_transaction_latency_seconds_bucket{job=\"stampede\"}[5m])))",
        None,
    ))
    .unwrap();
    let (ours, theirs) = (bucket_of(quantile), bucket_of(p99_ms / 1000.0));
    assert!(
        ours.abs_diff(theirs) <= 1,
        "the histogram's p99 {quantile} s is more than a bucket from the run's {p99_ms} ms"
    );
    // The statements counter against the server's own count of the script's one statement.
    let calls: f64 = s
        .psql(
            &db,
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND query = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'",
        )
        .parse()
        .unwrap();
    assert_eq!(
        calls,
        transactions,
        "pg_stat_statements against the run's report: {}",
        s.psql(
            &db,
            "SELECT calls, query FROM pg_stat_statements ORDER BY calls DESC LIMIT 5"
        )
    );
    let statements = scalar(&prometheus.query_at(
        "max_over_time(stampede_statements_total{job=\"stampede\"}[5m])",
        None,
    ));
    assert_eq!(
        statements,
        Some(calls),
        "the statements counter against pg_stat_statements"
    );
    let lagged = scalar(&prometheus.query_at(
        "max_over_time(stampede_schedule_lag_seconds_count{job=\"stampede\"}[5m])",
        None,
    ));
    assert_eq!(
        lagged,
        Some(transactions),
        "every -R transaction has its schedule lag"
    );
    // Every metric the dashboard's queries read is one this Prometheus scraped.
    let names = prometheus.query_at("count by (__name__) ({job=\"stampede\"})", None);
    for metric in dashboard_metrics()
        .iter()
        .filter(|m| !SPREAD_ONLY.contains(&m.as_str()))
    {
        assert!(
            names.contains(&format!("\"__name__\":\"{metric}\"")),
            "the dashboard reads {metric}, which no scrape held: {names}"
        );
    }
}

/// `--continue-on-error`: the other failures by SQLSTATE class, against what the script makes
/// the server do — client 0 divides by zero each time (22012), client 1 inserts one key, which
/// the table holds once, so its other tries are unique violations (23505).
#[test]
fn other_failures_are_served_by_sqlstate_class() {
    let s = server();
    let db = s.create_database("live_classes");
    s.psql(&db, "CREATE TABLE live_unique (k int PRIMARY KEY)");
    let script = common::TempFile::new("live-fail.sql");
    std::fs::write(
        &*script,
        "\\if :client_id = 0\nSELECT 1/0;\n\\else\nINSERT INTO live_unique VALUES (1);\n\\endif\n",
    )
    .unwrap();
    let scrapes = Scrapes::start();
    let output = stampede_command(&["pgbench", "-n", "-c", "2", "-t", "5", "--continue-on-error"])
        .arg("-f")
        .arg(&script)
        .args(["--metrics-addr", &scrapes.address])
        .args(s.flags(&db))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let answers = scrapes.answers();
    let text = stdout(&output);
    assert!(text.contains("number of failed transactions: 9 "), "{text}");
    let inserted: f64 = s
        .psql(&db, "SELECT count(*) FROM live_unique")
        .parse()
        .unwrap();
    let name = script.display().to_string();
    let class = |sqlstate: &str| {
        let labels = [
            ("script", name.as_str()),
            ("kind", "other"),
            ("sqlstate", sqlstate),
        ];
        answers.value("stampede_failed_transactions_total", &labels)
    };
    assert_eq!(class("22"), 5.0, "client 0's every transaction");
    assert_eq!(
        class("23"),
        5.0 - inserted,
        "client 1's but the one the table holds"
    );
    assert_eq!(class("other"), 0.0);
}

/// A sysbench Lua script's run (not the driver's): its events and queries served as its
/// report counts them, and the queries as the server counted them (pg_stat_statements).
#[test]
fn a_sysbench_lua_scripts_run_serves_its_events_and_queries() {
    let _turn = STATEMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = server();
    let db = s.create_database("live_lua");
    let script = |command: &str, extra: &[&str]| {
        let mut args = common::bundled_lua("oltp_point_select", &db);
        args.extend(["--tables=1", "--table-size=1000"].map(String::from));
        args.extend(extra.iter().map(|a| a.to_string()));
        args.push(command.into());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = stampede_command(&refs).output().unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    };
    script("prepare", &[]);
    s.psql(&db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    s.reset_statements(&db);
    let scrapes = Scrapes::start();
    let metrics = format!("--metrics-addr={}", scrapes.address);
    let text = script("run", &["--time=3", "--threads=2", &metrics]);
    let answers = scrapes.answers();
    let counted = |label: &str| -> f64 {
        let lines = text.lines().map(str::trim_start);
        let rest = lines.filter_map(|l| l.strip_prefix(label)).next().unwrap();
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (events, queries) = (counted("transactions:"), counted("queries:"));
    let labels = [("script", "oltp_point_select.lua")];
    let seen: Vec<(Option<f64>, Option<f64>)> = answers
        .0
        .iter()
        .map(|text| {
            (
                common::scrape::sample(text, "stampede_transactions_total", &labels),
                common::scrape::sample(text, "stampede_run_finished", &[]),
            )
        })
        .collect();
    assert_eq!(
        answers.value("stampede_transactions_total", &labels),
        events,
        "each scrape's (transactions, finished): {seen:?}"
    );
    assert_eq!(answers.value("stampede_statements_total", &labels), queries);
    assert_eq!(
        answers.value("stampede_transaction_latency_seconds_count", &[]),
        events
    );
    assert_eq!(answers.value("stampede_run_finished", &[]), 1.0);
    let calls: f64 = s
        .psql(
            &db,
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND query LIKE 'SELECT c FROM sbtest1 WHERE id=%'",
        )
        .parse()
        .unwrap();
    assert_eq!(
        calls, queries,
        "pg_stat_statements against the served statements"
    );
}

#[test]
fn metrics_on_a_bad_address_are_refused_before_anything_runs() {
    let output = stampede_command(&[
        "pgbench",
        "-S",
        "-T",
        "1",
        "--metrics-addr",
        "127.0.0.1:99999",
    ])
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("--metrics-addr \"127.0.0.1:99999\": the port is not between 0 and 65535"),
        "{}",
        stderr(&output)
    );
    // The commands whose runs the driver does not run refuse it as early.
    for command in [
        &["tproch", "run", "--metrics-addr", "127.0.0.1:99999"][..],
        &[
            "ibench",
            "run",
            "--steps",
            "l.i0",
            "--metrics-addr",
            "127.0.0.1:99999",
        ],
        &[
            "sysbench",
            "/usr/share/sysbench/oltp_point_select.lua",
            "--metrics-addr=127.0.0.1:99999",
            "run",
        ],
    ] {
        let output = stampede_command(command).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{command:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("the port is not between 0 and 65535"),
            "{command:?}: {}",
            stderr(&output)
        );
    }
    // sysbench's command line takes `--name=value`: a bare --metrics-addr is refused.
    let bare = stampede_command(&[
        "sysbench",
        "/usr/share/sysbench/oltp_point_select.lua",
        "--metrics-addr",
        "run",
    ])
    .output()
    .unwrap();
    assert_eq!(bare.status.code(), Some(1), "{}", stderr(&bare));
    assert!(
        stderr(&bare).ends_with(
            "stampede: error: --metrics-addr needs a value, given as sysbench's options are: \
             --metrics-addr=VALUE\n"
        ),
        "{}",
        stderr(&bare)
    );
    let empty = stampede_command(&["pgbench", "-S", "--metrics-addr", ":0", "--serve-token", ""])
        .output()
        .unwrap();
    assert_eq!(empty.status.code(), Some(1), "{}", stderr(&empty));
    assert_eq!(
        stderr(&empty),
        "stampede: error: --serve-token: the token is empty\n"
    );
}

#[test]
fn a_lab_labels_each_run_and_prometheus_holds_every_runs_last_count() {
    let _turn = STATEMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let s = server();
    let url = s.url_with_password("postgres");
    let dir = LabDir::new("live-lab");
    let spec = lab_spec(
        &dir,
        &format!(
            "name = \"live-lab\"\nruns = 2\nduration = \"2s\"\nwarmup = \"0s\"\n\
             [[target]]\nname = \"a\"\nurl = \"{url}\"\n\
             [[target]]\nname = \"b\"\nurl = \"{url}\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\n"
        ),
    );
    let address = format!("127.0.0.1:{}", free_port());
    let prometheus = Scraper::start("stampede", &[&address], "1s", "900ms");
    prometheus.wait_scraping("stampede");
    let output = stampede_command(&[
        "lab",
        "run",
        spec.to_str().unwrap(),
        "--metrics-addr",
        &address,
    ])
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = sqlite(
        &dir.join("live-lab.db"),
        "SELECT count(*), sum(transactions) FROM runs WHERE status = 'completed'",
    );
    assert_eq!(stored[0][0], "4", "{stored:?}");
    let transactions: f64 = stored[0][1].parse().unwrap();
    // Each run is a series of its own (target, cell, round); the last sample of each is what
    // the lab stored, even where the next run started before a scrape.
    let selector = "stampede_transactions_total{job=\"stampede\",lab=\"live-lab\"}";
    wait_until("Prometheus holds every run's last count", || {
        scalar(&prometheus.query_at(&format!("sum(max_over_time({selector}[5m]))"), None))
            == Some(transactions)
    });
    let series = prometheus.query_at(
        &format!("count(max_over_time({selector}[5m])) by (target, round)"),
        None,
    );
    for (target, round) in [("a", "1"), ("a", "2"), ("b", "1"), ("b", "2")] {
        assert!(
            series.contains(&format!("\"round\":\"{round}\",\"target\":\"{target}\"")),
            "{series}"
        );
    }
    let done = scalar(&prometheus.query_at(
        "max_over_time(stampede_lab_runs_total{job=\"stampede\",outcome=\"done\"}[5m])",
        None,
    ));
    assert_eq!(done, Some(4.0));
}

/// A two-target lab of `runs` rounds on the suite's server (password in its URL), with a claim.
fn page_lab(dir: &LabDir, name: &str, runs: u32, duration: &str) -> std::path::PathBuf {
    let url = server().url_with_password("postgres");
    lab_spec(
        dir,
        &format!(
            "name = \"{name}\"\nruns = {runs}\nduration = \"{duration}\"\nwarmup = \"0s\"\n\
             [[target]]\nname = \"a\"\nurl = \"{url}\"\n\
             [[target]]\nname = \"b\"\nurl = \"{url}\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\n\
             [[claim]]\nsays = \"a twin is no different\"\ntarget = \"b\"\nworkload = \"pgbench\"\n\
             script = \"select-only\"\nmetric = \"tps\"\nexpect = \"within 50%\"\n"
        ),
    )
}

/// Where a test keeps its screenshots for a person to look at.
fn screenshots(test: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The verdicts a report's HTML shows: each comparison table's, then the claims'.
const PAGE_VERDICTS: &str = r#"(() => {
  const last = (row) => row.cells[row.cells.length - 1].textContent;
  const tables = [...document.querySelectorAll("table")];
  const rows = (first) => tables
    .filter(t => t.rows[0].cells[0].textContent == first && last(t.rows[0]) == "verdict")
    .flatMap(t => [...t.rows].slice(1).map(last));
  return { cells: rows("cell"), claims: rows("claim") };
})()"#;

#[test]
fn the_live_page_follows_a_lab_in_a_browser_and_becomes_its_report() {
    let _turn = STATEMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = LabDir::new("live-page");
    let spec = page_lab(&dir, "live-page", 3, "3s");
    let port = free_port();
    let mut lab = stampede_command(&[
        "lab",
        "run",
        spec.to_str().unwrap(),
        &format!("--serve={port}"),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let page = format!("http://127.0.0.1:{port}/");
    wait_until("the live page answers", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let shots = screenshots("live-page");
    let mut browser = common::browser::Browser::start();
    let tab = browser.open(&page);
    browser.wait_for(
        &tab,
        "a run in progress with a second on its chart",
        "document.querySelectorAll('#grid [data-status=running]').length == 1 && \
         document.querySelectorAll('#current svg circle').length >= 1",
    );
    browser.screenshot(&tab, &shots.join("running.png"));
    let finished = |browser: &mut common::browser::Browser| {
        browser
            .eval(
                &tab,
                "+document.querySelector('#summary [data-finished]').dataset.finished",
            )
            .as_u64()
            .unwrap()
    };
    let before = finished(&mut browser);
    assert_eq!(
        browser.eval(&tab, "document.querySelectorAll('#grid span.sq').length"),
        6
    );
    browser.wait_for(
        &tab,
        "more runs finished, told by the page's event stream",
        &format!(
            "+document.querySelector('#summary [data-finished]').dataset.finished > {before} \
             && +document.body.dataset.updates > 0"
        ),
    );
    browser.screenshot(&tab, &shots.join("later.png"));
    let status = lab.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(lab.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(
        err.contains(&format!("live page at http://127.0.0.1:{port}/")),
        "{err}"
    );
    browser.wait_for(
        &tab,
        "the page became the report",
        "document.title.startsWith('Lab \"live-page\" against')",
    );
    browser.screenshot(&tab, &shots.join("report.png"));
    eprintln!("screenshots in {}", shots.display());

    let report = stampede_command(&[
        "report",
        dir.join("live-page.db").to_str().unwrap(),
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let report: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let shown = browser.eval(&tab, PAGE_VERDICTS);
    let cells: Vec<&str> = report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["cells"].as_array().unwrap())
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(shown["cells"], serde_json::json!(cells), "{shown}");
    let claims = report["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 1);
    let claim_shown = shown["claims"][0].as_str().unwrap();
    assert!(
        claim_shown.starts_with(claims[0]["verdict"].as_str().unwrap()),
        "{claim_shown} against {}",
        claims[0]["verdict"]
    );
    let html = browser
        .eval(&tab, "document.documentElement.outerHTML")
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !html.contains(common::PASSWORD),
        "the page holds no password"
    );
}

#[test]
fn serve_shows_a_killed_labs_unfinished_run_which_no_verdict_uses() {
    let _turn = STATEMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = LabDir::new("live-killed");
    let spec = page_lab(&dir, "live-killed", 2, "30s");
    let db = dir.join("live-killed.db");
    let mut lab = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the first run has written three seconds", || {
        let migrated = || {
            sqlite(
                &db,
                "SELECT count(*) FROM sqlite_master WHERE name = 'live_series'",
            )[0][0]
                == "1"
        };
        db.exists()
            && migrated()
            && sqlite(&db, "SELECT count(*) FROM live_series")
                .first()
                .is_some_and(|row| row[0].parse::<u32>().unwrap_or(0) >= 3)
    });
    lab.kill().unwrap();
    lab.wait().unwrap();
    let live = sqlite(
        &db,
        "SELECT l.transactions, (SELECT sum(tps) FROM live_series s WHERE s.live_id = l.id), \
         (SELECT count(*) FROM runs) FROM live_runs l",
    );
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0][0], live[0][1], "the totals are the seconds' sum");
    assert_eq!(live[0][2], "0", "an unfinished run is no run");

    // Read-only: the page's session writes nothing (the file's bytes stay as they are).
    let before = std::fs::read(&db).unwrap();
    let port = free_port();
    let mut serve = stampede_command(&[
        "serve",
        db.to_str().unwrap(),
        "--addr",
        &format!("127.0.0.1:{port}"),
    ])
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let mut browser = common::browser::Browser::start();
    wait_until("serve answers", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let tab = browser.open(&format!("http://127.0.0.1:{port}/"));
    browser.wait_for(
        &tab,
        "the page is loaded",
        "!!document.getElementById('grid')",
    );
    browser.screenshot(&tab, &screenshots("live-killed").join("unfinished.png"));
    // Its lab was killed a moment ago: the row is recent, so it still reads as running until
    // its writes have stopped for a minute; either way it is neither completed nor in a verdict.
    let squares = browser.eval(
        &tab,
        "[...document.querySelectorAll('#grid span.sq')].map(s => s.dataset.status)",
    );
    let squares: Vec<&str> = squares
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(squares.len(), 4, "{squares:?}");
    assert_eq!(
        squares
            .iter()
            .filter(|s| **s == "running" || **s == "unfinished")
            .count(),
        1,
        "{squares:?}"
    );
    assert_eq!(squares.iter().filter(|s| **s == "planned").count(), 3);
    assert_eq!(
        browser.eval(&tab, "document.getElementById('ratios').textContent"),
        "No run has completed yet."
    );
    serve.kill().unwrap();
    serve.wait().unwrap();
    assert!(std::fs::read(&db).unwrap() == before, "serve wrote nothing");
    let compare = stampede_command(&["compare", db.to_str().unwrap(), "a", "b"])
        .output()
        .unwrap();
    assert_eq!(compare.status.code(), Some(1), "{}", stderr(&compare));
}

#[test]
fn a_page_beyond_loopback_needs_a_token_and_checks_it() {
    let dir = LabDir::new("live-token");
    let spec = page_lab(&dir, "live-token", 1, "1s");
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap(), "--serve=0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "stampede: error: --serve 0.0.0.0:0 listens beyond this machine: give --serve-token TOKEN (or \
         STAMPEDE_SERVE_TOKEN) so that only those who have it see the page\n"
    );
    assert!(
        !dir.join("live-token.db").exists(),
        "nothing ran, nothing written"
    );
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap(), "--serve=nowhere:x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("stampede: error: --serve "),
        "{}",
        stderr(&output)
    );
    assert!(!dir.join("live-token.db").exists());

    // A lab to serve: with a token, a request without it is refused and one with it served.
    let run = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let port = free_port();
    let mut serve = stampede_command(&[
        "serve",
        dir.join("live-token.db").to_str().unwrap(),
        "--addr",
        &port.to_string(),
        "--serve-token",
        "s3cret",
    ])
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    wait_until("serve answers", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let address = format!("127.0.0.1:{port}");
    let get = |path: &str| common::scrape::get(&address, path).unwrap();
    assert!(get("/").starts_with("HTTP/1.1 401"));
    let page = get("/?token=s3cret");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("<title>Lab &quot;live-token&quot; against a</title>"),
        "{page}"
    );
    assert!(!page.contains("s3cret") && !page.contains(common::PASSWORD));
    serve.kill().unwrap();
    serve.wait().unwrap();
}
