//! The docs' runnable command blocks, run: every fenced block of README.md and docs/*.md
//! opened with "```sh runnable" runs in bash (`set -eo pipefail`) against the suite's server —
//! the `PG*` variables name it and a database of the block's own, the `stampede` of this build
//! first on PATH, from a scratch directory that sees the repository's `examples/` — so that a
//! doc step that fails is a failing test, not a newcomer's first error. Blocks so marked are
//! the docs' "first try" steps, seconds long at their sizes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{server, stderr, stdout, LabDir, PASSWORD};

/// The fence that marks a block to run; any other block is shown, not run.
const RUNNABLE: &str = "```sh runnable";

/// A runnable block: where it is and what it says.
struct Block {
    file: PathBuf,
    line: usize,
    text: String,
}

/// Every runnable block of README.md and docs/*.md, in file and line order.
fn runnable_blocks() -> Vec<Block> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files.iter().flat_map(|file| blocks_of(file)).collect()
}

fn blocks_of(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        match open.as_mut() {
            None if line.trim_end() == RUNNABLE => {
                open = Some(Block {
                    file: file.to_path_buf(),
                    line: index + 1,
                    text: String::new(),
                })
            }
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(open.take()),
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a runnable block is not closed",
        file.display()
    );
    blocks
}

/// Runs one block in `dir` against database `db` of the suite's server.
fn run(block: &Block, dir: &Path, db: &str) -> std::process::Output {
    let s = server();
    let stampede = PathBuf::from(env!("CARGO_BIN_EXE_stampede"));
    let path = format!(
        "{}:{}",
        stampede.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-c", &format!("set -eo pipefail\n{}", block.text)])
        .current_dir(dir)
        .env("PATH", path)
        .env("PGHOST", s.socket_dir())
        .env("PGPORT", s.port())
        .env("PGUSER", &s.user)
        .env("PGPASSWORD", PASSWORD)
        .env("PGDATABASE", db)
        .output()
        .expect("bash runs")
}

#[test]
fn every_runnable_doc_block_runs() {
    let blocks = runnable_blocks();
    assert!(blocks.len() >= 5, "only {} runnable blocks", blocks.len());
    let s = server();
    for (index, block) in blocks.iter().enumerate() {
        let dir = LabDir::new(&format!("doc-block-{index}"));
        std::os::unix::fs::symlink(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
            dir.join("examples"),
        )
        .unwrap();
        let db = s.create_database(&format!("doc_block_{index}"));
        let output = run(block, &dir, &db);
        assert!(
            output.status.success(),
            "{}:{}: the block failed ({}):\n{}\n--- stdout\n{}\n--- stderr\n{}",
            block.file.display(),
            block.line,
            output.status,
            block.text,
            stdout(&output),
            stderr(&output)
        );
    }
}

/// The harness itself: a block is what lies between its fence and the next one, and only
/// blocks marked runnable are taken.
#[test]
fn only_blocks_marked_runnable_are_taken() {
    let dir = LabDir::new("doc-blocks");
    let file = dir.join("page.md");
    std::fs::write(
        &file,
        "# Page\n```sh\nnot run\n```\n```sh runnable\nfirst\nsecond\n```\ntext\n```sh runnable\nthird\n```\n",
    )
    .unwrap();
    let blocks = blocks_of(&file);
    let found: Vec<(usize, &str)> = blocks.iter().map(|b| (b.line, b.text.as_str())).collect();
    assert_eq!(found, [(5, "first\nsecond\n"), (10, "third\n")]);
}
