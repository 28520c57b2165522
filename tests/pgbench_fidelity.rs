//! `stampede pgbench` beside the real pgbench on the same server and the same arguments: the
//! same exit status and the same error lines (with the program's name taken off), for the cases
//! pgbench's own TAP suite and pgbench.c hold.

mod common;

use common::{line_value, server, stampede_with_env, stderr, stdout};

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

/// `stampede pgbench ARGS` on `db` of the test server, with `env` set.
fn stampede_pgbench(db: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let flags = server().flags(db);
    let mut all = vec!["pgbench"];
    all.extend_from_slice(args);
    all.extend(flags.iter().map(String::as_str));
    stampede_with_env(&all, env)
}

/// Runs `args` under pgbench and stampede on `db`; asserts the same status and error lines.
fn assert_same_as_pgbench(db: &str, args: &[&str]) {
    assert_same_as_pgbench_with_env(db, args, &[]);
}

/// The same, with `env` set for both programs.
fn assert_same_as_pgbench_with_env(db: &str, args: &[&str], env: &[(&str, &str)]) {
    let server = server();
    let pgbench = server.pgbench_with_env(db, args, env);
    let ours = stampede_pgbench(db, args, env);
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
        let ours = stampede_pgbench(&db, &args, &[]);
        assert_eq!(ours.status.code(), Some(2));
        let expected = whole_stderr(&pgbench, "pgbench");
        assert!(expected.contains("\nCONTEXT:  "), "{expected}");
        assert_eq!(whole_stderr(&ours, "stampede"), expected, "{mode}");
    }
}

#[test]
fn an_error_with_a_statement_position_shows_the_line_and_a_caret_as_libpq_does() {
    let server = server();
    let db = server.create_database("fidelity_error_position");
    let second_line = Script::new("position-line-2", "SELECT 1 +\n\t'abc'::int;\n");
    let long_line = Script::new(
        "position-long-line",
        &format!(
            "SELECT {} 'x'::int, {};\n",
            "1, ".repeat(30),
            "2, ".repeat(30) + "3"
        ),
    );
    let with_parameter = Script::new(
        "position-parameter",
        "\\set id 7\nSELECT :id, 'é' || 'ü', nosuchcolumn;\n",
    );
    for script in [&second_line, &long_line, &with_parameter] {
        for mode in ["simple", "extended"] {
            let args = ["-n", "-t", "1", "-M", mode, "-f", script.path()];
            let pgbench = server.pgbench(&db, &args);
            let ours = stampede_pgbench(&db, &args, &[]);
            assert_eq!(ours.status.code(), Some(2));
            let expected = whole_stderr(&pgbench, "pgbench");
            assert!(
                expected.contains("\n") && expected.contains("^\n"),
                "{expected}"
            );
            let error_part = |text: &str| {
                text.lines()
                    .filter(|line| {
                        !line.starts_with("client CPU") && !line.starts_with("server counters")
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            assert_eq!(
                error_part(&whole_stderr(&ours, "stampede")),
                error_part(&expected),
                "{mode}"
            );
        }
    }
}

/// Script errors pgbench finds while reading a script: the same status (1) and the same first
/// line, in pgbench's words (the caret's column differs: docs/pgbench.md).
#[test]
fn script_errors_are_reported_in_pgbench_words_before_connecting() {
    let db = server().create_database("fidelity_script_errors");
    let cases = [
        "\\set i\n",
        "\\set\n",
        "\\setshell var\n",
        "\\nosuchcommand\n",
        "\\if\n",
        "\\if 1 +\n\\endif\n",
        "\\set i least()\n",
        "\\set i greatest()\n",
        "\\set i hash()\n",
        "\\set i hash(1,2,3)\n",
        "\\set i permute(1)\n",
        "\\set i abs(1,2)\n",
        "\\set i noSuchFunction()\n",
        "\\set i ;\n",
        "\\set i :\n",
        "\\set i 1 +\n",
        "\\set i (1\n",
        "\\set i 1 = = 2\n",
        "\\set i case when 1 then 2 end end\n",
        "\\sleep\n",
        "\\sleep 1 2 3\n",
        "\\sleep foo\n",
        "\\sleep 1 parsec\n",
        "\\sleep 2x ms\n",
        "\\shell\n",
        "\\gset\n",
        "SELECT 1 \\gset a b\n",
        "\\set i 99999999999999999999\n",
        "\\set d 1.0E309\n",
        "\\set d .1E310\n",
        "\\set d 1e-400\n",
        "\\else\n",
        "\\endif\n",
        "\\elif 1\n",
        "\\if 1\n",
        "\\if 1\n\\else\n\\else\n\\endif\n",
        "\\startpipeline 1\n",
        "",
    ];
    for (index, text) in cases.iter().enumerate() {
        let script = Script::new(&format!("parse-error-{index}"), text);
        assert_same_as_pgbench(&db, &["-n", "-t", "1", "-f", script.path()]);
    }
}

/// pgbench's limits: 255 parameters per statement (extended and prepared only), 255 `\shell`
/// arguments, 16 function arguments (found at run time), 128 scripts.
#[test]
fn pgbench_limits_are_enforced_with_its_messages() {
    let db = server().create_database("fidelity_limits");
    let parameters = Script::new(
        "limit-parameters",
        &format!("\\set i 0\nSELECT LEAST({});\n", vec![":i"; 256].join(", ")),
    );
    for mode in ["simple", "extended", "prepared"] {
        assert_same_as_pgbench(&db, &["-n", "-t", "1", "-M", mode, "-f", parameters.path()]);
    }
    let shell = Script::new(
        "limit-shell",
        &format!("\\shell echo {}\n", vec!["arg"; 255].join(" ")),
    );
    let least = Script::new(
        "limit-least",
        "\\set i least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)\n",
    );
    let sixteen = Script::new(
        "limit-sixteen",
        "\\set i least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15)\n",
    );
    for script in [&shell, &least, &sixteen] {
        assert_same_as_pgbench(&db, &["-n", "-t", "1", "-f", script.path()]);
    }
    let mut many = vec!["-n", "-t", "1"];
    many.extend(std::iter::repeat_n("-S", 129));
    assert_same_as_pgbench(&db, &many);
}

/// Errors pgbench finds while running: pipeline misuse, a meta-command that fails, a \gset
/// into a name that is not a variable's; each aborts the client (exit 2) with pgbench's lines.
#[test]
fn run_time_errors_abort_the_client_with_pgbench_lines() {
    let db = server().create_database("fidelity_run_errors");
    let cases = [
        ("pipeline-twice", "\\startpipeline\n\\startpipeline\n"),
        ("pipeline-no-start", "\\endpipeline\n"),
        (
            "pipeline-gset",
            "\\startpipeline\nselect 1 \\gset f\n\\endpipeline\n",
        ),
        ("pipeline-left-open", "\\startpipeline\nSELECT 1;\n"),
        ("sleep-undefined", "\\sleep :nosuchvariable\n"),
        ("sleep-not-a-number", "\\set t 'x'\n\\sleep :t\n"),
        ("setshell-no-output", "\\setshell var true\n"),
        ("setshell-not-a-number", "\\setshell var echo one\n"),
        ("shell-failing", "\\shell false\n"),
        ("set-division", "\\set i 1/0\n"),
        ("gset-bad-name", "SELECT 1 AS \"bad name!\" \\gset\n"),
        ("gset-default-name", "SELECT 1 \\gset\n"),
        ("gset-no-row", "SELECT 1 WHERE false \\gset\n"),
    ];
    for (name, text) in cases {
        let script = Script::new(name, text);
        for mode in ["extended", "prepared"] {
            assert_same_as_pgbench(&db, &["-n", "-t", "2", "-M", mode, "-f", script.path()]);
        }
    }
}

/// Options as pgbench's getopt takes them: the last of a repeated option wins, `-S` and `-b`
/// add a script each time, a value is checked before the mode's conflicts, a bad seed says
/// where it came from, and PGOPTIONS reaches the server.
#[test]
fn options_are_read_as_pgbench_reads_them() {
    let server = server();
    let db = server.create_database("fidelity_options");
    let init = server.pgbench(&db, &["-i", "-s", "1", "-q"]);
    assert!(init.status.success(), "{}", stderr(&init));
    assert_same_as_pgbench(&db, &["-n", "-n", "-c", "4", "-c", "2", "-t", "3", "-S"]);
    assert_same_as_pgbench(&db, &["-n", "-t", "2", "-S", "-S", "-b", "si", "-N"]);
    assert_same_as_pgbench(&db, &["-F", "1"]);
    assert_same_as_pgbench(&db, &["-i", "-I", "dta"]);
    assert_same_as_pgbench(&db, &["-n", "-t", "1", "--random-seed=one"]);
    let seed_from_env = [("PGBENCH_RANDOM_SEED", "x")];
    assert_same_as_pgbench_with_env(&db, &["-n", "-t", "1"], &seed_from_env);
    // Division by zero unless the session got work_mem from PGOPTIONS.
    let needs_options = Script::new(
        "pgoptions",
        "SELECT 1 / (current_setting('work_mem') = '7MB')::int;\n",
    );
    let args = ["-n", "-t", "2", "-f", needs_options.path()];
    assert_same_as_pgbench_with_env(&db, &args, &[("PGOPTIONS", "-c work_mem=7MB")]);
    assert_same_as_pgbench(&db, &args);
}

/// `-d` prints what each client executes, sends and receives: the same lines as pgbench's `-d`.
#[test]
fn debug_output_shows_the_statements_pgbench_shows() {
    let server = server();
    let db = server.create_database("fidelity_debug");
    let script = Script::new("debug", "SELECT 1;\n\\set x 2\nSELECT :x;\n");
    // pgbench prints "receiving" each time the socket wakes it before the result is whole,
    // which timing decides: consecutive ones count as one.
    let sent = |output: &std::process::Output, program: &str| -> Vec<String> {
        let prefix = format!("{program}: ");
        let mut lines: Vec<String> = stderr(output)
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .filter(|line| line.starts_with("client "))
            .map(str::to_string)
            .collect();
        lines.dedup_by(|next, previous| next == previous && next.ends_with(" receiving"));
        lines
    };
    for mode in ["simple", "extended"] {
        let args = ["-n", "-t", "2", "-M", mode, "--debug", "-f", script.path()];
        let pgbench = server.pgbench(&db, &args);
        let ours = stampede_pgbench(&db, &args, &[]);
        assert!(ours.status.success(), "{}", stderr(&ours));
        let expected = sent(&pgbench, "pgbench");
        assert!(expected.len() >= 10, "{}", stderr(&pgbench));
        assert_eq!(sent(&ours, "stampede"), expected, "{mode}");
    }
}

/// `--tablespace` and `--index-tablespace` put the tables and primary keys where pgbench puts
/// them.
#[test]
fn init_places_tables_and_indexes_in_the_given_tablespaces() {
    let server = server();
    let location = server.cluster.root.join("fidelity_tablespace");
    std::fs::create_dir_all(&location).unwrap();
    if let Some(user) = &server.cluster.run_as {
        std::os::unix::fs::chown(&location, Some(user.uid), Some(user.gid)).unwrap();
    }
    server.psql("postgres", "DROP TABLESPACE IF EXISTS fidelity_ts");
    server.psql(
        "postgres",
        &format!(
            "CREATE TABLESPACE fidelity_ts LOCATION '{}'",
            location.display()
        ),
    );
    let placement = |db: &str| {
        server.psql(
            db,
            "SELECT string_agg(c.relname || ':' || coalesce(t.spcname, '-'), ' ' ORDER BY c.relname) \
             FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace \
             WHERE c.relname LIKE 'pgbench%'",
        )
    };
    let args = [
        "-i",
        "-q",
        "--tablespace=fidelity_ts",
        "--index-tablespace=fidelity_ts",
        "--partitions=2",
    ];
    let theirs = server.create_database("fidelity_ts_pgbench");
    let init = server.pgbench(&theirs, &args);
    assert!(init.status.success(), "{}", stderr(&init));
    let ours = server.create_database("fidelity_ts_stampede");
    let init = stampede_pgbench(&ours, &args, &[]);
    assert!(init.status.success(), "{}", stderr(&init));
    assert!(stderr(&init).contains("creating 2 partitions...\n"));
    let expected = placement(&theirs);
    assert!(
        expected.contains("pgbench_branches:fidelity_ts"),
        "{expected}"
    );
    assert!(
        expected.contains("pgbench_accounts_pkey:fidelity_ts"),
        "{expected}"
    );
    assert_eq!(placement(&ours), expected);
    for db in [&theirs, &ours] {
        server.psql("postgres", &format!("DROP DATABASE {db}"));
    }
    server.psql("postgres", "DROP TABLESPACE fidelity_ts");
}
