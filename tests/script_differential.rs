//! The script language against the real pgbench: every script in tests/differential/ runs
//! through both tools with the same --random-seed, and the `debug()` lines must match exactly
//! (one client: in order; three clients: as a multiset, since interleaving differs).

mod common;

use common::{server, stampede, stderr, TempFile};

fn debug_lines(output: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("debug("))
        .map(str::to_string)
        .collect()
}

fn scripts() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
}

fn run_both(script: &str, db: &str, extra: &[&str]) -> (Vec<String>, Vec<String>) {
    let server = server();
    let mut args = vec!["-n", "-f", script];
    args.extend_from_slice(extra);
    let theirs = server.pgbench(db, &args);
    assert!(
        theirs.status.success(),
        "pgbench failed on {script}: {}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let flags = server.flags(db);
    let mut ours_args = vec!["pgbench"];
    ours_args.extend_from_slice(&args);
    ours_args.extend(flags.iter().map(String::as_str));
    let ours = stampede(&ours_args);
    assert!(
        ours.status.success(),
        "stampede failed on {script}: {}",
        stderr(&ours)
    );
    (debug_lines(&theirs), debug_lines(&ours))
}

#[test]
fn debug_output_matches_pgbench_line_by_line() {
    let db = server().create_database("differential");
    let mut compared = 0;
    for path in scripts() {
        let script = path.to_str().unwrap();
        // pgbench cannot prepare compound (\;) statements, and pipelines need the extended
        // protocol: such scripts run only in the modes pgbench accepts for them.
        let text = std::fs::read_to_string(&path).unwrap();
        let compound = text.contains("\\;");
        let pipeline = text.contains("\\startpipeline");
        for (seed, mode) in [("1", "simple"), ("20261122", "prepared"), ("7", "extended")] {
            if (compound && mode != "simple") || (pipeline && mode == "simple") {
                continue;
            }
            let extra = [
                "-t",
                "1",
                "-c",
                "1",
                "--random-seed",
                seed,
                "-M",
                mode,
                "-D",
                "scale=3",
            ];
            let (theirs, ours) = run_both(script, &db, &extra);
            assert!(
                !theirs.is_empty(),
                "{script}: pgbench printed no debug lines"
            );
            for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
                assert_eq!(o, t, "{script} seed {seed}: line {} differs", i + 1);
            }
            assert_eq!(ours.len(), theirs.len(), "{script}: line counts differ");
            compared += theirs.len();
        }
    }
    assert!(compared > 250, "only {compared} lines compared");
}

#[test]
fn several_clients_and_transactions_draw_the_same_numbers() {
    let db = server().create_database("differential_clients");
    let script = scripts()
        .into_iter()
        .find(|p| p.ends_with("random.sql"))
        .unwrap();
    let extra = [
        "-t",
        "4",
        "-c",
        "3",
        "-j",
        "1",
        "--random-seed",
        "99",
        "-D",
        "scale=2",
    ];
    let (mut theirs, mut ours) = run_both(script.to_str().unwrap(), &db, &extra);
    theirs.sort();
    ours.sort();
    assert_eq!(theirs.len(), 3 * 4 * 16);
    assert_eq!(ours, theirs);
}

#[test]
fn evaluation_errors_abort_like_pgbench() {
    let server = server();
    let db = server.create_database("differential_errors");
    for (name, body) in [
        ("div", "\\set x 1 / 0\n"),
        ("overflow", "\\set x 9223372036854775807 * 2\n"),
        ("coerce", "\\set x NOT 1\n"),
        ("undefined", "\\set x :nope + 1\n"),
        ("gaussian", "\\set x random_gaussian(1, 10, 1.5)\n"),
        ("empty", "\\set x random(5, 1)\n"),
    ] {
        let path = TempFile::new(&format!("eval-{name}.sql"));
        std::fs::write(&path, body).unwrap();
        let script = path.to_str().unwrap();
        let theirs = server.pgbench(&db, &["-n", "-t", "1", "-f", script]);
        let flags = server.flags(&db);
        let mut args = vec!["pgbench", "-n", "-t", "1", "-f", script];
        args.extend(flags.iter().map(String::as_str));
        let ours = stampede(&args);
        assert_eq!(
            ours.status.code(),
            theirs.status.code(),
            "{name}: exit codes differ"
        );
        let their_err = String::from_utf8_lossy(&theirs.stderr).into_owned();
        let reason = their_err
            .lines()
            .find(|l| {
                !l.contains("aborted")
                    && l.starts_with("pgbench: error: ")
                    && !l.contains("Run was aborted")
            })
            .map(|l| l.trim_start_matches("pgbench: error: ").to_string())
            .unwrap_or_default();
        assert!(
            stderr(&ours).contains(&reason),
            "{name}: pgbench said {reason:?}, we said {}",
            stderr(&ours)
        );
    }
}
