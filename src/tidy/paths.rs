//! The paths that docs, the README, Cargo.toml comments and `//!` headers name must exist, so a
//! file moved without its mentions fails here, naming the file and line that still say the old
//! path; and `unsafe` is opened only where the workspace says.

use std::collections::HashSet;
use std::path::Path;

use super::Tree;

/// Paths written in the repository that name another project's tree, not ours: (the file that
/// writes it, the path). Each is checked to still be written, so the list cannot go stale.
const ELSEWHERE: &[(&str, &str)] = &[
    // sysbench 1.0.20's source tree, fetched into target/sysbench-src/ by .ci/fetch-sysbench-source.
    ("tests/sysbench_cram.rs", "tests/t/"),
    ("tests/sysbench_cram.rs", "tests/include/"),
    // Where a lab keeps a failed build, under the servers' directory it is given at run time.
    ("docs/bisect.md", "builds/broken/"),
    // The Insert Benchmark's folder in mdcallag/mytools.
    ("docs/ibench.md", "bench/ibench/"),
    ("bench/results/ibench.md", "bench/ibench/iibench.py"),
];

/// File types whose paths are checked when written with a folder in front (`lab/plan.rs`).
const CHECKED_EXTENSIONS: &[&str] = &[".rs", ".md", ".toml", ".py", ".sh"];

#[test]
fn every_path_written_in_docs_and_headers_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = Tree::walk(root);
    let mut missing = Vec::new();
    let mut elsewhere_seen = HashSet::new();
    for file in tree.documents() {
        let text = std::fs::read_to_string(root.join(&file)).expect("a readable text file");
        for (number, line) in checked_lines(&file, &text) {
            for path in written_paths(line) {
                let allowed = ELSEWHERE.contains(&(file.as_str(), path));
                if allowed {
                    elsewhere_seen.insert((file.clone(), path.to_string()));
                } else if !tree.has(path) {
                    missing.push(format!(
                        "{file}:{number}: `{path}` is not in the repository"
                    ));
                }
            }
        }
    }
    let stale: Vec<_> = ELSEWHERE
        .iter()
        .filter(|(file, path)| !elsewhere_seen.contains(&(file.to_string(), path.to_string())))
        .map(|(file, path)| format!("{file}: no longer writes `{path}` (drop it from ELSEWHERE)"))
        .collect();
    missing.extend(stale);
    assert!(missing.is_empty(), "\n{}\n", missing.join("\n"));
}

/// `unsafe` is denied workspace-wide (Cargo.toml's `[workspace.lints]`); an `allow` opens it
/// again, which only LuaJIT's FFI and the tests' libc calls may do.
#[test]
fn unsafe_code_is_allowed_only_where_the_workspace_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = Tree::walk(root);
    let opened: Vec<String> = tree
        .files
        .iter()
        .filter(|f| f.ends_with(".rs") && !f.starts_with("tests/") && !f.starts_with("src/tidy/"))
        .filter(|f| f.as_str() != "crates/lua/src/lib.rs")
        .filter(|f| {
            let text = std::fs::read_to_string(root.join(f)).expect("a readable source file");
            text.contains(concat!("allow(", "unsafe_code)"))
        })
        .cloned()
        .collect();
    assert!(opened.is_empty(), "unsafe code allowed in {opened:?}");
}

#[test]
fn path_tokens_are_found_in_prose() {
    let line = "see `lab/plan.rs` and src/driver/ (not http://x.org/a.rs, /usr/lib/a.rs or bin/)";
    let found: Vec<&str> = written_paths(line).collect();
    assert_eq!(found, ["lab/plan.rs", "src/driver/"]);
    assert_eq!(
        written_paths("`crates/wire/src/mysql/…`").collect::<Vec<_>>(),
        ["crates/wire/src/mysql/"]
    );
}

impl Tree {
    fn has(&self, path: &str) -> bool {
        self.tails.contains(path)
    }

    /// The files whose written paths are checked: docs, READMEs, manifests, Rust sources.
    fn documents(&self) -> impl Iterator<Item = String> + '_ {
        self.files
            .iter()
            .filter(|f| {
                f.ends_with(".md")
                    && (f.starts_with("docs/") || f.starts_with("bench/") || !f.contains('/'))
                    || f.ends_with("Cargo.toml")
                    || f.ends_with(".rs")
            })
            .cloned()
    }
}

/// The lines of `file` that are prose about the repository: all of a Markdown file, the
/// comments of a manifest, the `//!` header of a Rust file.
fn checked_lines<'a>(file: &str, text: &'a str) -> Vec<(usize, &'a str)> {
    let numbered = text.lines().enumerate().map(|(i, line)| (i + 1, line));
    if file.ends_with(".md") {
        numbered.collect()
    } else if file.ends_with(".toml") {
        numbered
            .filter_map(|(n, line)| line.find('#').map(|at| (n, &line[at..])))
            .collect()
    } else {
        numbered
            .filter(|(_, line)| line.trim_start().starts_with("//!"))
            .collect()
    }
}

/// The repository paths a line writes: words with a folder in them that end in a checked file
/// type, or in `/` or `…` after two or more folders (`src/driver/`, `crates/wire/src/mysql/…`).
/// URLs, absolute paths, globs and build outputs (`target/`) are not ours to check.
fn written_paths(line: &str) -> impl Iterator<Item = &str> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_.-/…{},*".contains(c);
    line.split(move |c: char| !is_path_char(c))
        .filter(move |word| !url_before(line, word))
        .map(|word| word.trim_end_matches([',', '.']))
        .map(|word| word.strip_suffix('…').unwrap_or(word))
        .filter(|word| {
            word.contains('/') && !word.starts_with('/') && !word.contains(['{', '*', ','])
        })
        .filter(|word| {
            let is_file = CHECKED_EXTENSIONS.iter().any(|ext| word.ends_with(ext));
            let is_folder = word.ends_with('/') && word.matches('/').count() >= 2;
            let generated = word.starts_with("target/");
            (is_file || is_folder) && !generated && !word.starts_with('.')
                || word.starts_with(".ci/")
        })
}

/// Whether `word` (a slice of `line`) is part of a URL: `://` right before it or in it.
fn url_before(line: &str, word: &str) -> bool {
    let start = word.as_ptr() as usize - line.as_ptr() as usize;
    word.contains("://") || line[..start].ends_with("://") || line[..start].ends_with(':')
}
