//! Repository invariants checked as unit tests (rust-analyzer's "tidy"): `paths.rs`, the paths
//! prose names exist and `unsafe` stays where the workspace opens it; `rules.rs`, the rules
//! docs/architecture.md states that a program can check (the crates' order, no family importing
//! another, a `//!` header on every file, the registries complete). Each rule reads a `Sources`,
//! so its own tests feed it a fixture that breaks it.

mod paths;
mod rules;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The repository's files and folders, as paths relative to its root, and every tail of them
/// (`driver/plan.rs` for `src/driver/plan.rs`), since prose names a file from its folder.
pub(super) struct Tree {
    pub(super) files: Vec<String>,
    tails: HashSet<String>,
}

impl Tree {
    pub(super) fn walk(root: &Path) -> Tree {
        let mut files = Vec::new();
        let mut tails = HashSet::new();
        let mut pending = vec![PathBuf::new()];
        while let Some(folder) = pending.pop() {
            // The suite's other programs run beside this test and may make and remove files
            // and folders in the working tree (a run's log files): what vanishes mid-walk is
            // theirs, not the repository's.
            let Ok(entries) = std::fs::read_dir(root.join(&folder)) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                // Build outputs: cargo's `target/` at the root and in fuzz/ (src/lab/target/ is ours).
                let build_output = name == "target" && matches!(folder.to_str(), Some("" | "fuzz"));
                if build_output || matches!(name.as_str(), ".git" | "node_modules") {
                    continue;
                }
                let path = folder.join(&name);
                let text = path.to_string_lossy().into_owned();
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                let is_folder = file_type.is_dir();
                let written = if is_folder {
                    format!("{text}/")
                } else {
                    text.clone()
                };
                for (at, _) in written
                    .match_indices('/')
                    .filter(|(at, _)| at + 1 < written.len())
                {
                    tails.insert(written[at + 1..].to_string());
                }
                tails.insert(written);
                if is_folder {
                    pending.push(path);
                } else {
                    files.push(text);
                }
            }
        }
        files.sort();
        Tree { files, tails }
    }
}

/// The text files the rules read, by path relative to the repository's root.
pub(super) struct Sources {
    files: BTreeMap<String, String>,
}

impl Sources {
    /// The repository's Rust sources, manifests and Markdown.
    pub(super) fn of_repository() -> Sources {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let files = Tree::walk(root)
            .files
            .into_iter()
            .filter(|f| [".rs", ".toml", ".md"].iter().any(|ext| f.ends_with(ext)))
            .filter_map(|f| Some((f.clone(), std::fs::read_to_string(root.join(&f)).ok()?)))
            .collect();
        Sources { files }
    }

    #[cfg(test)]
    pub(super) fn fixture(files: &[(&str, &str)]) -> Sources {
        let files = files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string()))
            .collect();
        Sources { files }
    }

    pub(super) fn text(&self, path: &str) -> &str {
        self.files.get(path).map_or("", String::as_str)
    }

    pub(super) fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The names of the folders right under `folder` (`src/family/` gives `pgbench`, …).
    pub(super) fn folders_in(&self, folder: &str) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .paths()
            .filter_map(|path| path.strip_prefix(folder)?.split_once('/'))
            .map(|(name, _)| name)
            .collect();
        names.dedup();
        names
    }
}
