//! `stampede pgbench`: checks options with pgbench's rules and wording, then initializes or runs.

use super::spec::{InitSpec, LogOptions, RunSpec, VacuumBeforeRun};
use super::{init as pgbench_init, plan as pgbench_plan, run as pgbench_run};
use crate::driver::{ErrorPolicy, Protocol};
use crate::family::pgbench::args::{PgbenchArgs, ScriptChoice};
use crate::family::pgbench::builtins;
use crate::family::pgbench::loader::{parse_steps, InitStep};
use crate::family::pgbench::schema::{PartitionMethod, SchemaOptions};
use crate::live::command_labels;
use crate::server::resolve_target;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::ConnFlags;

/// pgbench's MAX_SCRIPTS.
const MAX_SCRIPTS: usize = 128;

/// The pgbench whose options and output `stampede pgbench` follows (`-V` prints it).
const PGBENCH_VERSION: &str = "18";

pub fn run(args: &PgbenchArgs, choices: Vec<ScriptChoice>) -> CommandResult {
    if args.version {
        println!(
            "pgbench (PostgreSQL) {PGBENCH_VERSION} (stampede {})",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(());
    }
    if let Some(name) = &args.show_script {
        let builtin = builtins::find_builtin(name)?;
        eprintln!(
            "-- {}: {}\n{}",
            builtin.name, builtin.description, builtin.script
        );
        return Ok(());
    }
    if choices.contains(&ScriptChoice::Builtin("list".into())) {
        eprint!("{}", builtins::listing());
        return Ok(());
    }
    args.kube.check_alone()?;
    let flags = connection_flags(args);
    if args.initialize && args.kube.wanted() {
        return Err(Failure::input(
            "-i runs once, from here: initialize without --pods, then run with it",
        ));
    }
    if args.initialize {
        let spec = init_spec(args, &choices)?;
        let target = resolve_target(&flags)?;
        pgbench_init::run(&spec, &target, &mut |line| eprintln!("{line}"))
    } else {
        let spec = run_spec(args, choices)?;
        // A script error is reported before any server is connected to or started.
        pgbench_plan::check_scripts(&spec)?;
        if args.kube.wanted() {
            return super::spread::launch(args, &spec);
        }
        let metrics = args.metrics.start(command_labels("pgbench"))?;
        let target = resolve_target(&flags)?;
        let feed = metrics.as_ref().map(|m| m.feed(None));
        pgbench_run::run(&spec, &target, feed)
    }
}

fn connection_flags(args: &PgbenchArgs) -> ConnFlags {
    ConnFlags {
        host: args.host.clone(),
        port: args.port.clone(),
        user: args.username.clone(),
        dbname: args
            .dbname
            .clone()
            .or_else(|| args.positional_dbname.clone()),
    }
}

/// pgbench's option_parse_int, with its messages.
fn parse_int(value: &str, option: &str, min: i64, max: i64) -> Result<i64, Failure> {
    let parsed = value
        .trim()
        .parse::<i64>()
        .map_err(|_| Failure::input(format!("invalid value \"{value}\" for option {option}")))?;
    if parsed < min || parsed > max {
        return Err(Failure::input(format!(
            "{option} must be in range {min}..{max}"
        )));
    }
    Ok(parsed)
}

const INT_MAX: i64 = i32::MAX as i64;

fn uses_benchmarking_options(args: &PgbenchArgs, choices: &[ScriptChoice]) -> bool {
    !choices.is_empty()
        || args.clients.is_some()
        || args.jobs.is_some()
        || args.time.is_some()
        || args.transactions.is_some()
        || args.protocol.is_some()
        || args.progress.is_some()
        || args.random_seed.is_some()
        || !args.define.is_empty()
        || args.connect
        || args.vacuum_all
        || args.json.is_some()
        || args.rate.is_some()
        || args.latency_limit.is_some()
        || args.report_per_command
        || args.log
        || args.log_prefix.is_some()
        || args.sampling_rate.is_some()
        || args.aggregate_interval.is_some()
        || args.max_tries.is_some()
        || args.failures_detailed
        || args.verbose_errors
        || args.exit_on_abort
        || args.continue_on_error
        || args.progress_timestamp
}

fn uses_init_options(args: &PgbenchArgs) -> bool {
    args.init_steps.is_some()
        || args.fillfactor.is_some()
        || args.quiet
        || args.foreign_keys
        || args.partitions.is_some()
        || args.partition_method.is_some()
        || args.unlogged_tables
        || args.tablespace.is_some()
        || args.index_tablespace.is_some()
        || args.extra_indexes
}

fn init_spec(args: &PgbenchArgs, choices: &[ScriptChoice]) -> Result<InitSpec, Failure> {
    if uses_benchmarking_options(args, choices) {
        return Err(Failure::input(
            "some of the specified options cannot be used in initialization (-i) mode",
        ));
    }
    let scale = match &args.scale {
        Some(s) => parse_int(s, "-s/--scale", 1, INT_MAX)?,
        None => 1,
    };
    let fillfactor = match &args.fillfactor {
        Some(f) => parse_int(f, "-F/--fillfactor", 10, 100)? as u32,
        None => 100,
    };
    let partitions = match &args.partitions {
        Some(p) => parse_int(p, "--partitions", 0, INT_MAX)? as u32,
        None => 0,
    };
    let partition_method = match args.partition_method.as_deref() {
        None => None,
        Some(m) if m.eq_ignore_ascii_case("range") => Some(PartitionMethod::Range),
        Some(m) if m.eq_ignore_ascii_case("hash") => Some(PartitionMethod::Hash),
        Some(m) => {
            return Err(Failure::input(format!(
                "invalid partition method, expecting \"range\" or \"hash\", got: \"{m}\""
            )))
        }
    };
    if partitions == 0 && partition_method.is_some() {
        return Err(Failure::input(
            "--partition-method requires greater than zero --partitions",
        ));
    }
    let mut steps_text = args
        .init_steps
        .clone()
        .unwrap_or_else(|| InitStep::DEFAULT.to_string());
    if args.no_vacuum {
        steps_text = steps_text.replace('v', " ");
    }
    if args.foreign_keys && !steps_text.contains('f') {
        steps_text.push('f');
    }
    let mut steps = parse_steps(&steps_text).map_err(Failure::into_input)?;
    if args.extra_indexes {
        steps.push(InitStep::ExtraIndexes);
    }
    Ok(InitSpec {
        steps,
        schema: SchemaOptions {
            scale,
            fillfactor,
            unlogged: args.unlogged_tables,
            partitions,
            partition_method: partition_method.unwrap_or(PartitionMethod::Range),
            tablespace: args.tablespace.clone(),
            index_tablespace: args.index_tablespace.clone(),
        },
        quiet: args.quiet,
    })
}

/// Splits `name@weight` as pgbench does (the last `@`; weight 0..INT_MAX).
fn script_weight(option: &str) -> Result<(String, u32), Failure> {
    let Some((name, weight)) = option.rsplit_once('@') else {
        return Ok((option.to_string(), 1));
    };
    let parsed = weight
        .parse::<i64>()
        .map_err(|_| Failure::input(format!("invalid weight specification: @{weight}")))?;
    if !(0..=INT_MAX).contains(&parsed) {
        return Err(Failure::input(format!(
            "weight specification out of range (0 .. {INT_MAX}): {parsed}"
        )));
    }
    Ok((name.to_string(), parsed as u32))
}

fn run_spec(args: &PgbenchArgs, choices: Vec<ScriptChoice>) -> Result<RunSpec, Failure> {
    // pgbench checks each option's value as it reads it, before the mode's conflicts.
    if let Some(fillfactor) = &args.fillfactor {
        parse_int(fillfactor, "-F/--fillfactor", 10, 100)?;
    }
    if uses_init_options(args) {
        return Err(Failure::input(
            "some of the specified options cannot be used in benchmarking mode",
        ));
    }
    let scripts = resolve_scripts(choices)?;
    let clients = match &args.clients {
        Some(c) => parse_int(c, "-c/--client", 1, INT_MAX)? as usize,
        None => 1,
    };
    let jobs = match &args.jobs {
        Some(j) => parse_int(j, "-j/--jobs", 1, INT_MAX)? as usize,
        None => 1,
    };
    let duration_secs = match &args.time {
        Some(t) => Some(parse_int(t, "-T/--time", 1, INT_MAX)? as u64),
        None => None,
    };
    let transactions = match &args.transactions {
        Some(t) => Some(parse_int(t, "-t/--transactions", 1, INT_MAX)? as u64),
        None => None,
    };
    if duration_secs.is_some() && transactions.is_some() {
        return Err(Failure::input(
            "specify either a number of transactions (-t) or a duration (-T), not both",
        ));
    }
    let protocol = match &args.protocol {
        Some(m) => Protocol::from_name(m)
            .ok_or_else(|| Failure::input(format!("invalid query mode (-M): \"{m}\"")))?,
        None => Protocol::Simple,
    };
    let progress_secs = match &args.progress {
        Some(p) => Some(parse_int(p, "-P/--progress", 1, INT_MAX)? as u64),
        None => None,
    };
    let random_seed = match (&args.random_seed, std::env::var("PGBENCH_RANDOM_SEED")) {
        (Some(seed), _) => Some(parse_seed(seed, "--random-seed option")?),
        (None, Ok(seed)) => Some(parse_seed(
            &seed,
            "PGBENCH_RANDOM_SEED environment variable",
        )?),
        (None, Err(_)) => None,
    };
    let defines = args
        .define
        .iter()
        .map(|d| match d.split_once('=') {
            Some((name, value)) if !name.is_empty() && !value.is_empty() => {
                Ok((name.to_string(), value.to_string()))
            }
            _ => Err(Failure::input(format!(
                "invalid variable definition: \"{d}\""
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let vacuum = match (args.no_vacuum, args.vacuum_all) {
        (true, _) => VacuumBeforeRun::None,
        (false, true) => VacuumBeforeRun::All,
        (false, false) => VacuumBeforeRun::Standard,
    };
    let scale_given = match &args.scale {
        Some(s) => Some(parse_int(s, "-s/--scale", 1, INT_MAX)?),
        None => None,
    };
    let rate = match &args.rate {
        Some(r) => Some(
            positive_double(r)
                .ok_or_else(|| Failure::input(format!("invalid rate limit: \"{r}\"")))?,
        ),
        None => None,
    };
    let latency_limit_ms = match &args.latency_limit {
        Some(l) => Some(
            positive_double(l)
                .ok_or_else(|| Failure::input(format!("invalid latency limit: \"{l}\"")))?,
        ),
        None => None,
    };
    let log = log_options(args, duration_secs)?;
    let limit = match duration_secs {
        Some(secs) => crate::driver::RunLimit::Duration(std::time::Duration::from_secs(secs)),
        None => crate::driver::RunLimit::TransactionsPerClient(0),
    };
    let stall_timeout =
        crate::driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &limit)?;
    if args.progress_timestamp && progress_secs.is_none() {
        return Err(Failure::input(
            "--progress-timestamp is allowed only under --progress",
        ));
    }
    let max_tries = match &args.max_tries {
        Some(m) => m
            .trim()
            .parse::<u32>()
            .map_err(|_| Failure::input(format!("invalid number of maximum tries: \"{m}\"")))?,
        None => 1,
    };
    if max_tries == 0 && latency_limit_ms.is_none() && duration_secs.is_none() {
        return Err(Failure::input(
            "an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)",
        ));
    }
    Ok(RunSpec {
        untracked_control: false,
        rate,
        latency_limit_ms,
        errors: ErrorPolicy {
            max_tries,
            continue_on_error: args.continue_on_error,
            verbose: args.verbose_errors,
            ..ErrorPolicy::default()
        },
        failures_detailed: args.failures_detailed,
        report_per_command: args.report_per_command,
        log,
        progress_timestamp: args.progress_timestamp,
        exit_on_abort: args.exit_on_abort,
        stop: None,
        cpu_affinity: None,
        debug: args.debug,
        stall_timeout,
        share: None,
        scripts,
        clients,
        threads: jobs.min(clients),
        duration_secs,
        transactions_per_client: transactions.unwrap_or(10),
        protocol,
        progress_secs,
        random_seed,
        defines,
        connect_per_transaction: args.connect,
        vacuum,
        scale_given,
        json_path: args.json.clone(),
    })
}

/// `-l`, `--log-prefix`, `--sampling-rate`, `--aggregate-interval`, checked in pgbench's order
/// and words.
fn log_options(args: &PgbenchArgs, duration: Option<u64>) -> Result<Option<LogOptions>, Failure> {
    let sampling_rate = match &args.sampling_rate {
        Some(r) => Some(
            positive_double(r)
                .filter(|rate| *rate <= 1.0)
                .ok_or_else(|| Failure::input(format!("invalid sampling rate: \"{r}\"")))?,
        ),
        None => None,
    };
    let aggregate_interval = match &args.aggregate_interval {
        Some(a) => Some(parse_int(a, "--aggregate-interval", 1, INT_MAX)? as u64),
        None => None,
    };
    let refuse = |message: String| Err(Failure::input(message));
    if sampling_rate.is_some() && !args.log {
        return refuse(
            "log sampling (--sampling-rate) is allowed only when logging transactions (-l)".into(),
        );
    }
    if sampling_rate.is_some() && aggregate_interval.is_some() {
        return refuse("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time".into());
    }
    if aggregate_interval.is_some() && !args.log {
        return refuse("log aggregation is allowed only when actually logging transactions".into());
    }
    if args.log_prefix.is_some() && !args.log {
        return refuse(
            "log file prefix (--log-prefix) is allowed only when logging transactions (-l)".into(),
        );
    }
    if let (Some(duration), Some(interval)) = (duration, aggregate_interval) {
        if interval > duration {
            return refuse(format!("number of seconds for aggregation ({interval}) must not be higher than test duration ({duration})"));
        }
        if duration % interval != 0 {
            return refuse(format!(
                "duration ({duration}) must be a multiple of aggregation interval ({interval})"
            ));
        }
    }
    Ok(args.log.then(|| LogOptions {
        prefix: args
            .log_prefix
            .clone()
            .unwrap_or_else(|| "pgbench_log".into()),
        sampling_rate,
        aggregate_interval,
    }))
}

/// pgbench reads -R and -L with atof and requires a positive value.
fn positive_double(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && v.is_finite())
}

fn resolve_scripts(choices: Vec<ScriptChoice>) -> Result<Vec<(ScriptChoice, u32)>, Failure> {
    let mut scripts = Vec::new();
    for choice in choices {
        match choice {
            ScriptChoice::Builtin(option) => {
                let (name, weight) = script_weight(&option)?;
                for builtin in builtins::expand_builtin(&name)? {
                    scripts.push((ScriptChoice::Builtin(builtin.name.to_string()), weight));
                }
            }
            ScriptChoice::File(option) => {
                let (name, weight) = script_weight(&option)?;
                scripts.push((ScriptChoice::File(name), weight));
            }
        }
    }
    if scripts.len() > MAX_SCRIPTS {
        return Err(Failure::input(format!(
            "at most {MAX_SCRIPTS} SQL scripts are allowed"
        )));
    }
    if scripts.is_empty() {
        scripts.push((ScriptChoice::Builtin("tpcb-like".into()), 1));
    }
    if scripts.iter().all(|(_, weight)| *weight == 0) {
        return Err(Failure::input("total script weight must not be zero"));
    }
    Ok(scripts)
}

/// pgbench's set_random_seed; `origin` names where the seed came from in the closing error.
fn parse_seed(seed: &str, origin: &str) -> Result<u64, Failure> {
    match seed {
        "time" => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)),
        "rand" => {
            let mut bytes = [0u8; 8];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
                .map_err(|e| Failure::input(format!("could not generate random seed: {e}")))?;
            Ok(u64::from_le_bytes(bytes))
        }
        number => number.parse::<u64>().map_err(|_| {
            Failure::input(format!(
                "unrecognized random seed option \"{number}\"\n\
                 detail: Expecting an unsigned integer, \"time\" or \"rand\".\n\
                 error: error while setting random seed from {origin}"
            ))
        }),
    }
}
