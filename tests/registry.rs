//! The registry of lab workloads is the one list: `lab plan` accepts exactly its names, the
//! lab's page (docs/lab.md) documents them, and a workload refuses what it would not honour
//! before anything starts.

mod common;

use std::path::PathBuf;

use common::{stampede, stderr, LabDir};
use stampede::family::lab_workloads;

fn spec_dir(name: &str) -> LabDir {
    LabDir::new(&format!("registry-{name}"))
}

fn spec(workload: &str, extra: &str) -> String {
    format!(
        "name = \"r\"\nruns = 1\nduration = \"1s\"\n[[target]]\nname = \"t\"\n\
         [[workload]]\nname = \"{workload}\"\nclients = [1]\n{extra}"
    )
}

/// The names `lab plan` lists when it refuses an unknown workload.
fn accepted_names() -> Vec<String> {
    let dir = spec_dir("names");
    let path = dir.join("lab.toml");
    std::fs::write(&path, spec("no-such-workload", "")).unwrap();
    let output = stampede(&["lab", "plan", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    let list = text
        .split("known workloads are ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of workloads in {text}"));
    list.trim()
        .split(", ")
        .map(|name| name.trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_registered_workload_is_accepted_by_the_lab_and_documented() {
    let registered: Vec<&str> = lab_workloads().map(|kind| kind.name).collect();
    assert!(registered.len() >= 7, "{registered:?}");
    assert_eq!(accepted_names(), registered);
    let lab_doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lab.md")).unwrap();
    let row = lab_doc
        .lines()
        .find(|line| line.starts_with("| `[[workload]] name` |"))
        .expect("docs/lab.md's workload key row");
    for name in &registered {
        assert!(
            row.contains(&format!("`\"{name}\"`")),
            "{name} missing from {row}"
        );
    }
    // Each registered workload plans from a spec that names it alone (a replay with the
    // capture and starting data it cannot do without: the example's).
    for name in &registered {
        let dir = spec_dir(name);
        let path = dir.join("lab.toml");
        let needs = match *name {
            "replay" => concat!(
                "scripts = [\"",
                env!("CARGO_MANIFEST_DIR"),
                "/examples/replay/shop.replay\"]\n",
                "options = { data = \"",
                env!("CARGO_MANIFEST_DIR"),
                "/examples/replay/shop.sql\" }\n"
            ),
            _ => "",
        };
        std::fs::write(&path, spec(name, needs)).unwrap();
        let output = stampede(&["lab", "plan", path.to_str().unwrap()]);
        assert!(output.status.success(), "{name}: {}", stderr(&output));
    }
    // A replay's clients are its captured sessions: another count is refused when planned.
    let dir = spec_dir("replay-clients");
    let path = dir.join("lab.toml");
    let replay = spec(
        "replay",
        concat!(
            "scripts = [\"",
            env!("CARGO_MANIFEST_DIR"),
            "/examples/replay/shop.replay\"]\n",
            "options = { data = \"",
            env!("CARGO_MANIFEST_DIR"),
            "/examples/replay/shop.sql\" }\n"
        ),
    )
    .replace("clients = [1]", "clients = [2]");
    std::fs::write(&path, replay).unwrap();
    let output = stampede(&["lab", "plan", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("clients: workload \"replay\" brings its own clients (the captured sessions): give clients = [1]"),
        "{}",
        stderr(&output)
    );
}

/// tpcc sends its calls simple or prepared: a spec asking for the extended protocol is refused
/// at the key, with exit 1 and no results database, rather than silently run otherwise.
#[test]
fn a_protocol_a_workload_does_not_honour_is_refused_at_its_key() {
    let dir = spec_dir("protocol");
    let path = dir.join("lab.toml");
    std::fs::write(&path, spec("tpcc", "protocol = \"extended\"\n")).unwrap();
    for command in ["plan", "run"] {
        let output = stampede(&["lab", command, path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert_eq!(
            stderr(&output).trim(),
            format!(
                "stampede: error: {}:9:12: protocol: workload \"tpcc\" runs only with \"simple\" or \"prepared\", not \"extended\"; set that or leave protocol out",
                path.display()
            )
        );
        assert!(!dir.join("r.db").exists());
    }
    // The protocols it honours are accepted.
    for protocol in ["simple", "prepared"] {
        std::fs::write(&path, spec("tpcc", &format!("protocol = \"{protocol}\"\n"))).unwrap();
        let output = stampede(&["lab", "plan", path.to_str().unwrap()]);
        assert!(output.status.success(), "{}", stderr(&output));
    }
}

/// What `lab run` would refuse, `lab plan` refuses: a test or script a workload does not
/// have (at its place in the spec) and a version no archive publishes; exit 1, nothing written.
#[test]
fn lab_plan_refuses_what_lab_run_would() {
    let dir = spec_dir("plan-refuses");
    let path = dir.join("lab.toml");
    let refused = |text: String| {
        std::fs::write(&path, text).unwrap();
        let output = stampede(&["lab", "plan", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert!(!dir.join("r.db").exists());
        stderr(&output).trim().to_string()
    };
    let message = refused(spec(
        "sysbench",
        "scripts = [\"oltp_read_only\", \"oltp_readonly\"]\n",
    ));
    assert!(
        message.starts_with(&format!(
            "stampede: error: {}:9:30: unknown test \"oltp_readonly\"; the tests are: oltp_read_only, ",
            path.display()
        )),
        "{message}"
    );
    let message = refused(spec("pgbench", "scripts = [\"mine.sql\"]\n"));
    assert!(
        message.starts_with(&format!(
            "stampede: error: {}:9:12: could not open file \"{}\": ",
            path.display(),
            dir.join("mine.sql").display()
        )),
        "{message}"
    );
    let message = refused(
        spec("pgbench", "").replace("name = \"t\"\n", "name = \"t\"\npostgres = \"18.99\"\n"),
    );
    assert!(
        message.contains("target \"t\": could not find PostgreSQL 18.99 on Maven Central (zonky): it is not published; the newest 18 is 18."),
        "{message}"
    );
    let message = refused(
        spec("pgbench", "").replace("name = \"t\"\n", "name = \"t\"\npostgres = \"180\"\n"),
    );
    assert!(
        message.contains(
            "target \"t\": PostgreSQL 180 is not reachable: zonky (Maven Central) publishes 9.6–18"
        ),
        "{message}"
    );
}

/// Each study ships as an example spec, and every one of them plans — from another directory
/// than the repository's, since every file a spec names is relative to the spec.
#[test]
fn every_example_spec_plans() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&examples)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    specs.sort();
    // A study may have several (study 003: statistics targets, and PostgreSQL against MariaDB).
    let mut studies: Vec<String> = specs
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().to_string())
        .filter(|name| name.starts_with("study"))
        .map(|name| name[..8].to_string())
        .collect();
    studies.dedup();
    assert_eq!(
        studies,
        ["study000", "study001", "study002", "study003", "study004"]
    );
    // Beside the studies, claims published since, checked at this machine's size.
    assert!(specs
        .iter()
        .any(|path| path.ends_with("claims-2024-2026.toml")));
    let elsewhere = spec_dir("elsewhere");
    for spec in &specs {
        // A spec of servers the user runs (url targets) would be reached by `lab plan`: those
        // hosts are the user's, so the spec is read (every key and script checked) but not
        // planned.
        let read = stampede::lab::spec::load(spec).unwrap_or_else(|e| panic!("{e}"));
        if read.targets.iter().any(|t| !t.server.is_managed()) {
            continue;
        }
        let output = common::stampede_command(&["lab", "plan", spec.to_str().unwrap()])
            .current_dir(elsewhere.join(""))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            spec.display(),
            stderr(&output)
        );
        assert!(
            common::stdout(&output).contains(" runs; order seed "),
            "{}",
            spec.display()
        );
    }
}
