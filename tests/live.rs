//! What stampede shows while it runs, read by the real consumers: a Prometheus of the test's
//! own (Debian's package) scraping `--metrics-addr` every second, and the Grafana dashboard in
//! the repository checked against what that Prometheus holds.

mod common;

use common::prometheus::Scraper;
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
