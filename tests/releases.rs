//! The releases users compare this year: PostgreSQL 19 as a lab target (zonky has no 19 yet, so
//! it comes from Debian's archive: its release tarball built from source, or Debian's own build
//! unpacked self-contained when the archive serves only the binary packages), the report naming
//! where it came from and the defaults that changed from 18 (read from both servers'
//! `pg_settings` boot values), `server versions` listing what is reachable, and a major that is
//! nowhere refused before anything starts.

mod common;

use common::{sqlite, stampede_command, stderr, stdout, LabDir};

#[test]
fn a_lab_compares_18_from_zonky_with_19_from_debian_and_names_the_changed_defaults() {
    let dir = LabDir::new("releases-19");
    let spec = dir.join("lab.toml");
    std::fs::write(
        &spec,
        r#"name = "pg18-vs-19"
runs = 2
duration = "2s"
warmup = "500ms"

[[target]]
name = "pg18"
postgres = "18"
settings = { fsync = false }

[[target]]
name = "pg19"
postgres = "19"
settings = { fsync = false }

[[target]]
name = "pg18debian"
postgres = { debian = "18" }
settings = { fsync = false }

[[workload]]
name = "pgbench"
scripts = ["select-only"]
scale = [1]
clients = [2]
"#,
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    let progress = stderr(&output);
    assert!(output.status.success(), "{progress}");
    // One line says what was taken for 19 and why.
    assert!(
        progress.contains("target \"pg19\": PostgreSQL 19: zonky publishes no 19 build"),
        "{progress}"
    );
    let db = dir.join("pg18-vs-19.db");
    let targets = sqlite(
        &db,
        "SELECT name, server_version, binary_source FROM targets ORDER BY name",
    );
    // Ordered by name: pg18, pg18debian, pg19.
    assert!(targets[0][1].starts_with("PostgreSQL 18."), "{targets:?}");
    assert!(targets[1][1].starts_with("PostgreSQL 18."), "{targets:?}");
    assert!(targets[2][1].starts_with("PostgreSQL 19"), "{targets:?}");
    assert_eq!(targets[0][2], "zonky (Maven Central)", "{targets:?}");
    assert!(
        targets[1][2].starts_with("Debian's packages: postgresql-18 18."),
        "{targets:?}"
    );
    assert!(
        targets[2][2].starts_with("Debian's packages: postgresql-19 19~")
            || targets[2][2].starts_with("built from source: built from postgresql-19_19"),
        "{targets:?}"
    );
    // The boot values are stored as the server has them (checked against the server's own
    // catalog by the report's warning below, and here against 19's documented new default).
    let jit = sqlite(
        &db,
        "SELECT t.name, s.boot_val FROM target_settings s JOIN targets t ON t.id = s.target_id WHERE s.name = 'jit' ORDER BY t.name",
    );
    assert_eq!(jit, [["pg18", "on"], ["pg18debian", "on"], ["pg19", "off"]]);
    let completed = sqlite(&db, "SELECT count(*) FROM runs WHERE status = 'completed'");
    assert_eq!(completed[0][0], "6");

    let report = stampede_command(&["report", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let text = stdout(&report);
    let warning = text
        .lines()
        .find(|line| line.contains("defaults changed from \"pg18\""))
        .unwrap_or_else(|| panic!("no changed-defaults warning in:\n{text}"));
    assert!(warning.contains("to \"pg19\" (PostgreSQL 19"), "{warning}");
    for change in [
        "jit on → off",
        "max_locks_per_transaction 64 → 128",
        "default_toast_compression pglz → lz4",
        "log_lock_waits off → on",
    ] {
        assert!(warning.contains(change), "{change} in {warning}");
    }
    assert!(
        warning.contains(" drops ") && warning.contains("io_workers"),
        "{warning}"
    );
    // The report names 19's provenance; Debian's 18 and 19 are built alike, so no build warning
    // pairs those two (zonky's 18 differs from both).
    assert!(text.contains(&targets[2][2]), "{text}");
    let built_differently: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("were built differently"))
        .collect();
    assert!(!built_differently.is_empty(), "{text}");
    assert!(
        built_differently
            .iter()
            .all(|line| line.contains("\"pg18\" (zonky (Maven Central))")),
        "{built_differently:?}"
    );
}

#[test]
fn server_versions_lists_19_and_where_it_comes_from() {
    let output = stampede_command(&["server", "versions"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let row = text
        .lines()
        .find(|line| line.trim_start().starts_with("19 "))
        .unwrap_or_else(|| panic!("no row for 19 in:\n{text}"));
    assert!(row.contains("none"), "zonky has no 19: {row}");
    assert!(
        row.contains("19~") && (row.contains("(experimental)") || row.contains("(unstable)")),
        "{row}"
    );
    assert!(text.contains("ref = \"master\""), "{text}");
}

#[test]
fn a_major_that_is_nowhere_is_refused_before_anything_starts() {
    let dir = LabDir::new("releases-nowhere");
    let spec = dir.join("lab.toml");
    std::fs::write(
        &spec,
        r#"name = "nowhere"
runs = 1
duration = "1s"

[[target]]
name = "system"

[[target]]
name = "next"
postgres = "20"

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1]
"#,
    )
    .unwrap();
    let output = stampede_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with("stampede: error: target \"next\": PostgreSQL 20 is not reachable: zonky (Maven Central) publishes 9.6–18; Debian's source packages (experimental, unstable) carry 19 (19~"),
        "{message}"
    );
    assert!(
        message.trim_end().ends_with(
            "a development branch builds from git with postgres = { git = \"…\", ref = \"master\" }"
        ),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(!dir.join("nowhere.db").exists());
    assert!(!dir.join("nowhere.db.servers").exists());
    assert!(
        !dir.join("nowhere.db.lock").exists(),
        "refused before the lab's lock"
    );

    // `server download` says the same, and an unknown spelling is named as such.
    let output = stampede_command(&["server", "download", "19beta"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "stampede: error: unknown PostgreSQL version \"19beta\"; use a major (\"16\", \"19\") or an exact version (\"16.4.0\", \"19rc1\")\n"
    );
}

/// zonky's builds hold the server alone: the client programs come from Debian's
/// postgresql-client of the newest major, unpacked self-contained, and dump and list a database
/// of the suite's server; `server client-programs` names the machine's own where it has them.
#[test]
fn debian_s_client_programs_dump_a_database_where_zonky_s_build_has_no_pg_dump() {
    let bin = stampede::server::postgres::release::debian_client_programs(&mut |_| {})
        .expect("Debian's client programs");
    let version = std::process::Command::new(bin.join("pg_dump"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        stdout(&version).starts_with("pg_dump (PostgreSQL) "),
        "{}",
        stderr(&version)
    );
    let s = common::server();
    let db = s.create_database("client_programs");
    s.psql(
        &db,
        "CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (1), (2)",
    );
    let dump = common::TempFile::new("client-programs.dump");
    let mut pg_dump = std::process::Command::new(bin.join("pg_dump"));
    pg_dump
        .args(["-Fc", "-f", dump.to_str().unwrap()])
        .args(["-h", &s.socket_dir(), "-p", &s.port(), "-U", &s.user, &db])
        .env("PGPASSWORD", common::PASSWORD);
    let dumped = pg_dump.output().unwrap();
    assert!(dumped.status.success(), "{}", stderr(&dumped));
    let listed = std::process::Command::new(bin.join("pg_restore"))
        .args(["-l", dump.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        stdout(&listed).contains("TABLE public kept"),
        "{}",
        stdout(&listed)
    );

    let named = stampede_command(&["server", "client-programs"])
        .output()
        .unwrap();
    assert!(named.status.success(), "{}", stderr(&named));
    let path = std::path::PathBuf::from(stdout(&named).trim());
    assert!(
        path.join("pg_dump").is_file() && path.join("pg_restore").is_file(),
        "{path:?}"
    );
}
