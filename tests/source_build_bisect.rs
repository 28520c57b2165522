//! `stampede bisect` on real builds: a synthetic history made from PostgreSQL 15's release
//! tarball (the tarball as the first commit, 16 commits of harmless changes after it), where
//! one commit makes every query spin in the executor's start-up, one does not compile and the
//! next fixes it. The bisection names the spinning commit, skips the broken one with its build
//! log's tail, survives a SIGTERM in the middle of a step (resumed without rebuilding what is
//! cached), and stops after its first step when the ends measure alike (two commits it measured
//! on one side). Bad input is refused before anything is built.
//!
//! The history's commits have fixed dates, so their hashes (and the builds cached by them in
//! target/test-cache) are the same from one test run to the next. This file and
//! tests/source_build.rs share ccache (`./test` keeps it per machine) and never run at once.
//! suite: alone (a bisection decides each step by measuring tps: another program's load beside
//! it made a commit before the regression measure 0.26× and left the step undecided)

// libc for signals and exit hooks the tests send and install.
#![allow(unsafe_code)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::{pg15_tarball, stampede_command, stampede_with_env, stderr, stdout, LabDir, Watch};

/// The commit (1..=16) that makes every query spin, the one that does not compile, and the one
/// that fixes it. git's bisection over 16 commits measures 8 first (it splits them in halves).
const SPINS: usize = 5;
const BROKEN: usize = 8;
const FIXED: usize = 9;
const COMMITS: usize = 16;

fn cache() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The synthetic history, made once per test run: tags t0 (the tarball) to t16.
fn history() -> &'static Path {
    static HISTORY: OnceLock<PathBuf> = OnceLock::new();
    HISTORY.get_or_init(|| {
        let dir = cache().join("bisect-history");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let unpacked = Command::new("tar")
            .arg("-xf")
            .arg(pg15_tarball())
            .arg("-C")
            .arg(&dir)
            .arg("--strip-components=1")
            .status()
            .unwrap();
        assert!(unpacked.success());
        git(&dir, &["init", "-q"]);
        commit(&dir, 0, "PostgreSQL 15 release tarball");
        for n in 1..=COMMITS {
            let subject = change(&dir, n);
            commit(&dir, n, &subject);
        }
        dir
    })
}

/// Makes commit `n`'s change; its subject.
fn change(dir: &Path, n: usize) -> String {
    let misc = dir.join("src/backend/utils/adt/misc.c");
    match n {
        SPINS => {
            let file = dir.join("src/backend/executor/execMain.c");
            let text = std::fs::read_to_string(&file).unwrap();
            let anchor = "\tAssert(queryDesc->estate == NULL);\n";
            assert!(text.contains(anchor));
            let spin = "\t{\n\t\tvolatile int spin;\n\n\t\tfor (spin = 0; spin < 400000; spin++)\n\t\t\t;\n\t}\n";
            std::fs::write(&file, text.replacen(anchor, &format!("{anchor}{spin}"), 1)).unwrap();
            "executor: spin at every query's start".into()
        }
        BROKEN => {
            append(&misc, "int synthetic_broken = ;\n");
            "utils: a line that does not compile".into()
        }
        FIXED => {
            let text = std::fs::read_to_string(&misc).unwrap();
            std::fs::write(&misc, text.replace("int synthetic_broken = ;\n", "")).unwrap();
            "utils: fix the build".into()
        }
        n if n % 2 == 0 => {
            append(&misc, &format!("/* harmless change {n} */\n"));
            format!("utils: comment {n}")
        }
        n => {
            append(&dir.join("README"), &format!("harmless change {n}\n"));
            format!("docs: line {n}")
        }
    }
}

fn append(file: &Path, text: &str) {
    let mut content = std::fs::read_to_string(file).unwrap();
    content.push_str(text);
    std::fs::write(file, content).unwrap();
}

fn commit(dir: &Path, n: usize, subject: &str) {
    git(dir, &["add", "-A"]);
    let date = format!("2026-01-01T00:{n:02}:00Z");
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Synthetic",
            "-c",
            "user.email=synthetic@localhost",
        ])
        .args(["commit", "-q", "-m", subject])
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .status()
        .unwrap();
    assert!(status.success());
    git(dir, &["tag", &format!("t{n}")]);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", stderr(&output));
    stdout(&output).trim().to_string()
}

fn hash_of(tag: &str) -> String {
    git(history(), &["rev-parse", tag])
}

/// A bisect spec beside its results in `dir`: select-only at one client, 300 ms runs.
fn spec(dir: &Path) -> PathBuf {
    let spec = dir.join("hot.toml");
    std::fs::write(
        &spec,
        r#"name = "hot"
runs = "auto"
precision = "20%"
max_runs = 5
duration = "300ms"
seed = 7
# The bisection is under test, not the probes: each run is 0.15 s shorter without them.
probes = false

[[target]]
name = "pg"
postgres = { cflags = "-O2" }
settings = { fsync = false }

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1]
"#,
    )
    .unwrap();
    spec
}

fn bisect_command(args: &[&str]) -> Command {
    let mut command = stampede_command(args);
    command.env("STAMPEDE_CACHE", cache());
    command
}

/// The commits whose `make` ran in this output: "build <short>: make...".
fn made(progress: &str) -> Vec<String> {
    progress
        .lines()
        .filter_map(|line| line.strip_prefix("build ")?.strip_suffix(": make..."))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_spinning_commit_is_found_past_a_broken_one_and_after_a_sigterm_and_equal_ends_stop() {
    let dir = LabDir::new("bisect");
    let spec = spec(&dir);
    let source = history().to_str().unwrap().to_string();
    let args = [
        "bisect", "--source", &source, "--good", "t0", "--bad", "t16",
    ];
    let mut first_args = args.to_vec();
    first_args.push(spec.to_str().unwrap());
    // SIGTERM while the second step's lab runs.
    let mut child = bisect_command(&first_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = Watch::new(child.stderr.take().unwrap());
    progress.wait_for_after("step 2:", "run 2/");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let interrupted = progress.finish();
    assert_eq!(status.code(), Some(2), "{interrupted}");
    assert!(
        interrupted.contains("continue with `stampede bisect --good t0 --bad t16 --resume"),
        "{interrupted}"
    );
    let broken = hash_of(&format!("t{BROKEN}"));
    assert!(
        interrupted.contains(&format!(
            "{} utils: a line that does not compile: skipped: does not build: ",
            &broken[..12]
        )),
        "{interrupted}"
    );
    assert!(
        interrupted.contains("int synthetic_broken = ;"),
        "the build log's tail: {interrupted}"
    );

    let mut resume_args = first_args.clone();
    resume_args.insert(1, "--resume");
    let resumed = bisect_command(&resume_args).output().unwrap();
    let progress_after = stderr(&resumed);
    assert!(resumed.status.success(), "{progress_after}");
    let out = stdout(&resumed);
    let spins = hash_of(&format!("t{SPINS}"));
    assert!(
        out.contains("the regression (")
            && out.contains(&format!("first appears in:\n  commit {spins}\n")),
        "{out}"
    );
    assert!(
        out.contains("executor: spin at every query's start"),
        "{out}"
    );
    // Nothing built before the signal is built again.
    let before = made(&interrupted);
    let after = made(&progress_after);
    assert!(
        before.iter().all(|short| !after.contains(short)),
        "{before:?} then {after:?}"
    );
    // At most ⌈log₂ 16⌉ + 2 builds after the two ends (the broken one included).
    let ends = [
        hash_of("t0")[..12].to_string(),
        hash_of("t16")[..12].to_string(),
    ];
    let builds: Vec<&String> = before
        .iter()
        .chain(&after)
        .filter(|c| !ends.contains(c))
        .collect();
    assert!(builds.len() <= 6, "{builds:?}");
    let broken_row = out
        .lines()
        .find(|line| line.contains(&broken[..12]))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        broken_row.contains("skipped: does not build"),
        "{broken_row}"
    );
    println!("{out}");
    println!("builds after the ends: {} ({builds:?})", builds.len());
    let html = std::fs::read_to_string(dir.join("hot-bisect.html")).unwrap();
    assert!(html.contains(&spins[..12]), "the report names the commit");
    // Each step is a lab of its own in the results.
    let compare = stampede_with_env(
        &[
            "compare",
            dir.join("hot.db").to_str().unwrap(),
            &ends[0],
            &ends[1],
            "--lab",
            &format!("hot bisect {}..{} ends", &ends[0], &ends[1]),
        ],
        &[],
    );
    assert!(compare.status.success(), "{}", stderr(&compare));
    assert!(stdout(&compare).contains("slower"), "{}", stdout(&compare));

    // Two commits on the same side of it (a docs change between them) measure alike: the
    // bisection stops after its first step. Their builds and clusters are the ones above.
    let equal = bisect_command(&[
        "bisect",
        "--source",
        &source,
        "--good",
        "t2",
        "--bad",
        "t4",
        spec.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(equal.status.success(), "{}", stderr(&equal));
    let out = stdout(&equal);
    let (good, bad) = (hash_of("t2"), hash_of("t4"));
    assert!(
        out.contains(&format!(
            "no change between {} and {} at ±20.0%: ",
            &good[..12],
            &bad[..12]
        )),
        "{out}"
    );
    assert!(!out.contains("first appears in"), "{out}");
    assert!(!stderr(&equal).contains("step 1:"), "{}", stderr(&equal));
    assert!(
        made(&stderr(&equal)).is_empty(),
        "both ends were built above: {}",
        stderr(&equal)
    );
}

#[test]
fn bad_input_is_refused_before_anything_is_built() {
    let dir = LabDir::new("bisect-bad");
    let spec = spec(&dir);
    let spec = spec.to_str().unwrap();
    let source = history().to_str().unwrap().to_string();
    // A cache of its own: whatever is built (or begun) would show in it.
    let own_cache = dir.join("cache");
    let refused = |args: &[&str], message: &str| {
        let mut all = vec!["bisect"];
        all.extend_from_slice(args);
        let output = stampede_command(&all)
            .env("STAMPEDE_CACHE", &own_cache)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(
            stderr(&output),
            format!("stampede: error: {message}\n"),
            "{args:?}"
        );
        assert_eq!(stdout(&output), "");
    };
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    refused(
        &["--source", plain.to_str().unwrap(), "--good", "t0", "--bad", "t1", spec],
        &format!(
            "{} is not a git checkout of PostgreSQL (bisect walks a repository's commits; clone https://git.postgresql.org/git/postgresql.git)",
            plain.display()
        ),
    );
    refused(
        &[
            "--source", &source, "--good", "REL_99_0", "--bad", "t1", spec,
        ],
        &format!("--good: unknown ref \"REL_99_0\" in {source}"),
    );
    let (t3, t1) = (hash_of("t3"), hash_of("t1"));
    refused(
        &["--source", &source, "--good", "t3", "--bad", "t1", spec],
        &format!(
            "--good t3 ({}) is not an ancestor of --bad t1 ({}): bisect needs the change's start before its end in one history",
            &t3[..12],
            &t1[..12]
        ),
    );
    let two_targets = dir.join("two.toml");
    let text = std::fs::read_to_string(spec).unwrap();
    let second = "[[target]]\nname = \"other\"\n\n[[workload]]";
    std::fs::write(&two_targets, text.replacen("[[workload]]", second, 1)).unwrap();
    refused(
        &["--source", &source, "--good", "t0", "--bad", "t1", two_targets.to_str().unwrap()],
        &format!(
            "{}: a bisect spec has one [[target]], the template every commit is built and run with; this one has 2",
            two_targets.display()
        ),
    );
    refused(
        &[
            "--source", &source, "--good", "t0", "--bad", "t1", "--metric", "nopm", spec,
        ],
        "unknown metric \"nopm\"; rounds are decided on tps, p99 or server_cpu",
    );
    let resume = [
        "--source", &source, "--good", "t0", "--bad", "t1", "--resume", spec,
    ];
    refused(
        &resume,
        &format!(
            "nothing to resume: {} holds no lab \"hot bisect {}..{} ends\"; start the bisection without --resume",
            dir.join("hot.db").display(),
            &hash_of("t0")[..12],
            &t1[..12]
        ),
    );
    assert!(!own_cache.exists(), "nothing was built");
    assert!(!dir.join("hot.db").exists() && !dir.join("hot.db.servers").exists());
}

/// A lab target built from a git repository's ref (`postgres = { git, ref }`): the repository
/// is mirrored into the cache, the ref's commit exported and built like a release tarball (so
/// ccache serves what the release build compiled), and the lab records the ref and commit. A
/// second lab finds the build in the cache. A ref the repository lacks is refused, naming its
/// branches and tags, with nothing written.
#[test]
fn a_lab_target_builds_a_git_ref_from_a_repository() {
    let dir = LabDir::new("git-target");
    let repository = history().to_str().unwrap().to_string();
    let write = |name: &str, reference: &str| {
        let spec = dir.join(format!("{name}.toml"));
        std::fs::write(
            &spec,
            format!(
                r#"name = "{name}"
runs = 1
duration = "300ms"
probes = false

[[target]]
name = "branch"
postgres = {{ git = "{repository}", ref = "{reference}", cflags = "-O2" }}
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1]
"#
            ),
        )
        .unwrap();
        spec
    };
    let spec = write("git", "t4");
    let output = bisect_command(&["lab", "run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let commit = hash_of("t4");
    let source = common::sqlite(
        &dir.join("git.db"),
        "SELECT server, binary_source FROM targets",
    );
    assert_eq!(source[0][0], format!("{repository} t4"));
    assert!(
        source[0][1].starts_with(&format!(
            "built from source: built from {repository} t4 ({}) (sha256 ",
            &commit[..12]
        )),
        "{source:?}"
    );
    assert!(source[0][1].contains("CFLAGS -O2"), "{source:?}");
    let runs = common::sqlite(
        &dir.join("git.db"),
        "SELECT count(*) FROM runs WHERE status = 'completed'",
    );
    assert_eq!(runs[0][0], "1");

    // The same ref again: fetched, and the build taken from the cache (no make).
    let again = write("again", "t4");
    let output = bisect_command(&["lab", "run", again.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let progress = stderr(&output);
    assert!(
        progress.contains(&format!("fetching {repository}")),
        "{progress}"
    );
    assert!(!progress.contains("build: make"), "{progress}");

    let missing = write("missing", "no-such-ref");
    let output = bisect_command(&["lab", "run", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    let expected = format!(
        "stampede: error: target \"branch\": git ref \"no-such-ref\" does not exist in {repository}; branches: "
    );
    assert!(message.contains(&expected), "{message}");
    assert!(message.contains("newest tags: t16, "), "{message}");
    assert!(!dir.join("missing.db").exists());
}
