//! libpq's host lists against a real primary and its streaming standby (made here with
//! pg_basebackup): `host`/`port` lists tried in order, `target_session_attrs` choosing the
//! primary or the standby, a dead host skipped, URIs with several hosts, and
//! `load_balance_hosts=random` spreading connections. psql on the same connection string is
//! the reference for which server each string reaches.

mod common;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use common::{stampede_with_env, stderr, stdout};
use stampede::server::host::OsUser;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;

const PASSWORD: &str = "failover-test-pw";

struct Pair {
    primary: Cluster,
    standby: Cluster,
}

impl Drop for Pair {
    fn drop(&mut self) {
        for cluster in [&self.standby, &self.primary] {
            let _ = cluster.stop();
            let _ = std::fs::remove_dir_all(&cluster.root);
        }
    }
}

fn cluster(binaries: &Binaries, name: &str, run_as: &Option<OsUser>) -> Cluster {
    let root = PathBuf::from(format!(
        "/tmp/stampede-failover-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    Cluster {
        binaries: binaries.clone(),
        root,
        port: common::free_port(),
        run_as: run_as.clone(),
        cpus: None,
    }
}

fn superuser(run_as: &Option<OsUser>) -> String {
    run_as
        .as_ref()
        .map_or("postgres".to_string(), |u| u.name.clone())
}

/// A primary and a standby streaming from it, both on 127.0.0.1 with password logins.
fn start_pair(test: &str) -> Pair {
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let run_as = OsUser::for_server().expect("a user to run the server as");
    let user = superuser(&run_as);
    let primary = cluster(&binaries, &format!("{test}-primary"), &run_as);
    primary
        .init(
            &user,
            PASSWORD,
            &[
                ("fsync", "off".to_string()),
                ("log_connections", "on".to_string()),
            ],
        )
        .expect("initdb");
    primary.start().expect("primary starts");
    let standby = cluster(&binaries, &format!("{test}-standby"), &run_as);
    let pair = Pair { primary, standby };
    std::fs::create_dir_all(pair.standby.socket_dir()).unwrap();
    let mut basebackup = Command::new(binaries.bin_dir.join("pg_basebackup"));
    basebackup
        .arg("-D")
        .arg(pair.standby.data_dir())
        .args(["-R", "-X", "stream", "-U", &user, "-h"])
        .arg(pair.primary.socket_dir())
        .args(["-p", &pair.primary.port.to_string()]);
    if let Some(owner) = &run_as {
        for dir in [&pair.standby.root, &pair.standby.socket_dir()] {
            std::os::unix::fs::chown(dir, Some(owner.uid), Some(owner.gid)).unwrap();
        }
        basebackup.uid(owner.uid).gid(owner.gid);
    }
    let output = basebackup.output().expect("pg_basebackup runs");
    assert!(
        output.status.success(),
        "pg_basebackup: {}",
        stderr(&output)
    );
    pair.standby.reconfigure(&[]).expect("the standby's port");
    pair.standby.start().expect("standby starts");
    pair
}

/// The port of the server psql reaches with `conninfo`, or its error.
fn psql_port(conninfo: &str) -> Result<u16, String> {
    let output = Command::new("psql")
        .args(["-X", "-A", "-t", "-c", "SELECT inet_server_port()"])
        .arg(conninfo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PGPASSWORD", PASSWORD)
        .output()
        .expect("psql runs");
    port_or_error(&output)
}

fn port_or_error(output: &Output) -> Result<u16, String> {
    if output.status.success() {
        Ok(stdout(output).trim().parse().expect("a port"))
    } else {
        Err(stderr(output))
    }
}

/// stampede's pgbench on `conninfo` with a transaction that fails (division by zero) unless it
/// runs on the server at `port`: its success says every client reached that server.
fn stampede_reaches(conninfo: &str, port: u16) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("on_port.sql");
    std::fs::write(
        &script,
        format!("SELECT 1 / (inet_server_port() = {port})::int;\n"),
    )
    .unwrap();
    stampede_with_env(
        &[
            "pgbench",
            "-n",
            "-t",
            "3",
            "-c",
            "2",
            "-f",
            script.to_str().unwrap(),
            conninfo,
        ],
        &[
            ("PGPASSWORD", PASSWORD),
            ("HOME", dir.path().to_str().unwrap()),
        ],
    )
}

#[test]
fn host_lists_reach_the_server_libpq_reaches() {
    let pair = start_pair("lists");
    let user = superuser(&pair.primary.run_as);
    let (primary, standby) = (pair.primary.port, pair.standby.port);
    let dead = common::free_port();
    let list = |ports: &[u16], extra: &str| {
        let hosts = vec!["127.0.0.1"; ports.len()].join(",");
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        format!(
            "host={hosts} port={} user={user} dbname=postgres {extra}",
            ports.join(",")
        )
    };
    let cases = [
        (list(&[standby, primary], ""), standby),
        (list(&[dead, primary], ""), primary),
        (list(&[standby, primary], "target_session_attrs=read-write"), primary),
        (list(&[standby, primary], "target_session_attrs=primary"), primary),
        (list(&[primary, standby], "target_session_attrs=standby"), standby),
        (list(&[primary, standby], "target_session_attrs=read-only"), standby),
        (list(&[dead, primary, standby], "target_session_attrs=prefer-standby"), standby),
        (list(&[dead, primary], "target_session_attrs=prefer-standby"), primary),
        (
            format!(
                "postgresql://{user}@127.0.0.1:{standby},127.0.0.1:{primary}/postgres?target_session_attrs=read-write"
            ),
            primary,
        ),
    ];
    for (conninfo, expected) in &cases {
        assert_eq!(psql_port(conninfo), Ok(*expected), "psql on {conninfo}");
        let output = stampede_reaches(conninfo, *expected);
        assert!(
            output.status.success(),
            "stampede on {conninfo} should reach port {expected}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn no_host_of_the_kind_asked_for_fails_with_each_hosts_reason() {
    let pair = start_pair("refused");
    let user = superuser(&pair.primary.run_as);
    let standby = pair.standby.port;
    let dead = common::free_port();
    let conninfo = format!(
        "host=127.0.0.1,127.0.0.1 port={dead},{standby} user={user} dbname=postgres target_session_attrs=read-write"
    );
    let psql = psql_port(&conninfo).expect_err("psql finds no read-write server");
    assert!(psql.contains("session is read-only"), "{psql}");
    let output = stampede_reaches(&conninfo, standby);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "stampede: error: connection to server (host=127.0.0.1 port={dead} user={user} dbname=postgres) failed: "
        )),
        "{text}"
    );
    assert_eq!(
        lines[1],
        format!("connection to server (host=127.0.0.1 port={standby} user={user} dbname=postgres) failed: session is read-only"),
        "{text}"
    );
    for (bad, message) in [
        (
            "target_session_attrs=master",
            "invalid target_session_attrs value: \"master\"",
        ),
        (
            "load_balance_hosts=yes",
            "invalid load_balance_hosts value: \"yes\"",
        ),
        ("port=1,2,3", "could not match 3 port numbers to 2 hosts"),
    ] {
        let conninfo = format!("host=127.0.0.1,127.0.0.1 user={user} dbname=postgres {bad}");
        let output = stampede_reaches(&conninfo, standby);
        assert_eq!(output.status.code(), Some(1), "{bad}: {}", stderr(&output));
        assert_eq!(stderr(&output), format!("stampede: error: {message}\n"));
        let psql = psql_port(&conninfo).expect_err("psql refuses it too");
        // libpq 15 (the installed psql) predates load_balance_hosts: its text is libpq 16's.
        if !bad.starts_with("load_balance_hosts") {
            assert!(psql.contains(message), "psql on {bad}: {psql}");
        }
    }
}

#[test]
fn load_balancing_spreads_connections_over_the_hosts() {
    let pair = start_pair("balance");
    let user = superuser(&pair.primary.run_as);
    let (primary, standby) = (pair.primary.port, pair.standby.port);
    let conninfo = format!(
        "host=127.0.0.1,127.0.0.1 port={primary},{standby} user={user} dbname=postgres load_balance_hosts=random application_name=balanced"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("port.sql");
    std::fs::write(&script, "SELECT inet_server_port();\n").unwrap();
    // A new connection per transaction (-C): 40 connections, each choosing its own order.
    let output = stampede_with_env(
        &[
            "pgbench",
            "-n",
            "-C",
            "-t",
            "40",
            "-f",
            script.to_str().unwrap(),
            &conninfo,
        ],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let on_primary = count_sessions(&pair.primary);
    let on_standby = count_sessions(&pair.standby);
    assert!(on_primary + on_standby >= 40, "{on_primary} + {on_standby}");
    // 40 fair coin flips all landing on one side: 2 in 2^40.
    assert!(
        on_primary > 0 && on_standby > 0,
        "{on_primary} / {on_standby}"
    );
}

/// The sessions the server's own log shows authorized for the application `balanced`.
fn count_sessions(cluster: &Cluster) -> usize {
    std::fs::read_to_string(cluster.log_file())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("connection authorized") && l.contains("application_name=balanced"))
        .count()
}
