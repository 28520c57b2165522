//! From the command line to the command that runs it: sysbench's own command line first (its
//! `name=value` options and positional test), then clap's, then one arm per top-level command.
//! A new family's command is one arm here and one variant in `cli.rs`.

use clap::{CommandFactory, FromArgMatches};

use super::cli::{Cli, TopCommand};
use crate::app;
use crate::family::{dbstress, ibench, pgbench, replay, sysbench, tpcc, tproch};
use stampede_base::error::Failure;

/// The exit code of a command that says its own (sysbench's form), else 0 or the failure.
pub fn run() -> Result<i32, Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("sysbench") {
        if let Some(outcome) = sysbench::entry::main(&args[1..]) {
            return outcome;
        }
    }
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(error) => return Err(clap_failure(error)),
    };
    let cli = Cli::from_arg_matches(&matches).map_err(clap_failure)?;
    run_command(&cli, &matches).map(|()| 0)
}

fn run_command(cli: &Cli, matches: &clap::ArgMatches) -> Result<(), Failure> {
    match &cli.command {
        TopCommand::Pgbench(args) => {
            let sub = matches
                .subcommand_matches("pgbench")
                .expect("the match arm is pgbench's");
            pgbench::command::run(args, pgbench::args::script_choices(sub))
        }
        TopCommand::Quickstart(args) => app::quickstart::run(args),
        TopCommand::Server { action } => app::server::run(action),
        TopCommand::Lab { action } => app::lab::run(action),
        TopCommand::Compare(args) => app::compare::run(args),
        TopCommand::Bisect(args) => app::bisect::run(args),
        TopCommand::Report(args) => app::report::run(args),
        TopCommand::Serve(args) => app::live_page::serve(args),
        TopCommand::History(args) => app::history::run(args),
        TopCommand::Gate(args) => app::gate::run(args),
        TopCommand::Export(args) => app::export::run(args),
        TopCommand::Sysbench { action } => sysbench::command::run(action),
        TopCommand::Tpcc { action } => tpcc::command::run(action),
        TopCommand::Tproch { action } => tproch::command::run(action),
        TopCommand::Dbstress { action } => dbstress::command::run(action),
        TopCommand::Ibench { action } => ibench::command::run(action),
        TopCommand::Capture(args) => replay::command::capture_command(args),
        TopCommand::Replay(args) => replay::command::replay_command(args),
        TopCommand::Completions { shell } => app::shell::completions(*shell),
        TopCommand::Man { dir } => app::shell::man(dir.as_deref()),
    }
}

/// Help and version go to stdout with exit 0; a usage error keeps clap's whole message — the
/// missing argument's name, the flag it suggests, the usage line — with exit 1.
fn clap_failure(error: clap::Error) -> Failure {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            std::process::exit(0);
        }
        _ => {
            let rendered = error.render().to_string();
            let message = rendered.trim_end();
            let message = message.strip_prefix("error: ").unwrap_or(message);
            if std::env::args().nth(1).as_deref() == Some("pgbench") {
                // pgbench's own wording, for scripts that look for it: its first line and hint,
                // with clap's suggestion as a hint of its own.
                let first = message.lines().next().unwrap_or("invalid arguments");
                let tips: String = message
                    .lines()
                    .filter_map(|line| line.trim().strip_prefix("tip: "))
                    .map(|tip| format!("hint: {tip}\n"))
                    .collect();
                Failure::input(format!(
                    "{first}\n{tips}hint: Try \"stampede pgbench --help\" for more information."
                ))
            } else {
                Failure::input(message)
            }
        }
    }
}
