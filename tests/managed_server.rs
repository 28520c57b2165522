//! The managed default server: with no connection options and no PG* variables, stampede
//! creates a cluster on first use, starts it when needed, and says which server it used.

mod common;

use common::{stampede_with_env, stderr, stdout, LabDir};

/// Each test creates a default server, which picks the first free port: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn default_server_lifecycle() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let home_dir = LabDir::new("home-test");
    let home = home_dir.to_str().unwrap();
    let env = [("STAMPEDE_HOME", home)];
    let status = stampede_with_env(&["server", "status"], &env);
    assert!(
        stdout(&status).contains("no managed default server"),
        "{}",
        stdout(&status)
    );

    let init = stampede_with_env(&["pgbench", "-i", "-s", "1"], &env);
    assert!(init.status.success(), "{}", stderr(&init));
    let log = stderr(&init);
    assert!(log.contains("created the managed default server"), "{log}");
    assert_eq!(
        log.matches("using the managed default server: ").count(),
        1,
        "{log}"
    );

    let run = stampede_with_env(&["pgbench", "-S", "-t", "20", "-c", "2"], &env);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stdout(&run).contains("number of transactions actually processed: 40/40"));

    let status = stdout(&stampede_with_env(&["server", "status"], &env));
    assert!(status.contains("state:      running"), "{status}");
    let data_dir = format!("{home}/default-server/data");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&data_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "data directory mode");

    let stop = stampede_with_env(&["server", "stop"], &env);
    assert!(stdout(&stop).contains("stopped"), "{}", stdout(&stop));
    // Started again on demand.
    let run = stampede_with_env(&["pgbench", "-S", "-t", "5"], &env);
    assert!(run.status.success(), "{}", stderr(&run));

    let destroy = stampede_with_env(&["server", "destroy"], &env);
    assert!(destroy.status.success(), "{}", stderr(&destroy));
    assert!(!std::path::Path::new(&data_dir).exists());
}

#[test]
fn quickstart_prints_one_table() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let home_dir = LabDir::new("quickstart-test");
    let home = home_dir.to_str().unwrap();
    let env = [("STAMPEDE_HOME", home)];
    let output = stampede_with_env(&["quickstart", "--seconds", "1", "--scale", "1"], &env);
    let _ = stampede_with_env(&["server", "destroy"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("workload     clients"), "{text}");
    for workload in ["select-only", "tpcb-like"] {
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with(workload)).collect();
        assert_eq!(rows.len(), 3, "{text}");
        for row in rows {
            let tps: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
            assert!(tps > 0.0, "{row}");
        }
    }
}

/// A machine with no PostgreSQL: with the system's binaries hidden and an empty cache, the default
/// server downloads the newest zonky major, says so, initdbs and quickstart prints its table.
#[test]
fn quickstart_on_a_machine_without_postgresql_downloads_the_newest_major() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let home_dir = LabDir::new("bare-test");
    let home = home_dir.to_str().unwrap();
    let cache = format!("{home}/cache");
    let env = [
        ("STAMPEDE_HOME", home),
        ("STAMPEDE_CACHE", cache.as_str()),
        ("STAMPEDE_HIDE_SYSTEM_PG", "1"),
    ];
    let output = stampede_with_env(&["quickstart", "--seconds", "1", "--scale", "1"], &env);
    let status = stdout(&stampede_with_env(&["server", "status"], &env));
    let _ = stampede_with_env(&["server", "destroy"], &env);
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(
        log.starts_with(&format!(
            "no PostgreSQL server binaries on this machine: using PostgreSQL 18 from Maven Central (zonky build) in {cache}/postgresql\ndownloading PostgreSQL 18."
        )),
        "{log}"
    );
    // Not a terminal: the download's progress is a line when it starts (with its size) and one
    // when it ends (size and time).
    let download: Vec<&str> = log
        .lines()
        .filter(|line| line.starts_with("downloading PostgreSQL 18."))
        .collect();
    assert_eq!(download.len(), 2, "{log}");
    assert!(
        download[0].ends_with(" MiB)...")
            && download[0].contains("(zonky build) from Maven Central ("),
        "{log}"
    );
    // A registry's cache nearby serves it in milliseconds: "14.4 MiB in 26 ms", not "0.0 s".
    assert!(
        download[1].contains("from Maven Central: ")
            && download[1].contains(" MiB in ")
            && (download[1].ends_with(" s") || download[1].ends_with(" ms"))
            && !download[1].ends_with(" in 0.0 s"),
        "{log}"
    );
    assert!(
        status.contains(&format!("binaries:   {cache}/postgresql/18.")),
        "{status}"
    );
    assert!(
        status.contains("server:     postgres (PostgreSQL) 18."),
        "{status}"
    );
    let text = stdout(&output);
    for workload in ["select-only", "tpcb-like"] {
        assert_eq!(
            text.lines().filter(|l| l.starts_with(workload)).count(),
            3,
            "{text}"
        );
    }
}
