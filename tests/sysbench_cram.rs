//! sysbench 1.0.20's own regression suite (the cram `.t` files of `tests/t/` and their
//! `tests/include/`, from Debian's source package: `.ci/fetch-sysbench-source`) run against
//! `stampede sysbench`, on a PostgreSQL and a MariaDB of the test suite's own, with `sysbench`
//! on PATH running this build's binary. Every database test the real sysbench passes here
//! passes, except the ones listed below with the reason stampede differs; the test fails when
//! an unlisted case fails or a listed one starts passing. The non-database tests (cpu, fileio,
//! memory, mutex, threads) are out of scope.
//!
//! The suite's output depends on its environment in two places, normalized as the suite's
//! authors would for these servers: its emulation of psql's `\d+` does not order the columns
//! (PostgreSQL 15 returns them in another order: the harness adds `ORDER BY attnum`), and
//! MariaDB's client shows numeric defaults unquoted and echoes a failed statement (MySQL's,
//! which the suite expects, does neither: a `mysql` wrapper quotes and drops the echo). One
//! expected message is PostgreSQL 12's wording; 13 and later name the relation.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mariadb;

/// cram's command: `cram`, or `cram3` as Debian 12's python3-cram names it.
fn cram() -> &'static str {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    if on_path("cram") {
        "cram"
    } else {
        "cram3"
    }
}

/// Suite files where stampede differs from sysbench on purpose, and why.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "opt_help.t",
        "`--help` lists stampede's built-in tests (the oltp_* tests run natively) under \
         \"Compiled-in tests\", not sysbench's non-database ones",
    ),
    (
        "tests.t",
        "the same list: it looks for a suite file per compiled-in test, and sysbench's suite has \
         none for stampede's built-in tests",
    ),
    (
        "opt_rate.t",
        "it runs sysbench's cpu test, a non-database test stampede does not implement",
    ),
    (
        "opt_report_interval.t",
        "its second half runs sysbench's cpu test (the first, a Lua script's intervals, passes)",
    ),
    (
        "opt_report_checkpoints.t",
        "its second half runs sysbench's cpu test (the first, a Lua script's checkpoints, passes)",
    ),
];

/// The non-database tests, out of scope.
const OUT_OF_SCOPE: [&str; 5] = [
    "test_cpu.t",
    "test_fileio.t",
    "test_memory.t",
    "test_mutex.t",
    "test_threads.t",
];

fn suite_dir() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sysbench-src/sysbench-1.0.20/tests");
    dir.join("t").is_dir().then_some(dir)
}

/// Which server a suite file uses: its files run one at a time per server, each on a fresh
/// `sbtest` database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Postgres,
    Mariadb,
    Neither,
}

fn server_of(text: &str) -> Server {
    if text.contains("pgsql_common.sh") || text.contains("SBTEST_PGSQL_ARGS") {
        Server::Postgres
    } else if text.contains("mysql_common.sh") || text.contains("SBTEST_MYSQL_ARGS") {
        Server::Mariadb
    } else {
        Server::Neither
    }
}

/// The work directory: the suite's files with the environment's two normalizations, a
/// `sysbench` that runs stampede, a `mysql` for MariaDB, and the suite's config.
struct Harness {
    root: PathBuf,
    env: Vec<(String, String)>,
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn replace_in(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains(from),
        "{}: {from:?} not found",
        path.display()
    );
    std::fs::write(path, text.replace(from, to)).unwrap();
}

impl Harness {
    /// `sysbench`: the command the suite runs as sysbench (stampede's, or the real one).
    fn new(suite: &Path, sysbench: &str) -> Harness {
        let root = std::env::temp_dir().join(format!("stampede-cram-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&suite.join("t"), &root.join("t"));
        copy_dir(&suite.join("include"), &root.join("include"));
        replace_in(
            &root.join("include/pgsql_common.sh"),
            "    AND f.attnum > 0\nEOF",
            "    AND f.attnum > 0\nORDER BY f.attnum\nEOF",
        );
        replace_in(
            &root.join("t/api_sql_pgsql.t"),
            "null value in column \"a\" violates",
            "null value in column \"a\" of relation \"t\" violates",
        );
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        write_executable(
            &bin.join("sysbench"),
            // Named `sysbench` in its argv[0], as the suite expects (`sysbench.cmdline.argv`).
            &format!("#!/bin/bash\nexec -a sysbench {sysbench} \"$@\"\n"),
        );
        write_executable(
            &bin.join("mysql"),
            &format!(
                "#!/bin/bash\n\
                 # MariaDB's client as the suite's MySQL shows its output: numeric defaults quoted,\n\
                 # no echo of a failed statement (its error message kept, after its output).\n\
                 errors=$(mktemp)\n\
                 /usr/bin/mariadb --socket='{}' \"$@\" 2>\"$errors\" \\\n\
                 \x20 | sed \"s/DEFAULT \\([0-9][0-9]*\\)/DEFAULT '\\1'/\"\n\
                 status=${{PIPESTATUS[0]}}\n\
                 grep -v -e '^--------------$' -e '^SHOW CREATE TABLE' -e '^$' \"$errors\" >&2\n\
                 rm -f \"$errors\"\n\
                 exit $status\n",
                mariadb::socket()
            ),
        );
        let config = root.join("config.sh");
        std::fs::write(
            &config,
            "export SBTEST_VERSION_STRING=\"sysbench 1.0.20\"\nexport SBTEST_VERSION=\"1.0.20\"\n\
             export SBTEST_HAS_MYSQL=yes\nexport SBTEST_HAS_PGSQL=yes\n",
        )
        .unwrap();
        let pg = common::server();
        let include = root.join("include").display().to_string();
        let scripts = "/usr/share/sysbench".to_string();
        let env = vec![
            ("SBTEST_ROOTDIR".into(), root.display().to_string()),
            ("SBTEST_SCRIPTDIR".into(), scripts.clone()),
            ("SBTEST_SUITEDIR".into(), root.join("t").display().to_string()),
            ("SBTEST_INCDIR".into(), include.clone()),
            ("SBTEST_CONFIG".into(), config.display().to_string()),
            ("SBTEST_VERSION_STRING".into(), "sysbench 1.0.20".into()),
            ("SBTEST_VERSION".into(), "1.0.20".into()),
            ("SBTEST_HAS_MYSQL".into(), "yes".into()),
            ("SBTEST_HAS_PGSQL".into(), "yes".into()),
            (
                "LUA_PATH".into(),
                format!("{scripts}/?;{scripts}/?.lua;{include}/?;{include}/?.lua"),
            ),
            (
                "SBTEST_PGSQL_ARGS".into(),
                format!(
                    "--pgsql-host=127.0.0.1 --pgsql-port={} --pgsql-user={} --pgsql-password={} --pgsql-db=sbtest",
                    pg.port(),
                    pg.user,
                    common::PASSWORD
                ),
            ),
            ("PGHOST".into(), "127.0.0.1".into()),
            ("PGPORT".into(), pg.port()),
            ("PGUSER".into(), pg.user.clone()),
            ("PGPASSWORD".into(), common::PASSWORD.into()),
            (
                "SBTEST_MYSQL_ARGS".into(),
                format!(
                    "--mysql-socket={} --mysql-user=root --mysql-db=sbtest",
                    mariadb::socket()
                ),
            ),
            (
                "PATH".into(),
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
        ];
        Harness { root, env }
    }

    /// Runs one suite file with cram; its diff when it fails.
    fn run(&self, file: &str, server: Server) -> Result<(), String> {
        match server {
            Server::Postgres => {
                common::server().create_database("sbtest");
            }
            Server::Mariadb => {
                mariadb::create_database("sbtest");
            }
            Server::Neither => {}
        }
        let output = Command::new(cram())
            .arg("--shell=/bin/bash")
            .arg(format!("t/{file}"))
            .current_dir(&self.root)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("cram runs (python3-cram)");
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stdout).into_owned())
        }
    }
}

/// Each suite file's outcome (its diff when it fails), run with `sysbench` as sysbench.
fn run_suite(suite: &Path, sysbench: &str) -> Vec<(String, Result<(), String>)> {
    mariadb::mariadb();
    let harness = Harness::new(suite, sysbench);
    let mut files: Vec<(String, Server)> = std::fs::read_dir(harness.root.join("t"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".t") && !OUT_OF_SCOPE.contains(&name.as_str()))
        .map(|name| {
            let text = std::fs::read_to_string(harness.root.join("t").join(&name)).unwrap();
            let server = server_of(&text);
            (name, server)
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    // One stream per server (each file resets that server's sbtest), side by side.
    let outcomes: Vec<(String, Result<(), String>)> = std::thread::scope(|scope| {
        let streams: Vec<_> = [Server::Postgres, Server::Mariadb, Server::Neither]
            .into_iter()
            .map(|server| {
                let mine: Vec<String> = files
                    .iter()
                    .filter(|(_, s)| *s == server)
                    .map(|(name, _)| name.clone())
                    .collect();
                let harness = &harness;
                scope.spawn(move || {
                    mine.into_iter()
                        .map(|file| {
                            let outcome = harness.run(&file, server);
                            (file, outcome)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        streams
            .into_iter()
            .flat_map(|stream| stream.join().unwrap())
            .collect()
    });
    let _ = std::fs::remove_dir_all(&harness.root);
    outcomes
}

fn suite_or_skip() -> Option<PathBuf> {
    let suite = suite_dir();
    if suite.is_none() {
        eprintln!(
            "SKIPPED: sysbench's regression suite is not in target/sysbench-src \
             (.ci/fetch-sysbench-source could not download Debian's sysbench source package)"
        );
    }
    suite
}

#[test]
fn sysbench_own_suite_passes_but_for_the_listed_differences() {
    let Some(suite) = suite_or_skip() else {
        return;
    };
    let stampede = format!("'{}' sysbench", env!("CARGO_BIN_EXE_stampede"));
    let outcomes = run_suite(&suite, &stampede);
    let mut problems = Vec::new();
    for (file, outcome) in &outcomes {
        let listed = DELIBERATE.iter().any(|(name, _)| name == file);
        match (outcome, listed) {
            (Err(diff), false) => problems.push(format!("{file} fails:\n{diff}")),
            (Ok(()), true) => problems.push(format!(
                "{file} passes: take it off the list of deliberate differences"
            )),
            _ => {}
        }
    }
    let passed = outcomes.iter().filter(|(_, o)| o.is_ok()).count();
    eprintln!(
        "sysbench's suite: {passed} of {} files pass, {} differ on purpose",
        outcomes.len(),
        DELIBERATE.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The reference: the real sysbench 1.0.20 (Debian's) through the same harness on the same
/// servers. Run by hand (`cargo test --release --test sysbench_cram -- --ignored`); it printed
/// every file passing but api_sql_mysql.t (sysbench crashes in MariaDB's client library).
#[test]
#[ignore]
fn the_real_sysbench_passes_the_same_files() {
    let Some(suite) = suite_or_skip() else {
        return;
    };
    let failing: Vec<String> = run_suite(&suite, "/usr/bin/sysbench")
        .into_iter()
        .filter(|(_, outcome)| outcome.is_err())
        .map(|(file, _)| file)
        .collect();
    eprintln!("the real sysbench fails: {failing:?}");
    assert_eq!(failing, ["api_sql_mysql.t"]);
}
