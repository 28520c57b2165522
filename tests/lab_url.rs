//! Labs on servers the lab did not start, reached only by URL: the suite's own PostgreSQL as a
//! non-superuser role with CREATEDB (two configurations of one server, decided apart), the
//! server left exactly as it was (databases, per-database and server-wide settings) after a
//! lab that ends, one stopped by SIGTERM and resumed, one killed outright, and one whose run
//! fails; two servers of two majors, identified; the suite's MariaDB by URL; and what
//! `lab plan` refuses before it touches anything.
//! suite: alone (it decides two configurations apart by measured tps)

// libc for the signals the tests send.
#![allow(unsafe_code)]

mod common;

use std::path::Path;
use std::sync::Mutex;

use common::cluster::OwnCluster;
use common::{
    file_holds, interrupt_when, lab_spec, server, sqlite, stampede_command, stderr, stdout, LabDir,
    TestServer,
};
use stampede::server::postgres::binaries::Binaries;

/// The role the labs log in as: it may create databases, nothing more.
const ROLE: &str = "url_bench";
const ROLE_PASSWORD: &str = "url-bench-pw-93f";

/// The tests run one at a time: they compare the whole server before and after.
static SERVER_STATE: Mutex<()> = Mutex::new(());

fn url_as(s: &TestServer, role: &str, password: &str) -> String {
    format!(
        "postgresql://{role}:{password}@127.0.0.1:{}/postgres",
        s.port()
    )
}

/// The suite's server with the lab's role on it.
fn server_with_role() -> &'static TestServer {
    let s = server();
    s.psql(
        "postgres",
        &format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN \
             CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{ROLE_PASSWORD}'; END IF; END $$"
        ),
    );
    s
}

/// What a lab must leave as it found it: the databases, the per-database and per-role
/// settings, the server's settings and where each comes from, and the files' settings.
fn server_state(s: &TestServer) -> Vec<String> {
    [
        "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database",
        "SELECT coalesce(string_agg(setdatabase || ':' || setrole || ':' || array_to_string(setconfig, ','), ';'), '') FROM pg_db_role_setting",
        "SELECT string_agg(name || '=' || setting || ' ' || source || ' ' || coalesce(sourcefile, ''), E'\\n' ORDER BY name) FROM pg_settings",
        "SELECT string_agg(sourcefile || ':' || name || '=' || setting, E'\\n' ORDER BY sourcefile, seqno) FROM pg_file_settings",
    ]
    .iter()
    .map(|query| s.psql("postgres", query))
    .collect()
}

fn databases(s: &TestServer) -> Vec<String> {
    s.psql("postgres", "SELECT datname FROM pg_database ORDER BY 1")
        .lines()
        .map(str::to_string)
        .collect()
}

fn path(spec: &Path) -> &str {
    spec.to_str().unwrap()
}

/// The report's first comparison has two cells, each with a verdict over 3 paired rounds.
fn assert_both_cells_decided_over_three_rounds(db: &Path) {
    let report = stampede_command(&["report", db.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let cells = json["comparisons"][0]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{json}");
    for cell in cells {
        assert!(cell["verdict"].is_string() && cell["pairs"] == 3, "{cell}");
    }
}

/// Select-only on "indexed" and on "seqscan" (the same server, with index scans off in the
/// lab's databases): each transaction reads the whole table, hundreds of times the work.
fn index_scan_spec(s: &TestServer, name: &str) -> String {
    let url = url_as(s, ROLE, ROLE_PASSWORD);
    format!(
        "name = \"{name}\"\nruns = \"auto\"\nmax_runs = 5\nprecision = \"20%\"\nduration = \"1s\"\nwarmup = \"1s\"\nseed = 3\n\
         [[target]]\nname = \"indexed\"\nurl = \"{url}\"\n\
         [[target]]\nname = \"seqscan\"\nurl = \"{url}\"\n\
         settings = {{ enable_indexscan = false, enable_bitmapscan = false, enable_indexonlyscan = false }}\n\
         [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [2]\n"
    )
}

#[test]
fn two_configurations_of_one_server_are_decided_apart_and_the_server_is_left_as_it_was() {
    let _one_at_a_time = SERVER_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let s = server_with_role();
    let before = server_state(s);
    let dir = LabDir::new("url-index-scan");
    let spec = lab_spec(&dir, &index_scan_spec(s, "url-index"));

    // Stopped in its second run: what it made stays for the resume, every setting is back.
    let (status, progress) = interrupt_when(&["lab", "run", path(&spec)], "run 2/");
    assert_eq!(status.code(), Some(2), "{progress}");
    let made: Vec<String> = databases(s)
        .into_iter()
        .filter(|d| !before[0].split(',').any(|b| b == d))
        .collect();
    assert!(!made.is_empty(), "{progress}");
    for database in &made {
        assert!(
            database.starts_with("stampede_url_index_"),
            "{database} in {made:?}"
        );
    }
    let after_signal = server_state(s);
    assert_eq!(after_signal[2..], before[2..], "settings after SIGTERM");

    let output = stampede_command(&["lab", "resume", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(server_state(s), before, "{}", stderr(&output));

    let db = dir.join("url-index.db");
    // Each run read the server's settings as it started; none differed from the record (the
    // per-database ones included).
    assert_eq!(sqlite(&db, "SELECT count(*) FROM run_settings"), [["0"]]);
    assert_eq!(
        sqlite(
            &db,
            "SELECT count(*) FROM runs WHERE settings_read IS NULL AND status = 'completed'"
        ),
        [["0"]]
    );
    let report = stampede_command(&["report", db.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let cell = &json["comparisons"][0]["cells"][0];
    assert_eq!(cell["verdict"], "slower", "{cell}");
    let text = stampede_command(&["report", db.to_str().unwrap()])
        .output()
        .unwrap();
    // The target's own settings are configured ones, not defaults of another build.
    assert!(
        !stdout(&text).contains("nobody configured"),
        "{}",
        stdout(&text)
    );
    let shared = stdout(&text)
        .lines()
        .find(|line| {
            line.contains("\"indexed\", \"seqscan\" ran on one server (system identifier ")
        })
        .map(str::to_string);
    assert!(
        shared.as_ref().is_some_and(|line| line.contains(&format!(
            "; answered on 127.0.0.1:{}): their runs took turns on it, each target in databases of its own",
            s.port()
        ))),
        "{}",
        stdout(&text)
    );

    // The server is named without its password everywhere the lab wrote, and the record says
    // what the lab knows of it.
    assert!(!file_holds(&db, ROLE_PASSWORD));
    assert!(!progress.contains(ROLE_PASSWORD) && !stderr(&output).contains(ROLE_PASSWORD));
    let targets = sqlite(
        &db,
        "SELECT server, binary_source, server_version, restore_method FROM targets ORDER BY name",
    );
    assert_eq!(targets.len(), 2, "{targets:?}");
    assert!(
        targets[0][0].contains(":********@127.0.0.1:"),
        "{targets:?}"
    );
    assert!(
        targets[0][1].starts_with("server not started by stampede (role \"url_bench\""),
        "{targets:?}"
    );
    assert!(targets[0][2].starts_with("PostgreSQL "), "{targets:?}");
    let setting = sqlite(
        &db,
        "SELECT t.name, s.setting, s.source FROM target_settings s JOIN targets t ON t.id = s.target_id \
         WHERE s.name = 'enable_indexscan' ORDER BY t.name",
    );
    assert_eq!(
        setting,
        [["indexed", "on", "default"], ["seqscan", "off", "database"]]
    );
}

/// A lab killed outright while a run holds a server-wide setting leaves it set and says so in
/// its folder; the next `lab resume` puts it back first. A lab whose run fails ends all the
/// same, with the setting back and its databases dropped.
#[test]
fn server_wide_settings_are_put_back_after_a_kill_and_after_a_failed_run() {
    let _one_at_a_time = SERVER_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let s = server_with_role();
    let before = server_state(s);
    let dir = LabDir::new("url-sighup");
    let superuser = common::server().url_with_password("postgres");
    let spec_of = |name: &str, script: &str| {
        let spec = dir.join(format!("{name}.toml"));
        std::fs::write(
            &spec,
            format!(
                "name = \"{name}\"\nruns = 1\nduration = \"6s\"\nwarmup = \"0s\"\n\
                 [[target]]\nname = \"wal\"\nurl = \"{superuser}\"\n\
                 settings = {{ checkpoint_timeout = \"17min\", work_mem = \"9MB\" }}\n\
                 [[workload]]\nname = \"pgbench\"\nscripts = [\"{script}\"]\nclients = [1]\n"
            ),
        )
        .unwrap();
        spec
    };

    let spec = spec_of("killed", "select-only");
    let mut child = stampede_command(&["lab", "run", path(&spec)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = common::Watch::new(child.stderr.take().unwrap());
    progress.wait_for("run 1/");
    common::wait_until("the run's server-wide setting", || {
        s.psql("postgres", "SHOW checkpoint_timeout") == "17min"
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let left = dir.join("killed.db.servers/wal/settings-to-put-back.json");
    assert!(left.exists());
    assert_eq!(s.psql("postgres", "SHOW checkpoint_timeout"), "17min");
    let output = stampede_command(&["lab", "resume", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!left.exists());
    assert_eq!(server_state(s), before, "{}", stderr(&output));
    // The run-by-run ALTER SYSTEM setting is what each run saw and what the record holds.
    assert_eq!(
        sqlite(&dir.join("killed.db"), "SELECT count(*) FROM run_settings"),
        [["0"]]
    );

    // Every statement of the script fails: the run is recorded failed and the lab ends (exit
    // 0, the failure said), its databases dropped.
    std::fs::write(dir.join("fails.sql"), "SELECT 1 / 0;\n").unwrap();
    let spec = spec_of("failing", "fails.sql");
    let output = stampede_command(&["lab", "run", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("1 run(s) failed"),
        "{}",
        stderr(&output)
    );
    let errors = sqlite(&dir.join("failing.db"), "SELECT error FROM runs");
    assert_eq!(errors, [["1 client(s) aborted"]]);
    assert_eq!(server_state(s), before, "{}", stderr(&output));
}

/// `lab plan` refuses, exit 1, before the lab touches the server or writes anything.
#[test]
fn plan_refuses_what_a_server_it_did_not_start_cannot_take() {
    let _one_at_a_time = SERVER_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let s = server_with_role();
    s.psql(
        "postgres",
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'url_nocreate') THEN \
         CREATE ROLE url_nocreate LOGIN PASSWORD 'nocreate-pw'; END IF; END $$",
    );
    let dir = LabDir::new("url-refusals");
    let url = url_as(s, ROLE, ROLE_PASSWORD);
    let refused = |target: &str, extra: &str, args: &[&str], message: &str| {
        let spec = lab_spec(
            &dir,
            &format!(
                "name = \"refused\"\nruns = 2\nduration = \"1s\"\n\
                 [[target]]\nname = \"a\"\n{target}\n\
                 [[target]]\nname = \"b\"\nurl = \"{url}\"\n\
                 [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n{extra}"
            ),
        );
        let before = databases(s);
        let mut command = vec!["lab", "plan", path(&spec)];
        command.extend(args);
        let output = stampede_command(&command).output().unwrap();
        common::assert_refused(&output, message, target);
        assert!(
            !stderr(&output).contains(ROLE_PASSWORD) && !stdout(&output).contains(ROLE_PASSWORD)
        );
        assert_eq!(databases(s), before);
        assert!(!dir.join("refused.db").exists());
    };
    let masked = format!(
        "postgresql://{ROLE}:********@127.0.0.1:{}/postgres",
        s.port()
    );
    refused(
        &format!("url = \"{url}\"\nsettings = {{ shared_buffers = \"64MB\" }}"),
        "",
        &[],
        "target \"a\": settings.shared_buffers: takes effect only when the server restarts (context postmaster), and stampede does not restart a server it did not start; set it on the server yourself and compare servers, or use a target the lab starts",
    );
    refused(
        &format!("url = \"{}\"", url_as(s, "url_nocreate", "nocreate-pw")),
        "",
        &[],
        "target \"a\": role \"url_nocreate\" may not create databases, and the lab loads each dataset into a database of its own and copies it before each run that writes; grant it with ALTER ROLE \"url_nocreate\" CREATEDB (or give a role that may)",
    );
    refused(
        &format!("url = \"{url}\"\nsettings = {{ checkpoint_timeout = \"10min\" }}"),
        "",
        &[],
        "target \"a\": settings.checkpoint_timeout: context sighup, which role \"url_bench\" may not set; it needs GRANT ALTER SYSTEM ON PARAMETER checkpoint_timeout TO \"url_bench\"",
    );
    refused(
        &format!("url = \"{url}\""),
        "",
        &["--shards", "2"],
        &format!("--shards: target \"a\" is a server the lab reaches ({masked}), which every shard would load at once; run the lab unsharded, or spread a workload's clients with `pods = N`"),
    );
    let claim_spec = lab_spec(
        &dir,
        &format!(
            "name = \"refused\"\nruns = 2\nduration = \"1s\"\n\
             [[target]]\nname = \"a\"\nurl = \"{url}\"\n[[target]]\nname = \"b\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n\
             [[claim]]\nsays = \"b costs the server less\"\nbase = \"a\"\ntarget = \"b\"\nworkload = \"pgbench\"\nmetric = \"server_cpu\"\nexpect = \"+20%\"\n"
        ),
    );
    let output = stampede_command(&["lab", "plan", path(&claim_spec)])
        .output()
        .unwrap();
    common::assert_refused(
        &output,
        &format!("{}:18:10: claim: metric server_cpu: target \"a\" has no source of server CPU (its server is not on this machine; name one: metrics = {{ prometheus = \"http://…\", instance = \"…\" }})", claim_spec.display()),
        "claim",
    );
    let port = common::free_port();
    refused(
        &format!("url = \"postgresql://{ROLE}:{ROLE_PASSWORD}@127.0.0.1:{port}/postgres\""),
        "",
        &[],
        &format!("target \"a\": cannot reach postgresql://{ROLE}:********@127.0.0.1:{port}/postgres: connection to server (host=127.0.0.1 port={port} user={ROLE} dbname=postgres) failed: error connecting to server: Connection refused (os error 111)"),
    );
}

/// A MariaDB server by URL: two configurations of one server (a global variable set for the
/// second's runs alone), decided; the variable back as it was and the lab's databases gone.
#[test]
fn a_mariadb_server_by_url_is_compared_and_its_variables_restored() {
    let mariadb = common::mariadb::mariadb();
    let variable = "SELECT @@GLOBAL.long_query_time, @@GLOBAL.innodb_max_dirty_pages_pct";
    let before = common::mariadb::sql("", variable);
    let schemas =
        "SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) FROM information_schema.SCHEMATA";
    let schemas_before = common::mariadb::sql("", schemas);
    let url = format!(
        "mariadb://root@localhost/?socket={}",
        mariadb.socket().display()
    );
    let dir = LabDir::new("url-mariadb");
    let spec = lab_spec(
        &dir,
        &format!(
            "name = \"url-mariadb\"\nruns = 3\nduration = \"1s\"\nwarmup = \"1s\"\nseed = 2\n\
             [[target]]\nname = \"as-is\"\nurl = \"{url}\"\n\
             [[target]]\nname = \"slow-log\"\nurl = \"{url}\"\nsettings = {{ long_query_time = 7 }}\n\
             [[workload]]\nname = \"sysbench\"\nscripts = [\"oltp_point_select\", \"oltp_update_index\"]\nclients = [1]\n"
        ),
    );
    let plan = stampede_command(&["lab", "plan", path(&spec)])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(
        stderr(&plan).contains("target \"slow-log\": for each run by SET GLOBAL, put back after it: long_query_time = 7"),
        "{}",
        stderr(&plan)
    );
    assert!(
        stderr(&plan).contains(&format!(
            "targets as-is, slow-log share one server (mariadb://root@localhost/?socket={}): their runs are interleaved, never concurrent",
            mariadb.socket().display()
        )),
        "{}",
        stderr(&plan)
    );
    let output = stampede_command(&["lab", "run", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(common::mariadb::sql("", variable), before);
    assert_eq!(common::mariadb::sql("", schemas), schemas_before);

    let db = dir.join("url-mariadb.db");
    // Each run read the server's variables as it started; none differed from the record.
    assert_eq!(
        sqlite(&db, "SELECT name, setting, recorded FROM run_settings"),
        Vec::<Vec<String>>::new()
    );
    assert_eq!(
        sqlite(&db, "SELECT count(*) FROM runs WHERE settings_read > 300"),
        sqlite(&db, "SELECT count(*) FROM runs")
    );
    assert_both_cells_decided_over_three_rounds(&db);
    let targets = sqlite(
        &db,
        "SELECT t.name, t.server_version, t.binary_source, s.setting, s.source FROM targets t \
         JOIN target_settings s ON s.target_id = t.id WHERE s.name = 'long_query_time' ORDER BY t.name",
    );
    assert_eq!(targets.len(), 2, "{targets:?}");
    assert!(targets[0][1].contains("MariaDB"), "{targets:?}");
    assert!(
        targets[0][2].starts_with("server not started by stampede (user \"root\""),
        "{targets:?}"
    );
    // Its series key: the address it answers as and when its system schema was made, as the
    // server's own catalog says.
    let made = common::mariadb::sql(
        "",
        "SELECT DATE_FORMAT(MIN(create_time), '%Y-%m-%d %H:%i:%s') FROM information_schema.tables WHERE table_schema = 'mysql'",
    );
    let host = common::mariadb::sql("", "SELECT CONCAT(@@hostname, ':', @@port)");
    assert_eq!(
        sqlite(&db, "SELECT DISTINCT server_key FROM targets"),
        [[format!(
            "answered as {}, system schema made {}",
            host.trim(),
            made.trim()
        )]]
    );
    assert_eq!(
        targets[1][3..],
        ["7.000000", "set for each run, put back after it"]
    );
}

/// Two servers by URL, of two majors: the lab compares them with verdicts and records each
/// server's version and system identifier (which tells a rebuilt server apart).
#[test]
fn two_servers_of_two_majors_are_compared_and_identified() {
    let _one_at_a_time = SERVER_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let fifteen = server();
    let binaries = stampede::server::postgres::download::binaries("17", &mut |_| {})
        .expect("PostgreSQL 17 from Maven Central (zonky)");
    let seventeen = OwnCluster::start("url-17", binaries, &[("fsync", "off".to_string())]);
    let dir = LabDir::new("url-two-servers");
    let spec = lab_spec(
        &dir,
        &format!(
            "name = \"two-servers\"\nruns = 3\nduration = \"1s\"\nwarmup = \"1s\"\nseed = 4\n\
             [[target]]\nname = \"pg15\"\nurl = \"{}\"\n\
             [[target]]\nname = \"pg17\"\nurl = \"{}\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\", \"tpcb-like\"]\nclients = [2]\n",
            fifteen.url_with_password("postgres"),
            seventeen.url()
        ),
    );
    let output = stampede_command(&["lab", "run", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let db = dir.join("two-servers.db");
    assert_both_cells_decided_over_three_rounds(&db);
    let targets = sqlite(
        &db,
        "SELECT name, server_version, binary_source FROM targets ORDER BY name",
    );
    for (row, (major, cluster_dir)) in targets.iter().zip([
        ("15.", fifteen.cluster.data_dir()),
        ("17.", seventeen.cluster.data_dir()),
    ]) {
        assert!(
            row[1].starts_with(&format!("PostgreSQL {major}")),
            "{row:?}"
        );
        // The identifier pg_controldata reads from the cluster's own control file.
        let identifier = control_file_identifier(&cluster_dir);
        assert!(
            row[2].contains(&format!("system identifier {identifier};")),
            "{row:?} {identifier}"
        );
    }
    assert!(!file_holds(&db, common::PASSWORD));
}

/// The cluster's system identifier as its control file holds it (pg_control's first 8 bytes).
fn control_file_identifier(data_dir: &Path) -> u64 {
    let bytes = std::fs::read(data_dir.join("global/pg_control")).unwrap();
    u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

/// A server made anew under the same URL (a new cluster on the same port: another system
/// identifier) starts new series: `history` keeps the two apart and says why, and `gate` does
/// not compare across it.
#[test]
fn a_server_rebuilt_under_the_same_url_starts_new_series() {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let settings = [("fsync", "off".to_string())];
    let first = OwnCluster::start("url-rebuilt", binaries.clone(), &settings);
    let port = first.cluster.port;
    let dir = LabDir::new("url-rebuilt");
    let spec = lab_spec(
        &dir,
        &format!(
            "name = \"rebuilt\"\nruns = 3\nduration = \"1s\"\nwarmup = \"0s\"\nseed = 6\n\
             [[target]]\nname = \"box\"\nurl = \"{}\"\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nscale = [1]\nclients = [1]\n",
            first.url()
        ),
    );
    let run = |tag: &str| {
        let output = stampede_command(&["lab", "run", path(&spec), "--tag", tag])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    };
    // Someone changes the server while the first invocation runs: the runs that started after
    // it record what they saw, and the report says so.
    let mut child = stampede_command(&["lab", "run", path(&spec), "--tag", "build=1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = common::Watch::new(child.stderr.take().unwrap());
    progress.wait_for("run 2/3");
    for statement in [
        "ALTER SYSTEM SET work_mem = '7MB'",
        "SELECT pg_reload_conf()",
    ] {
        let psql = std::process::Command::new("psql")
            .args([&first.url(), "-Atc", statement])
            .output()
            .unwrap();
        assert!(psql.status.success(), "{}", stderr(&psql));
    }
    assert!(child.wait().unwrap().success(), "{}", progress.finish());
    let db = dir.join("rebuilt.db");
    let changed = sqlite(
        &db,
        "SELECT r.repetition, s.name, s.setting, s.recorded FROM run_settings s JOIN runs r ON r.id = s.run_id ORDER BY 1, 2",
    );
    assert!(
        changed.contains(&["2", "work_mem", "7168", "4096"].map(String::from).to_vec())
            && changed
                .iter()
                .all(|row| row[0] != "0" && row[1] == "work_mem"),
        "{changed:?}"
    );
    assert_eq!(
        sqlite(&db, "SELECT count(*) FROM runs WHERE settings_read > 300"),
        [["3"]]
    );
    let report = stampede_command(&["report", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stdout(&report).contains("run(s) started with settings other than the target's record — the server was changed during the lab by something other than stampede: work_mem = 7168 (recorded 4096)"),
        "{}",
        stdout(&report)
    );
    let before = control_file_identifier(&first.cluster.data_dir());
    drop(first);
    let second = OwnCluster::start_on("url-rebuilt", binaries, &settings, port);
    let after = control_file_identifier(&second.cluster.data_dir());
    assert_ne!(before, after);
    run("build=2");
    assert_eq!(
        sqlite(&db, "SELECT server_key FROM targets ORDER BY lab_id"),
        [
            [format!("system identifier {before}")],
            [format!("system identifier {after}")]
        ]
    );
    let history = stampede_command(&["history", db.to_str().unwrap()])
        .output()
        .unwrap();
    let text = stdout(&history);
    assert!(history.status.success(), "{}", stderr(&history));
    assert!(
        text.contains(&format!(
            "from \"rebuilt #2\" (build=2): target \"box\" ran on another server (system identifier {before} before, system identifier {after} now): its cells start new series"
        )),
        "{text}"
    );
    for identifier in [before, after] {
        assert!(
            text.contains(&format!(
                "box/pgbench/select-only/1/1 (server: system identifier {identifier}): 1 point"
            )),
            "{text}"
        );
    }
    let gate = stampede_command(&["gate", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(gate.status.code(), Some(4), "{}", stderr(&gate));
    assert!(
        stdout(&gate).contains(&format!(
            "Not gated: target \"box\" ran on another server (system identifier {before} before, system identifier {after} now): its cells start new series."
        )),
        "{}",
        stdout(&gate)
    );
}
