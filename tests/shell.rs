//! Shell completions and man pages, generated from the command-line definitions: every
//! subcommand is in them, and bad input is refused with nothing written. Needs no server.

mod common;

use common::{assert_refused, stampede, stdout};

/// The top-level subcommands, as `stampede --help` lists them.
const SUBCOMMANDS: [&str; 12] = [
    "pgbench",
    "quickstart",
    "lab",
    "compare",
    "report",
    "sysbench",
    "tpcc",
    "tproch",
    "dbstress",
    "server",
    "completions",
    "man",
];

#[test]
fn completions_name_every_subcommand_in_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = stampede(&["completions", shell]);
        assert!(output.status.success(), "{shell}");
        let script = stdout(&output);
        for subcommand in SUBCOMMANDS {
            assert!(script.contains(subcommand), "{shell}: no {subcommand}");
        }
    }
    // A nested subcommand's flags are completed too.
    let bash = stdout(&stampede(&["completions", "bash"]));
    assert!(bash.contains("--keep-going"), "lab run's flag");
    assert!(
        bash.contains("--mysql-ignore-errors"),
        "sysbench run's flag"
    );
}

#[test]
fn the_man_page_lists_every_subcommand_and_the_directory_gets_a_page_for_each() {
    let output = stampede(&["man"]);
    assert!(output.status.success());
    let page = stdout(&output);
    assert!(page.contains(".TH stampede 1"), "{page}");
    for subcommand in SUBCOMMANDS {
        assert!(
            page.contains(&format!("stampede\\-{subcommand}(1)")),
            "{subcommand}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let output = stampede(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(output.status.success());
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    assert!(pages.contains(&"stampede.1".to_string()), "{pages:?}");
    for subcommand in SUBCOMMANDS {
        assert!(
            pages.contains(&format!("stampede-{subcommand}.1")),
            "{pages:?}"
        );
    }
    assert!(
        pages.contains(&"stampede-lab-run.1".to_string()),
        "{pages:?}"
    );
    let lab_run = std::fs::read_to_string(dir.path().join("stampede-lab-run.1")).unwrap();
    assert!(lab_run.contains("keep\\-going"), "{lab_run}");
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let output = stampede(&["completions", "tcsh"]);
    assert_refused(
        &output,
        "invalid value 'tcsh' for '<SHELL>'\n  [possible values: bash, elvish, fish, powershell, zsh]\n\n  tip: a similar value exists: 'zsh'\n\nFor more information, try '--help'.",
        "tcsh",
    );
    assert!(output.stdout.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let output = stampede(&["man", "--dir", missing.to_str().unwrap()]);
    assert_refused(
        &output,
        &format!("--dir {}: not a directory", missing.display()),
        "missing directory",
    );
    assert!(!missing.exists());
    assert!(output.stdout.is_empty());
}

/// A mistyped command line gets clap's whole message: the argument missing, the flag meant,
/// the usage line (exit 1, nothing run).
#[test]
fn command_line_errors_keep_claps_message() {
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["compare", "pg16", "pg18"],
            &[
                "stampede: error: the following required arguments were not provided:\n  <OTHER>\n",
                "Usage: stampede compare <RESULTS> <BASE> <OTHER>",
            ],
        ),
        (
            &["lab", "run", "lab.toml", "--shard", "2"],
            &[
                "stampede: error: unexpected argument '--shard' found",
                "tip: a similar argument exists: '--shards'",
                "Usage: stampede lab run",
            ],
        ),
        (
            &["report", "lab.db", "--out", "r.html"],
            &[
                "unexpected argument '--out' found",
                "tip: a similar argument exists: '--output'",
            ],
        ),
        (
            &["lab", "run", "lab.toml", "--runs", "3"],
            &["unexpected argument '--runs' found", "tip: a similar argument exists"],
        ),
        (
            &["pgbench", "--clients", "4"],
            &[
                "stampede: error: unexpected argument '--clients' found\nstampede: hint: a similar argument exists: '--client'\nstampede: hint: Try \"stampede pgbench --help\" for more information.",
            ],
        ),
    ];
    for (args, expected) in cases {
        let output = stampede(args);
        let text = common::stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {text}");
        for part in expected {
            assert!(text.contains(part), "{args:?}: {part:?} not in {text}");
        }
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}
