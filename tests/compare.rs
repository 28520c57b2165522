//! `stampede compare`, `history` and `gate` on results databases with known answers (no
//! server), and their bad input.

mod common;

use std::path::Path;

use common::{stampede, stderr, stdout, TempFile};
use stampede_store::{
    CellRecord, CounterRow, Location, Machine, RunMetrics, RunRecord, RunStatus, SeriesRow,
    StatementRow, Store, TargetRecord,
};

fn temp_path(name: &str) -> TempFile {
    // The name ends the path: browsers read the type of a file from its extension.
    TempFile::new(&format!("compare-{name}"))
}

fn cell(target: &str, clients: usize) -> CellRecord {
    CellRecord {
        key: format!("{target}/pgbench/select-only/1/{clients}"),
        target: target.into(),
        workload: "pgbench".into(),
        script: "select-only".into(),
        scale: "1".into(),
        clients,
        family: "read".into(),
    }
}

fn run(cell: &CellRecord, repetition: u32, status: RunStatus, tps: f64) -> RunRecord {
    RunRecord {
        cell_key: cell.key.clone(),
        repetition,
        position: repetition as usize,
        status,
        error: None,
        started_unix_s: 0.0,
        ended_unix_s: 1.0,
        resolved_scale: Some(1),
        overhead_s: 0.0,
        metrics: (status == RunStatus::Completed).then(|| RunMetrics {
            tps,
            p50_ms: 250.0 / tps,
            p95_ms: 500.0 / tps,
            p99_ms: 1000.0 / tps,
            // With 2 client cores: 72% of them at 400 tps, 54% at 300.
            client_cpu_us_per_txn: 3600.0,
            transactions: (tps * 5.0) as u64,
            ..RunMetrics::default()
        }),
        // Five seconds around the median, a checkpoint completing in second 2.
        series: (0..5)
            .map(|second| SeriesRow {
                second,
                tps: tps + second as f64 - 2.0,
                p50_ms: 0.0,
                p99_ms: 0.0,
                failed: 0,
            })
            .collect(),
        counters: server_cpu(&cell.target, repetition, (tps * 5.0) as u64),
        statements: vec![],
        counter_series: [("checkpoints", 1.0), ("buffers_written", 640.0)]
            .map(|(name, value)| {
                (
                    2,
                    CounterRow {
                        source: "checkpointer".into(),
                        name: name.into(),
                        value,
                    },
                )
            })
            .to_vec(),
        wait_events: vec![],
        pods: vec![],
        settings: None,
        machine_id: None,
        shard: None,
    }
}

/// Target "a" and "b": at 1 client b is 20% faster (5 rounds; its third run stalled for a
/// second), at 2 clients they are the same, at 4 clients each has 3 runs in rounds that do not pair up (b's in rounds 3–5: the
/// unpaired analysis), and one run of b failed.
/// The server's CPU per transaction of a synthetic run, in µs: 100 on "a", 80 on "b", each
/// round a little more (a per-mille on a, two on b).
fn server_us_per_txn(target: &str, round: u32) -> f64 {
    match target {
        "a" => 100.0 * (1.0 + 0.001 * f64::from(round)),
        _ => 80.0 * (1.0 + 0.002 * f64::from(round)),
    }
}

/// The `server` probe's counters of such a run: its CPU, 3/4 user and 1/4 system.
fn server_cpu(target: &str, round: u32, transactions: u64) -> Vec<CounterRow> {
    let seconds = server_us_per_txn(target, round) * transactions as f64 / 1e6;
    [
        ("cpu_user_s", seconds * 0.75),
        ("cpu_system_s", seconds * 0.25),
    ]
    .map(|(name, value)| CounterRow {
        source: "server".into(),
        name: name.into(),
        value,
    })
    .to_vec()
}

fn synthetic(path: &Path) {
    let mut store = Store::open(&Location::Sqlite(path.to_path_buf())).unwrap();
    let (lab, _) = store.lab("synthetic", "spec", 1).unwrap();
    let cells: Vec<CellRecord> = ["a", "b"]
        .iter()
        .flat_map(|t| [1, 2, 4].map(|c| cell(t, c)))
        .collect();
    store.save_cells(lab, &cells).unwrap();
    store.record_client_cores(lab, 2).unwrap();
    for (name, binary_source) in [("a", "system packages"), ("b", "zonky (Maven Central)")] {
        let target = TargetRecord {
            name: name.into(),
            binary_source: binary_source.into(),
            ..TargetRecord::default()
        };
        store.save_target(lab, &target).unwrap();
    }
    let data: [(&str, usize, &[f64]); 6] = [
        ("a", 1, &[100.0, 101.0, 99.0, 100.5, 102.0]),
        ("b", 1, &[120.0, 121.0, 119.0, 122.0, 120.5]),
        ("a", 2, &[200.0, 202.0, 198.0, 200.0, 201.0]),
        ("b", 2, &[200.4, 201.6, 198.2, 199.8, 200.8]),
        ("a", 4, &[300.0, 301.0, 299.0]),
        ("b", 4, &[400.0, 401.0, 399.0]),
    ];
    for (target, clients, values) in data {
        let c = cell(target, clients);
        let first_round = if (target, clients) == ("b", 4) { 3 } else { 0 };
        for (i, tps) in values.iter().enumerate() {
            let round = first_round + i as u32;
            let mut record = run(&c, round, RunStatus::Completed, *tps);
            if (target, clients, round) == ("b", 1, 2) {
                // A second without a transaction: the Noise section flags the run.
                record.series[3].tps = 0.0;
            }
            store.record_run(lab, &record).unwrap();
        }
    }
    store
        .record_run(lab, &run(&cell("b", 1), 9, RunStatus::Failed, 0.0))
        .unwrap();
}

#[test]
fn verdicts_on_known_answers() {
    let db = temp_path("known.db");
    synthetic(&db);
    let output = stampede(&["compare", db.to_str().unwrap(), "a", "b"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let line = |clients: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(3) == Some(clients))
            .unwrap_or_else(|| panic!("no row for {clients} clients: {text}"))
            .to_string()
    };
    // The first lines say what was decided, before the table.
    assert!(
        text.starts_with("b against a on pgbench: tps 1.20× on select-only scale 1 × 1 clients (±1.2%, 5 rounds); no detectable difference on 1 other cell; 1 cell undecided (need ≥ 4 runs).\n"),
        "{text}"
    );
    let one = line("1");
    assert!(one.contains("5 pairs"), "{one}");
    assert!(one.contains("100.5") && one.contains("120.5"), "{one}");
    // The geometric mean of the rounds' ratios, with the paired t interval (scipy:
    // exp(mean ± t(0.975, 4) · sd / √5) of the log ratios = 1.1846–1.2136).
    let ratios = [
        120.0 / 100.0,
        121.0 / 101.0,
        119.0 / 99.0,
        122.0 / 100.5,
        120.5 / 102.0,
    ];
    let geometric_mean = (ratios.iter().map(|r: &f64| r.ln()).sum::<f64>() / 5.0).exp();
    assert!(one.contains(&format!("{geometric_mean:.3}")), "{one}");
    assert!(one.contains("1.185–1.214"), "{one}");
    assert!(one.ends_with("faster"), "{one}");
    assert!(line("2").contains("0.998–1.002"), "{}", line("2"));
    assert!(line("4").contains(" 3/3 "), "{}", line("4"));
    assert!(
        line("2").ends_with("no detectable difference"),
        "{}",
        line("2")
    );
    assert!(line("4").ends_with("need ≥ 4 runs"), "{}", line("4"));
    assert!(text.contains("warning: 1 run(s) of \"b\" failed"), "{text}");
    assert!(
        text.contains("1 faster, 1 need ≥ 4 runs, 1 no detectable difference"),
        "{text}"
    );

    // Every per-run number compares with its paired interval: the server's CPU per
    // transaction, from its counters, is 0.8× at each cell (b's own rounds a little dearer).
    let output = stampede(&[
        "compare",
        db.to_str().unwrap(),
        "a",
        "b",
        "--metric",
        "server_cpu",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let two = text
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some("2"))
        .unwrap_or_else(|| panic!("{text}"));
    let rounds: Vec<f64> = (0..5)
        .map(|round| (server_us_per_txn("b", round) / server_us_per_txn("a", round)).ln())
        .collect();
    let expected = (rounds.iter().sum::<f64>() / 5.0).exp();
    assert!(two.contains(&format!("{expected:.3}")), "{two}");
    assert!(two.contains("5 pairs") && two.ends_with("faster"), "{two}");
    // p50 and p95 are 250 and 500 ms over tps: their ratios are tps's inverted.
    for metric in ["p50", "p95", "client_cpu"] {
        let output = stampede(&[
            "compare",
            db.to_str().unwrap(),
            "a",
            "b",
            "--metric",
            metric,
        ]);
        assert!(output.status.success(), "{metric}: {}", stderr(&output));
    }
    let output = stampede(&["compare", db.to_str().unwrap(), "a", "b", "--metric", "p50"]);
    let one = stdout(&output)
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some("1"))
        .map(str::to_string)
        .unwrap();
    let inverse = 1.0 / geometric_mean;
    assert!(one.contains(&format!("{inverse:.3}")), "{one}");
    let output = stampede(&[
        "compare",
        db.to_str().unwrap(),
        "a",
        "b",
        "--metric",
        "iops",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("use tps, p50, p95, p99, client_cpu, server_cpu, qps, nopm"),
        "{}",
        stderr(&output)
    );

    // Latency: b's p99 is lower at 1 client, which is better.
    let output = stampede(&["compare", db.to_str().unwrap(), "a", "b", "--metric", "p99"]);
    let text = stdout(&output);
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().nth(3) == Some("1") && l.ends_with("faster")),
        "{text}"
    );
}

/// A statement's mean time per call in a synthetic run: 1 ms on "a", 1.5 ms on "b", each
/// round a little longer (1% on a, 2% on b).
fn update_ms(target: &str, round: u32) -> f64 {
    match target {
        "a" => 1.0 * (1.0 + 0.01 * f64::from(round)),
        _ => 1.5 * (1.0 + 0.02 * f64::from(round)),
    }
}

fn statement(query: &str, calls: i64, mean_ms: f64) -> StatementRow {
    StatementRow {
        query: query.into(),
        calls,
        mean_ms: Some(mean_ms),
        stddev_ms: Some(mean_ms / 10.0),
        rows: Some(calls),
        shared_blks_hit: None,
        shared_blks_read: None,
    }
}

#[test]
fn a_statements_mean_time_compares_with_its_paired_interval() {
    let db = temp_path("statements.db");
    let mut store = Store::open(&Location::Sqlite(db.to_path_buf())).unwrap();
    let (lab, _) = store.lab("statements", "spec", 1).unwrap();
    store
        .save_cells(lab, &[cell("a", 1), cell("b", 1)])
        .unwrap();
    for target in ["a", "b"] {
        let record = TargetRecord {
            name: target.into(),
            ..TargetRecord::default()
        };
        store.save_target(lab, &record).unwrap();
        for round in 0..5 {
            let mut record = run(&cell(target, 1), round, RunStatus::Completed, 100.0);
            record.statements = vec![
                statement("UPDATE t SET x = $1", 100, update_ms(target, round)),
                // Two calls a run: too rare to compare.
                statement("SELECT now()", 2, 0.01),
            ];
            store.record_run(lab, &record).unwrap();
        }
    }
    drop(store);
    let output = stampede(&["report", db.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let of = |target: &str, query: &str| {
        report["statements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["target"] == target && s["query"] == query)
            .unwrap_or_else(|| panic!("{target} {query}: {report}"))
            .clone()
    };
    // The geometric mean of the rounds' ratios, computed here from the stored means.
    let logs: Vec<f64> = (0..5)
        .map(|round| (update_ms("b", round) / update_ms("a", round)).ln())
        .collect();
    let expected = (logs.iter().sum::<f64>() / 5.0).exp();
    let update = of("b", "UPDATE t SET x = $1");
    let ratio = update["ratio"].as_f64().unwrap();
    assert!((ratio / expected - 1.0).abs() < 1e-9, "{update}");
    let (low, high) = (
        update["ci_low"].as_f64().unwrap(),
        update["ci_high"].as_f64().unwrap(),
    );
    assert!(low < expected && expected < high && high < 1.6, "{update}");
    assert_eq!(update["verdict"], "slower");
    assert_eq!(update["calls_per_run"], 100.0);
    let rare = of("b", "SELECT now()");
    assert!(rare["ratio"].is_null(), "{rare}");
    assert!(
        of("a", "UPDATE t SET x = $1")["ratio"].is_null(),
        "the base has no ratio"
    );
    let output = stampede(&["report", db.to_str().unwrap(), "--format", "md"]);
    let markdown = stdout(&output);
    assert!(
        markdown.contains("too rare (2 calls per run)"),
        "{markdown}"
    );
    assert!(
        markdown.contains(&format!("{expected:.3} [{low:.3}–{high:.3}] slower")),
        "{markdown}"
    );
}

#[test]
fn bad_results_and_targets_are_refused() {
    let missing = temp_path("missing.db");
    let output = stampede(&["compare", missing.to_str().unwrap(), "a", "b"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        format!(
            "stampede: error: results database {} does not exist",
            missing.display()
        )
    );
    assert!(!missing.exists(), "compare created the file");

    let garbage = temp_path("garbage.db");
    std::fs::write(&garbage, "not a database at all, just text\n".repeat(200)).unwrap();
    let output = stampede(&["compare", garbage.to_str().unwrap(), "a", "b"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("is not a stampede results database"),
        "{}",
        stderr(&output)
    );

    let known = temp_path("targets.db");
    synthetic(&known);
    let output = stampede(&["compare", known.to_str().unwrap(), "a", "c"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: unknown target \"c\"; lab \"synthetic\" has: a, b"
    );

    // A database written by a newer stampede.
    let conn = rusqlite::Connection::open(&known).unwrap();
    conn.execute("INSERT INTO schema_version VALUES (99)", [])
        .unwrap();
    drop(conn);
    let output = stampede(&["compare", known.to_str().unwrap(), "a", "b"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("has schema version 99, newer than this stampede knows"),
        "{}",
        stderr(&output)
    );
}

/// `report` in its three formats: the same verdicts and numbers in each.
#[test]
fn report_formats_carry_the_same_numbers() {
    let db = temp_path("report.db");
    synthetic(&db);
    let report = |format: &str| {
        let output = stampede(&[
            "report",
            db.to_str().unwrap(),
            "--base",
            "a",
            "--format",
            format,
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let cells = json["comparisons"][0]["cells"].as_array().unwrap();
    assert_eq!(json["comparisons"][0]["target"], "b");
    assert_eq!(cells.len(), 3);
    let one = &cells[0];
    assert_eq!(one["cell"]["clients"], 1);
    assert_eq!(one["verdict"], "faster");
    let ratio = one["ratio"].as_f64().unwrap();
    assert!((ratio - 1.1990230462436626).abs() < 1e-12, "{ratio}");
    assert_eq!(one["pairs"], 5);
    assert_eq!(cells[2]["pairs"], serde_json::Value::Null);
    assert_eq!(
        json["headline"][0],
        "b against a on pgbench: tps 1.20× on select-only scale 1 × 1 clients (±1.2%, 5 rounds); no detectable difference on 1 other cell; 1 cell undecided (need ≥ 4 runs)."
    );
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "\"b\" runs zonky's binaries from Maven Central and \"a\" runs system packages: the builds differ in compiler flags and configure options, so part of a difference may be the build's, not the version's",
            "1 run(s) of \"b\" failed and are left out",
            "the driver used more than 70% of the client's 2 cores in 1 cell(s), up to 72% (\"b\" pgbench select-only scale 1 × 4 clients): the client may be the bottleneck",
            "1 cell(s) of \"b\" vs \"a\" have too few runs for a verdict: need ≥ 4 per side",
        ]
    );
    // Noise: the paired ratios' spread (the sd of the rounds' log ratios), a drift chart per
    // cell, and the run with a stalled second flagged with its causes, but not left out.
    let noise = &json["noise"];
    let logs: Vec<f64> = [
        120.0 / 100.0,
        121.0 / 101.0,
        119.0 / 99.0,
        122.0 / 100.5,
        120.5 / 102.0,
    ]
    .iter()
    .map(|r: &f64| r.ln())
    .collect();
    let mean = logs.iter().sum::<f64>() / 5.0;
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    let spread = noise["cells"][0]["paired_ratio_sd_pct"].as_f64().unwrap();
    assert!((spread - (sd.exp() - 1.0) * 100.0).abs() < 1e-9, "{spread}");
    assert_eq!(
        noise["cells"][2]["paired_ratio_sd_pct"],
        serde_json::Value::Null
    );
    // Each side's runs' coefficient of variation (sample sd / mean), a's at 1 client.
    let a: [f64; 5] = [100.0, 101.0, 99.0, 100.5, 102.0];
    let a_mean = a.iter().sum::<f64>() / 5.0;
    let a_sd = (a.iter().map(|v| (v - a_mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    let base_cv = noise["cells"][0]["base_cv_pct"].as_f64().unwrap();
    assert!((base_cv - a_sd / a_mean * 100.0).abs() < 1e-9, "{base_cv}");
    assert_eq!(noise["drift"].as_array().unwrap().len(), 3);
    let four = &noise["drift"][2];
    assert_eq!(four["rounds"], serde_json::json!([0, 1, 2, 3, 4, 5]));
    assert_eq!(four["lines"][0]["values"][3], serde_json::Value::Null);
    assert_eq!(four["lines"][1]["values"][3], 400.0);
    let flagged = noise["flagged"].as_array().unwrap();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(flagged[0]["target"], "b");
    assert_eq!(flagged[0]["round"], 2);
    assert_eq!(
        flagged[0]["causes"],
        serde_json::json!([
            "a stall: 1 second(s) without a transaction (second 3)",
            "a checkpoint completed inside the window (second 2)"
        ])
    );
    assert_eq!(one["pairs"], 5, "a flagged run stays in the analysis");

    // Relative throughput by family: the three ratios of b's cells.
    let family = &json["families"][0];
    assert_eq!(family["family"], "read");
    assert_eq!(family["cells"], 3);
    let ratios: Vec<f64> = cells.iter().map(|c| c["ratio"].as_f64().unwrap()).collect();
    let mean = ratios.iter().sum::<f64>() / 3.0;
    assert!((family["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    // The group's paired ratio needs rounds in which every cell ran on both targets; the
    // 4-client cell's runs do not pair up, so the group has none (and says so with nulls).
    assert_eq!(family["rounds"], 0, "{family}");
    assert!(family["ratio"].is_null(), "{family}");
    assert_eq!(
        family["max"].as_f64().unwrap(),
        ratios.iter().cloned().fold(0.0, f64::max)
    );
    // Latency: medians of the runs' percentiles (a at 1 client: median tps 100.5).
    let latency = &json["latency"][0];
    assert_eq!(latency["target"], "a");
    assert_eq!(latency["p99_ms"].as_f64().unwrap(), 1000.0 / 100.5);
    assert_eq!(latency["p50_ms"].as_f64().unwrap(), 250.0 / 100.5);
    // Series: each target's median run in the base's 4-client cell, with its checkpoint.
    let series = json["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!(series[0]["cell"]["clients"], 4);
    assert_eq!(series[0]["tps"][2][1].as_f64().unwrap(), 300.0);
    assert_eq!(series[1]["tps"][2][1].as_f64().unwrap(), 400.0);
    assert_eq!(series[0]["checkpoints"][0]["second"], 2);
    assert_eq!(series[0]["checkpoints"][0]["buffers_written"], 640.0);
    let share = json["efficiency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["target"] == "b" && e["cell"]["clients"] == 4)
        .unwrap()["client_cpu_share"]
        .as_f64()
        .unwrap();
    assert!((share - 3600.0 * 400.0 / 1e6 / 2.0).abs() < 1e-12);

    let markdown = report("md");
    assert!(
        markdown.contains("## Noise\n") && markdown.contains("- **Flagged:** run "),
        "{markdown}"
    );
    assert!(
        markdown.starts_with(
            "# Lab \"synthetic\": against a (tps)\n\n**b against a on pgbench: tps 1.20×"
        ),
        "{markdown}"
    );
    assert!(
        markdown.contains("> **Warning:** 1 run(s) of \"b\" failed"),
        "{markdown}"
    );
    let row = markdown
        .lines()
        .find(|l| l.starts_with("| pgbench select-only scale 1 × 1 clients"))
        .unwrap();
    assert!(
        row.contains(&format!("| {ratio:.3} |")) && row.ends_with("| faster |"),
        "{row}"
    );

    let csv = report("csv");
    let value = |measure: &str| {
        csv.lines()
            .find(|l| {
                l.starts_with("comparison,b,pgbench,select-only,1,1,tps,")
                    && l.contains(&format!(",{measure},"))
            })
            .unwrap_or_else(|| panic!("{measure}: {csv}"))
            .rsplit(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(value("ratio").parse::<f64>().unwrap(), ratio);
    assert_eq!(value("verdict"), "faster");
    assert_eq!(value("base_runs"), "5");
    assert_eq!(
        value("ci_low").parse::<f64>().unwrap(),
        one["ci_low"].as_f64().unwrap()
    );

    // HTML: one file, contents linked to sections, a chart line per target, the same numbers.
    let html = report("html");
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let headline = html
        .find(r#"<p class="headline">b against a on pgbench: tps 1.20×"#)
        .expect("a headline");
    assert!(headline < html.find(r#"<div class="warning">"#).unwrap());
    assert!(html.contains(r##"<a href="#vs-b">b vs a</a>"##) && html.contains(r#"<h2 id="vs-b">"#));
    assert!(html.contains(r#"<div class="warning">Warning: 1 run(s) of &quot;b&quot; failed"#));
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    let section = |id: &str| {
        let start = html.find(&format!(r#"<h2 id="{id}">"#)).unwrap();
        let end = html[start + 4..]
            .find("<h2 ")
            .map_or(html.len(), |e| start + 4 + e);
        html[start..end].to_string()
    };
    assert_eq!(
        section("scaling")
            .matches(r#"<polyline class="series""#)
            .count(),
        2,
        "one line per target"
    );
    assert_eq!(
        section("latency")
            .matches(r#"<polyline class="series""#)
            .count(),
        6,
        "p50, p95, p99 per target"
    );
    assert_eq!(
        section("noise")
            .matches(r#"<polyline class="series""#)
            .count(),
        6,
        "a drift line per target in each of the 3 cells"
    );
    assert!(section("noise").contains("a stall: 1 second(s) without a transaction"));
    // The flagged run is ringed on its cell's drift chart, with its causes as the tooltip.
    assert_eq!(
        section("noise")
            .matches(r#"<circle class="marked""#)
            .count(),
        1
    );
    assert!(section("noise").contains("<title>flagged: run "));
    let series_html = section("series");
    assert_eq!(series_html.matches(r#"<line class="mark""#).count(), 2);
    assert!(series_html.contains("second 2: 1 checkpoint(s) completed, 640 buffers written"));
    assert!(section("families").contains(&format!("<td>{:.3}</td>", mean)));
    assert!(section("latency").contains(&format!("<td>{:.3}</td>", 1000.0 / 100.5)));
    assert!(
        !html.contains("<script") && !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    for c in cells {
        let ratio = format!("<td>{:.3}</td>", c["ratio"].as_f64().unwrap());
        assert!(html.contains(&ratio), "{ratio} missing");
        assert!(html.contains(&format!(
            "<title>pgbench select-only scale 1 × {} clients {:.3}</title>",
            c["cell"]["clients"],
            c["ratio"].as_f64().unwrap()
        )));
    }

    // Bad input: an unknown format, and writing to a file.
    let output = stampede(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "a",
        "--format",
        "pdf",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: unknown format \"pdf\"; use html, md, csv or json"
    );
    let output = stampede(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "a",
        "--series-run",
        "999999",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: lab \"synthetic\" has no completed run 999999"
    );
    let file = temp_path("report.md");
    let output = stampede(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "a",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(output.status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), markdown);
    // The format follows the file's extension; without --base the lab's first target is the base.
    let html_file = temp_path("by-extension.html");
    let output = stampede(&[
        "report",
        db.to_str().unwrap(),
        "-o",
        html_file.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&html_file).unwrap(), html);
}

/// `--exclude-run`: the run is left out of the analysis (its partner then stands unpaired and
/// is dropped from the pairs), both commands say so, and an unknown run id is refused.
#[test]
fn an_excluded_run_leaves_the_analysis_and_is_listed() {
    let db = temp_path("exclude.db");
    synthetic(&db);
    let json = |extra: &[&str]| {
        let mut args = vec!["report", db.to_str().unwrap(), "--format", "json"];
        args.extend(extra);
        let output = stampede(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str::<serde_json::Value>(&stdout(&output)).unwrap()
    };
    let flagged = json(&[])["noise"]["flagged"][0]["run_id"]
        .as_i64()
        .unwrap()
        .to_string();
    let report = json(&["--exclude-run", &flagged]);
    let one = &report["comparisons"][0]["cells"][0];
    assert_eq!(one["pairs"], 4);
    assert_eq!(one["other_runs"], 4);
    assert_eq!(
        report["noise"]["excluded"][0]["run_id"].to_string(),
        flagged
    );
    assert_eq!(report["noise"]["flagged"], serde_json::json!([]));
    let warning = format!(
        "run {flagged} (\"b\" pgbench select-only scale 1 × 1 clients, round 3) excluded from the analysis by --exclude-run; its round's other runs stay, unpaired"
    );
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| *w == *warning),
        "{}",
        report["warnings"]
    );
    let output = stampede(&[
        "compare",
        db.to_str().unwrap(),
        "a",
        "b",
        "--exclude-run",
        &flagged,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains(&format!("warning: {warning}")), "{text}");
    assert!(text.contains("4 pairs"), "{text}");

    let output = stampede(&[
        "compare",
        db.to_str().unwrap(),
        "a",
        "b",
        "--exclude-run",
        "999999",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: --exclude-run 999999: lab \"synthetic\" has no run 999999"
    );
    assert!(stdout(&output).is_empty());
}

/// The HTML report in a real browser: it renders with no console errors, every chart has a
/// size, every line has a length, and every contents link lands on a section.
#[test]
fn html_report_renders_in_headless_chromium() {
    let db = temp_path("chromium.db");
    synthetic(&db);
    let html_path = temp_path("report.html");
    let output = stampede(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "a",
        "--format",
        "html",
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = std::fs::read_to_string(&html_path).unwrap();
    common::browser::assert_renders(&html_path, &html);
}

fn machine(host: &str, kernel: &str) -> Machine {
    Machine {
        host: host.into(),
        cores: 2,
        cpu_model: "Test CPU".into(),
        kernel: kernel.into(),
        memory_bytes: 8 << 30,
        cpu_limit: None,
    }
}

/// One invocation of `spec` (its text `text`) on machine `host`, tagged night=`night`: its
/// cells, each with `rounds` completed runs of `tps(cell, round)`.
struct Night<'a> {
    spec: &'a str,
    text: &'a str,
    host: &'a str,
    kernel: &'a str,
    night: usize,
    cells: &'a [CellRecord],
    rounds: u32,
}

fn record_night(store: &mut Store, night: &Night<'_>, tps: impl Fn(usize, u32) -> f64) {
    let (lab, _) = store.next_invocation(night.spec, night.text, 1).unwrap();
    let tags = [("night".to_string(), night.night.to_string())];
    store
        .describe_invocation(lab, night.spec, &machine(night.host, night.kernel), &tags)
        .unwrap();
    store.save_cells(lab, night.cells).unwrap();
    for round in 0..night.rounds {
        for (index, c) in night.cells.iter().enumerate() {
            store
                .record_run(lab, &run(c, round, RunStatus::Completed, tps(index, round)))
                .unwrap();
        }
    }
    store.end_lab(lab).unwrap();
}

/// Invocations of spec "nightly": on machine "one", 12 nights of 5 runs whose select-only cell
/// at 1 client falls 10% from night 9 on, with a new kernel (tight runs: ±0.5%, nights ±1%);
/// on machine "two" two
/// nights 3× faster (which must never join machine one's series); the last night on "one" with
/// 2 runs only (undecided for a gate).
fn synthetic_history(path: &Path) {
    let mut store = Store::open(&Location::Sqlite(path.to_path_buf())).unwrap();
    let wobble = [
        1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.008, 0.992, 1.0, 1.01, 0.99, 1.0,
    ];
    let mut nights: Vec<(String, usize, f64, u32)> = (0..12)
        .map(|night| {
            let level = if night >= 8 { 90.0 } else { 100.0 } * wobble[night];
            ("one".to_string(), night + 1, level, 5)
        })
        .collect();
    nights.insert(3, ("two".into(), 101, 300.0, 5));
    nights.insert(6, ("two".into(), 102, 301.0, 5));
    nights.push(("one".into(), 13, 90.0, 2));
    for (host, night, level, runs) in nights {
        // The kernel upgraded with the fall: still one series, and the change says so.
        let kernel = if (9..100).contains(&night) {
            "6.2"
        } else {
            "6.1"
        };
        let night = Night {
            spec: "nightly",
            text: "spec",
            host: &host,
            kernel,
            night,
            cells: &[cell("pg", 1)],
            rounds: runs,
        };
        record_night(&mut store, &night, |_, round| {
            level * [1.0, 1.005, 0.995, 1.002, 0.998][round as usize]
        });
    }
}

#[test]
fn history_keeps_machines_apart_and_finds_the_step() {
    let db = temp_path("history.db");
    synthetic_history(&db);
    let html_path = temp_path("history.html");
    let output = stampede(&[
        "history",
        db.to_str().unwrap(),
        "--html",
        html_path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[0].starts_with("History \"nightly\" on one, 2 × Test CPU: 13 invocations, "),
        "{text}"
    );
    assert_eq!(
        lines[1],
        "  pg/pgbench/select-only/1/1: 13 points, latest 90.22 tps; 1 change"
    );
    assert!(
        lines[2].starts_with("    regression at \"nightly #11\" (night=9): 0.9")
            && lines[2].ends_with(", after \"nightly #10\" (night=8); kernel 6.1 → 6.2"),
        "{text}"
    );
    // The ratio: the geometric mean of the nights' medians after the fall over those before,
    // from the synthetic levels (night 13's two runs: median 1.0025).
    let wobble = [
        1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.008, 0.992, 1.0, 1.01, 0.99, 1.0,
    ];
    let geometric =
        |values: &[f64]| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp();
    let before: Vec<f64> = wobble[..8].iter().map(|w| 100.0 * w).collect();
    let mut after: Vec<f64> = wobble[8..].iter().map(|w| 90.0 * w).collect();
    after.push(90.0 * 1.0025);
    let ratio = geometric(&after) / geometric(&before);
    assert!(
        lines[2].contains(&format!(": {ratio:.3}× [")),
        "{ratio} in {text}"
    );
    assert!(
        lines[3].starts_with("History \"nightly\" on two, 2 × Test CPU: 2 invocations, "),
        "{text}"
    );
    assert_eq!(
        lines[4],
        "  pg/pgbench/select-only/1/1: 2 points, latest 301.0 tps; no change"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    assert_eq!(html.matches(r#"class="change""#).count(), 1);
    common::browser::assert_renders(&html_path, &html);
}

#[test]
fn gate_decides_against_the_previous_night_or_a_tag_and_says_why_not() {
    let db = temp_path("gate.db");
    synthetic_history(&db);
    let db = db.to_str().unwrap();
    let gate = |args: &[&str]| {
        let mut all = vec!["gate", db];
        all.extend_from_slice(args);
        stampede(&all)
    };
    // Night 9 against night 8 on machine one: 10% slower, decided beyond 2%.
    let regression = gate(&["--lab-run", "night=9", "--threshold", "2%"]);
    assert_eq!(regression.status.code(), Some(3), "{}", stderr(&regression));
    assert!(
        stdout(&regression).contains("against \"nightly #10\" (night=8)"),
        "{}",
        stdout(&regression)
    );
    // Night 8 against night 7: the same level within 2%.
    let pass = gate(&["--lab-run", "night=8", "--against", "night=7"]);
    assert_eq!(
        pass.status.code(),
        Some(0),
        "{}{}",
        stdout(&pass),
        stderr(&pass)
    );
    // The latest night has two runs: undecided, whatever the ratio.
    let undecided = gate(&[]);
    assert_eq!(undecided.status.code(), Some(4), "{}", stderr(&undecided));
    assert!(
        stdout(&undecided).contains("| 2 | undecided: 2 rounds measured by both, 3 needed |"),
        "{}",
        stdout(&undecided)
    );
    assert_eq!(
        stderr(&undecided).trim(),
        "stampede: error: undecided at 2%: 1 of 1 cells undecided; more runs decide it"
    );
}

/// Invocations of spec "controlled" (`control = "ref"`): night 1 at 100 tps for both targets;
/// night 2 on a machine 30% slower for both (a neighbour started); night 3 the same slow
/// machine with the candidate 10% below the control. Each round wobbles alike for both.
fn controlled_history(path: &Path) {
    let mut store = Store::open(&Location::Sqlite(path.to_path_buf())).unwrap();
    let spec = "name = \"controlled\"\ncontrol = \"ref\"\nduration = \"1s\"\n\
        [[target]]\nname = \"candidate\"\n[[target]]\nname = \"ref\"\n\
        [[claim]]\nsays = \"the candidate keeps up with the release\"\nbase = \"ref\"\n\
        target = \"candidate\"\nworkload = \"pgbench\"\nexpect = \"within 3%\"\n";
    let cells = [cell("candidate", 1), cell("ref", 1)];
    for (night, machine_level, candidate_share) in [(1, 100.0, 1.0), (2, 70.0, 1.0), (3, 70.0, 0.9)]
    {
        let night = Night {
            spec: "controlled",
            text: spec,
            host: "one",
            kernel: "6.1",
            night,
            cells: &cells,
            rounds: 5,
        };
        record_night(&mut store, &night, |index, round| {
            let round_level = machine_level * [1.0, 1.04, 0.97, 1.02, 0.98][round as usize];
            // Each target's own noise: ±0.5%.
            let own = [1.0, 1.005, 0.995, 1.003, 0.997];
            match index {
                0 => round_level * candidate_share * own[round as usize],
                _ => round_level * own[4 - round as usize],
            }
        });
    }
}

#[test]
fn a_control_target_cancels_the_machine_between_invocations() {
    let db = temp_path("control.db");
    controlled_history(&db);
    let db = db.to_str().unwrap();
    let gate = |args: &[&str]| {
        let mut all = vec!["gate", db, "--threshold", "2%"];
        all.extend_from_slice(args);
        stampede(&all)
    };
    // Night 2 against night 1: the machine slowed by 30%, raw tps says regression...
    let raw = gate(&["--lab-run", "night=2", "--control", "none"]);
    assert_eq!(raw.status.code(), Some(3), "{}", stdout(&raw));
    // ...and over the control (the spec's) the candidate is where it was.
    let controlled = gate(&["--lab-run", "night=2"]);
    let text = stdout(&controlled);
    assert_eq!(
        controlled.status.code(),
        Some(0),
        "{text}{}",
        stderr(&controlled)
    );
    assert!(
        text.contains("tps / ref") && text.contains("over the control target \"ref\"'s"),
        "{text}"
    );
    assert!(
        !text.contains("| ref/"),
        "the control is not gated itself: {text}"
    );
    // Night 3: the candidate lost 10% against the control: a regression over it too, with the
    // ratio of the rounds' (candidate / ref) ratios between the nights.
    let regression = gate(&[]);
    assert_eq!(regression.status.code(), Some(3), "{}", stdout(&regression));
    // Per round, (0.9 · own_r / own_(4-r)) / (own_r / own_(4-r)) = 0.9: the machine and the
    // targets' own noise cancel, the change remains.
    assert!(
        stdout(&regression)
            .contains("| 1.000 | 0.9000 | 0.900× | [0.900, 0.900] | 5 | **regression** |"),
        "{}",
        stdout(&regression)
    );
    // History says it compares over the control; a control that ran nowhere is refused.
    let history = stampede(&["history", db]);
    assert!(history.status.success(), "{}", stderr(&history));
    let history = stdout(&history);
    assert!(history.starts_with("Each target's tps is taken over the control target \"ref\"'s"));
    // The spec's claim in each invocation: the candidate within 3% of the release, until
    // night 3 (0.9×: the targets' own noise, own_r / own_(4-r), multiplies to 1 over the rounds).
    let claims = history
        .lines()
        .find(|l| l.starts_with("  \"the candidate keeps up with the release\""))
        .unwrap_or_else(|| panic!("{history}"));
    assert!(
        claims.contains("\"controlled\" reproduced")
            && claims.contains("\"controlled #2\" reproduced")
            && claims.contains("\"controlled #3\" contradicted 0.900 ["),
        "{claims}"
    );
    let unknown = gate(&["--control", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown).trim(),
        "stampede: error: control target \"nope\" has no runs here; the targets are candidate, ref"
    );
}

#[test]
fn history_and_gate_refuse_bad_input_with_exit_1() {
    let db = temp_path("gate-bad.db");
    synthetic_history(&db);
    let db = db.to_str().unwrap();
    let empty = temp_path("empty.db");
    Store::open(&Location::Sqlite(empty.to_path_buf())).unwrap();
    let empty = empty.to_str().unwrap();
    let cases: [(Vec<&str>, String); 6] = [
        (
            vec!["gate", db, "--against", "night=99"],
            "--against night=99: no invocation of \"nightly\" has that tag or name; its tags: night=1, night=2, night=3, night=101, night=4, night=5, night=102, night=6, night=7, night=8, night=9, night=10, night=11, night=12, night=13".into(),
        ),
        (
            vec!["gate", db, "--lab-run", "night=101"],
            "\"nightly #4\" is the first invocation of \"nightly\" on its machine: nothing to gate against".into(),
        ),
        (
            vec!["gate", db, "--lab-run", "night=5", "--against", "night=101"],
            "--against night=101: \"nightly #4\" ran on another machine (two, 2 × Test CPU) than \"nightly #6\" (one, 2 × Test CPU); a gate compares one machine's invocations".into(),
        ),
        (
            vec!["gate", db, "--threshold", "two"],
            "--threshold two: expected a percentage from 0 to 100, such as 2%".into(),
        ),
        (
            vec!["gate", empty],
            format!("{empty} holds no labs; run one with `stampede lab run`"),
        ),
        (
            vec!["history", db, "--lab", "weekly"],
            format!("--lab weekly: {db} holds no lab of that name; it holds: nightly"),
        ),
    ];
    for (args, message) in cases {
        let output = stampede(&args);
        let expected_code = if message.contains("nothing to gate against") {
            4
        } else {
            1
        };
        assert_eq!(
            output.status.code(),
            Some(expected_code),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            stderr(&output).trim(),
            format!("stampede: error: {message}"),
            "{args:?}"
        );
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
}

/// One cell, five rounds: b a little slower than a in four, far faster in the fifth (a round
/// the machine favoured b) — medians 100 vs 96 beside a geometric mean of the rounds' ratios
/// above 1 — on a machine whose other processes took 40% of its CPU.
fn one_wild_round(path: &Path) {
    let mut store = Store::open(&Location::Sqlite(path.to_path_buf())).unwrap();
    let (lab, _) = store.lab("wild", "spec", 1).unwrap();
    let cells = [cell("a", 1), cell("b", 1)];
    store.save_cells(lab, &cells).unwrap();
    let data: [(&CellRecord, [f64; 5]); 2] = [
        (&cells[0], [100.0, 100.0, 100.0, 100.0, 100.0]),
        (&cells[1], [96.0, 97.0, 95.0, 96.0, 250.0]),
    ];
    for (c, values) in data {
        for (round, tps) in values.iter().enumerate() {
            let mut record = run(c, round as u32, RunStatus::Completed, *tps);
            // 10 s of machine CPU time besides the server's: 4 busy in other processes.
            let server: f64 = record.counters.iter().map(|c| c.value).sum();
            for (name, value) in [
                ("cpu_user_s", 3.0 + server),
                ("cpu_system_s", 1.0),
                ("cpu_idle_s", 6.0),
                ("cpu_iowait_s", 0.0),
                ("cpu_steal_s", 0.0),
            ] {
                record.counters.push(CounterRow {
                    source: "os".into(),
                    name: name.into(),
                    value,
                });
            }
            store.record_run(lab, &record).unwrap();
        }
    }
}

#[test]
fn an_inconclusive_cell_says_what_would_decide_it_and_a_wild_round_is_named() {
    let db = temp_path("wild.db");
    one_wild_round(&db);
    let output = stampede(&["compare", db.to_str().unwrap(), "a", "b"]);
    let text = common::succeeded(output);
    let row = text
        .lines()
        .find(|l| l.starts_with("pgbench "))
        .unwrap_or_else(|| panic!("no row: {text}"));
    let ratios: [f64; 5] = [0.96, 0.97, 0.95, 0.96, 2.5];
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let mean = logs.iter().sum::<f64>() / 5.0;
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    // The medians (100 and 96), the geometric mean above 1 and the rounds' median below it.
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        words[6..10],
        ["100.0", "96.0", &format!("{:.3}", mean.exp()), "0.960"],
        "{row}"
    );
    assert!(row.ends_with("inconclusive"), "{row}");
    assert!(text.contains("ratio: paired by round"), "{text}");
    assert!(
        text.contains("pgbench select-only scale 1 × 1 clients: round 5 is an outlier among the rounds' ratios (1: 0.960, 2: 0.970, 3: 0.950, 4: 0.960, 5: 2.500)"),
        "{text}"
    );
    let rounds = stampede_stats::paired::rounds_to_decide(mean.exp(), sd).unwrap();
    assert!(rounds > 5, "{rounds}");
    assert!(
        text.contains(&format!(
            "pgbench select-only scale 1 × 1 clients is inconclusive after 5 rounds; about {rounds} rounds would decide it at this noise"
        )),
        "{text}"
    );
    assert!(text.contains("runs = \"auto\""), "{text}");
    assert!(text.contains("`stampede lab calibrate SPEC`"), "{text}");
    // The busy machine is a warning before the table: other processes took 40% (4 of 10 s).
    let warning = text
        .lines()
        .find(|l| l.starts_with("warning: the machine was busy"))
        .unwrap_or_else(|| panic!("no busy-machine warning: {text}"));
    assert!(
        warning.contains("used 40% of its CPU time during the runs on average"),
        "{warning}"
    );
    assert!(text.find(warning).unwrap() < text.find(row).unwrap());
    // The report says the same at its top and under its table.
    let report = |name: &str| {
        let path = temp_path(name);
        common::succeeded(stampede(&[
            "report",
            db.to_str().unwrap(),
            "--base",
            "a",
            "-o",
            path.to_str().unwrap(),
        ]));
        std::fs::read_to_string(&*path).unwrap()
    };
    let markdown = report("wild.md");
    assert!(
        markdown.contains("> **Warning:** the machine was busy"),
        "{markdown}"
    );
    assert!(
        markdown.contains("rounds would decide it at this noise"),
        "{markdown}"
    );
    assert!(markdown.contains("| median ratio |"), "{markdown}");
    // One client count: the throughput and latency are bars, not line charts of one dot; the
    // run charts count rounds from 1, as the lab's progress does; the ratio's axis stays above
    // zero (log scale: 0.683–1.978 around 1).
    let html = report("wild.html");
    let scaling = &html[html.find(r#"<h2 id="scaling">"#).unwrap()..];
    let scaling = &scaling[..scaling[4..].find("<h2 ").unwrap()];
    assert!(!scaling.contains("<polyline"), "{scaling}");
    assert_eq!(
        scaling.matches(r#"<rect class="bar""#).count(),
        2,
        "{scaling}"
    );
    assert!(html.contains(" (round "), "run charts name their round");
    assert!(!html.contains("(repetition "));
    assert!(
        !html.contains(">-0.") && !html.contains(">-1."),
        "an axis below zero"
    );
}

/// A measure as read: its benchmark, its name, its value, its bounds.
type BmfMeasure = (String, String, f64, Option<(f64, f64)>);

/// Bencher's format rules, as its reference states them: an object of benchmarks (names of
/// 1 to 1024 characters), each an object of measures (names of 1 to 64), each with a numeric
/// `value` and optional numeric `lower_value` ≤ value ≤ `upper_value`. The measures by
/// benchmark and name, or the rule broken.
fn bmf_measures(text: &str) -> Result<Vec<BmfMeasure>, String> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let benchmarks = json.as_object().ok_or("not an object of benchmarks")?;
    let mut measures = Vec::new();
    for (benchmark, by_measure) in benchmarks {
        if benchmark.is_empty() || benchmark.chars().count() > 1024 {
            return Err(format!("benchmark name {benchmark:?}"));
        }
        let by_measure = by_measure.as_object().ok_or("a benchmark is no object")?;
        for (measure, fields) in by_measure {
            if measure.is_empty() || measure.chars().count() > 64 {
                return Err(format!("measure name {measure:?}"));
            }
            let number = |key: &str| fields.get(key).map(|v| v.as_f64().ok_or(key.to_string()));
            let value = number("value").ok_or("no value")??;
            let bounds = match (number("lower_value"), number("upper_value")) {
                (None, None) => None,
                (Some(low), Some(high)) => Some((low?, high?)),
                _ => return Err(format!("{measure}: one bound only")),
            };
            if let Some((low, high)) = bounds {
                if !(low <= value && value <= high) {
                    return Err(format!("{measure}: {low} ≤ {value} ≤ {high} does not hold"));
                }
            }
            measures.push((benchmark.clone(), measure.clone(), value, bounds));
        }
    }
    Ok(measures)
}

/// `stampede export DB ARGS… -o FILE`, which must succeed: the file's text.
fn export_to(db: &str, args: &[&str], file: &Path) -> String {
    let mut all = vec!["export", db];
    all.extend_from_slice(args);
    all.extend(["-o", file.to_str().unwrap()]);
    let output = stampede(&all);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    std::fs::read_to_string(file).unwrap()
}

fn python_peers() -> String {
    std::env::var("STAMPEDE_PYTHON_PEERS")
        .unwrap_or_else(|_| "/var/cache/stampede/python-peers".into())
}

/// A Python helper of tests/support with the peers (apache-otava, junitparser) on its path.
fn peer_script(script: &str, args: &[&str]) -> String {
    let path = format!("{}/tests/support/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = std::process::Command::new("python3")
        .arg(path)
        .args(args)
        .env("PYTHONPATH", python_peers())
        .output()
        .unwrap();
    assert!(output.status.success(), "{script}: {}", stderr(&output));
    stdout(&output)
}

#[test]
fn bmf_and_github_action_benchmark_carry_each_cells_median_and_its_interval() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/export/bmf-example.json"
    ))
    .unwrap();
    assert_eq!(
        bmf_measures(&example).unwrap().len(),
        4,
        "the reader takes Bencher's example"
    );
    let db = temp_path("export.db");
    synthetic_history(&db);
    let db = db.to_str().unwrap();
    let output = stampede(&["export", db, "--format", "bmf", "--invocation", "night=9"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let measures = bmf_measures(&stdout(&output)).unwrap();
    // Night 9: five runs of 90 × (1, 1.005, 0.995, 1.002, 0.998); five runs' median interval
    // is their range (93.75%).
    let cell = "pg/pgbench/select-only/1/1";
    let tps = measures
        .iter()
        .find(|(b, m, _, _)| b == cell && m == "tps")
        .unwrap();
    assert!((tps.2 - 90.0).abs() < 1e-9, "{tps:?}");
    let (low, high) = tps.3.unwrap();
    assert!((low - 90.0 * 0.995).abs() < 1e-9 && (high - 90.0 * 1.005).abs() < 1e-9);
    // p99 is 1000 / tps per run: its median is 1000 / 90.
    let p99 = measures.iter().find(|(_, m, _, _)| m == "p99").unwrap();
    assert!((p99.2 - 1000.0 / 90.0).abs() < 1e-9, "{p99:?}");
    let names: Vec<&str> = measures.iter().map(|(_, m, _, _)| m.as_str()).collect();
    assert_eq!(
        names,
        ["client_cpu", "p50", "p95", "p99", "server_cpu", "tps"]
    );

    // A lab of two targets: the candidate's paired ratio to the base, named so.
    let controlled = temp_path("export-controlled.db");
    controlled_history(&controlled);
    let output = stampede(&[
        "export",
        controlled.to_str().unwrap(),
        "--format",
        "bmf",
        "--metric",
        "tps",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let measures = bmf_measures(&stdout(&output)).unwrap();
    let ratio = measures
        .iter()
        .find(|(b, m, _, _)| {
            b == "ref/pgbench/select-only/1/1" && m == "tps-paired-ratio-to-candidate"
        })
        .unwrap_or_else(|| panic!("{measures:?}"));
    // Night 3: ref over candidate per round = own[4 - r] / (0.9 × own[r]).
    let own: [f64; 5] = [1.0, 1.005, 0.995, 1.003, 0.997];
    let logs: f64 = (0..5).map(|r| (own[4 - r] / (0.9 * own[r])).ln()).sum();
    assert!((ratio.2 - (logs / 5.0).exp()).abs() < 1e-9, "{ratio:?}");

    // github-action-benchmark: one direction per file; tps by default.
    let json = temp_path("export-gab.json");
    let args = [
        "--format",
        "github-action-benchmark",
        "--invocation",
        "night=9",
    ];
    let entries: serde_json::Value = serde_json::from_str(&export_to(db, &args, &json)).unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["name"], format!("{cell} tps"));
    assert_eq!(entries[0]["unit"], "transactions/s");
    assert_eq!(entries[0]["value"].as_f64().unwrap(), 90.0);
    assert_eq!(entries[0]["range"], "± 0.45");
    let mixed = temp_path("export-mixed.json");
    let output = stampede(&[
        "export",
        db,
        "--format",
        "github-action-benchmark",
        "--metric",
        "tps",
        "--metric",
        "p99",
        "-o",
        mixed.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: --format github-action-benchmark: a file holds one direction (the \
         action's tool), and tps are bigger-is-better (customBiggerIsBetter) while p99 are \
         smaller-is-better (customSmallerIsBetter); export them into two files"
    );
    assert!(!mixed.exists(), "nothing written");
}

/// Otava itself (apache-otava from PyPI) finds the history's step at the invocation `stampede
/// history` names.
#[test]
fn otava_finds_the_change_history_finds() {
    let db = temp_path("export-otava.db");
    synthetic_history(&db);
    let csv = temp_path("export-otava.csv");
    let text = export_to(
        db.to_str().unwrap(),
        &["--format", "otava", "--metric", "tps"],
        &csv,
    );
    let cell = "pg/pgbench/select-only/1/1:tps";
    assert_eq!(
        text.lines().next().unwrap(),
        format!("time,invocation,tags,kernel,{cell},{cell}:lower,{cell}:upper")
    );
    assert_eq!(
        text.lines().count(),
        1 + 13,
        "machine one's 13 nights: {text}"
    );
    let history = stdout(&stampede(&["history", db.to_str().unwrap()]));
    assert!(
        history.contains("regression at \"nightly #11\" (night=9)"),
        "{history}"
    );
    let changes = peer_script("otava_changes.py", &[csv.to_str().unwrap(), cell]);
    let lines: Vec<&str> = changes.lines().collect();
    assert_eq!(lines.len(), 1, "{changes}");
    let fields: Vec<&str> = lines[0].split('\t').collect();
    assert_eq!(fields[..2], ["nightly #11", cell]);
    assert_eq!(fields[2].parse::<f64>().unwrap().round(), -10.0);
}

/// `export --format junit` and `gate --export`: junitparser reads the gate's verdicts.
#[test]
fn junit_exports_hold_the_gates_verdicts() {
    let db = temp_path("export-junit.db");
    synthetic_history(&db);
    let db = db.to_str().unwrap();
    let regression = temp_path("export-regression.xml");
    export_to(
        db,
        &["--format", "junit", "--invocation", "night=9"],
        &regression,
    );
    let read = peer_script("junit_counts.py", &[regression.to_str().unwrap()]);
    let lines: Vec<&str> = read.lines().collect();
    assert!(
        lines[0].starts_with(
            "nightly\tpg/pgbench/select-only/1/1\tfailure: regression beyond 2%: tps 0.9"
        ),
        "{read}"
    );
    assert_eq!(lines[1], "1 1 0");
    // The first night on machine two has nothing to gate against: its cell skipped, saying so.
    let first = temp_path("export-first.xml");
    export_to(
        db,
        &["--format", "junit", "--invocation", "night=101"],
        &first,
    );
    assert_eq!(
        peer_script("junit_counts.py", &[first.to_str().unwrap()]),
        "nightly\tpg/pgbench/select-only/1/1\tskipped: undecided: \"nightly #4\" is the first \
         invocation of \"nightly\" on its machine: nothing to gate against\n1 0 1\n"
    );
    // The gate of the latest night (two rounds) writes its undecided cell as skipped, and the
    // same night's BMF beside it.
    let (junit, bmf) = (temp_path("gate.xml"), temp_path("gate-bmf.json"));
    let output = stampede(&[
        "gate",
        db,
        "--export",
        &format!("junit={}", junit.to_str().unwrap()),
        "--export",
        &format!("bmf={}", bmf.to_str().unwrap()),
    ]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let read = peer_script("junit_counts.py", &[junit.to_str().unwrap()]);
    assert!(
        read.contains("\tskipped: undecided: 2 rounds measured by both, 3 needed\n"),
        "{read}"
    );
    assert!(read.ends_with("1 0 1\n"), "{read}");
    let measures = bmf_measures(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
    let tps = measures.iter().find(|(_, m, _, _)| m == "tps").unwrap();
    assert!(
        (tps.2 - 90.0 * 1.0025).abs() < 1e-9,
        "night 13's two runs: {tps:?}"
    );
}

#[test]
fn export_refuses_bad_input_with_exit_1_and_writes_nothing() {
    let db = temp_path("export-bad.db");
    synthetic_history(&db);
    let db = db.to_str().unwrap();
    let out = temp_path("export-bad.json");
    let out_path = out.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["--format", "bmff"],
            "unknown export format \"bmff\" (did you mean bmf?); the formats: bmf, otava, github-action-benchmark, hammerdb-job-report-v1, junit",
        ),
        (
            vec!["--format", "bmf", "--lab", "weekly"],
            "holds no lab of that name; it holds: nightly",
        ),
        (
            vec!["--format", "otava", "--invocation", "night=99"],
            "--invocation night=99: no invocation of \"nightly\" has that tag or name; its tags: night=1",
        ),
        (
            vec!["--format", "bmf", "--metric", "tpss"],
            "unknown metric \"tpss\"",
        ),
        (
            vec!["--format", "junit", "--metric", "tps", "--metric", "p99"],
            "--format junit: a gate decides on one --metric",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["export", db, "-o", out_path];
        all.extend(args.iter().copied());
        let output = stampede(&all);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(!out.exists(), "{args:?}: nothing written");
    }
    let output = stampede(&["gate", db, "--export", "csv=x.csv"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("unknown export format \"csv\""));
    let output = stampede(&["gate", db, "--export", "junit"]);
    assert_eq!(
        stderr(&output).trim(),
        "stampede: error: --export junit: expected FORMAT=PATH, such as bmf=results.json"
    );
}
