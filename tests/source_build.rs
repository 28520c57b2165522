//! PostgreSQL built from a release tarball: a real build with chosen CFLAGS that a lab runs beside
//! the system's binaries, a cache hit on the second request, and the failures (a patch that does
//! not apply, a configure error, not a source tree) refused with nothing left in the cache.
//!
//! The tarball is PostgreSQL 15's from Debian's source package: `STAMPEDE_TEST_PG_TARBALL`, or
//! `target/pgsrc/postgresql-15_*.orig.tar.bz2` where `.ci/fetch-pg-source` puts it.
//! suite: cpu-bound (a real PostgreSQL build takes both cores for minutes)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{pg15_tarball as tarball, stampede_with_env, stderr, stdout, LabDir};

/// A cache of the tests' own, kept between test runs so that a second `cargo test` is a hit.
fn cache() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn build(args: &[&str]) -> std::process::Output {
    let mut all = vec!["server", "build"];
    all.extend_from_slice(args);
    stampede_with_env(&all, &[("STAMPEDE_CACHE", cache().to_str().unwrap())])
}

/// The build a failure's message names (by its log's path) left nothing in the cache: no entry,
/// no partial directory.
fn assert_nothing_cached_for(message: &str) {
    let log = message
        .split("last lines of ")
        .nth(1)
        .and_then(|rest| rest.split(":\n").next())
        .unwrap_or_else(|| panic!("no log path in {message}"));
    assert!(Path::new(log).is_file(), "{log}");
    let key = Path::new(log)
        .parent()
        .and_then(|dir| dir.file_name())
        .unwrap()
        .to_string_lossy()
        .to_string();
    let builds = cache().join("postgresql/builds");
    assert!(!builds.join(&key).exists(), "{key} was cached");
    let leftovers: Vec<String> = std::fs::read_dir(&builds)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with(&format!(".{key}.")))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn work_dir(name: &str) -> LabDir {
    LabDir::new(&format!("build-{name}"))
}

#[test]
fn a_build_with_o2_runs_in_a_lab_beside_the_system_binaries_and_is_cached() {
    let tarball = tarball();
    let first = build(&[tarball.to_str().unwrap(), "--cflags", "-O2"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let bin_dir = PathBuf::from(stdout(&first).trim());
    assert!(bin_dir.join("postgres").is_file(), "{bin_dir:?}");
    let second = build(&[tarball.to_str().unwrap(), "--cflags", "-O2"]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(stdout(&second), stdout(&first));
    assert!(
        stderr(&second).starts_with("cache hit: built from postgresql-15_"),
        "{}",
        stderr(&second)
    );
    let pg_config = Command::new(bin_dir.join("pg_config"))
        .arg("--cflags")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&pg_config.stdout)
        .trim_end()
        .ends_with("-O2"));

    let dir = work_dir("lab");
    let spec = dir.join("built.toml");
    std::fs::write(
        &spec,
        format!(
            r#"name = "built"
runs = 1
duration = "2s"
seed = 7

[[target]]
name = "system"
settings = {{ fsync = false }}

[[target]]
name = "o2"
postgres = {{ source = "{}", cflags = "-O2" }}
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [2]
"#,
            tarball.display()
        ),
    )
    .unwrap();
    let output = stampede_with_env(
        &["lab", "run", spec.to_str().unwrap()],
        &[("STAMPEDE_CACHE", cache().to_str().unwrap())],
    );
    for (target, bin) in [("system", None), ("o2", Some(bin_dir.clone()))] {
        stop(&dir.join("built.db.servers").join(target), bin);
    }
    assert!(output.status.success(), "{}", stderr(&output));
    let db = rusqlite::Connection::open(dir.join("built.db")).unwrap();
    let (source, pg_config): (String, String) = db
        .query_row(
            "SELECT binary_source, pg_config FROM targets WHERE name = 'o2'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!(
        source.starts_with("built from source: built from postgresql-15_")
            && source.contains("CFLAGS -O2"),
        "{source}"
    );
    let cflags = pg_config
        .lines()
        .find(|line| line.starts_with("CFLAGS = "))
        .unwrap_or_default();
    assert!(cflags.ends_with("-O2"), "{cflags}");
    let completed: i64 = db
        .query_row(
            "SELECT count(*) FROM runs WHERE status = 'completed' AND tps > 0",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(completed, 2);
    let report = stampede_with_env(
        &[
            "report",
            dir.join("built.db").to_str().unwrap(),
            "--base",
            "system",
        ],
        &[],
    );
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(
        stdout(&report).contains("were built differently"),
        "{}",
        stdout(&report)
    );
}

fn stop(root: &Path, bin_dir: Option<PathBuf>) {
    use stampede::server::host::OsUser;
    use stampede::server::postgres::binaries::Binaries;
    use stampede::server::postgres::cluster::Cluster;
    let binaries = match bin_dir {
        Some(dir) => Binaries::at(&dir).ok(),
        None => Binaries::find_best().ok(),
    };
    let Some(binaries) = binaries else { return };
    let cluster = Cluster {
        binaries,
        root: root.to_path_buf(),
        port: 0,
        run_as: OsUser::for_server().expect("server user"),
        cpus: None,
    };
    if cluster.is_running() {
        let _ = cluster.stop();
    }
}

#[test]
fn a_patch_that_does_not_apply_fails_naming_the_file_and_hunk_and_leaves_no_entry() {
    let dir = work_dir("patch");
    let patch = dir.join("no-such-code.patch");
    std::fs::write(
        &patch,
        "--- a/src/backend/main/main.c\n+++ b/src/backend/main/main.c\n@@ -1,3 +1,3 @@\n-this line is not in main.c\n+nor is this one\n context that is not there\n",
    )
    .unwrap();
    let output = build(&[
        tarball().to_str().unwrap(),
        "--cflags",
        "-O1",
        "--patch",
        patch.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with("unpack...\nunpack done in "),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "stampede: error: patch {} does not apply: patch failed",
            patch.display()
        )),
        "{message}"
    );
    assert!(message.contains("Hunk #1 FAILED"), "{message}");
    assert!(message.contains("patch.log:"), "{message}");
    assert_nothing_cached_for(&message);

    // In a lab under --keep-going the failed build skips its own target only.
    let spec = dir.join("patched.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"patched\"\nruns = 1\nduration = \"1s\"\nseed = 5\n\
             [[target]]\nname = \"system\"\nsettings = {{ fsync = false }}\n\
             [[target]]\nname = \"patched\"\npostgres = {{ source = \"{}\", cflags = \"-O1\", patches = [\"no-such-code.patch\"] }}\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nclients = [1]\n",
            tarball().display()
        ),
    )
    .unwrap();
    let output = stampede_with_env(
        &["lab", "run", "--keep-going", spec.to_str().unwrap()],
        &[("STAMPEDE_CACHE", cache().to_str().unwrap())],
    );
    stop(&dir.join("patched.db.servers/system"), None);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("target \"patched\": build: unpack..."),
        "{message}"
    );
    assert!(
        message.contains("target \"patched\" was skipped (1 run(s) not run)"),
        "{message}"
    );
    let db = rusqlite::Connection::open(dir.join("patched.db")).unwrap();
    let completed: Vec<String> = db
        .prepare("SELECT c.target FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(completed, ["system"]);
}

#[test]
fn a_configure_error_shows_its_step_log_tail_and_path_and_leaves_no_entry() {
    let output = build(&[
        tarball().to_str().unwrap(),
        "--configure",
        "--with-blocksize=3",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("stampede: error: configure failed (exit status: 1); last lines of "),
        "{message}"
    );
    assert!(message.contains("configure.log:"), "{message}");
    assert!(message.contains("Invalid block size"), "{message}");
    assert_nothing_cached_for(&message);
}

#[test]
fn what_is_not_a_source_tree_is_refused() {
    let dir = work_dir("not-source");
    let output = build(&[dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "stampede: error: {} is not a PostgreSQL source tree (no configure and src/backend/main/main.c)\n",
            dir.display()
        )
    );
    let file = dir.join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let output = build(&[file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "stampede: error: {} is neither a PostgreSQL source directory nor a release tarball (.tar.gz, .tar.bz2, .tar.xz)\n",
            file.display()
        )
    );
}

#[test]
fn a_machine_without_a_compiler_is_told_what_to_install_before_anything_is_built() {
    let output = stampede_with_env(
        &[
            "server",
            "build",
            tarball().to_str().unwrap(),
            "--cflags",
            "-O1",
        ],
        &[
            ("STAMPEDE_CACHE", cache().to_str().unwrap()),
            ("CC", "/nonexistent/cc"),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "stampede: error: building PostgreSQL needs a C compiler, and `/nonexistent/cc` was not found; on Debian install build-essential\n"
    );
    assert_eq!(stdout(&output), "");
}
