//! `stampede sysbench ARGS` read as sysbench reads its command line: `[options]...
//! [testname] [command]` with options as `--name=value` anywhere (the last of a repeated one
//! wins, deprecated aliases and `--config-file` honoured), `--help`, `--version`, a Lua script
//! (`lua/`) or a built-in test (this family's native tests, which the rest of the family runs).
//! stampede's own form with the command first (`stampede sysbench run oltp_read_only
//! --threads 4`) is left to the argument parser, as before.

use clap::{Args, Command, FromArgMatches};

use super::lua::{self, Log};
use super::subcommands::{SysbenchAction, SysbenchArgs};
use super::sysbench_cmdline::{self, CommandLine, Kind, OptionDef, Options};
use super::{catalog, command};
use crate::live::endpoint::{MetricsArgs, TokenArgs};
use crate::pods::KubeArgs;
use stampede_base::error::Failure;

/// The commands of stampede's own form, which come first.
const STAMPEDE_COMMANDS: [&str; 4] = ["prepare", "run", "cleanup", "relative"];

/// sysbench's options that change nothing stampede measures or prints for a built-in test:
/// accepted, as sysbench accepts them.
const NO_EFFECT: [(&str, &str); 6] = [
    ("verbosity", "the log level"),
    (
        "thread_stack_size",
        "stampede's threads size their own stacks",
    ),
    ("debug", "debugging output"),
    ("validate", "validation checks of the fileio test"),
    ("db_debug", "database debugging output"),
    ("mysql_debug", "client library tracing"),
];

/// sysbench's options a built-in test cannot honour, and why.
const REFUSED: [(&str, &str); 6] = [
    (
        "mysql_dry_run",
        "stampede runs every statement it counts (a dry run measures nothing)",
    ),
    (
        "mysql_ssl",
        "stampede's MySQL connections do not negotiate TLS",
    ),
    (
        "mysql_ssl_cipher",
        "stampede's MySQL connections do not negotiate TLS",
    ),
    (
        "mysql_compression",
        "stampede's MySQL connections do not compress",
    ),
    (
        "report_checkpoints",
        "the built-in tests report intervals (--report-interval) and the whole run only; a Lua script's run has checkpoints",
    ),
    (
        "forced_shutdown",
        "a built-in test's run ends at --time; use --stall-timeout for a run that hangs",
    ),
];

/// Deprecated aliases: (alias, option), in the order sysbench warns of them.
const ALIASES: [(&str, &str); 4] = [
    ("num_threads", "threads"),
    ("max_requests", "events"),
    ("max_time", "time"),
    ("tx_rate", "rate"),
];

/// None for stampede's own form (the caller's argument parser reads it); else the exit code
/// (sysbench's messages already printed) or a failure for stampede to report.
pub fn main(args: &[String]) -> Option<Result<i32, Failure>> {
    if args.len() > 1 && STAMPEDE_COMMANDS.contains(&args[0].as_str()) {
        return None;
    }
    Some(sysbench_form(args))
}

fn sysbench_form(args: &[String]) -> Result<i32, Failure> {
    // `--pods=3` and the other Kubernetes options are stampede's, whatever the test.
    let (kube, args) = crate::pods::launch::take_kube_options(args)?;
    kube.check_alone()?;
    let mut line = match CommandLine::parse(&args) {
        Ok(line) => line,
        Err(failure) => {
            eprintln!("{}", failure.message());
            return Ok(1);
        }
    };
    line.read_config_file()?;
    let general = Options::new(line.clone(), sysbench_cmdline::general_options());
    if general.flag("help") {
        print!("{}", sysbench_cmdline::help_text());
        return Ok(0);
    }
    if general.flag("version") {
        println!("sysbench {}", lua::VERSION);
        return Ok(0);
    }
    // sysbench warns of these before its log level applies.
    for (alias, option) in ALIASES {
        if general.given(alias) {
            println!(
                "WARNING: --{} is deprecated, use --{option} instead",
                alias.replace('_', "-")
            );
        }
    }
    let log = Log::new(general.int("verbosity"));
    // A spread run's pod 0 says it.
    if kube.pods.is_none() {
        log.notice(&format!(
            "sysbench {} (stampede {} with bundled LuaJIT 2.1)\n",
            lua::VERSION,
            env!("CARGO_PKG_VERSION")
        ));
    }
    match line.test.clone() {
        Some(test) if catalog::TESTS.contains(&test.as_str()) => builtin(&line, &test, kube),
        Some(test) if NOT_DATABASE_TESTS.contains(&test.as_str()) => not_database(&line, &test),
        _ => {
            let metrics = take_metrics_options(&mut line)?;
            lua::main(line, log, kube, metrics)
        }
    }
}

/// stampede's `--metrics-addr` and `--serve-token` out of a Lua script's line (the script's
/// options are checked without them); a built-in test's parser reads them as its own.
fn take_metrics_options(line: &mut CommandLine) -> Result<MetricsArgs, Failure> {
    let mut value = |key: &str| {
        let given = line.given.iter().rev().find(|(k, _)| k == key);
        let last = match given {
            Some((_, None)) => Err(Failure::input(format!(
                "--{} needs a value, given as sysbench's options are: --{0}=VALUE",
                key.replace('_', "-")
            ))),
            Some((_, Some(value))) => Ok(Some(value.clone())),
            None => Ok(None),
        };
        line.given.retain(|(k, _)| k != key);
        last
    };
    Ok(MetricsArgs {
        metrics_addr: value("metrics_addr")?,
        token: TokenArgs {
            serve_token: value("serve_token")?
                .or_else(|| std::env::var("STAMPEDE_SERVE_TOKEN").ok()),
        },
    })
}

/// sysbench's built-in tests that do not touch a database: out of stampede's scope.
const NOT_DATABASE_TESTS: [&str; 5] = ["fileio", "cpu", "memory", "threads", "mutex"];

/// sysbench's checks of a non-database test's command line (a command is required, options
/// must be sysbench's), then the refusal to run it.
fn not_database(line: &CommandLine, test: &str) -> Result<i32, Failure> {
    if line.command.is_none() {
        eprintln!("The '{test}' test requires a command argument. See 'sysbench {test} help'");
        return Ok(1);
    }
    let options = Options::new(line.clone(), sysbench_cmdline::general_options());
    if let Err(failure) = options.check(false) {
        eprintln!("{}", failure.message());
        return Ok(1);
    }
    Err(Failure::input(format!(
        "sysbench's '{test}' test is not implemented: stampede runs database workloads only"
    )))
}

/// A built-in test's command, checked before any server is touched.
fn builtin(line: &CommandLine, test: &str, kube: KubeArgs) -> Result<i32, Failure> {
    let Some(command) = line.command.as_deref() else {
        eprintln!("The '{test}' test requires a command argument. See 'sysbench {test} help'");
        return Ok(1);
    };
    let parser = SysbenchArgs::augment_args(Command::new("sysbench").no_binary_name(true));
    let defs = builtin_options(&parser);
    let options = Options::new(line.clone(), defs.clone());
    if let Err(failure) = options.check(false) {
        eprintln!("{}", failure.message());
        return Ok(1);
    }
    for (key, why) in REFUSED {
        if options.given(key) {
            return Err(Failure::input(format!(
                "--{} is not supported: {why}",
                key.replace('_', "-")
            )));
        }
    }
    match command {
        "help" => {
            println!("{test} options:");
            println!("{}", sysbench_cmdline::option_list(&test_options(&defs)));
            Ok(0)
        }
        "prepare" | "cleanup" if kube.pods.is_some() => {
            Err(super::spread::refused_with_pods(command))
        }
        "prepare" | "run" | "cleanup" => {
            let mut args = parsed_args(&parser, line, test)?;
            args.kube = kube;
            let action = match command {
                "prepare" => SysbenchAction::Prepare(Box::new(args)),
                "run" => SysbenchAction::Run(Box::new(args)),
                _ => SysbenchAction::Cleanup(Box::new(args)),
            };
            command::run(&action).map(|()| 0)
        }
        "prewarm" if kube.pods.is_some() => Err(super::spread::refused_with_pods(command)),
        "prewarm" => {
            let args = parsed_args(&parser, line, test)?;
            command::prewarm(&args).map(|()| 0)
        }
        other => {
            eprintln!("Unknown command: {other}");
            Ok(1)
        }
    }
}

/// Every option a built-in test takes: sysbench's general ones and the test's (from the
/// argument parser's definitions, with their help and defaults); the Kubernetes options are
/// taken before (`take_kube_options`).
fn builtin_options(parser: &Command) -> Vec<OptionDef> {
    let mut defs = sysbench_cmdline::general_options();
    let kube = KubeArgs::augment_args(Command::new("kube"));
    for arg in parser.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if kube.get_arguments().any(|k| k.get_long() == Some(long)) {
            continue;
        }
        if defs
            .iter()
            .any(|d| sysbench_cmdline::key(&d.name) == sysbench_cmdline::key(long))
        {
            continue;
        }
        let kind = if arg.get_possible_values().is_empty()
            && arg.get_num_args().is_some_and(|n| n.min_values() == 0)
        {
            Kind::Bool
        } else {
            Kind::Str
        };
        defs.push(OptionDef {
            name: long.replace('-', "_"),
            kind,
            default: arg
                .get_default_values()
                .first()
                .map(|v| v.to_string_lossy().into_owned()),
            desc: arg.get_help().map(|h| h.to_string()).unwrap_or_default(),
        });
    }
    defs
}

/// The test's own options (not sysbench's general ones), sorted by name as sysbench lists them.
fn test_options(defs: &[OptionDef]) -> Vec<OptionDef> {
    let general = sysbench_cmdline::general_options();
    let mut own: Vec<OptionDef> = defs
        .iter()
        .filter(|d| {
            !general
                .iter()
                .any(|g| sysbench_cmdline::key(&g.name) == sysbench_cmdline::key(&d.name))
        })
        .cloned()
        .collect();
    own.sort_by(|a, b| a.name.cmp(&b.name));
    own
}

/// The options given, the last of each, with the aliases read as their options, as the
/// argument parser's `--name=value`.
fn parsed_args(parser: &Command, line: &CommandLine, test: &str) -> Result<SysbenchArgs, Failure> {
    let mut last: Vec<(String, Option<String>)> = Vec::new();
    for (key, value) in &line.given {
        let key = ALIASES
            .iter()
            .find(|(alias, _)| alias == key)
            .map(|(_, option)| option.to_string())
            .unwrap_or_else(|| key.clone());
        let skipped = NO_EFFECT.iter().any(|(k, _)| *k == key)
            || ["config_file", "help", "version", "test"].contains(&key.as_str());
        if skipped {
            continue;
        }
        last.retain(|(k, _)| *k != key);
        last.push((key, value.clone()));
    }
    let mut argv = vec![test.to_string()];
    for (key, value) in last {
        let name = key.replace('_', "-");
        argv.push(match value {
            Some(value) => format!("--{name}={value}"),
            None => format!("--{name}"),
        });
    }
    let matches = parser
        .clone()
        .try_get_matches_from(argv)
        .map_err(|e| Failure::input(e.kind().to_string()).with_note(&e.to_string()))?;
    SysbenchArgs::from_arg_matches(&matches).map_err(|e| Failure::input(e.to_string()))
}
