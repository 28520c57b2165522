//! Shell completions and the man page, generated from the command-line definitions so they
//! always list the subcommands and flags of the binary that prints them.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use super::cli::Cli;
use super::{CommandResult, Failure};

/// `stampede completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> CommandResult {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "stampede", &mut script);
    write_stdout(&script)
}

/// `stampede man`: the top page (section 1, roff) on stdout; with `--dir`, every page (the top
/// one and one per subcommand, which it refers to) written there.
pub fn man(dir: Option<&Path>) -> CommandResult {
    if let Some(dir) = dir {
        return write_pages(dir);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| Failure::run(format!("could not render the man page: {e}")))?;
    write_stdout(&page)
}

fn write_pages(dir: &Path) -> CommandResult {
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    clap_mangen::generate_to(Cli::command(), dir).map_err(|e| {
        Failure::run(format!(
            "could not write the man pages into {}: {e}",
            dir.display()
        ))
    })?;
    println!("man pages written into {}", dir.display());
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> CommandResult {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        // `stampede man | head`: the reader left; nothing is wrong.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.map_err(|e| Failure::run(format!("could not write to stdout: {e}"))),
    }
}
