//! `stampede pgbench` beside the real pgbench on the same server and the same arguments: the
//! same exit status and the same error lines (with the program's name taken off), for the cases
//! pgbench's own TAP suite and pgbench.c hold.

mod common;

use common::{line_value, server, stampede, stderr, stdout};

/// A script file of this test's own, removed when dropped.
struct Script(std::path::PathBuf);

impl Script {
    fn new(name: &str, text: &str) -> Script {
        let path = std::env::temp_dir().join(format!(
            "stampede-fidelity-{}-{name}.sql",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        Script(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The `error:` lines of a run's stderr without the program's name, in order (clients abort
/// in any order, so the caller may sort).
fn error_lines(output: &std::process::Output, program: &str) -> Vec<String> {
    let prefix = format!("{program}: error: ");
    stderr(output)
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Runs `args` under pgbench and stampede on `db`; asserts the same status and error lines.
fn assert_same_as_pgbench(db: &str, args: &[&str]) {
    let server = server();
    let pgbench = server.pgbench(db, args);
    let mut ours_args = vec!["pgbench"];
    ours_args.extend_from_slice(args);
    let flags = server.flags(db);
    ours_args.extend(flags.iter().map(String::as_str));
    let ours = stampede(&ours_args);
    assert_eq!(
        ours.status.code(),
        pgbench.status.code(),
        "{args:?}\npgbench: {}\nstampede: {}",
        stderr(&pgbench),
        stderr(&ours)
    );
    let mut expected = error_lines(&pgbench, "pgbench");
    let mut got = error_lines(&ours, "stampede");
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "{args:?}");
    let processed = |text: &str| line_value(text, "number of transactions actually processed:");
    assert_eq!(
        processed(&stdout(&ours)),
        processed(&stdout(&pgbench)),
        "{args:?}"
    );
}

#[test]
fn copy_in_a_script_aborts_each_client_as_pgbench_does_instead_of_hanging() {
    let db = server().create_database("fidelity_copy");
    let init = server().pgbench(&db, &["-i", "-s", "1", "-q"]);
    assert!(init.status.success(), "{}", stderr(&init));
    let copy_in = Script::new("copy-in", " COPY pgbench_accounts FROM stdin\n");
    let copy_out = Script::new("copy-out", "COPY (SELECT 1) TO STDOUT;\n");
    let pipelined = Script::new(
        "copy-pipeline",
        "\\startpipeline\nCOPY pgbench_accounts FROM stdin;\n\\endpipeline\n",
    );
    for script in [&copy_in, &copy_out] {
        for mode in ["simple", "extended", "prepared"] {
            assert_same_as_pgbench(
                &db,
                &["-t", "10", "-c", "2", "-M", mode, "-f", script.path()],
            );
        }
    }
    assert_same_as_pgbench(&db, &["-t", "3", "-M", "extended", "-f", pipelined.path()]);
}

#[test]
fn a_script_that_ends_inside_a_transaction_block_counts_it_then_aborts_the_client() {
    let db = server().create_database("fidelity_open_block");
    let one_line = Script::new("open-block-1", "BEGIN;SELECT 1;");
    let two_lines = Script::new("open-block-2", "BEGIN;\nSELECT 1;\n");
    let pipelined = Script::new(
        "open-block-pipeline",
        "\\startpipeline\nBEGIN;\nSELECT 1;\n\\endpipeline\n",
    );
    let closed = Script::new("closed-block", "BEGIN;\nSELECT 1;\nEND;\n");
    for script in [&one_line, &two_lines, &closed] {
        for mode in ["simple", "prepared"] {
            let args = ["-n", "-t", "10", "-c", "2", "-M", mode, "-f", script.path()];
            assert_same_as_pgbench(&db, &args);
        }
    }
    assert_same_as_pgbench(
        &db,
        &["-n", "-t", "5", "-M", "extended", "-f", pipelined.path()],
    );
}

#[test]
fn a_variable_never_set_is_bound_as_null_in_extended_and_prepared_modes() {
    let db = server().create_database("fidelity_unset_variable");
    // Bound as anything but NULL, the division by zero aborts the client.
    let script = Script::new(
        "unset-variable",
        "SELECT CASE WHEN :never_set::int IS NULL THEN 1 ELSE 1 / 0 END;\n",
    );
    for mode in ["simple", "extended", "prepared"] {
        assert_same_as_pgbench(&db, &["-n", "-t", "3", "-M", mode, "-f", script.path()]);
    }
}

/// The whole of stderr under `-c 1`, with the program's name taken off every line.
fn whole_stderr(output: &std::process::Output, program: &str) -> String {
    stderr(output).replace(&format!("{program}: "), "")
}

#[test]
fn a_server_error_prints_its_detail_hint_and_context_lines_as_libpq_does() {
    let server = server();
    let db = server.create_database("fidelity_error_fields");
    // The parameters of a failed bind are CONTEXT (log_parameter_max_length_on_error).
    server.psql(
        &db,
        &format!("ALTER DATABASE {db} SET log_parameter_max_length_on_error = 64"),
    );
    let raised = Script::new(
        "raise-detail-hint",
        "DO $$ BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'd1', HINT = 'h1'; END $$;\n",
    );
    let with_parameters = Script::new(
        "parameters-context",
        "select '1' as one \\gset\nSELECT 1 / (random() / 2)::int, :one::int, :two::int;\n",
    );
    let cases = [
        (&raised, "simple"),
        (&raised, "prepared"),
        (&with_parameters, "prepared"),
    ];
    for (script, mode) in cases {
        let args = ["-n", "-t", "1", "-M", mode, "-f", script.path()];
        let pgbench = server.pgbench(&db, &args);
        let mut ours_args = vec!["pgbench"];
        ours_args.extend_from_slice(&args);
        let flags = server.flags(&db);
        ours_args.extend(flags.iter().map(String::as_str));
        let ours = stampede(&ours_args);
        assert_eq!(ours.status.code(), Some(2));
        let expected = whole_stderr(&pgbench, "pgbench");
        assert!(expected.contains("\nCONTEXT:  "), "{expected}");
        assert_eq!(whole_stderr(&ours, "stampede"), expected, "{mode}");
    }
}
