//! sysbench's Lua scripts, run unchanged: `stampede sysbench script.lua [options] command`.
//! An embedded LuaJIT (as sysbench's own) runs the script with sysbench's Lua API
//! (`prelude.lua` over the native functions of `state.rs`), one interpreter per worker thread
//! and one for the main thread, SQL over stampede's own connections (`sql.rs`), events counted
//! and reported as sysbench does (`stats.rs`, `run.rs`).

mod connection;
mod context;
mod control;
mod fast;
mod live;
mod log;
mod run;
mod spread;
mod sql;
mod state;
mod stats;
mod target;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use log::Log;
pub use state::VERSION;

use super::sysbench_cmdline::{self, CommandLine, Options};
use crate::live::endpoint::{MetricsArgs, MetricsEndpoint};
use crate::pods::KubeArgs;
use context::{Script, Shared};
use stampede_base::error::Failure;
use state::Interpreter;

/// Runs a script's command; returns the exit code (sysbench's: 1 for anything that failed),
/// or stampede's failure of a spread run's launch (`--pods`).
/// `metrics`: stampede's `--metrics-addr` and `--serve-token`, taken from the line before the
/// script's options are checked.
pub fn main(
    line: CommandLine,
    log: Log,
    kube: KubeArgs,
    metrics: MetricsArgs,
) -> Result<i32, Failure> {
    let Some((shared, main_state)) = checked_script(&line, &log) else {
        return Ok(1);
    };
    if shared.script.is_stdin() || line.command.is_none() {
        return Ok(0);
    }
    let command = line.command.as_deref().unwrap_or_default();
    if kube.pods.is_some() {
        if metrics.metrics_addr.is_some() {
            return Err(Failure::input(
                "--metrics-addr with --pods is served for the built-in tests (oltp_*); a Lua \
                 script's spread run reports on its terminal only",
            ));
        }
        return match command {
            "run" => spread::launch(&shared, &line, &kube).map(|()| 0),
            other => Err(super::spread::refused_with_pods(other)),
        };
    }
    let served = match command {
        "run" => metrics.start(crate::live::command_labels("sysbench"))?,
        _ => None,
    };
    Ok(dispatch(&shared, &main_state, command, served.as_ref()))
}

/// The script loaded and its options checked; None when it failed (sysbench's message printed).
fn checked_script(line: &CommandLine, log: &Log) -> Option<(Arc<Shared>, Interpreter)> {
    if line.test.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        // Else a terminal would wait without a word (sysbench says it too).
        log.notice("Reading the script from the standard input:\n");
    }
    let script = match Script::locate(line.test.as_deref()) {
        Ok(script) => script,
        Err(message) => {
            log.fatal(&message);
            return None;
        }
    };
    let general = Options::new(line.clone(), sysbench_cmdline::general_options());
    let shared = Arc::new(Shared::new(script, general, log.clone()));
    let main_state = match Interpreter::new(&shared, None) {
        Ok(state) => state,
        Err(message) => {
            log.fatal(&message);
            return None;
        }
    };
    if shared.script.is_stdin() || line.command.is_none() {
        return Some((shared, main_state));
    }
    let declared = match main_state.declared_options() {
        Ok(declared) => declared,
        Err(message) => {
            log.fatal(&format!(
                "`sysbench.cmdline.read_cmdline_options' function failed: {message}"
            ));
            return None;
        }
    };
    let legacy = declared.is_none();
    let mut defs = sysbench_cmdline::general_options();
    defs.extend(declared.clone().unwrap_or_default());
    let options = Options::new(line.clone(), defs);
    if let Err(failure) = options.check(legacy) {
        eprintln!("{}", failure.message());
        return None;
    }
    shared.set_options(options, legacy, declared.unwrap_or_default());
    Some((shared, main_state))
}

fn dispatch(
    shared: &Arc<Shared>,
    main_state: &Interpreter,
    command: &str,
    served: Option<&MetricsEndpoint>,
) -> i32 {
    let name = shared.script.short_name();
    if main_state.custom_command_defined(command) {
        return run::custom_command(shared, main_state, command);
    }
    match command {
        "help" => help(shared, main_state, &name),
        "prepare" | "cleanup" => {
            if !main_state.function_defined(command) {
                eprintln!("'{name}' test does not implement the '{command}' command.");
                return 1;
            }
            main_state.call_command(command)
        }
        "run" => run::run(shared, main_state, served),
        _ => {
            eprintln!("Unknown command: {command}");
            1
        }
    }
}

fn help(shared: &Arc<Shared>, main_state: &Interpreter, name: &str) -> i32 {
    if main_state.function_defined("help") {
        return main_state.call_command("help");
    }
    let declared = shared.declared();
    if !declared.is_empty() {
        println!("{name} options:");
        println!("{}", sysbench_cmdline::option_list(&declared));
        return 0;
    }
    eprintln!("'{name}' test does not implement the 'help' command.");
    1
}
