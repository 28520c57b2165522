//! PostgreSQL from a git repository and ref (the development branch, a patch series' branch):
//! the repository is mirrored once into the cache and fetched again on later uses; the ref's
//! commit is exported (`git archive`) as a tarball that `build.rs` builds like a release's, so
//! that its objects are the ones a release build of the same files compiled (ccache). A git
//! tree lacks the files a release tarball generates, so building it needs bison and flex.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

/// Where PostgreSQL's own repository lives; `postgres = "master"` builds its master branch.
pub const POSTGRES_GIT: &str = "https://git.postgresql.org/git/postgresql.git";

/// A repository and the ref to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// A URL or a local path of a repository.
    pub url: String,
    /// A branch, tag or commit.
    pub reference: String,
}

/// A ref's commit exported.
pub struct Export {
    /// `<cache>/git/archives/<commit>.tar.gz`.
    pub tarball: PathBuf,
    pub commit: String,
}

impl GitSource {
    /// "https://…/postgresql.git master".
    pub fn describe(&self) -> String {
        format!("{} {}", self.url, self.reference)
    }

    /// The ref's commit exported under the cache, the repository fetched first (a fetch that
    /// fails is said, and the mirror's last state used).
    pub fn export(&self, events: &mut dyn FnMut(SetupEvent<'_>)) -> Result<Export, Failure> {
        let root = crate::server::host::cache_root().join("git");
        let mirror = self.mirror(&root, events)?;
        let commit = self.resolve(&mirror)?;
        let tarball = root.join("archives").join(format!("{commit}.tar.gz"));
        if !tarball.is_file() {
            archive(&mirror, &commit, &tarball)?;
        }
        Ok(Export { tarball, commit })
    }

    fn mirror(
        &self,
        root: &Path,
        events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<PathBuf, Failure> {
        let key = crate::server::fetch::hex(&Sha256::digest(self.url.as_bytes())[..8]);
        let mirror = root.join(format!("{key}.git"));
        if mirror.join("HEAD").is_file() {
            events(SetupEvent::Note(&format!("fetching {}", self.url)));
            let fetched = git(Some(&mirror), &["fetch", "--prune", "--quiet", "origin"]);
            if let Err(e) = fetched {
                events(SetupEvent::Note(&format!(
                    "could not fetch {} ({}); building from the copy fetched before",
                    self.url,
                    e.message()
                )));
            }
            return Ok(mirror);
        }
        events(SetupEvent::Note(&format!(
            "cloning {} into {} (once; later uses fetch)",
            self.url,
            mirror.display()
        )));
        std::fs::create_dir_all(root)
            .map_err(|e| Failure::run(format!("{}: {e}", root.display())).caused_by(e))?;
        let partial = root.join(format!(".{key}.{}.partial", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let cloned = git(
            None,
            &[
                "clone",
                "--mirror",
                "--quiet",
                &self.url,
                &partial.to_string_lossy(),
            ],
        );
        if let Err(e) = cloned {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(Failure::input(format!(
                "could not clone {}: {}",
                self.url,
                e.message()
            )));
        }
        if std::fs::rename(&partial, &mirror).is_err() {
            // Another process cloned it meanwhile.
            let _ = std::fs::remove_dir_all(&partial);
        }
        Ok(mirror)
    }

    /// The commit the ref names, or an error naming the branches and newest tags there are.
    fn resolve(&self, mirror: &Path) -> Result<String, Failure> {
        let spec = format!("{}^{{commit}}", self.reference);
        if let Ok(output) = git(Some(mirror), &["rev-parse", "--verify", "--quiet", &spec]) {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
        }
        let list = |args: &[&str]| {
            git(Some(mirror), args)
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .take(8)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let branches = list(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]);
        let tags = list(&[
            "for-each-ref",
            "--sort=-creatordate",
            "--format=%(refname:short)",
            "refs/tags",
        ]);
        Err(Failure::input(format!(
            "git ref \"{}\" does not exist in {}; branches: {}; newest tags: {}",
            self.reference,
            self.url,
            if branches.is_empty() {
                "none"
            } else {
                &branches
            },
            if tags.is_empty() { "none" } else { &tags }
        )))
    }
}

/// `commit`'s files as a tarball at `tarball` (one top directory, as a release's).
fn archive(mirror: &Path, commit: &str, tarball: &Path) -> Result<(), Failure> {
    let parent = tarball
        .parent()
        .expect("the tarball is named under archives/, never a root");
    std::fs::create_dir_all(parent)
        .map_err(|e| Failure::run(format!("{}: {e}", parent.display())).caused_by(e))?;
    let partial = parent.join(format!(".{commit}.{}.partial", std::process::id()));
    let result = git(
        Some(mirror),
        &[
            "archive",
            "--format=tar.gz",
            "--prefix=postgresql/",
            "-o",
            &partial.to_string_lossy(),
            commit,
        ],
    );
    if let Err(e) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, tarball).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        Failure::run(format!("{}: {e}", tarball.display())).caused_by(e)
    })
}

fn git(git_dir: Option<&Path>, args: &[&str]) -> Result<Output, Failure> {
    let mut command = Command::new("git");
    if let Some(dir) = git_dir {
        command.arg("--git-dir").arg(dir);
    }
    run(command, args)
}

fn run(mut command: Command, args: &[&str]) -> Result<Output, Failure> {
    // Never ask for credentials on a terminal: a lab runs unattended.
    command.args(args).env("GIT_TERMINAL_PROMPT", "0");
    let output = command.output().map_err(|e| {
        Failure::input(format!(
            "building from git needs git: {e}; on Debian install git"
        ))
        .caused_by(e)
    })?;
    if output.status.success() {
        return Ok(output);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(Failure::run(
        stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("git failed")
            .trim()
            .to_string(),
    ))
}
