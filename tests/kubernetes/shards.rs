//! A lab sharded over the pods of an Indexed Job (`lab run --shards N`): every planned run
//! recorded once in the one PostgreSQL results database with its machine, a killed shard
//! re-created alone by `lab resume`, bad input refused before anything is made.

use super::{assert_nothing_left, namespace, stampede, text};
use crate::common::kube::kube;
use crate::common::{server, LabDir};

/// A spec of `clients.len()` cells on two targets (PostgreSQL 15 from the lab image), its
/// results in a fresh database of the suite's server (the URL's password reaches the pods
/// through a Secret of the Job's own).
fn sharded_spec(
    dir: &LabDir,
    name: &str,
    namespace: &str,
    clients: &[u32],
    duration: &str,
) -> String {
    let results = server().create_database(&name.replace('-', "_"));
    let spec = format!(
        r#"name = "{name}"
runs = 2
duration = "{duration}"
warmup = "0s"
seed = 5
results = "{url}"

[kubernetes]
namespace = "{namespace}"
image = "{image}"
image_pull_policy = "Never"
host_network = true
shared_nodes = true
pod_start_timeout = "60s"

[[target]]
name = "a"
postgres = "/usr/lib/postgresql/15/bin"
settings = {{ fsync = false }}

[[target]]
name = "b"
postgres = "/usr/lib/postgresql/15/bin"
settings = {{ fsync = false, synchronous_commit = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = {clients:?}
"#,
        url = server().url_with_password(&results),
        image = kube().lab_image(),
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, spec).unwrap();
    results
}

fn lab(words: &[&str]) -> std::process::Output {
    let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    stampede(&args)
}

/// (cell key, repetition, completed runs, shards, machines) per planned run that ran.
fn recorded(db: &str) -> Vec<Vec<String>> {
    server()
        .psql(
            db,
            "SELECT c.key, r.repetition, count(*), count(DISTINCT r.shard), \
                    count(DISTINCT r.machine_id) \
             FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed' \
             GROUP BY c.key, r.repetition ORDER BY 1, 2",
        )
        .lines()
        .map(|line| line.split('|').map(str::to_string).collect())
        .collect()
}

#[test]
fn a_lab_of_six_cells_on_three_shards_records_every_run_once_with_its_machine() {
    let namespace = namespace("kube-shards");
    let dir = LabDir::new("kube-shards");
    let db = sharded_spec(&dir, "kube-shards", &namespace, &[1, 2, 3, 4, 5, 6], "1s");
    let spec = dir.join("lab.toml").display().to_string();
    let launcher_page = crate::common::free_port();
    let serve = format!("--serve=127.0.0.1:{launcher_page}");
    let running = kube()
        .stampede_command(&["lab", "run", &spec, "--shards", "3", &serve])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = server().url_with_password(&db);
    crate::common::wait_until("the launcher has made the lab", || {
        server().psql(
            &db,
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'live_runs'",
        ) == "1"
            && server().psql(&db, "SELECT count(*) FROM labs WHERE shards = 3") == "1"
    });
    // `stampede serve` beside it and the launcher's own page (`--serve`) read the same results.
    watch_every_shard_progress_on_the_live_page(&url, launcher_page);
    let output = running.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("live page at http://127.0.0.1:{launcher_page}/")),
        "{stderr}"
    );
    assert!(stderr.contains("3 shard pod(s) of 3"), "{stderr}");
    assert!(stderr.contains("— 24/24 runs (100%)"), "{stderr}");
    // The final table as a local lab prints it: 12 cells, each with its 2 runs.
    assert_eq!(
        stdout.lines().filter(|l| l.contains("select-only")).count(),
        12,
        "{stdout}"
    );
    // 6 cells × 2 targets × 2 rounds, each recorded once, on one shard and one machine.
    let runs = recorded(&db);
    assert_eq!(runs.len(), 24, "{runs:?}");
    assert!(runs.iter().all(|r| r[2..] == ["1", "1", "1"]), "{runs:?}");
    // Every target of a cell, and every round of it, ran on the same shard; the cells are
    // spread over all three.
    let per_cell = server().psql(
        &db,
        "SELECT c.workload || '/' || c.script || '/' || c.clients, count(DISTINCT r.shard), \
                min(r.shard) FROM runs r JOIN cells c ON c.id = r.cell_id GROUP BY 1 ORDER BY 1",
    );
    let shards: std::collections::BTreeSet<&str> = per_cell
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('|').collect();
            assert_eq!(fields[1], "1", "a cell's runs on one shard: {per_cell}");
            fields[2]
        })
        .collect();
    assert_eq!(shards.len(), 3, "{per_cell}");
    // The machine is the node the pods ran on, with its CPUs, memory and kernel.
    let node = kube().kubectl(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    let machines = server().psql(
        &db,
        "SELECT host, cores > 0, cpu_model <> '', memory_bytes > 0, kernel <> '' FROM machines",
    );
    assert_eq!(machines, format!("{node}|t|t|t|t"));
    let lab_row = server().psql(
        &db,
        "SELECT shards, ended_unix_s IS NOT NULL, machine FROM labs",
    );
    assert_eq!(lab_row, "3|t|fleet: 3 shards on any node");
    // The whole lab reads as one: every cell of target b against a.
    let compare = lab(&["compare", &url, "a", "b"]);
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    let compared = text(&compare.stdout);
    let rows = compared.lines().filter(|l| l.starts_with("pgbench "));
    assert_eq!(rows.count(), 6, "{compared}");
    let report = lab(&["report", &url]);
    let report_text = text(&report.stdout);
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert!(report_text.contains("## Machines"), "{report_text}");
    assert!(report_text.contains(&node), "{report_text}");
    // The same rows loaded into another database by hand read the same.
    let copy = format!("{db}_by_hand");
    server().psql("postgres", &format!("DROP DATABASE IF EXISTS {copy}"));
    server().psql("postgres", &format!("CREATE DATABASE {copy} TEMPLATE {db}"));
    let copy_url = server().url_with_password(&copy);
    let compared_copy = text(&lab(&["compare", &copy_url, "a", "b"]).stdout);
    assert_eq!(compared_copy, compared);
    assert_eq!(text(&lab(&["report", &copy_url]).stdout), report_text);
    assert_nothing_left(&namespace);
}

/// `stampede serve` on the fleet's PostgreSQL results, beside the running lab, and the
/// launcher's page at `launcher_page`: each shows every one of the three shards finishing runs
/// before the lab has ended.
fn watch_every_shard_progress_on_the_live_page(results: &str, launcher_page: u16) {
    let port = crate::common::free_port();
    let mut serve = kube()
        .stampede_command(&["serve", results, "--addr", &port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    shards_progressed_on(&[port, launcher_page]);
    serve.kill().unwrap();
    serve.wait().unwrap();
}

/// Waits until each page at `ports` has shown every one of the three shards with a finished
/// run (an ended lab's page is its report, which has no shard lines: this comes before the
/// end), and holds no password.
fn shards_progressed_on(ports: &[u16]) {
    let page = |port: u16| crate::common::scrape::get(&format!("127.0.0.1:{port}"), "/");
    // "<p class="shard" data-shard="1" data-finished="3">…": every shard with a finished run.
    let progressed = |html: &str| {
        (0..3).all(|shard| {
            let marker = format!("data-shard=\"{shard}\" data-finished=\"");
            html.find(&marker).is_some_and(|at| {
                let rest = &html[at + marker.len()..];
                rest[..rest.find('"').unwrap()].parse::<u32>().unwrap() > 0
            })
        })
    };
    let mut seen = vec![false; ports.len()];
    crate::common::wait_until("the pages show all three shards' progress", || {
        for (port, seen) in ports.iter().zip(seen.iter_mut()) {
            if let Some(html) = page(*port).filter(|html| !*seen && progressed(html)) {
                assert!(
                    !html.contains(crate::common::PASSWORD),
                    "the page holds no password"
                );
                *seen = true;
            }
        }
        seen.iter().all(|s| *s)
    });
}

/// Resume re-creates only the shards with runs to record: the killed one, and one the launcher
/// stopped with the failed Job before it had finished (a race the test reads back from the
/// results rather than guesses); the shards that finished are not re-created.
#[test]
fn a_killed_shard_is_recreated_alone_by_resume() {
    let namespace = namespace("kube-shard-kill");
    let dir = LabDir::new("kube-shard-kill");
    let db = sharded_spec(&dir, "kube-shard-kill", &namespace, &[1, 2, 3], "2s");
    let spec = dir.join("lab.toml").display().to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["lab", "run", &spec, "--shards", "3"])
        .env("KUBECONFIG", &kube().kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once shard 1 has recorded a run, its pod is killed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "shard 1 recorded nothing"
        );
        let made = server().psql(
            &db,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'runs'",
        );
        if made == "1" {
            let done = server().psql(&db, "SELECT count(*) FROM runs WHERE shard = 1");
            if done.parse::<u32>().unwrap_or(0) >= 1 {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let pod = kube().kubectl(&[
        "get",
        "pods",
        "--namespace",
        &namespace,
        "-l",
        "batch.kubernetes.io/job-completion-index=1",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    kube().kubectl(&[
        "delete",
        "pod",
        &pod,
        "--namespace",
        &namespace,
        "--grace-period=0",
        "--force",
    ]);
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("shard 1 failed"), "{stderr}");
    assert!(stderr.contains("lab resume"), "{stderr}");
    assert!(kube().leftovers(&namespace).is_empty());
    let before = recorded(&db);
    assert!(
        before.len() < 12,
        "the killed shard left runs to record: {before:?}"
    );
    // The shards with runs left: the killed one, and any the launcher's clean-up after the
    // failure stopped before it had recorded all of its own (4 runs a shard).
    let unfinished: Vec<String> = (0..3)
        .filter(|shard| {
            let done = server().psql(
                &db,
                &format!(
                    "SELECT count(*) FROM runs WHERE shard = {shard} AND status = 'completed'"
                ),
            );
            done.parse::<u32>().unwrap_or(0) < 4
        })
        .map(|shard| shard.to_string())
        .collect();
    assert!(unfinished.contains(&"1".to_string()), "{unfinished:?}");
    let resumed = lab(&["lab", "resume", &spec]);
    let resumed_err = text(&resumed.stderr);
    assert!(resumed.status.success(), "{resumed_err}");
    assert!(
        resumed_err.contains(&format!(
            "shard(s) {} have runs to record",
            unfinished.join(", ")
        )),
        "{resumed_err}"
    );
    assert!(
        resumed_err.contains(&format!("{} shard pod(s) of 3", unfinished.len())),
        "{resumed_err}"
    );
    // No run twice, none lost, each on one machine; the lab has ended.
    let after = recorded(&db);
    assert_eq!(after.len(), 12, "{after:?}");
    assert!(after.iter().all(|r| r[2..] == ["1", "1", "1"]), "{after:?}");
    assert_eq!(
        server().psql(&db, "SELECT ended_unix_s IS NOT NULL FROM labs"),
        "t"
    );
    assert_nothing_left(&namespace);
}

#[test]
fn sharding_what_pods_cannot_share_is_refused_before_anything_is_made() {
    let namespace = namespace("kube-shard-bad");
    let dir = LabDir::new("kube-shard-bad");
    let db = sharded_spec(&dir, "kube-shard-bad", &namespace, &[1, 2], "1s");
    let spec = dir.join("lab.toml").display().to_string();
    // More shards than cells.
    let output = lab(&["lab", "run", &spec, "--shards", "3"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr).trim(),
        "stampede: error: --shards 3: the spec has 2 cell(s) (each run on every target together), so at \
         most 2 shard(s) have work; give --shards 2 or fewer"
    );
    // Results in a SQLite file.
    let sqlite = dir.join("sqlite.toml");
    let text_with_file = std::fs::read_to_string(dir.join("lab.toml"))
        .unwrap()
        .lines()
        .map(|line| match line.starts_with("results =") {
            true => "results = \"shards.db\"".to_string(),
            false => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&sqlite, text_with_file).unwrap();
    let output = lab(&["lab", "run", &sqlite.display().to_string(), "--shards", "2"]);
    assert_eq!(output.status.code(), Some(1));
    let message = text(&output.stderr);
    assert!(
        message.contains("SQLite file") && message.contains("postgresql://"),
        "{message}"
    );
    assert!(!dir.join("shards.db").exists(), "nothing written");
    // Kubernetes options without --shards.
    let output = lab(&["lab", "run", &spec, "--shared-nodes"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("--shared-nodes needs --shards N"));
    // A Kubernetes option the Job cannot take: refused before the invocation is written.
    let output = lab(&[
        "lab",
        "run",
        &spec,
        "--shards",
        "2",
        "--toleration",
        "nocolon",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("--toleration: \"nocolon\""));
    // Nothing was created: no invocation, no object.
    assert_eq!(
        server().psql(
            &db,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'labs'"
        ),
        "0"
    );
    assert!(kube().leftovers(&namespace).is_empty());
    // The plan says which shard each run falls to, and each shard's share.
    let output = lab(&["lab", "plan", &spec, "--shards", "2"]);
    let plan = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(plan.lines().next().unwrap().ends_with("shard"), "{plan}");
    assert!(plan.contains("--shards 2: runs per shard 4, 4;"), "{plan}");
    // The dry run prints the Job, the password a reference to the Job's own Secret.
    let output = lab(&["lab", "run", &spec, "--shards", "2", "--dry-run"]);
    let manifests = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        manifests.contains("\"backoffLimitPerIndex\": 0"),
        "{manifests}"
    );
    assert!(
        manifests.contains("STAMPEDE_RESULTS_PASSWORD"),
        "{manifests}"
    );
    assert!(
        manifests.contains("\"fieldPath\": \"spec.nodeName\""),
        "{manifests}"
    );
    assert!(
        !manifests.contains(crate::common::PASSWORD),
        "no password in the manifests"
    );
    assert_nothing_left(&namespace);
}
