//! pgbench's run options beyond the basics: retries, failure accounting, per-command reports,
//! transaction logs, progress timestamps, checked against the server's own log and counters
//! and against the real pgbench's files.

mod common;

use std::path::{Path, PathBuf};

use common::{line_value, server, stampede, stderr, stdout, LabDir};

fn run(db: &str, extra: &[&str]) -> std::process::Output {
    let flags = server().flags(db);
    let mut args = vec!["pgbench"];
    args.extend_from_slice(extra);
    args.extend(flags.iter().map(String::as_str));
    stampede(&args)
}

fn temp_dir(name: &str) -> LabDir {
    LabDir::new(name)
}

fn write_script(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The files `-l --log-prefix <dir>/<prefix>` wrote, sorted, as lines split into fields.
fn log_files(dir: &Path, prefix: &str) -> Vec<Vec<Vec<String>>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&format!("{prefix}."))
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| l.split(' ').map(String::from).collect())
                .collect()
        })
        .collect()
}

/// The count after `prefix`; for `N/M` (pgbench's "processed" line under `-t`), N.
fn number(text: &str, prefix: &str) -> u64 {
    let value = line_value(text, prefix).unwrap_or_else(|| panic!("no {prefix:?} in {text}"));
    value.split('/').next().unwrap().parse().unwrap()
}

/// Two branches updated at REPEATABLE READ by eight clients: serialization failures galore.
const CONTENDED: &str = "\\set bid random(1, 2)\n\
BEGIN ISOLATION LEVEL REPEATABLE READ;\n\
SELECT bbalance FROM pgbench_branches WHERE bid = :bid;\n\
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = :bid;\n\
END;\n";

fn contended_database(name: &str) -> String {
    let server = server();
    let db = server.create_database(name);
    server.psql(
        &db,
        "create table pgbench_branches(bid int primary key, bbalance int, filler char(88)); \
         insert into pgbench_branches values (1, 0, null), (2, 0, null)",
    );
    db
}

/// Eight clients, 40 transactions each, of the contended script.
fn contended_run(db: &str, script: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["-n", "-f", script, "-c", "8", "-j", "2", "-t", "40"];
    args.extend_from_slice(extra);
    run(db, &args)
}

#[test]
fn retries_match_the_servers_serialization_errors() {
    let server = server();
    let db = contended_database("opt_retries");
    let dir = temp_dir("retries");
    let script = write_script(&dir, "rr.sql", CONTENDED);
    let json = dir.join("result.json");
    let output = contended_run(
        &db,
        &script,
        &[
            "--max-tries",
            "1000",
            "--failures-detailed",
            "-r",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let committed = number(&text, "number of transactions actually processed: ");
    let retries = number(&text, "total number of retries: ");
    let failed = number(&text, "number of serialization failures: ");
    assert!(retries > 0, "no retries provoked: {text}");
    assert_eq!(committed + failed, 8 * 40, "{text}");
    // Every committed transaction added one to a balance, and no failed one did.
    assert_eq!(
        server.psql(&db, "select sum(bbalance) from pgbench_branches"),
        committed.to_string()
    );
    // Each retry and each final failure is one 40001 error in the server's log.
    let server_errors = server.log_lines(&db, "could not serialize access");
    assert_eq!(server_errors as u64, retries + failed, "{text}");
    assert!(text.contains("maximum number of tries: 1000\n"), "{text}");
    assert!(
        text.contains("statement latencies in milliseconds, failures and retries:\n"),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["failures"]["retries"], retries);
    assert_eq!(doc["failures"]["serialization"], failed);
    let commands = doc["commands"][0].as_array().unwrap();
    let command_retries: u64 = commands
        .iter()
        .map(|c| c["retries"].as_u64().unwrap())
        .sum();
    assert_eq!(command_retries, retries, "per-command retries add up");
    assert_eq!(
        commands[3]["retries"], retries,
        "the UPDATE is where they happen"
    );
    assert_eq!(
        commands[2]["text"],
        "SELECT bbalance FROM pgbench_branches WHERE bid = :bid;"
    );
}

#[test]
fn without_retries_failures_are_counted_and_rolled_back() {
    let server = server();
    let db = contended_database("opt_noretry");
    let dir = temp_dir("noretry");
    let script = write_script(&dir, "rr.sql", CONTENDED);
    let output = contended_run(&db, &script, &["--verbose-errors"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let committed = number(&text, "number of transactions actually processed: ");
    let failed = number(&text, "number of failed transactions: ");
    assert_eq!(committed + failed, 320);
    assert!(!text.contains("retried"), "{text}");
    assert_eq!(
        server.log_lines(&db, "could not serialize access") as u64,
        failed
    );
    let notices = stderr(&output)
        .lines()
        .filter(|l| l.contains("ends the failed transaction (try 1/1)"))
        .count();
    assert_eq!(notices as u64, failed);
}

#[test]
fn continue_on_error_counts_other_failures_the_server_saw() {
    let server = server();
    let db = server.create_database("opt_continue");
    let dir = temp_dir("continue");
    let script = write_script(&dir, "div.sql", "SELECT 1 / (random() * 2)::int;\n");
    let output = run(
        &db,
        &[
            "-n",
            "-f",
            &script,
            "-c",
            "2",
            "-t",
            "100",
            "--continue-on-error",
            "--failures-detailed",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let other = number(&text, "number of other failures: ");
    let committed = number(&text, "number of transactions actually processed: ");
    assert_eq!(other + committed, 200);
    assert!(other > 0 && committed > 0, "{text}");
    assert_eq!(server.log_lines(&db, "division by zero") as u64, other);
    // Without the option the same error aborts the client: exit 2 after the summary, or at
    // once with --exit-on-abort.
    let aborted = run(&db, &["-n", "-f", &script, "-c", "2", "-t", "100"]);
    assert_eq!(aborted.status.code(), Some(2));
    assert!(stdout(&aborted).contains("transaction type:"));
    let exited = run(
        &db,
        &[
            "-n",
            "-f",
            &script,
            "-c",
            "2",
            "-t",
            "100",
            "--exit-on-abort",
        ],
    );
    assert_eq!(exited.status.code(), Some(2));
    assert!(stdout(&exited).is_empty(), "{}", stdout(&exited));
    assert!(stderr(&exited).contains("division by zero"));
}

/// `-l` with retries and `-R`: the same fields per line as the real pgbench writes.
#[test]
fn transaction_log_matches_pgbench_layout() {
    let server = server();
    let db = contended_database("opt_txlog");
    let dir = temp_dir("txlog");
    let script = write_script(&dir, "rr.sql", CONTENDED);
    let common = [
        "-n",
        "-f",
        &script,
        "-c",
        "4",
        "-j",
        "2",
        "-t",
        "25",
        "-l",
        "--max-tries",
        "5",
        "-R",
        "2000",
    ];
    let prefix = dir.join("ours");
    let mut ours = common.to_vec();
    ours.extend(["--log-prefix", prefix.to_str().unwrap()]);
    let output = run(&db, &ours);
    assert!(output.status.success(), "{}", stderr(&output));
    let theirs_prefix = dir.join("theirs");
    let mut theirs = common.to_vec();
    theirs.extend(["--log-prefix", theirs_prefix.to_str().unwrap()]);
    let pgbench = server.pgbench(&db, &theirs);
    assert!(pgbench.status.success(), "{}", stderr(&pgbench));

    let our_files = log_files(&dir, "ours");
    let their_files = log_files(&dir, "theirs");
    assert_eq!(our_files.len(), 2, "one file per thread");
    assert_eq!(their_files.len(), 2);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut per_client: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for line in our_files.iter().flatten() {
        // client_id transaction_no latency script_no epoch_s epoch_us lag retries
        assert_eq!(line.len(), their_files[0][0].len(), "{line:?}");
        assert_eq!(line.len(), 8, "{line:?}");
        per_client
            .entry(line[0].clone())
            .or_default()
            .push(line[1].parse().unwrap());
        assert!(
            line[2] == "failed" || line[2].parse::<u64>().is_ok(),
            "{line:?}"
        );
        assert_eq!(line[3], "0");
        let epoch: u64 = line[4].parse().unwrap();
        assert!(epoch <= now && epoch + 60 > now, "{line:?}");
        assert!(line[5].parse::<u32>().unwrap() < 1_000_000);
        line[6].parse::<u64>().unwrap();
        line[7].parse::<u32>().unwrap();
    }
    assert_eq!(per_client.len(), 4);
    for numbers in per_client.values() {
        assert_eq!(numbers, &(1..=25).collect::<Vec<u64>>());
    }
}

/// Fairness: `--json`'s per-client counts add up to the transactions processed and are the
/// `-l` log's own per-client counts; a client made slow by its script (`\if :client_id = 0`)
/// brings Jain's index well below 0.9, and the summary says so after the percentiles. Two
/// threads of two clients each: the sweep over a thread's sockets, one of them waiting in
/// `\sleep` on the runtime's timer meanwhile.
#[test]
fn per_client_counts_match_the_log_and_a_slow_client_shows_in_the_index() {
    let server = server();
    let db = server.create_database("opt_fairness");
    let dir = temp_dir("fairness");
    let script = write_script(
        &dir,
        "slow0.sql",
        "\\if :client_id = 0\n\\sleep 20 ms\n\\endif\nSELECT 1;\n",
    );
    let prefix = dir.join("log");
    let json = dir.join("run.json");
    let output = run(
        &db,
        &[
            "-n",
            "-f",
            &script,
            "-c",
            "4",
            "-j",
            "2",
            "-T",
            "2",
            "-l",
            "--log-prefix",
            prefix.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let fairness = &report["fairness"];
    let per_client: Vec<u64> = fairness["per_client"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per_client.len(), 4);
    let processed = number(&text, "number of transactions actually processed: ");
    assert_eq!(per_client.iter().sum::<u64>(), processed);
    assert_eq!(report["transactions"].as_u64(), Some(processed));
    let mut logged = vec![0u64; 4];
    for line in log_files(&dir, "log").iter().flatten() {
        logged[line[0].parse::<usize>().unwrap()] += 1;
    }
    assert_eq!(logged, per_client, "the -l log's transactions per client");
    // Client 0 sleeps 20 ms a transaction (about 100 in 2 s), the others do not.
    assert!(per_client[0] <= 101, "{per_client:?}");
    assert!(
        per_client[1..].iter().all(|&n| n > 10 * per_client[0]),
        "{per_client:?}"
    );
    let index = fairness["jain_index"].as_f64().unwrap();
    let sum: f64 = per_client.iter().map(|&n| n as f64).sum();
    let squares: f64 = per_client.iter().map(|&n| (n as f64).powi(2)).sum();
    assert!(
        (index - sum * sum / (4.0 * squares)).abs() < 1e-9,
        "{index}"
    );
    assert!(index < 0.8, "{index}");
    assert_eq!(fairness["min"].as_u64(), Some(per_client[0]));
    let mut sorted = per_client.clone();
    sorted.sort_unstable();
    let line = format!(
        "client fairness: min {} / median {} / max {} transactions per client, Jain's index {index:.4}",
        sorted[0],
        median_text(sorted[1] + sorted[2]),
        sorted[3]
    );
    let after_percentiles = text
        .lines()
        .skip_while(|l| !l.starts_with("latency percentiles: "))
        .nth(1);
    assert_eq!(after_percentiles, Some(line.as_str()), "{text}");
}

/// The median of two counts, given their sum, as the summary prints it.
fn median_text(sum_of_middle: u64) -> String {
    if sum_of_middle.is_multiple_of(2) {
        (sum_of_middle / 2).to_string()
    } else {
        format!("{:.1}", sum_of_middle as f64 / 2.0)
    }
}

/// With the same `--random-seed`, `--sampling-rate` keeps the same transactions as pgbench
/// (one client, so both tools draw in the same order).
#[test]
fn sampling_keeps_the_transactions_pgbench_keeps() {
    let server = server();
    let db = server.create_database("opt_sampling");
    let dir = temp_dir("sampling");
    let script = write_script(&dir, "one.sql", "SELECT 1;\n");
    let sampled = |tool_prefix: &str, pgbench: bool| {
        let prefix = dir.join(tool_prefix);
        let args = [
            "-n",
            "-f",
            &script,
            "-c",
            "1",
            "-t",
            "500",
            "-l",
            "--sampling-rate",
            "0.25",
            "--random-seed",
            "9",
            "--log-prefix",
            prefix.to_str().unwrap(),
        ];
        let output = if pgbench {
            server.pgbench(&db, &args)
        } else {
            run(&db, &args)
        };
        assert!(output.status.success(), "{}", stderr(&output));
        let files = log_files(&dir, tool_prefix);
        assert_eq!(files.len(), 1);
        let mut kept: Vec<(String, String)> = files[0]
            .iter()
            .map(|l| (l[0].clone(), l[1].clone()))
            .collect();
        kept.sort();
        kept
    };
    let ours = sampled("ours", false);
    let theirs = sampled("theirs", true);
    assert!(ours.len() > 75 && ours.len() < 175, "{}", ours.len());
    assert_eq!(ours, theirs);
}

#[test]
fn aggregate_log_lines_add_up_to_the_summary() {
    let server = server();
    let db = server.create_database("opt_aggregate");
    let dir = temp_dir("aggregate");
    let script = write_script(&dir, "one.sql", "SELECT 1;\n");
    let prefix = dir.join("agg");
    let output = run(
        &db,
        &[
            "-n",
            "-f",
            &script,
            "-c",
            "2",
            "-j",
            "2",
            "-T",
            "3",
            "-l",
            "--aggregate-interval",
            "1",
            "--log-prefix",
            prefix.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let total = number(&text, "number of transactions actually processed: ");
    let files = log_files(&dir, "agg");
    assert_eq!(files.len(), 2);
    let mut logged = 0;
    for file in &files {
        assert!(file.len() >= 2 && file.len() <= 4, "{file:?}");
        let starts: Vec<u64> = file.iter().map(|l| l[0].parse().unwrap()).collect();
        assert!(starts.windows(2).all(|w| w[1] == w[0] + 1), "{starts:?}");
        for line in file {
            // pgbench 19's layout: 16 fields, other_sql_failures last (15–18 wrote 15).
            assert_eq!(line.len(), 16, "{line:?}");
            assert_eq!(&line[13..], ["0", "0", "0"], "{line:?}");
            let count: u64 = line[1].parse().unwrap();
            let sum: f64 = line[2].parse().unwrap();
            let (min, max): (f64, f64) = (line[4].parse().unwrap(), line[5].parse().unwrap());
            if count > 0 {
                let mean = sum / count as f64;
                assert!(min <= mean + 1.0 && mean <= max + 1.0, "{line:?}");
            }
            logged += count;
        }
    }
    // The last, incomplete second of each thread is not written, as in pgbench.
    assert!(
        logged <= total && logged * 3 >= total,
        "{logged} of {total}"
    );
}

#[test]
fn per_command_report_and_progress_timestamps() {
    let server = server();
    let db = server.create_database("opt_report");
    let dir = temp_dir("report");
    let script = write_script(
        &dir,
        "two.sql",
        "\\set x random(1, 10)\nSELECT :x;\n\\sleep 2 ms\n",
    );
    let output = run(
        &db,
        &[
            "-n",
            "-f",
            &script,
            "-T",
            "2",
            "-r",
            "-P",
            "1",
            "--progress-timestamp",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "statement latencies in milliseconds and failures:")
        .skip(1)
        .take(3)
        .collect();
    assert_eq!(table.len(), 3, "{text}");
    assert!(table[0].ends_with(" \\set x random(1, 10)"), "{table:?}");
    assert!(table[1].ends_with(" SELECT :x;"), "{table:?}");
    let sleep_ms: f64 = table[2].split_whitespace().next().unwrap().parse().unwrap();
    // A sleep lasts at least what it asks for; how little it overshoots is bench/'s question.
    assert!(sleep_ms >= 2.0, "{table:?}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let progress: Vec<f64> = stderr(&output)
        .lines()
        .filter_map(|l| l.strip_prefix("progress: "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(progress.len(), 2, "{}", stderr(&output));
    assert!(progress.iter().all(|t| *t < now && *t > now - 30.0));
    assert!((progress[1] - progress[0] - 1.0).abs() < 1e-6);
}

/// The watchdog. With every backend of a run stopped (SIGSTOP: a server that hangs), pgbench
/// waits forever; `stampede pgbench` abandons the run once a client has waited
/// `--stall-timeout` for the server: exit 2, saying how many clients were stuck, and no report.
#[test]
fn a_run_whose_server_hangs_is_abandoned_after_the_stall_timeout() {
    let s = server();
    let db = s.create_database("stall_watchdog");
    let init = s.pgbench(&db, &["-i", "-q"]);
    assert!(init.status.success(), "{}", stderr(&init));
    // A transaction count no run reaches: only the watchdog ends this one.
    let mut args = vec!["pgbench", "-S", "-c", "2", "-j", "2", "-t", "100000000"];
    args.extend(["--stall-timeout", "2s"]);
    let flags = s.flags(&db);
    args.extend(flags.iter().map(String::as_str));
    let mut child = common::stampede_command(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let backends = format!(
        "SELECT pid FROM pg_stat_activity WHERE datname = '{db}' AND application_name = 'stampede'"
    );
    let mut pids = Vec::new();
    common::wait_until("the run's two sessions", || {
        pids = s
            .psql("postgres", &backends)
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect();
        pids.len() == 2
    });
    let frozen = common::Frozen::stop(pids);
    let stopped_at = std::time::Instant::now();
    // A minute ends a hung run (the failure this test is about) rather than the suite.
    while child.try_wait().unwrap().is_none() && stopped_at.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    drop(frozen);
    common::assert_abandoned_by_the_watchdog(&output);
    assert!(!stdout(&output).contains("tps = "), "{}", stdout(&output));
}

/// A lock wait stalls the run: the watchdog cancels the waiting queries (PostgreSQL cancel
/// requests) before it closes their connections, so no backend of the run is left waiting on
/// the lock (holding its place in the queue) after stampede exits. Closing the connections
/// alone would leave them there: a backend waiting on a lock does not read its socket.
#[test]
fn the_watchdog_cancels_queries_stuck_on_a_lock() {
    let s = server();
    let db = s.create_database("stall_lock");
    let init = s.pgbench(&db, &["-i", "-q"]);
    assert!(init.status.success(), "{}", stderr(&init));
    let holder = common::hold_lock(s, &db, "pgbench_accounts");
    let in_db = |condition: &str| common::sessions_in(s, &db, condition);
    let mut args = vec!["pgbench", "-S", "-c", "2", "-j", "2", "-t", "100000000"];
    args.extend(["--stall-timeout", "2s"]);
    let flags = s.flags(&db);
    args.extend(flags.iter().map(String::as_str));
    let output = common::stampede_command(&args).output().unwrap();
    let stampede_left = || in_db("application_name = 'stampede'");
    common::wait_until("stampede's backends gone", || stampede_left() == "0");
    common::release_lock(s, &db, holder);
    common::assert_abandoned_by_the_watchdog(&output);
    // The server's own log: each waiting query ended by a cancel.
    assert_eq!(
        s.log_lines(&db, "canceling statement due to user request"),
        2,
        "the server's log"
    );
}

/// `-l` on a disk that fills (a file size limit stands in for it: writes beyond it fail with
/// EFBIG): the run stops at once, exit 2, naming the log file, instead of going on without it.
#[test]
fn a_transaction_log_that_cannot_be_written_stops_the_run() {
    let s = server();
    let db = s.create_database("log_disk_full");
    let init = s.pgbench(&db, &["-i", "-q"]);
    assert!(init.status.success(), "{}", stderr(&init));
    let dir = temp_dir("log-disk-full");
    let prefix = dir.join("full");
    // The shell ignores SIGXFSZ (so a write past the limit fails rather than kills) and caps
    // files at 16 blocks, then becomes stampede: same pid, so the log's name is known.
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "trap '' XFSZ; ulimit -f 16; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_stampede"))
        // A transaction count no run reaches: only the failed log ends this one.
        .args(["pgbench", "-S", "-t", "100000000", "-l", "--log-prefix"])
        .arg(&prefix)
        .args(s.flags(&db))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Two minutes end a run that did not stop (the failure this test is about) rather than
    // the suite; it then shows as killed, not as exit 2.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let expected = format!(
        "could not write the transaction log \"{}.{pid}\": File too large",
        prefix.display()
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    assert!(!stdout(&output).contains("tps = "), "{}", stdout(&output));
}
