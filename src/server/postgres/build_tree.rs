//! PostgreSQL built commit after commit in one kept tree: the commits of a git checkout that a
//! bisection visits. The tree is a clone of the checkout that shares its objects (the user's
//! working tree is never touched), configured once per set of flags with dependency tracking,
//! so that each later commit is a checkout and a `make` that compiles only what changed (and
//! ccache, when installed, serves what an earlier commit already compiled). Each commit's
//! installation goes into the same cache as every other build, keyed by the commit's tree and
//! the flags; a commit that does not build is remembered with its log's tail, so that it is
//! not built again.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use super::binaries::Binaries;
use super::build::{
    builds_root, cache_key, cached, check_disk_space, compiler_version, display_name,
    install_into_cache, io_failure, need_bison_and_flex, need_tool, write, BuildRecord,
    BuildRequest, Builder, Built, Ccache, Step, LOG_TAIL_LINES, RECORD_FILE,
};
use crate::server::fetch::{file_sha256, hex};
use stampede_base::error::Failure;

/// A git checkout of PostgreSQL and the flags every commit is built with.
pub struct BuildTree {
    /// The user's checkout.
    repository: PathBuf,
    /// The flags and patches; its `source` is the checkout.
    request: BuildRequest,
    compiler: String,
    /// `<builds>/.trees/<key>`: `src/` (the clone), `build/`, `install/`, `logs/`.
    root: PathBuf,
}

/// How a commit's build ended when it did not give binaries.
#[derive(Debug)]
pub enum CommitBuildError {
    /// The commit does not compile with these flags: the last lines of its `make` log.
    Broken(String),
    /// Anything else (no disk, no compiler): the bisection cannot go on.
    Failed(Failure),
}

impl From<Failure> for CommitBuildError {
    fn from(failure: Failure) -> Self {
        CommitBuildError::Failed(failure)
    }
}

impl BuildTree {
    /// The tree for `request.source` (a git checkout) and its flags; nothing is built yet.
    pub fn open(request: &BuildRequest) -> Result<BuildTree, Failure> {
        let repository =
            std::fs::canonicalize(&request.source).map_err(|e| io_failure(&request.source, e))?;
        let compiler = compiler_version()?;
        let mut hasher = Sha256::new();
        hasher.update(repository.to_string_lossy().as_bytes());
        hasher.update(cache_key("tree", &patch_digests(request)?, request, &compiler).as_bytes());
        let key = hex(&hasher.finalize()[..8]);
        Ok(BuildTree {
            repository,
            request: request.clone(),
            compiler,
            root: builds_root().join(".trees").join(key),
        })
    }

    /// The binaries of `commit` (a full hash), from the cache or built now in the kept tree.
    /// `step` hears each step as it starts and ends. `interrupted` is the signal watcher's
    /// flag: a `make` that a Ctrl-C killed is no proof that the commit does not compile.
    pub fn build(
        &self,
        commit: &str,
        interrupted: &AtomicBool,
        step: &mut dyn FnMut(Step, Option<f64>),
    ) -> Result<Built, CommitBuildError> {
        let tree = self.git(&["rev-parse", &format!("{commit}^{{tree}}")])?;
        let patches = patch_digests(&self.request)?;
        let key = cache_key(
            &format!("git tree {tree}"),
            &patches,
            &self.request,
            &self.compiler,
        );
        let entry = builds_root().join(&key);
        if let Some(built) = cached(&entry)? {
            return Ok(built);
        }
        let broken = self.broken_marker(&key);
        if let Ok(tail) = std::fs::read_to_string(&broken) {
            return Err(CommitBuildError::Broken(tail));
        }
        need_tool("make", "make")?;
        // A commit's tree never has the generated parser.
        need_bison_and_flex()?;
        std::fs::create_dir_all(&self.root).map_err(|e| io_failure(&self.root, e))?;
        let _lock = self.lock()?;
        check_disk_space(&builds_root())?;
        let mut record = BuildRecord {
            source: display_name(&self.repository),
            source_sha256: tree.clone(),
            git_describe: Some(
                self.git(&["describe", "--always", "--tags", commit])
                    .unwrap_or_else(|_| commit[..12.min(commit.len())].to_string()),
            ),
            uncommitted_sha256: None,
            patches: patches
                .iter()
                .map(|(path, digest)| (display_name(path), digest.clone()))
                .collect(),
            cflags: self.request.cflags.clone(),
            configure: self.request.configure.clone(),
            compiler: self.compiler.clone(),
            steps: Vec::new(),
        };
        match self.build_in_tree(commit, &mut record, step) {
            Ok(()) => {}
            Err(_) if interrupted.load(Ordering::SeqCst) => {
                return Err(CommitBuildError::Failed(Failure::interrupted(format!(
                    "interrupted while building {}",
                    &commit[..12.min(commit.len())]
                ))))
            }
            // A commit that does not compile; a configure or install failure is the machine's.
            Err(failure) if failure.message().starts_with("make failed") => {
                // The log's tail without the line naming the log: the tree's logs are rewritten
                // by the next commit's build.
                let message = failure.message();
                let tail = message.split_once('\n').map_or(message, |(_, tail)| tail);
                let tail = tail.to_string();
                write(&broken, &tail)?;
                return Err(CommitBuildError::Broken(tail));
            }
            Err(failure) => return Err(failure.into()),
        }
        let record_json =
            serde_json::to_string_pretty(&record).expect("plain data serializes to JSON");
        write(&self.root.join("install").join(RECORD_FILE), &record_json)?;
        install_into_cache(&self.root, &entry)?;
        Ok(Built {
            binaries: Binaries::at(&entry.join("bin"))?,
            record,
            cache_hit: false,
        })
    }

    /// Checks `commit` out in the clone, applies the patches, configures once, makes and
    /// installs into `install/`.
    fn build_in_tree(
        &self,
        commit: &str,
        record: &mut BuildRecord,
        step: &mut dyn FnMut(Step, Option<f64>),
    ) -> Result<(), Failure> {
        let logs = self.root.join("logs");
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::create_dir_all(&logs).map_err(|e| io_failure(&logs, e))?;
        let builder = Builder {
            request: &self.request,
            work: &self.root,
            logs: &logs,
            ccache: Ccache::find(),
        };
        let source = self.root.join("src");
        builder.timed(Step::Unpack, record, step, || {
            self.checkout(&source, commit)
        })?;
        if !self.request.patches.is_empty() {
            builder.timed(Step::Patch, record, step, || builder.patch(&source))?;
        }
        let build = self.root.join("build");
        if !build.join("config.status").is_file() {
            std::fs::create_dir_all(&build).map_err(|e| io_failure(&build, e))?;
            builder.timed(Step::Configure, record, step, || {
                builder.configure(&source, &build)
            })?;
        }
        builder.timed(Step::Make, record, step, || builder.make(&build))?;
        let install = self.root.join("install");
        let _ = std::fs::remove_dir_all(&install);
        builder.timed(Step::Install, record, step, || builder.install(&build))
    }

    /// The clone at `commit`, exactly: files of an earlier commit or its patches removed. A
    /// file git rewrites gets a new time, so `make` rebuilds what changed and nothing else.
    fn checkout(&self, source: &Path, commit: &str) -> Result<(), Failure> {
        if !source.join(".git").exists() {
            let _ = std::fs::remove_dir_all(source);
            run_git(
                None,
                &[
                    "clone",
                    "--quiet",
                    "--shared",
                    "--no-checkout",
                    &self.repository.to_string_lossy(),
                    &source.to_string_lossy(),
                ],
            )?;
        }
        run_git(
            Some(source),
            &["checkout", "--quiet", "--force", "--detach", commit],
        )?;
        run_git(Some(source), &["clean", "--quiet", "-fdx"]).map(|_| ())
    }

    fn git(&self, args: &[&str]) -> Result<String, Failure> {
        run_git(Some(&self.repository), args)
    }

    fn broken_marker(&self, key: &str) -> PathBuf {
        builds_root().join("broken").join(format!("{key}.log"))
    }

    /// One build at a time in a tree: a second bisection of the same checkout and flags waits.
    fn lock(&self) -> Result<File, Failure> {
        let path = self.root.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_failure(&path, e))?;
        file.lock().map_err(|e| io_failure(&path, e))?;
        std::fs::create_dir_all(builds_root().join("broken"))
            .map_err(|e| io_failure(&builds_root(), e))?;
        Ok(file)
    }
}

/// (patch, sha256) in order.
fn patch_digests(request: &BuildRequest) -> Result<Vec<(PathBuf, String)>, Failure> {
    request
        .patches
        .iter()
        .map(|patch| Ok((patch.clone(), file_sha256(patch)?)))
        .collect()
}

/// `git [-C dir] args`: its standard output, trimmed; a failure quotes git's own message.
/// A failure to check out or clone is the source's problem (exit 1), not the build's.
pub fn run_git(dir: Option<&Path>, args: &[&str]) -> Result<String, Failure> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    let output = command.args(args).output().map_err(|e| {
        Failure::run(format!("could not run git: {e}; on Debian install git")).caused_by(e)
    })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
    }
    let message = String::from_utf8_lossy(&output.stderr);
    let last: Vec<&str> = message.lines().rev().take(LOG_TAIL_LINES).collect();
    Err(Failure::run(format!(
        "git {} failed: {}",
        args.join(" "),
        last.into_iter().rev().collect::<Vec<_>>().join("\n")
    )))
}
