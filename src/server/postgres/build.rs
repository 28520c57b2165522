//! PostgreSQL built from source: a release tarball or a source directory (a git checkout too),
//! the patches applied in order, `configure` with the given flags and `CFLAGS`, the server and
//! contrib's pg_stat_statements built with one job per core and installed into stampede's
//! cache. The cache key is the source's content digest, the patches' digests, the flags and the
//! compiler's version, so a second request for the same build is a hit. A failed step leaves
//! its log (the path is in the error) and nothing in the cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::binaries::Binaries;
use crate::server::fetch::{file_sha256, hex};
use crate::server::host::need_tool_for;
use stampede_base::error::Failure;

/// What to build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildRequest {
    /// A release tarball (`.tar.gz`, `.tar.bz2`, `.tar.xz`) or a source directory.
    pub source: PathBuf,
    pub cflags: Option<String>,
    /// Extra `configure` arguments, in order.
    pub configure: Vec<String>,
    /// Patches applied with `patch -p1`, in order.
    pub patches: Vec<PathBuf>,
    /// Where stampede fetched the source from (a Debian source package, a git URL and ref), as
    /// the build's record names it in place of the file's name.
    pub origin: Option<String>,
}

/// Where a build came from, kept beside it in the cache and recorded with every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildRecord {
    pub source: String,
    pub source_sha256: String,
    /// `git describe --always --dirty` of a git checkout.
    pub git_describe: Option<String>,
    /// The digest of `git diff HEAD` when the checkout has uncommitted changes.
    pub uncommitted_sha256: Option<String>,
    /// (file name, sha256) in the order applied.
    pub patches: Vec<(String, String)>,
    pub cflags: Option<String>,
    pub configure: Vec<String>,
    /// The first line of `cc --version`.
    pub compiler: String,
    /// Seconds per step, as built.
    pub steps: Vec<(String, f64)>,
}

impl BuildRecord {
    /// One line for reports: "built from postgresql-15.18.tar.bz2 (sha256 1a2b3c4d5e6f), CFLAGS
    /// -O2, …".
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "built from {} (sha256 {})",
            self.source,
            &self.source_sha256[..12]
        )];
        if let Some(describe) = &self.git_describe {
            parts.push(format!("git {describe}"));
        }
        if let Some(changes) = &self.uncommitted_sha256 {
            parts.push(format!("uncommitted changes {}", &changes[..12]));
        }
        for (name, digest) in &self.patches {
            parts.push(format!("patch {name} ({})", &digest[..12]));
        }
        if let Some(cflags) = &self.cflags {
            parts.push(format!("CFLAGS {cflags}"));
        }
        if !self.configure.is_empty() {
            parts.push(format!("configure {}", self.configure.join(" ")));
        }
        parts.push(self.compiler.clone());
        parts.join(", ")
    }
}

/// A finished build.
pub struct Built {
    pub binaries: Binaries,
    pub record: BuildRecord,
    /// Whether the cache already held it.
    pub cache_hit: bool,
}

/// The steps of a build, as the progress line and errors name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Unpack,
    Patch,
    Configure,
    Make,
    Install,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Unpack => "unpack",
            Step::Patch => "patch",
            Step::Configure => "configure",
            Step::Make => "make",
            Step::Install => "install",
        }
    }
}

/// Room a PostgreSQL build needs: its tree, objects and installation.
const NEEDED_BYTES: u64 = 2 << 30;

/// Lines of a failed step's log that an error shows.
pub(super) const LOG_TAIL_LINES: usize = 20;

/// Builds are cached under `cache_root()/builds/<key>`.
pub fn builds_root() -> PathBuf {
    crate::server::host::cache_root().join("builds")
}

/// The build for `request`, from the cache or built now. `step` hears each step as it starts
/// and ends (name, seconds so far).
pub fn build(
    request: &BuildRequest,
    step: &mut dyn FnMut(Step, Option<f64>),
) -> Result<Built, Failure> {
    let source = Source::open(&request.source)?;
    let patches = request
        .patches
        .iter()
        .map(|patch| Ok((patch.clone(), file_sha256(patch)?)))
        .collect::<Result<Vec<_>, Failure>>()?;
    let compiler = compiler_version()?;
    let key = cache_key(&source.sha256, &patches, request, &compiler);
    let root = builds_root();
    let entry = root.join(&key);
    if let Some(built) = cached(&entry)? {
        return Ok(built);
    }
    need_tool("make", "make")?;
    if let SourceKind::Directory(tree) = &source.kind {
        need_parser_generators(tree)?;
    }
    let work = root.join(format!(".{key}.{}.partial", std::process::id()));
    let logs = root.join("logs").join(&key);
    let result = (|| {
        prepare_dirs(&work, &logs)?;
        check_disk_space(&root)?;
        let mut record = BuildRecord {
            source: request
                .origin
                .clone()
                .unwrap_or_else(|| display_name(&request.source)),
            source_sha256: source.sha256.clone(),
            git_describe: source.git_describe.clone(),
            uncommitted_sha256: source.uncommitted_sha256.clone(),
            patches: patches
                .iter()
                .map(|(path, digest)| (display_name(path), digest.clone()))
                .collect(),
            cflags: request.cflags.clone(),
            configure: request.configure.clone(),
            compiler: compiler.clone(),
            steps: Vec::new(),
        };
        let builder = Builder {
            request,
            work: &work,
            logs: &logs,
            ccache: Ccache::find(),
        };
        builder.run_steps(&source, &mut record, step)?;
        let record_json =
            serde_json::to_string_pretty(&record).expect("plain data serializes to JSON");
        write(&work.join("install").join(RECORD_FILE), &record_json)?;
        Ok(record)
    })();
    let record = match result {
        Ok(record) => record,
        Err(failure) => {
            let _ = std::fs::remove_dir_all(&work);
            return Err(failure);
        }
    };
    install_into_cache(&work, &entry)?;
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&logs);
    Ok(Built {
        binaries: Binaries::at(&entry.join("bin"))?,
        record,
        cache_hit: false,
    })
}

/// The builds in the cache, with their records.
pub fn cached_builds() -> Vec<(PathBuf, BuildRecord)> {
    let Ok(entries) = std::fs::read_dir(builds_root()) else {
        return Vec::new();
    };
    let mut builds: Vec<(PathBuf, BuildRecord)> = entries
        .flatten()
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.path().join(RECORD_FILE)).ok()?;
            Some((entry.path().join("bin"), serde_json::from_str(&text).ok()?))
        })
        .collect();
    builds.sort_by(|a, b| a.0.cmp(&b.0));
    builds
}

/// The record of the build whose bin/ is `bin_dir`, if it is one of stampede's builds.
pub fn record_of(bin_dir: &Path) -> Option<BuildRecord> {
    let text = std::fs::read_to_string(bin_dir.parent()?.join(RECORD_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

pub(super) const RECORD_FILE: &str = "stampede-build.json";

pub(super) fn cached(entry: &Path) -> Result<Option<Built>, Failure> {
    let Some(record) = record_of(&entry.join("bin")) else {
        return Ok(None);
    };
    Ok(Some(Built {
        binaries: Binaries::at(&entry.join("bin"))?,
        record,
        cache_hit: true,
    }))
}

/// The source as given: its digest and, for a git checkout, where it stands.
struct Source {
    kind: SourceKind,
    sha256: String,
    git_describe: Option<String>,
    uncommitted_sha256: Option<String>,
}

enum SourceKind {
    Tarball(PathBuf),
    Directory(PathBuf),
}

impl Source {
    fn open(path: &Path) -> Result<Source, Failure> {
        let metadata = std::fs::metadata(path).map_err(|e| {
            Failure::input(format!("PostgreSQL source {}: {e}", path.display())).caused_by(e)
        })?;
        if metadata.is_dir() {
            check_source_tree(path)?;
            let (git_describe, uncommitted_sha256) = git_state(path);
            return Ok(Source {
                kind: SourceKind::Directory(path.to_path_buf()),
                sha256: tree_sha256(path)?,
                git_describe,
                uncommitted_sha256,
            });
        }
        let name = path.to_string_lossy();
        let tarball = [".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar"]
            .iter()
            .any(|suffix| name.ends_with(suffix));
        if !tarball {
            return Err(Failure::input(format!(
                "{} is neither a PostgreSQL source directory nor a release tarball (.tar.gz, .tar.bz2, .tar.xz)",
                path.display()
            )));
        }
        Ok(Source {
            kind: SourceKind::Tarball(path.to_path_buf()),
            sha256: file_sha256(path)?,
            git_describe: None,
            uncommitted_sha256: None,
        })
    }
}

/// A directory is a PostgreSQL source tree when it has the configure script and the server's
/// main program.
fn check_source_tree(dir: &Path) -> Result<(), Failure> {
    let markers = ["configure", "src/backend/main/main.c"];
    if markers.iter().all(|marker| dir.join(marker).is_file()) {
        return Ok(());
    }
    Err(Failure::input(format!(
        "{} is not a PostgreSQL source tree (no configure and src/backend/main/main.c)",
        dir.display()
    )))
}

/// Runs a build's steps: `work` holds the build directory and the installation, `logs` a log
/// per step.
pub(super) struct Builder<'a> {
    pub(super) request: &'a BuildRequest,
    pub(super) work: &'a Path,
    pub(super) logs: &'a Path,
    /// `ccache` in front of the compiler, when it is installed.
    pub(super) ccache: Option<Ccache>,
}

impl Builder<'_> {
    fn run_steps(
        &self,
        source: &Source,
        record: &mut BuildRecord,
        step: &mut dyn FnMut(Step, Option<f64>),
    ) -> Result<(), Failure> {
        let copy = self.work.join("src");
        let tree = match &source.kind {
            SourceKind::Tarball(tarball) => {
                self.timed(Step::Unpack, record, step, || self.unpack(tarball, &copy))?;
                copy
            }
            // Patches must not touch the user's tree: patch a copy.
            SourceKind::Directory(dir) if !self.request.patches.is_empty() => {
                self.timed(Step::Unpack, record, step, || self.copy_tree(dir, &copy))?;
                copy
            }
            SourceKind::Directory(dir) => dir.clone(),
        };
        if !self.request.patches.is_empty() {
            self.timed(Step::Patch, record, step, || self.patch(&tree))?;
        }
        let build = self.work.join("build");
        std::fs::create_dir_all(&build).map_err(|e| io_failure(&build, e))?;
        self.timed(Step::Configure, record, step, || {
            self.configure(&tree, &build)
        })?;
        self.timed(Step::Make, record, step, || self.make(&build))?;
        self.timed(Step::Install, record, step, || self.install(&build))
    }

    pub(super) fn timed(
        &self,
        which: Step,
        record: &mut BuildRecord,
        step: &mut dyn FnMut(Step, Option<f64>),
        work: impl FnOnce() -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        step(which, None);
        let started = Instant::now();
        work()?;
        let seconds = started.elapsed().as_secs_f64();
        record.steps.push((which.name().to_string(), seconds));
        step(which, Some(seconds));
        Ok(())
    }

    fn unpack(&self, tarball: &Path, into: &Path) -> Result<(), Failure> {
        std::fs::create_dir_all(into).map_err(|e| io_failure(into, e))?;
        let mut command = Command::new("tar");
        command
            .arg("-xf")
            .arg(tarball)
            .arg("-C")
            .arg(into)
            .arg("--strip-components=1");
        self.logged(Step::Unpack, "tar", command)?;
        check_source_tree(into).map_err(|_| {
            Failure::input(format!(
                "{} is not a PostgreSQL source tarball (no configure and src/backend/main/main.c inside)",
                tarball.display()
            ))
        })?;
        // A tarball exported from git has no generated parser either.
        need_parser_generators(into)
    }

    fn copy_tree(&self, dir: &Path, into: &Path) -> Result<(), Failure> {
        std::fs::create_dir_all(into).map_err(|e| io_failure(into, e))?;
        let mut command = Command::new("tar");
        command
            .arg("-C")
            .arg(dir)
            .args(["--exclude=.git", "-cf", "-", "."]);
        // tar | tar keeps modes and times without a copy crate.
        let mut pack = command
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::input(format!("tar: {e}")).caused_by(e))?;
        let mut unpack = Command::new("tar");
        unpack.arg("-C").arg(into).arg("-xf").arg("-");
        unpack.stdin(pack.stdout.take().expect("spawned with this stream piped"));
        let result = self.logged(Step::Unpack, "tar", unpack);
        let _ = pack.wait();
        result
    }

    pub(super) fn patch(&self, tree: &Path) -> Result<(), Failure> {
        need_tool("patch", "patch")?;
        for patch in &self.request.patches {
            let mut command = Command::new("patch");
            command
                .args(["-p1", "--forward", "--batch", "-d"])
                .arg(tree)
                .arg("-i")
                .arg(std::fs::canonicalize(patch).unwrap_or_else(|_| patch.clone()));
            self.logged(Step::Patch, &display_name(patch), command)
                .map_err(|failure| {
                    failure.map_message(|message| {
                        format!("patch {} does not apply: {message}", patch.display())
                    })
                })?;
        }
        Ok(())
    }

    pub(super) fn configure(&self, tree: &Path, build: &Path) -> Result<(), Failure> {
        let mut command = Command::new(tree.join("configure"));
        command
            .current_dir(build)
            .arg(format!("--prefix={}", self.work.join("install").display()))
            .args(&self.request.configure);
        // Dependency tracking: a later `make` in a kept tree (bisect) recompiles what a changed
        // header touches; every build has it, so that all compile the same commands (ccache).
        command.arg("--enable-depend");
        if let Some(ccache) = &self.ccache {
            command.arg(format!("CC={} {}", ccache.program, compiler_command()));
        }
        if let Some(cflags) = &self.request.cflags {
            command.arg(format!("CFLAGS={cflags}"));
        }
        self.logged(Step::Configure, "configure", command)
    }

    pub(super) fn make(&self, build: &Path) -> Result<(), Failure> {
        let jobs = format!("-j{}", stampede_base::cpu::cores());
        let mut server = Command::new("make");
        server.current_dir(build).arg(&jobs);
        self.logged(Step::Make, "make", server)?;
        let mut contrib = Command::new("make");
        contrib
            .current_dir(build)
            .args(["-C", "contrib/pg_stat_statements"])
            .arg(&jobs);
        self.logged(Step::Make, "make", contrib)
    }

    pub(super) fn install(&self, build: &Path) -> Result<(), Failure> {
        let mut server = Command::new("make");
        server.current_dir(build).arg("install");
        self.logged(Step::Install, "install", server)?;
        let mut contrib = Command::new("make");
        contrib
            .current_dir(build)
            .args(["-C", "contrib/pg_stat_statements", "install"]);
        self.logged(Step::Install, "install", contrib)
    }

    /// Runs `command` with its output appended to the step's log; a failure names the step,
    /// shows the log's last lines and its path, and what to install when a tool or library is
    /// missing.
    fn logged(&self, step: Step, what: &str, mut command: Command) -> Result<(), Failure> {
        let log = self.logs.join(format!("{}.log", step.name()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| io_failure(&log, e))?;
        let errors = file.try_clone().map_err(|e| io_failure(&log, e))?;
        if let Some(ccache) = &self.ccache {
            command.envs(ccache.env());
        }
        let status = command.stdout(file).stderr(errors).status().map_err(|e| {
            Failure::input(format!("{} failed: could not run {what}: {e}", step.name()))
                .caused_by(e)
        })?;
        if status.success() {
            return Ok(());
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(LOG_TAIL_LINES).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let hint = missing_dependency(&text)
            .map(|hint| format!("\n{hint}"))
            .unwrap_or_default();
        Err(Failure::input(format!(
            "{} failed ({status}); last lines of {}:\n{}{hint}",
            step.name(),
            log.display(),
            tail.join("\n")
        )))
    }
}

/// What a build log says is missing, as the Debian package that provides it.
fn missing_dependency(log: &str) -> Option<String> {
    const KNOWN: [(&str, &str, &str); 9] = [
        (
            "readline library not found",
            "the readline library",
            "libreadline-dev (or pass --configure --without-readline)",
        ),
        (
            "zlib library not found",
            "the zlib library",
            "zlib1g-dev (or pass --configure --without-zlib)",
        ),
        (
            "ICU library",
            "the ICU library",
            "libicu-dev and pkg-config (or pass --configure --without-icu)",
        ),
        (
            "no acceptable C compiler",
            "a C compiler",
            "build-essential",
        ),
        ("bison' is missing", "bison", "bison"),
        ("flex' is missing", "flex", "flex"),
        ("Perl not found", "perl", "perl"),
        ("library 'ssl' is required", "OpenSSL", "libssl-dev"),
        ("library 'crypto' is required", "OpenSSL", "libssl-dev"),
    ];
    KNOWN
        .iter()
        .find(|(pattern, _, _)| log.contains(pattern))
        .map(|(_, what, package)| format!("missing: {what}; on Debian install {package}"))
}

pub(super) fn need_tool(tool: &str, package: &str) -> Result<(), Failure> {
    need_tool_for("building PostgreSQL", tool, package)
}

/// A git checkout has no generated parser (release tarballs carry `gram.c` and the scanners):
/// building it needs bison and flex, named before anything runs.
pub(super) fn need_parser_generators(tree: &Path) -> Result<(), Failure> {
    if tree.join("src/backend/parser/gram.c").is_file() {
        return Ok(());
    }
    need_bison_and_flex()
}

/// bison and flex, which a tree without the generated parser needs.
pub(super) fn need_bison_and_flex() -> Result<(), Failure> {
    for tool in ["bison", "flex"] {
        need_tool(tool, tool).map_err(|failure| {
            failure.map_message(|message| {
                format!(
                    "{message} (a git checkout has no generated parser, unlike a release tarball)"
                )
            })
        })?;
    }
    Ok(())
}

/// The compiler command configure would pick: `CC`, else `cc`.
fn compiler_command() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// ccache in front of the compiler: its cache is the user's own when they keep one
/// (`CCACHE_DIR`), else in stampede's cache, and paths under the builds root are hashed
/// relative to the build directory, so that a tree kept for bisecting and a one-off build's
/// tree at another path share compiled objects.
#[derive(Debug, Clone)]
pub(super) struct Ccache {
    program: String,
}

impl Ccache {
    /// ccache, when it runs here (`STAMPEDE_CCACHE=0` turns it off).
    pub(super) fn find() -> Option<Ccache> {
        if std::env::var("STAMPEDE_CCACHE").is_ok_and(|value| value == "0") {
            return None;
        }
        let runs = Command::new("ccache")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        runs.then(|| Ccache {
            program: "ccache".into(),
        })
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let dir = std::env::var_os("CCACHE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::server::host::cache_root().join("ccache"));
        vec![("CCACHE_DIR", dir), ("CCACHE_BASEDIR", builds_root())]
    }
}

/// The C compiler configure will pick (`CC`, else `cc`): its first `--version` line.
pub(super) fn compiler_version() -> Result<String, Failure> {
    let compiler = compiler_command();
    let output = Command::new(&compiler).arg("--version").output();
    match output {
        Ok(output) if output.status.success() => Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .next()
            .unwrap_or(&compiler)
            .trim()
            .to_string()),
        _ => Err(Failure::input(format!(
            "building PostgreSQL needs a C compiler, and `{compiler}` was not found; on Debian install build-essential"
        ))),
    }
}

pub(super) fn cache_key(
    source_sha256: &str,
    patches: &[(PathBuf, String)],
    request: &BuildRequest,
    compiler: &str,
) -> String {
    let mut hasher = Sha256::new();
    let mut field = |name: &str, value: &str| {
        hasher.update(name.as_bytes());
        hasher.update((value.len() as u64).to_le_bytes());
        hasher.update(value.as_bytes());
    };
    field("source", source_sha256);
    for (_, digest) in patches {
        field("patch", digest);
    }
    field("cflags", request.cflags.as_deref().unwrap_or("<default>"));
    for argument in &request.configure {
        field("configure", argument);
    }
    field("compiler", compiler);
    hex(&hasher.finalize())[..16].to_string()
}

/// The digest of every file under `dir` but `.git`, by relative path and content: a source
/// directory's identity, uncommitted changes included.
fn tree_sha256(dir: &Path) -> Result<String, Failure> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    for relative in files {
        hasher.update(relative.to_string_lossy().as_bytes());
        hasher.update(file_sha256(&dir.join(&relative))?.as_bytes());
    }
    Ok(hex(&hasher.finalize()))
}

fn collect_files(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Failure> {
    for entry in std::fs::read_dir(dir).map_err(|e| io_failure(dir, e))? {
        let entry = entry.map_err(|e| io_failure(dir, e))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| io_failure(&path, e))?;
        if entry.file_name() == ".git" {
            continue;
        }
        if kind.is_dir() {
            collect_files(root, &path, files)?;
        } else if kind.is_file() {
            files.push(
                path.strip_prefix(root)
                    .expect("collect_files walks paths it joined onto root")
                    .to_path_buf(),
            );
        }
    }
    Ok(())
}

/// `git describe --always --dirty` and the digest of `git diff HEAD` when there are changes.
fn git_state(dir: &Path) -> (Option<String>, Option<String>) {
    if !dir.join(".git").exists() {
        return (None, None);
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| output.stdout)
    };
    let describe = git(&["describe", "--always", "--dirty", "--tags"])
        .map(|out| String::from_utf8_lossy(&out).trim().to_string());
    let changes = git(&["diff", "HEAD", "--binary"])
        .filter(|diff| !diff.is_empty())
        .map(|diff| hex(&Sha256::digest(&diff)));
    (describe, changes)
}

fn prepare_dirs(work: &Path, logs: &Path) -> Result<(), Failure> {
    let _ = std::fs::remove_dir_all(work);
    let _ = std::fs::remove_dir_all(logs);
    for dir in [work, logs] {
        std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, e))?;
    }
    Ok(())
}

pub(super) fn check_disk_space(root: &Path) -> Result<(), Failure> {
    let Ok(stats) = nix::sys::statvfs::statvfs(root) else {
        return Ok(());
    };
    enough_disk_space(root, stats.blocks_available() * stats.fragment_size())
}

fn enough_disk_space(root: &Path, free: u64) -> Result<(), Failure> {
    if free >= NEEDED_BYTES {
        return Ok(());
    }
    Err(Failure::input(format!(
        "too little disk space for a PostgreSQL build at {}: {:.1} GiB free, about {:.0} GiB needed",
        root.display(),
        free as f64 / (1u64 << 30) as f64,
        NEEDED_BYTES as f64 / (1u64 << 30) as f64
    )))
}

/// Moves the installation into the cache in one rename, readable by the server's user. A build
/// of the same key finished meanwhile by another process wins; this one is dropped.
pub(super) fn install_into_cache(work: &Path, entry: &Path) -> Result<(), Failure> {
    let installed = work.join("install");
    make_readable(&installed)?;
    crate::server::host::open_to_everyone(entry.parent().expect("under the builds root"))?;
    match std::fs::rename(&installed, entry) {
        Ok(()) => Ok(()),
        Err(_) if record_of(&entry.join("bin")).is_some() => Ok(()),
        Err(e) => Err(Failure::run(format!(
            "could not move the build into {}: {e}",
            entry.display()
        ))
        .caused_by(e)),
    }
}

fn make_readable(dir: &Path) -> Result<(), Failure> {
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir)
        .status()
        .map_err(|e| Failure::run(format!("chmod: {e}")).caused_by(e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::run(format!(
            "chmod -R a+rX {} failed",
            dir.display()
        )))
    }
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| io_failure(path, e))
}

pub(super) fn io_failure(path: &Path, error: std::io::Error) -> Failure {
    Failure::run(format!("{}: {error}", path.display())).caused_by(error)
}

pub(super) fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cflags: Option<&str>) -> BuildRequest {
        BuildRequest {
            source: "postgresql-15.18.tar.bz2".into(),
            cflags: cflags.map(Into::into),
            configure: vec!["--enable-debug".into()],
            patches: Vec::new(),
            origin: None,
        }
    }

    #[test]
    fn the_key_follows_source_patches_flags_and_compiler() {
        let base = cache_key("s", &[], &request(Some("-O2")), "gcc 12");
        assert_eq!(base, cache_key("s", &[], &request(Some("-O2")), "gcc 12"));
        assert_ne!(base, cache_key("t", &[], &request(Some("-O2")), "gcc 12"));
        assert_ne!(base, cache_key("s", &[], &request(Some("-O3")), "gcc 12"));
        assert_ne!(base, cache_key("s", &[], &request(None), "gcc 12"));
        assert_ne!(base, cache_key("s", &[], &request(Some("-O2")), "gcc 13"));
        let patched = [("p.patch".into(), "d".to_string())];
        assert_ne!(
            base,
            cache_key("s", &patched, &request(Some("-O2")), "gcc 12")
        );
        assert_eq!(base.len(), 16);
    }

    #[test]
    fn too_little_disk_space_is_refused_with_what_is_free_and_needed() {
        let refusal = enough_disk_space(Path::new("/cache/builds"), 512 << 20).unwrap_err();
        assert_eq!(refusal.kind(), stampede_base::error::Kind::Input);
        assert_eq!(
            refusal.message(),
            "too little disk space for a PostgreSQL build at /cache/builds: 0.5 GiB free, about 2 GiB needed"
        );
        assert!(enough_disk_space(Path::new("/cache/builds"), 3 << 30).is_ok());
    }

    /// A git checkout records where it stands (`git describe`) and, once changed, the digest of
    /// its uncommitted changes; the change is part of the source's identity too.
    #[test]
    fn a_git_checkout_records_its_describe_and_uncommitted_changes() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path();
        std::fs::create_dir_all(tree.join("src/backend/main")).unwrap();
        std::fs::write(tree.join("configure"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            tree.join("src/backend/main/main.c"),
            "int main(void) { return 0; }\n",
        )
        .unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .arg("-C")
                .arg(tree)
                .args([
                    "-c",
                    "user.name=stampede",
                    "-c",
                    "user.email=stampede@localhost",
                ])
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("git is installed (.ci/run installs it)");
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "release"]);
        git(&["tag", "REL_TEST_1"]);
        let clean = Source::open(tree).unwrap();
        assert_eq!(clean.git_describe.as_deref(), Some("REL_TEST_1"));
        assert_eq!(clean.uncommitted_sha256, None);
        assert!(matches!(clean.kind, SourceKind::Directory(_)));

        std::fs::write(
            tree.join("src/backend/main/main.c"),
            "int main(void) { return 1; }\n",
        )
        .unwrap();
        let changed = Source::open(tree).unwrap();
        assert_eq!(changed.git_describe.as_deref(), Some("REL_TEST_1-dirty"));
        assert_eq!(
            changed.uncommitted_sha256.as_ref().map(String::len),
            Some(64)
        );
        assert_ne!(changed.sha256, clean.sha256);
        // .git itself is not part of the identity: committing the change keeps the digest.
        git(&["commit", "-q", "-am", "fix"]);
        let committed = Source::open(tree).unwrap();
        assert_eq!(committed.sha256, changed.sha256);
        assert_eq!(committed.uncommitted_sha256, None);
        assert!(committed
            .git_describe
            .unwrap()
            .starts_with("REL_TEST_1-1-g"));
    }

    #[test]
    fn missing_libraries_name_their_debian_package() {
        let log = "checking for readline... no\nconfigure: error: readline library not found\n";
        assert_eq!(
            missing_dependency(log).unwrap(),
            "missing: the readline library; on Debian install libreadline-dev (or pass --configure --without-readline)"
        );
        assert_eq!(missing_dependency("all good"), None);
    }
}
