//! stampede: a benchmark lab for PostgreSQL and MariaDB/MySQL in one binary.

use stampede::app::dispatch;
use stampede_base::error::{Kind, INCOMPLETE_NOTICE};

fn main() {
    // A pod of a spread run: its output goes framed to the container's log, for the launcher.
    let in_pod = std::env::var_os(stampede::pods::role::RUN_ENV).is_some();
    let framed = in_pod
        .then(stampede::pods::terminal::FramedOutput::install)
        .flatten();
    if in_pod {
        stampede::pods::terminal::exit_when_terminated();
    }
    let code = match dispatch::run() {
        Ok(code) => code,
        Err(failure) => {
            match failure.kind() {
                Kind::Incomplete => eprintln!("stampede: error: {INCOMPLETE_NOTICE}"),
                _ => eprint!("{}", error_lines(&failure.to_string())),
            }
            failure.exit_code()
        }
    };
    if let Some(framed) = framed {
        framed.finish(code);
    }
    std::process::exit(code);
}

/// A failure as pgbench's logging prints one: the message as an error, and its `detail:` and
/// `hint:` lines (libpq's and pgbench's second lines) under the program's name too.
fn error_lines(message: &str) -> String {
    let mut text = String::new();
    for (index, line) in message.lines().enumerate() {
        if index == 0 {
            text.push_str("stampede: error: ");
        } else if ["error: ", "detail: ", "hint: "]
            .iter()
            .any(|level| line.starts_with(level))
        {
            text.push_str("stampede: ");
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}
