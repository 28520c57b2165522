//! `stampede lab` end to end on managed clusters of the system's PostgreSQL: two targets (two
//! configurations), two client counts, two runs, seconds long; plan order, stored provenance
//! and series, SIGTERM mid-matrix then resume, a killed postmaster recorded as a failed run.
//! suite: alone (its labs decide, gate and stop by measured tps: a neighbour's load left a gate undecided)

// libc for signals and exit hooks the tests send and install.
#![allow(unsafe_code)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{
    lab_sessions_running, number, sqlite, stampede_command, stderr, stdout, wait_until, LabDir,
};
use stampede::server::host::OsUser;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;
use stampede::server::postgres::download;

fn lab_dir(name: &str) -> LabDir {
    LabDir::new(&format!("lab-{name}"))
}

/// A lab's folder with its spec (`lab.toml`) written in it.
fn lab_with_spec(name: &str, text: &str) -> (LabDir, PathBuf) {
    let dir = lab_dir(name);
    let spec = dir.join("lab.toml");
    std::fs::write(&spec, text).unwrap();
    (dir, spec)
}

/// small-buffers has a small WAL budget, so checkpoints happen during the runs and the
/// checkpointer's per-second series has something to show.
fn write_spec(dir: &Path, runs: u32, duration: &str) -> PathBuf {
    let spec = format!(
        r#"name = "two-configs"
runs = {runs}
duration = "{duration}"
warmup = "1s"
seed = 42

[[target]]
name = "small-buffers"
profile = "untuned"
settings = {{ shared_buffers = "32MB", fsync = false, max_wal_size = "32MB", min_wal_size = "32MB" }}

[[target]]
name = "tuned"
profile = "tuned"
settings = {{ shared_buffers = "128MB", fsync = false, max_wal_size = "1GB" }}

[[workload]]
name = "pgbench"
scripts = ["tpcb-like"]
scale = [1]
clients = [1, 2]
"#
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// `lab run SPEC` is refused before anything starts: exit 1, exactly `message`, and no results
/// database (the spec's name with `.db`).
fn assert_lab_refused(spec: &Path, message: &str) {
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stderr(&output).trim(),
        format!("stampede: error: {message}")
    );
    assert!(!spec.with_extension("db").exists());
    // Nothing written: not the lock file either.
    let results = spec.with_extension("db");
    assert!(!PathBuf::from(format!("{}.lock", results.display())).exists());
}

/// A workload with `pods` whose kubeconfig cannot be read is refused before any server starts.
#[test]
fn a_spread_workload_without_a_readable_kubeconfig_is_refused_before_anything_starts() {
    let (dir, spec) = lab_with_spec(
        "kube-refused",
        "name = \"lk\"\nruns = 1\nduration = \"1s\"\n[kubernetes]\nkubeconfig = \"/nonexistent/config\"\n\
         [[target]]\nname = \"t\"\n[[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\npods = 2\n",
    );
    assert_lab_refused(
        &spec,
        "[kubernetes]: could not read /nonexistent/config: failed to read kubeconfig from \
         '\"/nonexistent/config\"': No such file or directory (os error 2)",
    );
    assert!(!dir.join("lk.db").exists());
    assert!(!dir.join("lk.servers").exists());
}

/// Stops a lab cluster at `root` (made with `binaries`, the system's by default) if it runs.
fn stop_cluster(root: PathBuf, binaries: Option<Binaries>) {
    let Some(binaries) = binaries.or_else(|| Binaries::find_best().ok()) else {
        return;
    };
    let cluster = Cluster {
        binaries,
        root,
        port: 0,
        run_as: OsUser::for_server().expect("server user"),
        cpus: None,
    };
    if cluster.is_running() {
        let _ = cluster.stop();
    }
}

/// Stops the lab's clusters even when an assertion fails.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let servers = self.0.join("two-configs.db.servers");
        for target in ["small-buffers", "tuned"] {
            stop_cluster(servers.join(target), None);
        }
    }
}

#[test]
fn plan_shows_interleaved_order_without_running_anything() {
    let dir = lab_dir("plan");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = write_spec(&dir, 2, "2s");
    let output = stampede_command(&["lab", "plan", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("4 cells × 2 runs = 8 runs; order seed 42"),
        "{text}"
    );
    let targets: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("tpcb-like"))
        .map(|l| {
            if l.contains("small-buffers") {
                "s"
            } else {
                "t"
            }
        })
        .collect();
    assert_eq!(targets, ["s", "t", "s", "t", "t", "s", "t", "s"], "{text}");
    // Sharding a lab whose results are a SQLite file is refused at the plan already.
    let output = stampede_command(&["lab", "plan", spec.to_str().unwrap(), "--shards", "2"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("which pods on other machines cannot share"));
    assert!(
        !dir.join("two-configs.db").exists(),
        "plan wrote a results database"
    );
}

#[test]
fn spec_errors_name_the_line_and_start_nothing() {
    let dir = lab_dir("bad");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = write_spec(&dir, 2, "2s");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("clients = [1, 2]", "clients = [0]");
    std::fs::write(&spec, text).unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("lab.toml:21:11: clients: every client count must be at least 1"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.join("two-configs.db").exists());
    assert!(!dir.join("two-configs.db.servers").exists());
    // The auto keys: each refused with its place and key, before anything starts.
    let good = std::fs::read_to_string(write_spec(&dir, 2, "2s")).unwrap();
    for (from, to, message) in [
        ("runs = 2", "runs = \"sometimes\"", "lab.toml:2:8: runs: \"sometimes\" is neither a number of runs nor \"auto\""),
        ("runs = 2", "runs = \"auto\"\nprecision = \"0%\"", "lab.toml:3:13: precision: \"0%\" is not a percentage above 0% and below 100% (e.g. \"3%\")"),
        ("runs = 2", "runs = \"auto\"\nprecision = \"-2%\"", "lab.toml:3:13: precision: \"-2%\" is not a percentage above 0% and below 100% (e.g. \"3%\")"),
        ("runs = 2", "runs = \"auto\"\nmax_runs = 1", "lab.toml:3:12: max_runs: must be from 5 (the rounds an auto lab takes before it trusts an interval) to 10000"),
        ("runs = 2", "runs = 2\nbudget = \"2h\"", "lab.toml:3:10: budget: only with runs = \"auto\" (a fixed count runs every cell that often)"),
    ] {
        std::fs::write(&spec, good.replace(from, to)).unwrap();
        assert_lab_refused(&spec, &format!("{}/{message}", dir.display()));
        assert!(!dir.join("two-configs.db").exists());
        assert!(!dir.join("two-configs.db.servers").exists());
    }
}

#[test]
fn matrix_runs_resumes_after_sigterm_and_survives_a_killed_server() {
    let dir = lab_dir("run");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = write_spec(&dir, 2, "2s");
    let db = dir.join("two-configs.db");

    // Start, then SIGTERM once the third run is under way (its line is out: the lab has
    // passed its last check for a signal before the run, so the run records the signal).
    let (status, interrupted_stderr) =
        common::interrupt_when(&["lab", "run", spec.to_str().unwrap()], "run 3/8:");
    assert_eq!(status.code(), Some(2), "{interrupted_stderr}");
    assert!(
        interrupted_stderr.contains("stampede lab resume"),
        "{interrupted_stderr}"
    );
    let before: Vec<Vec<String>> = sqlite(
        &db,
        "SELECT c.key, r.repetition, r.status, r.tps FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY r.id",
    );
    let completed_before: Vec<Vec<String>> = before
        .iter()
        .filter(|r| r[2] == "completed")
        .cloned()
        .collect();
    assert_eq!(completed_before.len(), 2, "{before:?}");
    assert_eq!(before.last().unwrap()[2], "interrupted", "{before:?}");

    // Kill the tuned target's postmaster while its clients run the script's statements.
    let resumed = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tuned_data = dir.join("two-configs.db.servers/tuned/data");
    wait_until("the tuned target's clients running tpcb-like", || {
        lab_sessions_running(&tuned_data, "^(UPDATE|SELECT|INSERT) .*pgbench_") > 0
    });
    let pid = postmaster_pid(&tuned_data);
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let finished = resumed.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", stderr(&finished));
    assert!(stderr(&finished).contains("resuming: 2 of 8 runs already finished"));

    let runs = sqlite(
        &db,
        "SELECT c.key, r.repetition, r.status, r.tps, r.error FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY r.id",
    );
    // The two runs completed before the signal are kept exactly and not repeated.
    for done in &completed_before {
        let same: Vec<_> = runs
            .iter()
            .filter(|r| r[0] == done[0] && r[1] == done[1] && r[2] == "completed")
            .collect();
        assert_eq!(same.len(), 1, "{runs:?}");
        assert_eq!(same[0][3], done[3]);
    }
    let failed: Vec<_> = runs.iter().filter(|r| r[2] == "failed").collect();
    let completed = runs.iter().filter(|r| r[2] == "completed").count();
    assert_eq!(failed.len(), 1, "the run the kill fell in: {runs:?}");
    assert_eq!(
        completed + failed.len(),
        8,
        "every planned run finished: {runs:?}"
    );
    if let Some(run) = failed.first() {
        assert!(run[0].starts_with("tuned/"), "{run:?}");
        assert!(run[4].contains("server log tail"), "{run:?}");
    }

    // Provenance, settings and series are stored.
    let targets = sqlite(
        &db,
        "SELECT name, server_version, profile, restore_method FROM targets ORDER BY name",
    );
    assert_eq!(targets.len(), 2);
    assert!(targets[0][1].starts_with("PostgreSQL "), "{targets:?}");
    assert_eq!(targets[0][2], "untuned");
    assert_eq!(targets[1][2], "tuned");
    let buffers = sqlite(
        &db,
        "SELECT t.name, s.setting, s.unit FROM target_settings s JOIN targets t ON t.id = s.target_id WHERE s.name = 'shared_buffers' ORDER BY t.name",
    );
    assert_eq!(buffers[0][1], "4096", "{buffers:?}"); // 32MB in 8kB pages
    assert_eq!(buffers[1][1], "16384", "{buffers:?}");
    let checkpoint = sqlite(
        &db,
        "SELECT s.setting FROM target_settings s JOIN targets t ON t.id = s.target_id WHERE t.name = 'tuned' AND s.name = 'checkpoint_completion_target'",
    );
    assert_eq!(checkpoint[0][0], "0.9");
    let series = sqlite(
        &db,
        "SELECT r.id, count(s.second), sum(s.tps), r.transactions FROM runs r JOIN run_series s ON s.run_id = r.id WHERE r.status = 'completed' GROUP BY r.id",
    );
    assert_eq!(series.len(), completed);
    for row in &series {
        assert_eq!(
            row[1], "2",
            "two seconds measured after the warmup: {row:?}"
        );
        let summed: f64 = row[2].parse().unwrap();
        assert_eq!(summed as i64, row[3].parse::<i64>().unwrap(), "{row:?}");
    }
    // Server-side counters of the measured window agree with the driver's count.
    let probes = sqlite(
        &db,
        "SELECT r.transactions, c.value, s.calls FROM runs r
         JOIN run_counters c ON c.run_id = r.id AND c.source = 'pg_stat_database' AND c.name = 'xact_commit'
         JOIN run_statements s ON s.run_id = r.id AND s.query LIKE 'UPDATE pgbench_accounts%'
         WHERE r.status = 'completed'",
    );
    assert_eq!(probes.len(), completed, "{probes:?}");
    // Exact up to what falls outside the driver's count: transactions in flight at the end
    // (at most one per client), and the commits of the probe's and setup's own short sessions
    // (a connection start, a query or two each; the probe polls every 20 ms for the run's
    // sessions to end, longer on a loaded machine: 52 extra were seen once).
    for row in &probes {
        let transactions: i64 = row[0].parse().unwrap();
        let commits = row[1].parse::<f64>().unwrap() as i64;
        let updates: i64 = row[2].parse().unwrap();
        assert!(
            (0..=150).contains(&(commits - transactions)),
            "{commits} commits vs {transactions} transactions"
        );
        assert!(
            (0..=2).contains(&(updates - transactions)),
            "{updates} updates vs {transactions} transactions"
        );
    }
    check_probes(&db, completed);
    check_report(&db);
    check_server_cpu_metric(&db);
    // The final table has one row per cell, named with its workload: its median, min and max
    // tps are the stored runs', and beside the other target's cells the ratio to the base's
    // is the geometric mean of the rounds' ratios.
    let table = stdout(&finished);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.contains("tpcb-like"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{table}");
    let tps_of = |target: &str, clients: &str| -> Vec<Vec<String>> {
        sqlite(
            &db,
            &format!("SELECT r.repetition, r.tps FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = '{target}' AND c.clients = {clients} AND r.status = 'completed'"),
        )
    };
    for row in &rows {
        let (target, clients) = (row[0], row[4]);
        assert_eq!(row[1], "pgbench", "{row:?}");
        let mut tps: Vec<f64> = tps_of(target, clients)
            .iter()
            .map(|r| number(&r[1]))
            .collect();
        tps.sort_by(f64::total_cmp);
        assert_eq!(row[5], tps.len().to_string(), "{row:?}");
        let median = sorted_median(&tps);
        assert_eq!(row[6], format!("{median:.0}"), "{row:?} vs {tps:?}");
        assert_eq!(
            row[7],
            format!("{:.0}–{:.0}", tps[0], tps[tps.len() - 1]),
            "{row:?}"
        );
        if target == "small-buffers" {
            assert_eq!(row[9], "base", "{row:?}");
            continue;
        }
        let base = tps_of("small-buffers", clients);
        let logs: Vec<f64> = tps_of(target, clients)
            .iter()
            .filter_map(|r| {
                let partner = base.iter().find(|b| b[0] == r[0])?;
                Some((number(&r[1]) / number(&partner[1])).ln())
            })
            .collect();
        let ratio = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
        assert_eq!(row[9], format!("{ratio:.3}×"), "{row:?}");
    }
}

/// The median of sorted values, computed here rather than by stampede's own code.
fn sorted_median(sorted: &[f64]) -> f64 {
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// Cluster, OS and driver counters, wait-event samples and plans, each checked against a
/// bound that does not come from the same probe.
fn check_probes(db: &Path, completed: usize) {
    let cores = std::thread::available_parallelism().unwrap().get() as f64;
    let runs = sqlite(
        db,
        "SELECT r.id, r.transactions, r.ended_unix_s - r.started_unix_s, c.clients FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed'",
    );
    assert_eq!(runs.len(), completed);
    for run in &runs {
        let (id, transactions, wall_s, clients) =
            (&run[0], number(&run[1]), number(&run[2]), number(&run[3]));
        let counter = |source: &str, name: &str| {
            let rows = sqlite(
                db,
                &format!("SELECT value FROM run_counters WHERE run_id = {id} AND source = '{source}' AND name = '{name}'"),
            );
            assert_eq!(rows.len(), 1, "{source}.{name} of run {id}");
            number(&rows[0][0])
        };
        // Each tpcb-like transaction writes at least three updates and an insert to the WAL.
        let wal_records = counter("pg_stat_wal", "wal_records");
        assert!(
            wal_records >= 4.0 * transactions,
            "{wal_records} WAL records, {transactions} transactions"
        );
        counter("pg_stat_bgwriter", "buffers_clean");
        // What the sampler itself used: present, and within the window's CPU capacity.
        let sampler = counter("probe", "sampler_cpu_s") + counter("probe", "sampler_backend_cpu_s");
        assert!((0.0..cores * wall_s).contains(&sampler), "{sampler}");
        // The machine's CPU time fits in the cores × the run's wall time, and holds the driver's.
        let os_cpu = counter("os", "cpu_user_s") + counter("os", "cpu_system_s");
        let driver_cpu = counter("driver", "cpu_user_s") + counter("driver", "cpu_system_s");
        assert!(
            os_cpu > 0.0 && os_cpu <= cores * wall_s * 1.05,
            "{os_cpu} s CPU in {wall_s} s"
        );
        assert!(
            driver_cpu > 0.0 && driver_cpu <= os_cpu * 1.05,
            "driver {driver_cpu} s of {os_cpu} s"
        );
        assert!(
            counter("os", "context_switches") > transactions,
            "a switch per round trip at least"
        );
        let per_second = sqlite(
            db,
            &format!("SELECT count(*), coalesce(sum(value), 0) FROM run_counter_series WHERE run_id = {id} AND source = 'os' AND name = 'cpu_user_s'"),
        );
        assert!(number(&per_second[0][0]) >= 1.0, "{per_second:?}");
        assert!(
            number(&per_second[0][1]) <= counter("os", "cpu_user_s") + 0.05,
            "{per_second:?}"
        );
        // The checkpointer's per-second series sums to at most the window's change of the same
        // counters (pg_stat_bgwriter on the test server's 15), and sees checkpoints when the
        // window had several.
        let series_sum = |name: &str| {
            let rows = sqlite(
                db,
                &format!("SELECT count(*), coalesce(sum(value), 0) FROM run_counter_series WHERE run_id = {id} AND source = 'checkpointer' AND name = '{name}'"),
            );
            assert!(number(&rows[0][0]) >= 1.0, "no {name} series for run {id}");
            number(&rows[0][1])
        };
        let has_checkpointer_view = !sqlite(
            db,
            &format!("SELECT 1 FROM run_counters WHERE run_id = {id} AND source = 'pg_stat_checkpointer'"),
        )
        .is_empty();
        let (checkpoints, buffers_written) = if has_checkpointer_view {
            (
                counter("pg_stat_checkpointer", "num_done"),
                counter("pg_stat_checkpointer", "buffers_written"),
            )
        } else {
            (
                counter("pg_stat_bgwriter", "checkpoints_timed")
                    + counter("pg_stat_bgwriter", "checkpoints_req"),
                counter("pg_stat_bgwriter", "buffers_checkpoint"),
            )
        };
        let seen = series_sum("checkpoints");
        assert!(seen <= checkpoints, "{seen} of {checkpoints} checkpoints");
        assert!(
            checkpoints < 2.0 || seen >= 1.0,
            "{seen} of {checkpoints} checkpoints"
        );
        let buffers = series_sum("buffers_written");
        assert!(buffers <= buffers_written, "{buffers} of {buffers_written}");
        // At most `clients` of the run's sessions are seen in each sample.
        let waits = sqlite(
            db,
            &format!("SELECT second, sum(samples), max(ticks) FROM run_wait_events WHERE run_id = {id} GROUP BY second"),
        );
        assert!(!waits.is_empty(), "no wait-event samples for run {id}");
        for second in &waits {
            let (samples, ticks) = (number(&second[1]), number(&second[2]));
            assert!(
                ticks <= 10.0 && samples <= clients * ticks,
                "{second:?} with {clients} clients"
            );
        }
        let per_txn = sqlite(
            db,
            &format!("SELECT per_txn FROM run_counters_per_txn WHERE run_id = {id} AND source = 'pg_stat_database' AND name = 'xact_commit'"),
        );
        let commits_per_txn = number(&per_txn[0][0]);
        assert!((1.0..1.1).contains(&commits_per_txn), "{commits_per_txn}");
    }
    // One stored plan per target for each of the workload's statements, none for the probes'.
    let plans = sqlite(
        db,
        "SELECT t.name, p.query, p.plan FROM plans p JOIN targets t ON t.id = p.target_id ORDER BY 1, 2",
    );
    for target in ["small-buffers", "tuned"] {
        let of_target: Vec<_> = plans.iter().filter(|p| p[0] == target).collect();
        assert_eq!(of_target.len(), 5, "{plans:?}");
        assert!(
            of_target
                .iter()
                .any(|p| p[1].starts_with("UPDATE pgbench_accounts")
                    && p[2].contains("pgbench_accounts_pkey")),
            "{plans:?}"
        );
    }
    let statements = sqlite(
        db,
        "SELECT DISTINCT query FROM run_statements WHERE query LIKE '%pg_stat%'",
    );
    assert!(
        statements.is_empty(),
        "probe statements counted as the workload's: {statements:?}"
    );
}

/// The matrix lab's report as JSON against "small-buffers", with `extra` options.
fn report_json(db: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "report",
        db.to_str().unwrap(),
        "--base",
        "small-buffers",
        "--format",
        "json",
    ];
    args.extend(extra);
    let output = stampede_command(&args).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// `--metric server_cpu`: each cell's medians are those of its runs' server CPU per
/// transaction, computed here from the stored counters and transactions.
fn check_server_cpu_metric(db: &Path) {
    let report = report_json(db, &["--metric", "server_cpu"]);
    let cells = report["comparisons"][0]["cells"].as_array().unwrap();
    assert!(!cells.is_empty(), "{report}");
    for row in cells {
        let cell = &row["cell"];
        let per_run = |target: &str| {
            let rows = sqlite(
                db,
                &format!(
                    "SELECT sum(k.value) * 1000000.0 / r.transactions FROM runs r \
                     JOIN cells c ON c.id = r.cell_id JOIN run_counters k ON k.run_id = r.id \
                     WHERE r.status = 'completed' AND c.target = '{target}' \
                     AND c.script = '{}' AND c.scale = '{}' AND c.clients = {} \
                     AND k.source = 'server' AND k.name IN ('cpu_user_s', 'cpu_system_s') \
                     GROUP BY r.id ORDER BY 1",
                    cell["script"].as_str().unwrap(),
                    cell["scale"].as_str().unwrap(),
                    cell["clients"]
                ),
            );
            let values: Vec<f64> = rows.iter().map(|r| number(&r[0])).collect();
            sorted_median(&values)
        };
        let close = |a: f64, b: &serde_json::Value| (a / b.as_f64().unwrap() - 1.0).abs() < 1e-9;
        assert!(
            close(per_run("small-buffers"), &row["base_median"]),
            "{row}"
        );
        assert!(close(per_run("tuned"), &row["other_median"]), "{row}");
    }
}

/// The report's statement and per-transaction tables against the stored runs.
fn check_report(db: &Path) {
    let report = report_json(db, &[]);
    // Why: the configured difference (shared_buffers) is listed as such; one version, so no
    // unconfigured differences; both targets' sessions were sampled.
    let why = &report["why"][0];
    assert_eq!(why["target"], "tuned");
    let buffers = why["configured_settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "shared_buffers")
        .expect("shared_buffers differs");
    assert_eq!(buffers["base"], "4096 8kB");
    assert_eq!(buffers["other"], "16384 8kB");
    assert_eq!(why["other_settings"].as_array().unwrap().len(), 0, "{why}");
    assert!(!why["base_waits"].as_array().unwrap().is_empty());
    assert!(!why["waits"].as_array().unwrap().is_empty());
    // Average sessions in all wait states together cannot exceed the most clients a cell ran.
    for side in ["base_waits", "waits"] {
        let sessions: f64 = why[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w[1].as_f64().unwrap())
            .sum();
        assert!(sessions > 0.0 && sessions <= 2.0, "{side}: {sessions}");
    }
    let statements = report["statements"].as_array().unwrap();
    let update = statements
        .iter()
        .find(|s| {
            s["target"] == "tuned"
                && s["cell"]["clients"] == 2
                && s["query"]
                    .as_str()
                    .unwrap()
                    .starts_with("UPDATE pgbench_accounts")
        })
        .expect("the tuned target's UPDATE statement");
    let base_mean = statements
        .iter()
        .find(|s| {
            s["target"] == "small-buffers"
                && s["cell"]["clients"] == 2
                && s["query"] == update["query"]
        })
        .unwrap()["mean_ms"]
        .as_f64()
        .unwrap();
    let html = stampede_command(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "small-buffers",
        "--format",
        "html",
    ])
    .output()
    .unwrap();
    let html = stdout(&html);
    assert!(html.contains(r#"<h2 id="statements">"#) && html.contains(r#"<h2 id="efficiency">"#));
    let mean = format!("<td>{:.4}</td>", update["mean_ms"].as_f64().unwrap());
    assert!(html.contains(&mean), "{mean} not in the HTML");
    let change = update["mean_change_pct"].as_f64().unwrap();
    let expected = (update["mean_ms"].as_f64().unwrap() / base_mean - 1.0) * 100.0;
    assert!((change - expected).abs() < 1e-9, "{change} vs {expected}");
    // CPU µs per transaction: the median over the cell's runs of the stored OS counters.
    let efficiency = report["efficiency"].as_array().unwrap();
    let tuned_one = efficiency
        .iter()
        .find(|e| e["target"] == "tuned" && e["cell"]["clients"] == 1)
        .unwrap();
    let mut per_run: Vec<f64> = sqlite(
        db,
        "SELECT sum(k.value) / r.transactions * 1e6 FROM runs r JOIN cells c ON c.id = r.cell_id
         JOIN run_counters k ON k.run_id = r.id AND k.source = 'os' AND k.name IN ('cpu_user_s', 'cpu_system_s')
         WHERE c.target = 'tuned' AND c.clients = 1 AND r.status = 'completed' GROUP BY r.id",
    )
    .iter()
    .map(|r| number(&r[0]))
    .collect();
    per_run.sort_by(f64::total_cmp);
    let median = sorted_median(&per_run);
    let reported = tuned_one["cpu_us_per_txn"].as_f64().unwrap();
    assert!(
        (reported - median).abs() < 1e-6 * median,
        "{reported} vs {median}"
    );
    check_report_figures(db, &report);
}

/// The family's group ratio from the stored tps: per round in which both cells completed on
/// both targets, the mean of the cells' log ratios; their mean over the rounds, exponentiated.
fn check_family_group(db: &Path, family: &serde_json::Value) {
    let rows = sqlite(
        db,
        "SELECT r.repetition, c.clients, c.target, r.tps FROM runs r JOIN cells c ON c.id = r.cell_id \
         WHERE r.status = 'completed' ORDER BY r.repetition",
    );
    let mut tps: std::collections::BTreeMap<(u32, String, String), f64> = Default::default();
    for row in &rows {
        tps.insert(
            (row[0].parse().unwrap(), row[1].clone(), row[2].clone()),
            number(&row[3]),
        );
    }
    let rounds: std::collections::BTreeSet<u32> = tps.keys().map(|k| k.0).collect();
    let means: Vec<f64> = rounds
        .iter()
        .filter_map(|&round| {
            let log = |clients: &str| {
                let of = |target: &str| tps.get(&(round, clients.to_string(), target.to_string()));
                Some((of("tuned")? / of("small-buffers")?).ln())
            };
            Some((log("1")? + log("2")?) / 2.0)
        })
        .collect();
    assert_eq!(family["rounds"], means.len(), "{family}");
    if means.is_empty() {
        assert!(family["ratio"].is_null(), "{family}");
        return;
    }
    let expected = (means.iter().sum::<f64>() / means.len() as f64).exp();
    let ratio = family["ratio"].as_f64().unwrap();
    assert!(
        (ratio / expected - 1.0).abs() < 1e-9,
        "{family} vs {expected}"
    );
}

/// The report's families, latency, per-second series and driver share against the stored runs.
fn check_report_figures(db: &Path, report: &serde_json::Value) {
    let family = &report["families"][0];
    assert_eq!(
        (&family["target"], &family["family"], &family["cells"]),
        (&"tuned".into(), &"write".into(), &2.into()),
        "{family}"
    );
    check_family_group(db, family);
    // Latency: the median over the cell's runs of the stored p99.
    let latency = report["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["target"] == "tuned" && l["cell"]["clients"] == 2)
        .unwrap();
    let mut p99: Vec<f64> = sqlite(
        db,
        "SELECT r.p99_ms FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = 'tuned' AND c.clients = 2 AND r.status = 'completed'",
    )
    .iter()
    .map(|r| number(&r[0]))
    .collect();
    p99.sort_by(f64::total_cmp);
    // Equal up to rounding: the report may average the middle two in another order.
    let median = sorted_median(&p99);
    assert!((latency["p99_ms"].as_f64().unwrap() - median).abs() <= 1e-9 * median.abs());
    // Series: each target's run of the base's 2-client cell, second by second as stored, its
    // checkpoint marks summing to the stored checkpointer series.
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "one run per target");
    // The base's cell with the most checkpoints per run (the most clients among equals): the
    // 2-client cell usually, but the machine's load moves checkpoints between cells.
    let charted_clients = number(
        &sqlite(
            db,
            "SELECT c.clients FROM runs r JOIN cells c ON c.id = r.cell_id
             LEFT JOIN (SELECT run_id, sum(value) AS n FROM run_counter_series
                        WHERE source = 'checkpointer' AND name = 'checkpoints' GROUP BY run_id) k
                    ON k.run_id = r.id
             WHERE c.target = 'small-buffers' AND r.status = 'completed' AND r.tps IS NOT NULL
             GROUP BY c.clients ORDER BY avg(coalesce(k.n, 0)) DESC, c.clients DESC LIMIT 1",
        )[0][0],
    );
    for chart in series {
        assert_eq!(chart["cell"]["clients"].as_f64(), Some(charted_clients));
        let id = chart["run_id"].as_i64().unwrap();
        let stored: Vec<f64> = sqlite(
            db,
            &format!("SELECT tps FROM run_series WHERE run_id = {id} ORDER BY second"),
        )
        .iter()
        .map(|r| number(&r[0]))
        .collect();
        let charted: Vec<f64> = chart["tps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_f64().unwrap())
            .collect();
        assert_eq!(charted, stored);
        let marked: f64 = chart["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["completed"].as_f64().unwrap())
            .sum();
        let stored = sqlite(
            db,
            &format!("SELECT coalesce(sum(value), 0) FROM run_counter_series WHERE run_id = {id} AND source = 'checkpointer' AND name = 'checkpoints'"),
        );
        assert_eq!(marked, number(&stored[0][0]));
    }
    // The driver's share of the client's cores is within what the process used in the window
    // (its counters also hold the sampler thread).
    let cores = number(&sqlite(db, "SELECT client_cores FROM labs")[0][0]);
    for e in report["efficiency"].as_array().unwrap() {
        let share = e["client_cpu_share"].as_f64().unwrap();
        let used = sqlite(
            db,
            &format!(
                "SELECT max(k.total / r.duration_s) FROM runs r JOIN cells c ON c.id = r.cell_id
                 JOIN (SELECT run_id, sum(value) AS total FROM run_counters WHERE source = 'driver' GROUP BY run_id) k ON k.run_id = r.id
                 WHERE c.target = '{}' AND c.clients = {} AND r.status = 'completed'",
                e["target"].as_str().unwrap(),
                e["cell"]["clients"]
            ),
        );
        let most = number(&used[0][0]) / cores;
        assert!(share > 0.0 && share <= most * 1.05, "{share} vs {most}");
    }
}

/// The oldest majors zonky publishes beside a newer one, every family on each: pgbench
/// select-only and tpcb-like, sysbench point select, TPROC-C in server mode (functions before
/// 11) and dbSTRESS read-only. Each target's statements are stored, a view a major lacks is
/// missing from its counters (never zero), and the report renders in a browser.
#[test]
fn the_oldest_majors_run_every_workload_beside_a_newer_one() {
    let dir = lab_dir("versions");
    let spec = dir.join("versions.toml");
    std::fs::write(
        &spec,
        r#"name = "versions"
runs = 1
duration = "2s"
warmup = "1s"
seed = 3

[[target]]
name = "pg10"
postgres = "10"
settings = { fsync = false }

[[target]]
name = "pg11"
postgres = "11"
settings = { fsync = false }

[[target]]
name = "pg16"
postgres = "16"
settings = { fsync = false }

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
clients = [2]

[[workload]]
name = "sysbench"
scripts = ["oltp_point_select"]
scale = [1]
clients = [2]

[[workload]]
name = "tpcc"
scripts = ["server"]
scale = [1]
clients = [2]

[[workload]]
name = "dbstress"
scripts = ["ro"]
scale = [1000]
clients = [2]
"#,
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let db = dir.join("versions.db");
    for (target, major) in [("pg10", "10."), ("pg11", "11."), ("pg16", "16.")] {
        let cached = download::cached_versions(&stampede::server::host::cache_root());
        if let Some((_, bin_dir)) = cached.into_iter().find(|(v, _)| v.starts_with(major)) {
            let root = dir.join("versions.db.servers").join(target);
            stop_cluster(root, Binaries::at(&bin_dir).ok());
        }
    }
    assert!(output.status.success(), "{}", stderr(&output));
    let targets = sqlite(
        &db,
        "SELECT name, server_version, binary_source FROM targets ORDER BY name",
    );
    let versions: Vec<(&str, &str)> = targets
        .iter()
        .map(|t| (t[0].as_str(), t[1].as_str()))
        .collect();
    for (row, (name, version)) in versions.iter().enumerate() {
        let major = &name[2..];
        assert!(
            version.starts_with(&format!("PostgreSQL {major}.")),
            "{targets:?}"
        );
        assert_eq!(targets[row][2], "zonky (Maven Central)");
    }
    let per_target = |query: &str| -> Vec<(String, f64)> {
        sqlite(&db, query)
            .into_iter()
            .map(|row| (row[0].clone(), number(&row[1])))
            .collect()
    };
    let completed = per_target(
        "SELECT c.target, count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
         WHERE r.status = 'completed' AND r.tps > 0 GROUP BY c.target ORDER BY c.target",
    );
    let five = |name: &str| (name.to_string(), 5.0);
    assert_eq!(completed, vec![five("pg10"), five("pg11"), five("pg16")]);
    // pg_stat_statements on every major (its columns changed names in 13).
    let statements = per_target(
        "SELECT c.target, count(DISTINCT s.query) FROM run_statements s JOIN runs r ON r.id = s.run_id
         JOIN cells c ON c.id = r.cell_id GROUP BY c.target ORDER BY c.target",
    );
    assert_eq!(statements.len(), 3, "{statements:?}");
    for (target, count) in &statements {
        assert!(*count >= 15.0, "{target}: {count} statements");
    }
    // pg_stat_wal arrived in 14: the older majors have no WAL counters at all, not zeros.
    let wal = per_target(
        "SELECT c.target, count(*) FROM run_counters k JOIN runs r ON r.id = k.run_id
         JOIN cells c ON c.id = r.cell_id WHERE k.source = 'pg_stat_wal'
         GROUP BY c.target ORDER BY c.target",
    );
    assert_eq!(wal.len(), 1, "{wal:?}");
    assert_eq!(wal[0].0, "pg16");

    let html = dir.join("versions.html");
    let output = stampede_command(&["report", db.to_str().unwrap(), "-o", html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&html).unwrap();
    for target in ["pg10", "pg11", "pg16"] {
        assert!(text.contains(target), "{target} in the report");
    }
    common::browser::assert_renders(&html, &text);
}

/// A target whose server cannot start: without `--keep-going` the lab stops naming it and the
/// cause; with it, the other target's runs complete and the broken one's are left for resume.
#[test]
fn a_target_that_cannot_start_stops_the_lab_or_is_skipped_with_keep_going() {
    let dir = lab_dir("keep-going");
    let spec = dir.join("broken.toml");
    std::fs::write(
        &spec,
        r#"name = "broken"
runs = 1
duration = "1s"
seed = 5

[[target]]
name = "good"
settings = { fsync = false }

[[target]]
name = "bad"
settings = { shared_buffers = "plenty" }

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1, 2]
"#,
    )
    .unwrap();
    let db = dir.join("broken.db");
    let stop_good = || stop_cluster(dir.join("broken.db.servers/good"), None);

    let stopped = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    stop_good();
    assert_eq!(stopped.status.code(), Some(2), "{}", stderr(&stopped));
    let message = stderr(&stopped);
    assert!(
        message.contains("stampede: error: target \"bad\" ("),
        "{message}"
    );
    assert!(
        message.contains("invalid value for parameter \"shared_buffers\""),
        "{message}"
    );
    assert!(message.contains("shared_buffers"), "{message}");
    let bad_runs =
        "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = 'bad'";
    assert_eq!(sqlite(&db, bad_runs)[0][0], "0");

    let skipped = stampede_command(&["lab", "resume", "--keep-going", spec.to_str().unwrap()])
        .output()
        .unwrap();
    stop_good();
    assert_eq!(skipped.status.code(), Some(2), "{}", stderr(&skipped));
    let message = stderr(&skipped);
    assert!(
        message.contains("target \"bad\" was skipped (2 run(s) not run)"),
        "{message}"
    );
    assert!(message.contains("stampede lab resume"), "{message}");
    assert_eq!(sqlite(&db, bad_runs)[0][0], "0");
    let good = sqlite(
        &db,
        "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = 'good' AND r.status = 'completed'",
    );
    assert_eq!(good[0][0], "2");
}

/// A version Maven Central does not have: exit 1 naming the version, nothing written.
#[test]
fn an_unknown_version_is_refused_before_anything_starts() {
    let dir = lab_dir("unknown-version");
    let spec = dir.join("dl.toml");
    std::fs::write(
        &spec,
        "name = \"dl\"\nruns = 1\nduration = \"1s\"\n[[target]]\nname = \"nope\"\npostgres = \"16.99.0\"\n[[workload]]\nname = \"pgbench\"\nclients = [1]\n",
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "target \"nope\": could not find PostgreSQL 16.99.0 on Maven Central (zonky): it is not published; the newest 16 is 16."
        ),
        "{}",
        stderr(&output)
    );
    assert!(!dir.join("dl.db").exists());
}

/// Results in a shared PostgreSQL database (the test server), given by a URL with a password
/// that appears in nothing stampede writes or prints.
#[test]
fn results_go_to_a_postgresql_database_without_its_password() {
    let server = common::server();
    let results_db = server.create_database("lab_results");
    let dir = lab_dir("pg-results");
    let spec = dir.join("pgres.toml");
    let url = server.url_with_password(&results_db);
    std::fs::write(
        &spec,
        format!(
            "# it's bound, not quoted: \\ ? $1\nname = \"pgres\"\nruns = 2\nduration = \"1s\"\nseed = 8\nresults = \"{url}\"\n[[target]]\nname = \"t\"\nsettings = {{ fsync = false }}\n[[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n"
        ),
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    stop_cluster(dir.join("pgres.servers/t"), None);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!printed.contains(common::PASSWORD), "{printed}");
    assert!(
        printed.contains(&format!("postgresql://{}@127.0.0.1", server.user)),
        "{printed}"
    );
    let query = |sql: &str| server.psql(&results_db, sql);
    assert_eq!(query("SELECT max(version) FROM schema_version"), "15");
    // Each run names the machine it ran on (this one: no shard, no CPU limit here).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(
        query(
            "SELECT m.host, count(*), count(r.shard) FROM runs r JOIN machines m \
             ON m.id = r.machine_id GROUP BY m.host"
        ),
        format!("{}|2|0", host.trim())
    );
    assert_eq!(
        query("SELECT count(*) FROM runs WHERE status = 'completed' AND tps > 0"),
        "2"
    );
    // Every second's transactions add up to the run's, as in SQLite.
    assert_eq!(
        query("SELECT count(*) FROM runs r WHERE r.transactions = (SELECT sum(tps) FROM run_series s WHERE s.run_id = r.id)"),
        "2"
    );
    assert_eq!(
        query("SELECT count(DISTINCT run_id) FROM run_counters WHERE source = 'pg_stat_database'"),
        "2"
    );
    let stored_spec = query("SELECT spec FROM labs");
    assert!(!stored_spec.contains(common::PASSWORD), "{stored_spec}");
    assert!(stored_spec.contains("********"), "{stored_spec}");
    assert!(
        stored_spec.starts_with("# it's bound, not quoted: \\ ? $1\n"),
        "{stored_spec}"
    );
    assert_eq!(
        query("SELECT data_type FROM information_schema.columns WHERE table_name = 'runs' AND column_name = 'tps'"),
        "double precision"
    );
    // The reports read it back through bound parameters, sums (numeric) included.
    let report = stampede_command(&["report", &url, "--base", "t", "--format", "json"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(!stdout(&report).contains(common::PASSWORD));
    let reported = json.to_string();
    assert!(reported.contains("select-only"), "{reported}");
    // Its p99 is the median of the two stored runs', as psql reads them.
    let latency = json["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["target"] == "t")
        .unwrap();
    let stored: Vec<f64> =
        query("SELECT string_agg(p99_ms::text, ',') FROM runs WHERE status = 'completed'")
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect();
    let median = (stored[0] + stored[1]) / 2.0;
    let reported_p99 = latency["p99_ms"].as_f64().unwrap();
    assert!(
        (reported_p99 - median).abs() <= 1e-9 * median,
        "{reported_p99} vs {stored:?}"
    );
}

/// A sysbench workload in a lab: sysbench's options from the spec, tables loaded once, the
/// family of each test stored with its cell, and the statements the server saw per run.
#[test]
fn a_sysbench_workload_runs_in_the_lab() {
    let dir = lab_dir("sysbench");
    let spec = dir.join("sb.toml");
    let write = |options: &str| {
        std::fs::write(
            &spec,
            format!(
                "name = \"sb\"\nruns = 1\nduration = \"2s\"\nwarmup = \"1s\"\nseed = 4\n[[target]]\nname = \"t\"\nsettings = {{ fsync = false }}\n[[workload]]\nname = \"sysbench\"\nscripts = [\"oltp_point_select\", \"oltp_write_only\"]\nscale = [1]\nclients = [2]\noptions = {{ {options} }}\n"
            ),
        )
        .unwrap()
    };
    // Bad options are refused before anything starts.
    write("tables = 0");
    // The error points at the option in the spec.
    assert_lab_refused(
        &spec,
        &format!(
            "{}:14:13: workload \"sysbench\": options: --tables must be at least 1 (not 0)",
            spec.display()
        ),
    );

    write("tables = 2, rand_type = \"uniform\"");
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("sb.db");
    let runs = sqlite(
        &db,
        "SELECT c.script, c.family, r.id, r.transactions FROM runs r JOIN cells c ON c.id = r.cell_id
         WHERE r.status = 'completed' ORDER BY c.script",
    );
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0][0].as_str(), runs[0][1].as_str()),
        ("oltp_point_select", "point")
    );
    assert_eq!(
        (runs[1][0].as_str(), runs[1][1].as_str()),
        ("oltp_write_only", "writes")
    );
    // The server's count of point selects, over both tables, is the driver's transactions
    // (give or take the ones in flight when the window closed).
    let (id, transactions) = (&runs[0][2], number(&runs[0][3]));
    let calls = sqlite(
        &db,
        &format!("SELECT sum(calls), count(*) FROM run_statements WHERE run_id = {id} AND query LIKE 'SELECT c FROM sbtest_ WHERE id=$1'"),
    );
    assert_eq!(calls[0][1], "2", "one statement per table: {calls:?}");
    let extra = number(&calls[0][0]) - transactions;
    assert!((0.0..=2.0).contains(&extra), "{extra}");

    // `lab clean` removes the clusters, stopping one left running, and keeps the results.
    let servers = dir.join("sb.db.servers");
    let cluster = Cluster {
        binaries: Binaries::find_best().unwrap(),
        root: servers.join("t"),
        port: common::free_port(),
        run_as: OsUser::for_server().expect("server user"),
        cpus: None,
    };
    cluster.start().expect("the lab's cluster starts again");
    let pid = std::fs::read_to_string(cluster.data_dir().join("postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap().trim().to_string();
    let cleaned = stampede_command(&["lab", "clean", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let said = common::succeeded(cleaned);
    assert!(
        said.contains(&format!(
            "removed {}: 1 server folder(s), ",
            servers.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(", 1 running server(s) stopped first; the results"),
        "{said}"
    );
    assert!(!servers.exists());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still runs"
    );
    let compared = stampede_command(&["report", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(compared.status.success(), "{}", stderr(&compared));
    let again = stampede_command(&["lab", "clean", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(common::succeeded(again).starts_with("nothing to clean: "));
}

/// The microbench suite in the lab: its steps run in order on one data copy per target, the
/// targets interleaved step by step, postwrite where writes meet reads, and a resume runs an
/// unfinished sequence again from its first step.
#[test]
fn the_microbench_suite_runs_as_one_sequence_per_target() {
    let dir = lab_dir("microbench");
    let spec = dir.join("mb.toml");
    std::fs::write(
        &spec,
        "name = \"mb\"\nruns = 1\nduration = \"1s\"\nwarmup = \"0s\"\nseed = 5\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[target]]\nname = \"b\"\nsettings = { fsync = false, work_mem = \"8MB\" }\n\
         [[workload]]\nname = \"sysbench-microbench\"\n\
         scripts = [\"update-index_range=100\", \"scan_range=100\", \"delete_range=100\"]\n\
         scale = [1]\nclients = [2]\noptions = { tables = 1, postwrite_settle = 0 }\n",
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    let db = dir.join("mb.db");
    let order = |db: &Path| {
        sqlite(
            db,
            "SELECT c.target, c.script, c.family, r.id FROM runs r JOIN cells c ON c.id = r.cell_id
             WHERE r.status = 'completed' ORDER BY r.position",
        )
    };
    let runs = order(&db);
    let steps: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("a", "update-index_range=100"),
            ("b", "update-index_range=100"),
            ("a", "scan_range=100"),
            ("b", "scan_range=100"),
            ("a", "delete_range=100"),
            ("b", "delete_range=100"),
        ],
        "{log}"
    );
    assert_eq!(runs[0][2], "writes");
    assert_eq!(runs[2][2], "range, no aggregation");
    // Postwrite once per target, right before its scan (a read after writes), not before delete.
    let lines: Vec<&str> = log.lines().collect();
    let postwrites: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i].starts_with(
                "postwrite: VACUUM (ANALYZE, INDEX_CLEANUP ON), CHECKPOINT, settle 0 s",
            )
        })
        .collect();
    assert_eq!(postwrites.len(), 2, "{log}");
    for (i, target) in postwrites.iter().zip(["a", "b"]) {
        assert!(
            lines[i - 1].contains(&format!(
                "{target}/sysbench-microbench/scan_range=100/1/2 rep 1"
            )),
            "{log}"
        );
    }

    // Lose target a's middle step: a resume runs a's whole sequence again, b's not at all.
    let scan_a = &runs[2][3];
    for table in [
        "run_series",
        "run_counters",
        "run_statements",
        "run_counter_series",
        "run_wait_events",
        "run_metrics",
    ] {
        sqlite(&db, &format!("DELETE FROM {table} WHERE run_id = {scan_a}"));
    }
    sqlite(&db, &format!("DELETE FROM runs WHERE id = {scan_a}"));
    let output = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(
        log.contains("resuming: 3 of 6 runs already finished"),
        "{log}"
    );
    let again = order(&db);
    assert_eq!(again.len(), 6, "{again:?}");
    let ids = |rows: &[Vec<String>], target: &str| -> Vec<i64> {
        rows.iter()
            .filter(|r| r[0] == target)
            .map(|r| r[3].parse().unwrap())
            .collect()
    };
    assert_eq!(ids(&again, "b"), ids(&runs, "b"));
    let old_max = ids(&runs, "b")
        .into_iter()
        .chain(ids(&runs, "a"))
        .max()
        .unwrap();
    assert!(ids(&again, "a").iter().all(|id| *id > old_max), "{again:?}");
    assert_eq!(
        sqlite(&db, "SELECT count(*) FROM runs")[0][0],
        "6",
        "the replaced steps' old results are gone"
    );
}

/// TPROC-C in the lab: built once per target and warehouse count (every run on a fresh copy, as
/// for any writing workload), the procedures' calls in the run's statements matching the
/// driver's transactions.
#[test]
fn a_tpcc_workload_runs_in_the_lab() {
    let dir = lab_dir("tpcc");
    let spec = dir.join("tpcc.toml");
    let write = |options: &str| {
        std::fs::write(
            &spec,
            format!(
                "name = \"tpcc\"\nruns = 1\nduration = \"2s\"\nwarmup = \"1s\"\nseed = 4\n[[target]]\nname = \"t\"\nsettings = {{ fsync = false }}\n[[workload]]\nname = \"tpcc\"\nscripts = [\"server\", \"client\"]\nscale = [1]\nclients = [2]\nprotocol = \"prepared\"\noptions = {{ {options} }}\n"
            ),
        )
        .unwrap()
    };
    write("mix = \"40,40,10,5\"");
    assert_lab_refused(&spec, &format!("{}:15:13: workload \"tpcc\": options: --mix \"40,40,10,5\": give five weights summing to 100 (New-Order, Payment, Order-Status, Delivery, Stock-Level) or hammerdb", spec.display()));
    write("rules = \"tpcc\"");
    assert_lab_refused(&spec, &format!("{}:15:13: workload \"tpcc\": options: rules \"tpcc\": the rules are hammerdb (HammerDB's values and inputs) and tpc-c (the specification's)", spec.display()));
    write("home_warehouses = \"random\", all_warehouses = true");
    assert_lab_refused(&spec, &format!("{}:15:13: workload \"tpcc\": options: home_warehouses applies to home warehouses; with all warehouses every transaction picks its own", spec.display()));

    // Prepared calls: before PostgreSQL 16 pg_stat_statements keeps each simple CALL's
    // literals apart, one entry per call.
    write("mix = \"hammerdb\"");
    let bmf = dir.join("tpcc-bmf.json");
    let export = format!("bmf={}", bmf.display());
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap(), "--export", &export])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("tpcc.db");
    let runs = sqlite(
        &db,
        "SELECT c.script, r.id, r.transactions, r.duration_s FROM runs r JOIN cells c ON c.id = r.cell_id
         WHERE r.status = 'completed' ORDER BY c.script",
    );
    assert_eq!(runs.len(), 2, "{runs:?}");
    let calls = |run: &str, pattern: &str| {
        let rows = sqlite(
            &db,
            &format!("SELECT coalesce(sum(calls), 0) FROM run_statements WHERE run_id = {run} AND query LIKE '{pattern}'"),
        );
        number(&rows[0][0])
    };
    let metric = |run: &str, name: &str| {
        let rows = sqlite(
            &db,
            &format!("SELECT value FROM run_metrics WHERE run_id = {run} AND name = '{name}'"),
        );
        number(&rows[0][0])
    };
    for run in &runs {
        let (id, transactions, minutes) = (&run[1], number(&run[2]), number(&run[3]) / 60.0);
        assert!(transactions > 0.0);
        let new_orders = metric(id, "nopm") * minutes;
        assert!(
            new_orders > 0.0 && (new_orders - new_orders.round()).abs() < 1e-6,
            "{new_orders}"
        );
        // TPM counts every database's commits and rollbacks: at least the run's transactions.
        assert!(metric(id, "tpm") * minutes >= transactions, "{run:?}");
        if run[0] == "server" {
            // One CALL per transaction (give or take the ones in flight when the window closed).
            let extra = calls(id, "CALL %") - transactions;
            assert!((0.0..=2.0).contains(&extra), "{extra}");
            assert!(calls(id, "CALL neword%") >= new_orders);
        } else {
            assert_eq!(run[0], "client");
            assert_eq!(calls(id, "CALL %"), 0.0);
            // Every New-Order sends its lines in one statement after its header; all but the
            // ones rolled back (1% unused items, which pg_stat_statements cannot count: it
            // does not track a prepared ROLLBACK) commit.
            let headers = calls(id, "WITH district_update AS (UPDATE district%");
            let line_sets = calls(id, "WITH lines AS (%");
            assert!(
                line_sets <= headers,
                "{line_sets} line sets, {headers} headers"
            );
            assert!(
                (line_sets * 0.95 - 2.0..=line_sets).contains(&new_orders),
                "{new_orders} New-Orders, {line_sets} line sets"
            );
        }
    }
    let reported = stampede_command(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "t",
        "--metric",
        "nopm",
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    assert!(reported.status.success(), "{}", stderr(&reported));
    let report: serde_json::Value = serde_json::from_slice(&reported.stdout).unwrap();
    let client_nopm = report["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["cell"]["script"] == "client")
        .map(|s| s["median"].as_f64().unwrap());
    assert_eq!(client_nopm, Some(metric(&runs[0][1], "nopm")), "{report}");
    // `--export bmf=PATH`: each cell's one run, its NOPM without bounds (one run has none).
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bmf).unwrap()).unwrap();
    for run in &runs {
        let measure = &exported[format!("t/tpcc/{}/1/2", run[0])]["nopm"];
        assert_eq!(
            measure["value"].as_f64(),
            Some(metric(&run[1], "nopm")),
            "{exported}"
        );
        assert!(measure.get("lower_value").is_none(), "{exported}");
    }
}

/// Study 002's workloads in the lab: the analytics queries a cell each (family "analytics", no
/// data copy per run: they only read), each run's statements holding its query as many times
/// as the driver ran it; pgbench over the extra indexes beside them; a bad query is refused.
#[test]
fn study_002s_workloads_run_in_the_lab() {
    let dir = lab_dir("study002");
    let spec = dir.join("study002.toml");
    let write = |queries: &str| {
        std::fs::write(
            &spec,
            format!(
                "name = \"study002\"\nruns = 1\nduration = \"1s\"\n[[target]]\nname = \"t\"\nsettings = {{ fsync = false }}\n\
                 [[workload]]\nname = \"analytics\"\n{queries}scale = [1]\nclients = [1]\n\
                 [[workload]]\nname = \"pgbench-extra-indexes\"\nscripts = [\"simple-update\"]\nscale = [1]\nclients = [1]\n"
            ),
        )
        .unwrap()
    };
    write("scripts = [\"analytics-q5\"]\n");
    assert_lab_refused(&spec, &format!("{}:9:12: workload \"analytics\": unknown query \"analytics-q5\"; the queries are: analytics-q1, analytics-q2, analytics-q3, analytics-q4", spec.display()));

    write("");
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("study002.db");
    let runs = sqlite(
        &db,
        "SELECT c.workload, c.script, c.family, r.id, r.transactions FROM runs r
         JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed' ORDER BY c.workload, c.script",
    );
    let cells: Vec<(&str, &str, &str)> = runs
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("analytics", "analytics-q1", "analytics"),
            ("analytics", "analytics-q2", "analytics"),
            ("analytics", "analytics-q3", "analytics"),
            ("analytics", "analytics-q4", "analytics"),
            ("pgbench-extra-indexes", "simple-update", "write"),
        ]
    );
    for (run, table) in runs.iter().take(4).zip([
        "pgbench_branches",
        "COUNT(DISTINCT aid)",
        "pgbench_accounts_copy USING (aid) WHERE aid % $1 = $2",
        "sum(a.abalance)",
    ]) {
        let calls = sqlite(
            &db,
            &format!(
                "SELECT coalesce(sum(calls), 0) FROM run_statements WHERE run_id = {} AND query LIKE '%{table}%'",
                run[3]
            ),
        );
        let extra = number(&calls[0][0]) - number(&run[4]);
        // Give or take the query in flight when the window closed.
        assert!((0.0..=1.0).contains(&extra), "{run:?}: {extra}");
    }
}

/// dbSTRESS in the lab: prepared once per target and object count; a read+write cell whose
/// stored statements hold the writes in the ratio asked for; a bad option is refused.
#[test]
fn a_dbstress_workload_runs_in_the_lab() {
    let dir = lab_dir("dbstress");
    let spec = dir.join("dbstress.toml");
    let write = |options: &str| {
        std::fs::write(
            &spec,
            format!(
                "name = \"dbstress\"\nruns = 1\nduration = \"2s\"\n[[target]]\nname = \"t\"\nsettings = {{ fsync = false }}\n\
                 [[workload]]\nname = \"dbstress\"\nscripts = [\"rw\"]\nscale = [1000]\nclients = [2]\noptions = {{ {options} }}\n"
            ),
        )
        .unwrap()
    };
    write("rw_ratio = 0");
    assert_lab_refused(
        &spec,
        &format!(
            "{}:12:13: workload \"dbstress\": options: rw_ratio = \"0\": give a whole number from 1",
            spec.display()
        ),
    );
    write("rw_ratio = 3, anti_dead = true");
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("dbstress.db");
    let runs = sqlite(
        &db,
        "SELECT c.family, r.id, r.transactions FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed'",
    );
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0][0], "read+write");
    let calls = |pattern: &str| {
        number(
            &sqlite(
                &db,
                &format!(
                    "SELECT coalesce(sum(calls), 0) FROM run_statements WHERE run_id = {} AND query LIKE '{pattern}'",
                    runs[0][1]
                ),
            )[0][0],
        )
    };
    let transactions = number(&runs[0][2]);
    let reads = calls("SELECT S.REF, S.NAME, Z.REF%");
    assert!(
        (transactions..=transactions + 2.0).contains(&reads),
        "{reads} of {transactions}"
    );
    let writes = calls("UPDATE history1%");
    assert!(
        (transactions / 3.0 - 2.0..=transactions / 3.0 + 1.0).contains(&writes),
        "{writes} writes of {transactions}"
    );
}

/// Study 004's example end to end at a tiny size: every target it names (10.23 as the base
/// against 11 … 18, zonky builds), three of the suite's microbenchmarks (a write, a point
/// query, a scan) for one second each, no settling after postwrite; then its report.
#[test]
fn the_study_004_example_runs_end_to_end_at_a_tiny_size() {
    let dir = lab_dir("study004");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/study004-microbench-versions.toml");
    let text = std::fs::read_to_string(example).unwrap();
    let tiny = [
        ("duration = \"20s\"", "duration = \"1s\""),
        ("warmup = \"5s\"", "warmup = \"0s\""),
        ("runs = 3", "runs = 1"),
        // The example's claims name hot-points and the range tests without aggregation (scan).
        ("scale = [10]", "scale = [1]\nscripts = [\"update-index_range=100\", \"point-query_range=100\", \"scan_range=100\", \"hot-points_range=100\"]"),
        ("options = { tables = 1 }", "options = { tables = 1, postwrite_settle = 0 }"),
    ]
    .iter()
    .fold(text, |text, (from, to)| {
        assert!(text.contains(from), "the example has {from}");
        text.replace(from, to)
    });
    let spec = dir.join("study004-microbench-versions.toml");
    std::fs::write(&spec, tiny).unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let db = dir.join("study004-microbench-versions.db");
    let majors = ["10", "11", "12", "13", "14", "15", "16", "17", "18"];
    let cached = download::cached_versions(&stampede::server::host::cache_root());
    for major in majors {
        let bin = cached
            .iter()
            .find(|(v, _)| v.starts_with(&format!("{major}.")))
            .and_then(|(_, bin)| Binaries::at(bin).ok());
        let root = dir
            .join("study004-microbench-versions.db.servers")
            .join(format!("pg{major}"));
        stop_cluster(root, bin);
    }
    assert!(output.status.success(), "{}", stderr(&output));
    let completed = sqlite(
        &db,
        "SELECT c.target, count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
         WHERE r.status = 'completed' AND r.tps > 0 GROUP BY c.target ORDER BY c.target",
    );
    let expected: Vec<Vec<String>> = majors
        .iter()
        .map(|major| vec![format!("pg{major}"), "4".to_string()])
        .collect();
    assert_eq!(completed, expected);
    let base = sqlite(
        &db,
        "SELECT server_version FROM targets WHERE name = 'pg10'",
    );
    assert!(base[0][0].starts_with("PostgreSQL 10.23 "), "{base:?}");

    let report = dir.join("study004.md");
    let output = stampede_command(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "pg10",
        "-o",
        report.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&report).unwrap();
    for major in majors {
        assert!(
            text.contains(&format!("pg{major}")),
            "pg{major} in the report"
        );
    }
    // The example's claims come first; one round gives no interval, so none is decided.
    let claims_at = text.find("## Claims").expect("a Claims section");
    assert!(claims_at < text.find("Method:").unwrap(), "{text}");
    assert_eq!(
        text.matches("undecided: one round: an interval needs two")
            .count(),
        3,
        "{text}"
    );
}

/// A run whose script fails on a live server is recorded as failed (the lab asks the server
/// whether it is still up, which it is) and the lab goes on with the next run. A run whose
/// script stalls (`\sleep` longer than a second) is flagged in the report's Noise section with
/// its stalled seconds, and the report renders in Chromium with its drift charts.
#[test]
fn a_failing_script_is_recorded_as_a_failed_run_and_the_lab_goes_on() {
    let dir = lab_dir("failing-script");
    std::fs::write(dir.join("div.sql"), "SELECT 1/0;\n").unwrap();
    std::fs::write(dir.join("stall.sql"), "\\sleep 2000 ms\nSELECT 1;\n").unwrap();
    // Client 0 sleeps 20 ms a transaction, the other three do not: an uneven run.
    std::fs::write(
        dir.join("slow0.sql"),
        "\\if :client_id = 0\n\\sleep 20 ms\n\\endif\nSELECT 1;\n",
    )
    .unwrap();
    let spec = dir.join("f.toml");
    std::fs::write(
        &spec,
        "name = \"f\"\nruns = 1\nduration = \"3s\"\nseed = 2\n[[target]]\nname = \"t\"\nsettings = { fsync = false }\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"div.sql\", \"select-only\", \"stall.sql\"]\nclients = [1]\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"slow0.sql\"]\nclients = [4]\n",
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    stop_cluster(dir.join("f.db.servers/t"), Binaries::find_best().ok());
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    // The run order is shuffled by the seed, so the failed run may carry an ETA.
    assert!(
        log.lines().any(|line| line.contains("div.sql/1/1 rep 1")
            && line.ends_with("... failed: 1 client(s) aborted")),
        "{log}"
    );
    assert!(
        log.contains("stampede: 1 run(s) failed; their errors are in "),
        "{log}"
    );
    let db = dir.join("f.db");
    let runs = sqlite(
        &db,
        "SELECT c.script LIKE '%div.sql', r.status FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY 1 DESC",
    );
    assert_eq!(
        runs,
        [
            ["1", "failed"],
            ["0", "completed"],
            ["0", "completed"],
            ["0", "completed"]
        ]
    );
    // Each completed run stored how evenly it served its clients: the one-client runs evenly,
    // the slow-client run not, and its per-client counts add up to its transactions.
    let served = sqlite(
        &db,
        "SELECT r.id, c.clients, r.fairness_index < 0.8, r.fairness_index = 1, \
         r.client_txn_min * 10 < r.client_txn_max, r.client_txn_min <= r.client_txn_median \
         FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed' ORDER BY c.clients",
    );
    assert_eq!(served.len(), 3, "{served:?}");
    assert!(
        served[..2].iter().all(|row| row[1..4] == ["1", "0", "1"]),
        "{served:?}"
    );
    assert_eq!(served[2][1..], ["4", "1", "0", "1", "1"], "{served:?}");
    let uneven_run = &served[2][0];
    // The stalled seconds, as the stored series has them (a transaction every 2 s leaves
    // some whole seconds without one).
    let stalled: Vec<String> = sqlite(
        &db,
        "SELECT s.second FROM run_series s JOIN runs r ON r.id = s.run_id JOIN cells c ON c.id = r.cell_id \
         WHERE c.script LIKE '%stall.sql' AND s.tps = 0 ORDER BY s.second",
    )
    .into_iter()
    .map(|row| row[0].clone())
    .collect();
    assert!(!stalled.is_empty(), "no stalled second stored");
    let html = dir.join("f.html");
    let output = stampede_command(&["report", db.to_str().unwrap(), "-o", html.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    let cause = format!(
        "a stall: {} second(s) without a transaction (second {}",
        stalled.len(),
        stalled[0]
    );
    assert!(page.contains(&cause), "{cause}");
    assert!(page.contains(r#"<h3 class="drift">Drift: "#));
    let warning =
        format!("1 run(s) served their clients unevenly: run {uneven_run} (&quot;t&quot; pgbench ");
    assert!(page.contains(&warning), "{warning}");
    common::browser::assert_renders(&html, &page);
}

/// `runs = "auto"` on two identical targets: each round runs both, the cell stops once its
/// paired interval is within the precision (from round 5 on), the database says why and after
/// how many rounds; a lab interrupted in round 3 resumes its rounds from the stored ones, and a
/// second `lab resume` makes the same decision and runs nothing more. Then `compare` and
/// `lab calibrate` on it.
#[test]
fn an_auto_lab_stops_a_cell_when_its_ratio_is_decided_and_resume_agrees() {
    let dir = lab_dir("auto");
    let spec = dir.join("auto.toml");
    std::fs::write(
        &spec,
        "name = \"auto\"\nruns = \"auto\"\nprecision = \"99%\"\nmax_runs = 8\nduration = \"1s\"\nseed = 3\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[target]]\nname = \"b\"\nsettings = { fsync = false }\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n",
    )
    .unwrap();
    let plan = stampede_command(&["lab", "plan", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stdout(&plan).contains("2 cells × at most 8 runs = at most 16 runs"),
        "{}",
        stdout(&plan)
    );
    // A process spinning beside the lab: the Noise section must count its CPU as other
    // processes' (checked at the end against its own CPU time).
    let spinner = Spinner::start();
    // SIGTERM in round 3; `lab resume` goes on with the rounds from the stored ones.
    let (status, interrupted) =
        common::interrupt_when(&["lab", "run", spec.to_str().unwrap()], "run 5/");
    assert_eq!(status.code(), Some(2), "{interrupted}");
    assert!(
        interrupted.contains("runs = \"auto\": each cell runs round after round until every target's tps ratio to \"a\" is known to ±99% (95% interval, from round 5 on), at most 8 rounds"),
        "{interrupted}"
    );
    let output = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let resumed = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let spinner_share = spinner.stop();
    for target in ["a", "b"] {
        stop_cluster(dir.join(format!("auto.db.servers/{target}")), None);
    }
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(
        log.contains("resuming: 4 of 16 runs already finished"),
        "{log}"
    );
    let db = dir.join("auto.db");
    let cells = sqlite(&db, "SELECT key, stopped, rounds FROM cells ORDER BY key");
    assert_eq!(cells.len(), 2);
    let (stopped, rounds) = (cells[0][1].clone(), cells[0][2].clone());
    for cell in &cells {
        assert_eq!((&cell[1], &cell[2]), (&stopped, &rounds), "{cells:?}");
    }
    let rounds: usize = rounds.parse().unwrap();
    // On a quiet machine 1 s runs reach ±99% by round 5; beside the rest of the suite they may
    // swing 3× and reach the cap. Either way the lab must say so, store it, and stop there.
    let said = match stopped.as_str() {
        "precision" => {
            assert!((5..=8).contains(&rounds), "{rounds}");
            "decided: pgbench/select-only/1/1 to ±"
        }
        "cap" => {
            assert_eq!(rounds, 8);
            "stopped at the cap: pgbench/select-only/1/1 at ±"
        }
        other => panic!("stopped by {other}\n{log}"),
    };
    assert!(
        log.contains(said) && log.contains(&format!("after {rounds} rounds")),
        "{log}"
    );
    // Every round ran both targets; none ran after the decision.
    let runs = sqlite(
        &db,
        "SELECT c.target, count(*), max(r.repetition) FROM runs r JOIN cells c ON c.id = r.cell_id \
         WHERE r.status = 'completed' GROUP BY c.target ORDER BY c.target",
    );
    let expected: Vec<Vec<String>> = ["a", "b"]
        .iter()
        .map(|t| vec![t.to_string(), rounds.to_string(), (rounds - 1).to_string()])
        .collect();
    assert_eq!(runs, expected);
    // The precision it printed, from the stored tps: the t interval of ln(b / a) per round,
    // with scipy's t.ppf(0.975, df).
    let tps = sqlite(
        &db,
        "SELECT a.tps, b.tps FROM runs a JOIN cells ca ON ca.id = a.cell_id \
         JOIN runs b ON b.repetition = a.repetition JOIN cells cb ON cb.id = b.cell_id \
         WHERE ca.target = 'a' AND cb.target = 'b' AND a.status = 'completed' \
         AND b.status = 'completed' ORDER BY a.repetition",
    );
    let logs: Vec<f64> = tps
        .iter()
        .map(|pair| (number(&pair[1]) / number(&pair[0])).ln())
        .collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let sd = (logs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let t = [
        2.7764451051977934,
        2.5705818356363146,
        2.4469118511449786,
        2.364624251592784,
    ][logs.len() - 5];
    let precision = (t * sd / n.sqrt()).exp() - 1.0;
    assert!(
        log.contains(&format!("±{:.1}% after {rounds} rounds", precision * 100.0)),
        "±{:.1}%: {log}",
        precision * 100.0
    );
    assert!(log.contains("(ETA ≤ "), "{log}");
    let resumed_log = stderr(&resumed);
    assert!(resumed.status.success(), "{resumed_log}");
    assert!(
        resumed_log.contains(said) && !resumed_log.contains(" rep "),
        "{resumed_log}"
    );
    let total = sqlite(&db, "SELECT count(*) FROM runs WHERE status = 'completed'");
    assert_eq!(total[0][0], (2 * rounds).to_string());

    // `compare` says how far each cell was measured and why it stopped.
    let compared = stampede_command(&["compare", db.to_str().unwrap(), "a", "b"])
        .output()
        .unwrap();
    let text = stdout(&compared);
    assert!(
        text.contains(&format!("{rounds} pairs"))
            && text.contains(&format!("{stopped} after {rounds} rounds")),
        "{text}"
    );
    assert!(
        text.starts_with("b against a on pgbench: ")
            && text.contains(&format!("±{:.1}%", precision * 100.0)),
        "{text}"
    );

    // `lab calibrate`: "a" against an identical twin, 3 paired rounds; the printed spread is
    // the sd of the stored rounds' ln(twin / a), and `lab plan` estimates from it.
    let calibrated =
        stampede_command(&["lab", "calibrate", spec.to_str().unwrap(), "--rounds", "3"])
            .output()
            .unwrap();
    for target in ["a", "a-twin"] {
        stop_cluster(
            dir.join(format!("auto.db.servers/calibration/{target}")),
            None,
        );
    }
    assert!(calibrated.status.success(), "{}", stderr(&calibrated));
    let pairs = sqlite(
        &db,
        "SELECT a.tps, b.tps FROM runs a JOIN cells ca ON ca.id = a.cell_id \
         JOIN runs b ON b.repetition = a.repetition JOIN cells cb ON cb.id = b.cell_id \
         JOIN labs l ON l.id = ca.lab_id AND l.id = cb.lab_id \
         WHERE l.name = 'auto (calibration)' AND ca.target = 'a' AND cb.target = 'a-twin' \
         AND a.status = 'completed' AND b.status = 'completed' ORDER BY a.repetition",
    );
    assert_eq!(pairs.len(), 3, "{pairs:?}");
    let logs: Vec<f64> = pairs
        .iter()
        .map(|pair| (number(&pair[1]) / number(&pair[0])).ln())
        .collect();
    let mean = logs.iter().sum::<f64>() / 3.0;
    let sd = (logs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let stored = sqlite(
        &db,
        "SELECT lab_name, workload, script, clients, rounds, log_ratio_sd FROM calibrations",
    );
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0][..5], ["auto", "pgbench", "select-only", "1", "3"]);
    assert!(
        (number(&stored[0][5]) - sd).abs() < 1e-9,
        "{stored:?} vs {sd}"
    );
    let table = stdout(&calibrated);
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("pgbench"))
        .unwrap_or_else(|| panic!("{table}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        row[5],
        format!("{:.1}%", (sd.exp() - 1.0) * 100.0),
        "{table}"
    );
    // The change a lab of the spec's 8 runs detects (80% power): (t.975 + t.8 at 7 df, scipy
    // t.ppf) · sd / √8; and the rounds ±99% needs: the first n from 5 whose t interval fits.
    let detectable = ((2.364624251592784 + 0.8960296443137515) * sd / 8f64.sqrt()).exp() - 1.0;
    assert_eq!(row[7], format!("{:.1}%", detectable * 100.0), "{table}");
    let needed = (5..=8usize)
        .find(|&n| {
            let t = [
                2.7764451051977934,
                2.5705818356363146,
                2.4469118511449786,
                2.364624251592784,
            ][n - 5];
            (t * sd / (n as f64).sqrt()).exp() - 1.0 <= 0.99
        })
        .map_or("> 8".to_string(), |n| n.to_string());
    assert_eq!(row[8..].join(" "), needed, "{table}");
    let plan = stampede_command(&["lab", "plan", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stdout(&plan).contains("with the stored calibration (1 s runs): about "),
        "{}",
        stdout(&plan)
    );
    // The calibration lab stored beside the lab does not make `report` ask which lab.
    let report = stampede_command(&["report", db.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(stdout(&report).contains("\"lab\": \"auto\""));
    // Other processes' CPU during the runs: at least the spinner's share of the machine (the
    // rest of the suite running beside may add to it), less slack for the time between runs.
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let other = json["noise"]["cells"][0]["other_processes_cpu_pct"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", json["noise"]));
    assert!(
        other >= 50.0 * spinner_share && other <= 100.0,
        "other processes {other}% against the spinner's {:.1}%",
        spinner_share * 100.0
    );
}

/// A real difference: the same server with index scans turned off, so that select-only reads
/// the whole of pgbench_accounts for each transaction (hundreds of times the work: a difference
/// no contention on a shared CI machine can hide). The auto lab decides it "slower" with the
/// interval below 1, stores why the cell stopped and after how many rounds, and the report's
/// ratio and headline agree with the stored tps.
/// An auto lab `name` (at most 6 rounds of 1 s, and `extra` lines) of select-only at 2 clients
/// on "indexed" and on "seqscan" (the same server with index scans off), run to its end: its
/// folder, results database and output.
fn run_index_scan_auto_lab(name: &str, extra: &str) -> (LabDir, PathBuf, std::process::Output) {
    let (dir, spec) = lab_with_spec(
        &format!("auto-{name}"),
        &format!(
            "name = \"{name}\"\nruns = \"auto\"\nmax_runs = 6\nduration = \"1s\"\nseed = 5\n{extra}\n\
             [[target]]\nname = \"indexed\"\nsettings = {{ fsync = false }}\n\
             [[target]]\nname = \"seqscan\"\n\
             settings = {{ fsync = false, enable_indexscan = false, enable_bitmapscan = false, enable_indexonlyscan = false }}\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\n"
        ),
    );
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    for target in ["indexed", "seqscan"] {
        stop_cluster(dir.join(format!("{name}.db.servers/{target}")), None);
    }
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join(format!("{name}.db"));
    (dir, db, output)
}

#[test]
fn an_auto_lab_decides_a_real_difference_in_its_direction() {
    let (_dir, db, _) = run_index_scan_auto_lab("ab", "precision = \"15%\"");
    let cells = sqlite(&db, "SELECT DISTINCT stopped, rounds FROM cells");
    assert_eq!(cells.len(), 1, "{cells:?}");
    let rounds: usize = cells[0][1].parse().unwrap();
    match cells[0][0].as_str() {
        "precision" => assert!((5..=6).contains(&rounds), "{cells:?}"),
        "cap" => assert_eq!(rounds, 6),
        other => panic!("stopped by {other}"),
    }
    let report = stampede_command(&["report", db.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let cell = &json["comparisons"][0]["cells"][0];
    assert_eq!(cell["verdict"], "slower", "{cell}");
    assert_eq!(cell["pairs"], rounds, "{cell}");
    // The ratio from the stored tps: the geometric mean of the rounds' seqscan / indexed.
    let tps = sqlite(
        &db,
        "SELECT a.tps, b.tps FROM runs a JOIN cells ca ON ca.id = a.cell_id \
         JOIN runs b ON b.repetition = a.repetition JOIN cells cb ON cb.id = b.cell_id \
         WHERE ca.target = 'indexed' AND cb.target = 'seqscan' AND a.status = 'completed' \
         AND b.status = 'completed'",
    );
    let mean_log = tps
        .iter()
        .map(|pair| (number(&pair[1]) / number(&pair[0])).ln())
        .sum::<f64>()
        / tps.len() as f64;
    let ratio = cell["ratio"].as_f64().unwrap();
    assert!((ratio - mean_log.exp()).abs() < 1e-9, "{cell} vs {tps:?}");
    assert!(cell["ci_high"].as_f64().unwrap() < 1.0, "{cell}");
    assert!(
        json["headline"][0].as_str().is_some_and(|h| h
            .starts_with("seqscan against indexed on pgbench: tps 0.")
            && h.contains(&format!(" {rounds} rounds)"))),
        "{}",
        json["headline"]
    );
}

/// `decide_on = "server_cpu"`: the rounds are judged on the server's CPU per transaction. With
/// a precision the CPU reaches and tps does not (a sequential scan's throughput wobbles with
/// its buffer reads; its CPU per scan is steady), the cell stops at the precision, and the
/// interval the stop read is the server_cpu one.
#[test]
fn an_auto_lab_decides_on_server_cpu_when_asked() {
    let (_dir, db, output) =
        run_index_scan_auto_lab("cpu", "precision = \"20%\"\ndecide_on = \"server_cpu\"");
    assert!(
        stderr(&output).contains("until every target's server_cpu ratio to \"indexed\""),
        "{}",
        stderr(&output)
    );
    let cells = sqlite(&db, "SELECT DISTINCT stopped, rounds FROM cells");
    let rounds: usize = cells[0][1].parse().unwrap();
    let report = stampede_command(&[
        "report",
        db.to_str().unwrap(),
        "--format",
        "json",
        "--metric",
        "server_cpu",
    ])
    .output()
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let cell = &json["comparisons"][0]["cells"][0];
    assert_eq!(cell["pairs"], rounds, "{cell}");
    // A scan of the whole table costs the server more CPU per transaction than one lookup.
    assert_eq!(cell["verdict"], "slower", "{cell}");
    let precision = cell["precision"].as_f64().unwrap();
    match cells[0][0].as_str() {
        "precision" => assert!(precision <= 0.20 && (5..=6).contains(&rounds), "{cell}"),
        "cap" => assert!(precision > 0.20 && rounds == 6, "{cell}"),
        other => panic!("stopped by {other}"),
    }
}

/// A lab `name` of two runs of `duration` with `stall_timeout = "2s"`, two clients of
/// select-only, started and watched until its first run's two sessions are running (their
/// backends' pids returned).
fn start_a_lab_to_stall(
    name: &str,
    duration: &str,
) -> (LabDir, std::process::Child, common::Watch, Vec<i32>) {
    let (dir, spec) = lab_with_spec(
        name,
        &format!(
            "name = \"{name}\"\nruns = 2\nduration = \"{duration}\"\nstall_timeout = \"2s\"\n\
             [[target]]\nname = \"a\"\nsettings = {{ fsync = false }}\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\n"
        ),
    );
    let mut child = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let progress = common::Watch::new(child.stderr.take().unwrap());
    let data = dir.join(format!("{name}.db.servers/a/data"));
    let mut pids = Vec::new();
    wait_until("the first run's two sessions", || {
        pids = common::lab_session_pids(&data, "query ~ '^SELECT abalance'");
        pids.len() == 2
    });
    (dir, child, progress, pids)
}

/// The watchdog in a lab: the first run's backends are stopped (SIGSTOP, a server that hangs);
/// after `stall_timeout` the run is recorded failed with "no progress" and what the sampler
/// saw, and the lab goes on: the next run completes.
#[test]
fn a_lab_run_whose_server_hangs_fails_and_the_lab_goes_on() {
    let (dir, mut child, mut progress, pids) = start_a_lab_to_stall("stall", "6s");
    let frozen = common::Frozen::stop(pids);
    progress.wait_for("no progress for 2 s");
    drop(frozen);
    let status = child.wait().unwrap();
    let log = progress.finish();
    stop_cluster(dir.join("stall.db.servers/a"), None);
    assert!(status.success(), "{log}");
    let error = first_run_abandoned_second_completed(&dir, "stall");
    assert!(error.contains("; the sampler saw "), "{error}");
}

/// The pid a cluster's postmaster wrote in its data directory.
fn postmaster_pid(data: &Path) -> i32 {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).unwrap();
    text.lines().next().unwrap().parse().unwrap()
}

/// The error of a two-run stall lab's first run, after checking the watchdog ended that run
/// and the second completed.
fn first_run_abandoned_second_completed(dir: &Path, name: &str) -> String {
    let runs = sqlite(
        &dir.join(format!("{name}.db")),
        "SELECT repetition, status, error FROM runs ORDER BY repetition",
    );
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0][1], "failed", "{runs:?}");
    assert_eq!(runs[1][1], "completed", "{runs:?}");
    assert!(
        runs[0][2].starts_with(
            "no progress for 2 s: 2 of 2 clients waited that long for the server, and the run was abandoned"
        ),
        "{runs:?}"
    );
    runs[0][2].clone()
}

/// A whole server that stops answering (the postmaster and every process it forked stopped,
/// and never resumed): the watchdog abandons the run, the lab finds the server does not answer,
/// kills and restarts it, and the next run completes; no process of the hung server is left.
#[test]
fn a_lab_restarts_a_server_that_stops_answering() {
    let (dir, mut child, progress, _) = start_a_lab_to_stall("hung", "4s");
    let data = dir.join("hung.db.servers/a/data");
    let postmaster = postmaster_pid(&data);
    let mut server: Vec<i32> = vec![postmaster];
    server.extend(
        stampede_base::sys::children_of(postmaster as u32)
            .into_iter()
            .map(|pid| pid as i32),
    );
    // Resumed only when the test ends (a killed process ignores it).
    let frozen = common::Frozen::stop(server.clone());
    // Three minutes end a hung lab (the failure this test is about) rather than the suite.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let log = progress.finish();
    drop(frozen);
    stop_cluster(dir.join("hung.db.servers/a"), None);
    assert!(status.success(), "{log}");
    let error = first_run_abandoned_second_completed(&dir, "hung");
    assert!(
        error.contains("; the server did not answer (the server was restarted)"),
        "{error}"
    );
    let survivors: Vec<&i32> = server
        .iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z "))
        })
        .collect();
    assert!(
        survivors.is_empty(),
        "processes of the hung server left: {survivors:?}"
    );
}

/// Two `lab run`s of one spec at once: the second is refused (exit 1, before it starts
/// anything) naming the first one's pid, and the first goes on unaffected. A results file that
/// is another program's SQLite database is refused, and nothing is written into it.
#[test]
fn a_second_lab_on_the_same_results_is_refused_while_the_first_runs() {
    let text = "name = \"locked\"\nruns = 3\nduration = \"2s\"\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n";
    let (dir, spec) = lab_with_spec("locked", text);
    let mut first = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = common::Watch::new(first.stderr.take().unwrap());
    progress.wait_for("run 1/3");
    let second = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let resumed = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let status = first.wait().unwrap();
    let log = progress.finish();
    stop_cluster(dir.join("locked.db.servers/a"), None);
    assert!(status.success(), "{log}");
    let refusal = format!(
        "stampede: error: lab \"locked\" is running as pid {} with these results (lock {}); wait for it to end, or stop it and `stampede lab resume`",
        first.id(),
        dir.join("locked.db.lock").display()
    );
    for refused in [&second, &resumed] {
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(refused));
        assert!(stderr(refused).contains(&refusal), "{}", stderr(refused));
        assert!(stdout(refused).is_empty(), "{}", stdout(refused));
    }
    let runs = sqlite(
        &dir.join("locked.db"),
        "SELECT count(*) FROM runs WHERE status = 'completed'",
    );
    assert_eq!(runs, [["3"]]);

    // Another program's database as the results: refused, left as it was.
    let foreign = dir.join("customers.db");
    sqlite(&foreign, "CREATE TABLE customers (id integer)");
    let other = dir.join("other.toml");
    std::fs::write(
        &other,
        text.replace(
            "name = \"locked\"",
            "name = \"other\"\nresults = \"customers.db\"",
        ),
    )
    .unwrap();
    let refused = stampede_command(&["lab", "run", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(&format!(
            "{} is not a stampede results database (it holds other tables: customers)",
            foreign.display()
        )),
        "{}",
        stderr(&refused)
    );
    let tables = sqlite(&foreign, "SELECT name FROM sqlite_master ORDER BY name");
    assert_eq!(tables, [["customers"]]);
}

/// SIGKILL of the lab (the OOM killer, a CI timeout) at three points — while loading, in the
/// middle of a run, right as a run's result is being written — and `lab resume` after each:
/// every planned run is recorded exactly once, the orphaned cluster is taken over, and no
/// cluster is left running at the end.
#[test]
fn a_lab_killed_at_any_point_resumes_with_every_run_recorded_once() {
    let (dir, spec) = lab_with_spec(
        "killed",
        "name = \"killed\"\nruns = 3\nduration = \"2s\"\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n",
    );
    let spec = spec.to_str().unwrap();
    let data = dir.join("killed.db.servers/a/data");
    // SIGKILL once `text` is out and `then` holds.
    let kill_when = |command: &str, text: &str, then: &dyn Fn() -> bool| {
        let mut child = stampede_command(&["lab", command, spec])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut progress = common::Watch::new(child.stderr.take().unwrap());
        progress.wait_for(text);
        wait_until("the moment to kill", then);
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        progress.finish()
    };
    kill_when("run", "loading pgbench scale 1 on a", &|| true);
    kill_when("resume", "run 1/3", &|| {
        !common::lab_session_pids(&data, "query ~ '^SELECT abalance'").is_empty()
    });
    // The run's line ends with its tps just before its result is written.
    let killed_at_write = kill_when("resume", " tps\n", &|| true);
    let orphan = std::fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
    assert!(
        !orphan.is_empty(),
        "a SIGKILL leaves the cluster running: {killed_at_write}"
    );
    let finished = stampede_command(&["lab", "resume", spec]).output().unwrap();
    let running_after = data.join("postmaster.pid").exists();
    stop_cluster(dir.join("killed.db.servers/a"), None);
    assert!(finished.status.success(), "{}", stderr(&finished));
    assert!(!running_after, "the lab left its cluster running");
    let runs = sqlite(
        &dir.join("killed.db"),
        "SELECT repetition, status, count(*) FROM runs GROUP BY repetition, status ORDER BY 1",
    );
    assert_eq!(
        runs,
        [
            ["0", "completed", "1"],
            ["1", "completed", "1"],
            ["2", "completed", "1"]
        ],
        "{}",
        stderr(&finished)
    );
}

/// A shell loop that spins until stopped; `stop` gives its CPU time as a share of all the
/// machine's CPU time over its life (read from /proc/<pid>/stat, as `ps` does).
struct Spinner {
    child: std::process::Child,
    started: std::time::Instant,
}

impl Spinner {
    fn start() -> Spinner {
        let child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        Spinner {
            child,
            started: std::time::Instant::now(),
        }
    }

    fn stop(self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .collect();
        // utime and stime, in clock ticks of 1/100 s (USER_HZ on Linux).
        let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        let wall = self.started.elapsed().as_secs_f64();
        let cores = std::thread::available_parallelism().unwrap().get() as f64;
        ticks / 100.0 / (wall * cores)
    }
}

/// A failed assertion must not leave the loop spinning.
impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small tmpfs, unmounted when dropped (before the lab's folder is removed).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: PathBuf, size: &str) -> Tmpfs {
        std::fs::create_dir_all(&at).unwrap();
        let mounted = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=755"),
                "tmpfs",
            ])
            .arg(&at)
            .status()
            .unwrap();
        assert!(mounted.success(), "mount -t tmpfs (the test needs root)");
        Tmpfs(at)
    }

    fn enlarge(&self, size: &str) {
        let remounted = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(remounted.success());
    }

    /// Writes zeros until the filesystem refuses more.
    fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.0.join("filler")).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while filler.write_all(&chunk).is_ok() {}
    }
}

impl Drop for Tmpfs {
    /// Lazily: after a failed assertion the lab may still hold files there.
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("--lazy")
            .arg(&self.0)
            .status();
    }
}

/// The results database on a small filesystem that fills after the first run is recorded: the
/// lab stops (exit 2) naming the cause and how to go on, nothing is half-written, and once the
/// filesystem is enlarged `resume` records the other runs, each once.
#[test]
fn a_full_results_disk_stops_the_lab_and_resume_completes_once_there_is_room() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let (dir, spec) = lab_with_spec(
        "full-disk",
        "name = \"full\"\nruns = 3\nduration = \"2s\"\nresults = \"results/full.db\"\n\
         [[target]]\nname = \"a\"\nsettings = { fsync = false }\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n",
    );
    let results = Tmpfs::mount(dir.join("results"), "16m");
    // The cluster lives beside the results; here it is kept off the small filesystem, so that
    // only the results database runs out of room.
    std::fs::create_dir_all(dir.join("servers")).unwrap();
    std::os::unix::fs::symlink(dir.join("servers"), dir.join("results/full.db.servers")).unwrap();
    let db = dir.join("results/full.db");
    // The lab creates the file before its tables: until `runs` exists, nothing is recorded.
    let completed = || {
        let has_runs =
            || !sqlite(&db, "SELECT 1 FROM sqlite_master WHERE name = 'runs'").is_empty();
        if !db.exists() || !has_runs() {
            return 0;
        }
        sqlite(&db, "SELECT count(*) FROM runs WHERE status = 'completed'")
            .first()
            .map_or(0, |row| row[0].parse::<usize>().unwrap_or(0))
    };
    let mut lab = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let progress = common::Watch::new(lab.stderr.take().unwrap());
    wait_until("the first run recorded", || completed() >= 1);
    results.fill();
    let status = lab.wait().unwrap();
    let text = progress.finish();
    let data = dir.join("servers/a/data");
    assert_eq!(status.code(), Some(2), "{text}");
    assert!(
        text.contains("stampede: error: results database:")
            && text.contains("database or disk is full")
            && text.contains(&format!(
                "continue with `stampede lab resume {}` once the results can be written",
                spec.display()
            )),
        "{text}"
    );
    assert!(
        !data.join("postmaster.pid").exists(),
        "the lab left its cluster running"
    );

    results.enlarge("64m");
    let resumed = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .output()
        .unwrap();
    stop_cluster(dir.join("servers/a"), None);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(sqlite(&db, "PRAGMA integrity_check"), [["ok"]]);
    assert_eq!(
        sqlite(
            &db,
            "SELECT repetition, status, count(*) FROM runs GROUP BY repetition, status ORDER BY 1",
        ),
        [
            ["0", "completed", "1"],
            ["1", "completed", "1"],
            ["2", "completed", "1"]
        ]
    );
    drop(results);
}

/// Three invocations of one spec into a shared PostgreSQL results database, the third with
/// index scans off (select-only then reads the whole table: ~50× slower), each beside a control
/// target that every invocation runs unchanged (what the machine did to one invocation cancels). `history` finds the
/// change at the third, `gate` fails the third against the second (exit 3) and passes the
/// second against the first (exit 0); JUnit and Markdown say the same. (`synchronous_commit =
/// on` costs only ~50% on this machine's disk, inside 1-second runs' ±15%.) The threshold
/// (90%: a regression is a ratio below 0.1) is wide because five 1-second runs a night on a
/// busy CI machine are noisy (one A/A pair's interval measured [0.36, 1.41]); the 50× change
/// lies far beyond it, and the decision rule itself is tested to the digit in `report::gate`.
#[test]
fn a_history_of_three_invocations_finds_and_gates_a_costly_setting() {
    let server = common::server();
    let results_db = server.create_database("history_results");
    let dir = lab_dir("history");
    let spec = dir.join("nightly.toml");
    let url = server.url_with_password(&results_db);
    let write = |index_scans: &str| {
        let text = format!(
            "name = \"nightly\"\nruns = 5\nduration = \"1s\"\nwarmup = \"0s\"\nprobes = false\nseed = 3\n\
             results = \"{url}\"\ncontrol = \"ref\"\n[[target]]\nname = \"ref\"\n\
             [[target]]\nname = \"pg\"\n\
             settings = {{ enable_indexscan = \"{index_scans}\", enable_bitmapscan = \"{index_scans}\" }}\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n"
        );
        std::fs::write(&spec, text).unwrap();
    };
    let invoke = |night: &str| {
        let output = stampede_command(&[
            "lab",
            "run",
            spec.to_str().unwrap(),
            "--tag",
            &format!("night={night}"),
        ])
        .output()
        .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    };
    write("on");
    invoke("1");
    invoke("2");
    write("off");
    invoke("3");
    stop_cluster(dir.join("nightly.servers/pg"), None);
    stop_cluster(dir.join("nightly.servers/ref"), None);
    let query = |sql: &str| server.psql(&results_db, sql);
    assert_eq!(
        query("SELECT string_agg(name || ':' || history, ',' ORDER BY id) FROM labs"),
        "nightly:nightly,nightly #2:nightly,nightly #3:nightly"
    );
    let history = stampede_command(&[
        "history",
        &url,
        "--html",
        dir.join("h.html").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(history.status.success(), "{}", stderr(&history));
    let text = stdout(&history);
    assert!(!text.contains(common::PASSWORD), "{text}");
    // Over the control target run in every invocation, so that what a neighbour did to the
    // machine during one invocation cancels (an A/A night read 0.376× without it).
    assert!(
        text.starts_with(
            "Each target's tps is taken over the control target \"ref\"'s in the same invocation"
        ) && text.contains("\nHistory \"nightly\" on "),
        "{text}"
    );
    assert!(
        text.contains("pg/pgbench/select-only/1/1: 3 points, latest ")
            && text.contains(" tps / ref; 1 change\n"),
        "{text}"
    );
    assert!(
        text.contains("    regression at \"nightly #3\" (night=3): 0.")
            && text.contains(", after \"nightly #2\" (night=2)\n"),
        "{text}"
    );
    let html = std::fs::read_to_string(dir.join("h.html")).unwrap();
    assert!(
        html.contains(r#"class="change""#) && html.contains("<svg"),
        "{html}"
    );
    let gate = |args: &[&str]| {
        let junit = dir.join("gate.xml");
        let mut all = vec!["gate", url.as_str(), "--threshold", "90%", "--junit"];
        all.push(junit.to_str().unwrap());
        all.extend_from_slice(args);
        let output = stampede_command(&all).output().unwrap();
        (output, std::fs::read_to_string(junit).unwrap_or_default())
    };
    let (failed, junit) = gate(&[]);
    assert_eq!(
        failed.status.code(),
        Some(3),
        "{}{}",
        stdout(&failed),
        stderr(&failed)
    );
    let markdown = stdout(&failed);
    assert!(
        markdown.starts_with(
            "## stampede gate: \"nightly #3\" (night=3) against \"nightly #2\" (night=2)\n"
        ),
        "{markdown}"
    );
    assert!(
        markdown.contains("| pg/pgbench/select-only/1/1 |")
            && markdown.contains("| 5 | **regression** |"),
        "{markdown}"
    );
    assert!(
        junit.contains("failures=\"1\"")
            && junit.contains("<failure message=\"regression beyond 90%"),
        "{junit}"
    );
    assert_eq!(
        stderr(&failed).lines().next().unwrap_or_default(),
        "stampede: error: regression beyond 90% decided in 1 of 1 cells (tps / ref)"
    );
    let (passed, junit) = gate(&["--lab-run", "night=2", "--against", "night=1"]);
    assert_eq!(
        passed.status.code(),
        Some(0),
        "{}{}",
        stdout(&passed),
        stderr(&passed)
    );
    assert!(
        stdout(&passed).contains("**pass: no regression beyond 90% in 1 cells (tps / ref)**"),
        "{}",
        stdout(&passed)
    );
    assert!(junit.contains("failures=\"0\" skipped=\"0\""), "{junit}");
    // The gate's ratio is the geometric mean of the rounds' ratios (each invocation's pg over
    // its ref in that round), as the stored tps give it.
    let pairs = query(
        "WITH t AS (SELECT l.name AS lab, c.target, r.repetition, r.tps FROM runs r \
           JOIN cells c ON c.id = r.cell_id JOIN labs l ON l.id = c.lab_id) \
         SELECT string_agg(((p3.tps / f3.tps) / (p2.tps / f2.tps))::text, ',') FROM t p3 \
         JOIN t f3 ON f3.lab = p3.lab AND f3.target = 'ref' AND f3.repetition = p3.repetition \
         JOIN t p2 ON p2.lab = 'nightly #2' AND p2.target = 'pg' AND p2.repetition = p3.repetition \
         JOIN t f2 ON f2.lab = 'nightly #2' AND f2.target = 'ref' AND f2.repetition = p3.repetition \
         WHERE p3.lab = 'nightly #3' AND p3.target = 'pg'",
    );
    let logs: Vec<f64> = pairs
        .split(',')
        .map(|r| r.parse::<f64>().unwrap().ln())
        .collect();
    let ratio = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    assert!(
        markdown.contains(&format!("| {ratio:.3}× |")),
        "{ratio} in {markdown}"
    );
}
