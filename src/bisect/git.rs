//! The history a bisection walks: a git checkout of PostgreSQL, its refs resolved to commits,
//! and the next commit to measure, chosen by git itself (`git rev-list --bisect-all`, the
//! order `git bisect` picks from) among those not yet known.

use std::path::{Path, PathBuf};

use crate::server::postgres::build_tree::run_git;
use stampede_base::error::Failure;

/// A git checkout of PostgreSQL.
pub struct History {
    dir: PathBuf,
    /// Follow only first parents (merges as one step), as `git bisect --first-parent`.
    first_parent: bool,
}

/// A commit as the step table and the verdict show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
    /// "Name <email>".
    pub author: String,
    /// ISO 8601, the author's date.
    pub date: String,
}

impl Commit {
    /// The first 12 hex digits: what target and lab names carry.
    pub fn short(&self) -> &str {
        &self.hash[..12.min(self.hash.len())]
    }
}

/// What is left between the commits known to be like the end before the change and the first
/// one known to be like the end after it.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Measure this commit next; `left` commits remain to tell apart (the after end's included).
    Measure { commit: String, left: usize },
    /// No commit is left to measure: the first one carrying the change is `first`, or one of
    /// the skipped commits before it (`skipped`, oldest first).
    Found { first: String, skipped: Vec<String> },
}

impl History {
    /// The checkout at `dir`, refused unless it is a git repository whose `at` commit holds
    /// PostgreSQL's sources.
    pub fn open(dir: &Path, first_parent: bool) -> Result<History, Failure> {
        let not_git = || {
            Failure::input(format!(
                "{} is not a git checkout of PostgreSQL (bisect walks a repository's commits; clone https://git.postgresql.org/git/postgresql.git)",
                dir.display()
            ))
        };
        if !dir.is_dir() {
            return Err(not_git());
        }
        let top = run_git(Some(dir), &["rev-parse", "--show-toplevel"]).map_err(|_| not_git())?;
        Ok(History {
            dir: PathBuf::from(top),
            first_parent,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The full hash `reference` names (a tag, branch, hash or `HEAD~3`).
    pub fn resolve(&self, reference: &str) -> Result<String, Failure> {
        let commit = format!("{reference}^{{commit}}");
        run_git(
            Some(&self.dir),
            &["rev-parse", "--verify", "--quiet", &commit],
        )
        .ok()
        .filter(|hash| !hash.is_empty())
        .ok_or_else(|| {
            Failure::input(format!(
                "unknown ref \"{reference}\" in {}",
                self.dir.display()
            ))
        })
    }

    /// Refuses a commit that does not hold PostgreSQL's sources.
    pub fn check_postgres(&self, commit: &str, reference: &str) -> Result<(), Failure> {
        for marker in ["configure", "src/backend/main/main.c"] {
            let object = format!("{commit}:{marker}");
            if run_git(Some(&self.dir), &["cat-file", "-e", &object]).is_err() {
                return Err(Failure::input(format!(
                    "{} is not a git checkout of PostgreSQL: {reference} has no {marker}",
                    self.dir.display()
                )));
            }
        }
        Ok(())
    }

    /// Whether `ancestor` is an ancestor of `descendant` (along first parents when the history
    /// follows them).
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, Failure> {
        if ancestor == descendant {
            return Ok(false);
        }
        if !self.first_parent {
            let args = ["merge-base", "--is-ancestor", ancestor, descendant];
            return Ok(run_git(Some(&self.dir), &args).is_ok());
        }
        let chain = run_git(
            Some(&self.dir),
            &[
                "rev-list",
                "--first-parent",
                descendant,
                &format!("^{ancestor}^@"),
            ],
        )?;
        Ok(chain.lines().any(|line| line == ancestor))
    }

    pub fn commit(&self, hash: &str) -> Result<Commit, Failure> {
        let text = run_git(
            Some(&self.dir),
            &["show", "-s", "--format=%H%x00%s%x00%an <%ae>%x00%aI", hash],
        )?;
        let fields: Vec<&str> = text.split('\0').collect();
        let field = |i: usize| fields.get(i).unwrap_or(&"").to_string();
        Ok(Commit {
            hash: field(0),
            subject: field(1),
            author: field(2),
            date: field(3),
        })
    }

    /// The next commit to measure between `before` (commits like the change's start) and
    /// `after` (the first commit known to be like its end), leaving out `skipped` ones.
    pub fn next(
        &self,
        before: &[String],
        after: &str,
        skipped: &[String],
    ) -> Result<Next, Failure> {
        let mut args = vec!["rev-list".to_string(), "--bisect-all".to_string()];
        if self.first_parent {
            args.push("--first-parent".into());
        }
        args.push(after.to_string());
        args.extend(before.iter().map(|hash| format!("^{hash}")));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let listed = run_git(Some(&self.dir), &refs)?;
        // "<hash> (dist=N)" lines, the best split first; the after end itself is among them.
        let candidates: Vec<&str> = listed
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        let left = candidates.len();
        let pick = candidates
            .iter()
            .find(|hash| **hash != after && !skipped.iter().any(|s| s == *hash));
        if let Some(commit) = pick {
            return Ok(Next::Measure {
                commit: commit.to_string(),
                left,
            });
        }
        let mut skipped_left: Vec<String> = candidates
            .iter()
            .filter(|hash| **hash != after)
            .map(|hash| hash.to_string())
            .collect();
        skipped_left.reverse();
        let ordered = self.oldest_first(skipped_left)?;
        Ok(Next::Found {
            first: after.to_string(),
            skipped: ordered,
        })
    }

    /// The parent the change's first commit is measured against: its first parent.
    pub fn parent(&self, hash: &str) -> Result<String, Failure> {
        run_git(Some(&self.dir), &["rev-parse", &format!("{hash}^")])
    }

    fn oldest_first(&self, hashes: Vec<String>) -> Result<Vec<String>, Failure> {
        if hashes.len() < 2 {
            return Ok(hashes);
        }
        let mut args = vec!["rev-list", "--no-walk", "--reverse", "--topo-order"];
        args.extend(hashes.iter().map(String::as_str));
        let listed = run_git(Some(&self.dir), &args)?;
        Ok(listed.lines().map(str::to_string).collect())
    }
}
