//! From what a `stampede pgbench` run asks for to what the driver runs: the scripts parsed
//! (builtins and files, with pgbench's limits checked) and the `RunPlan` built around them.

use std::time::Duration;

use super::args::ScriptChoice;
use super::builtins;
use super::spec::RunSpec;
use crate::driver::{Protocol, RunLimit, RunPlan, TxnLogSpec, WeightedScript};
use stampede_base::error::Failure;
use stampede_conn::{ConnSpec, Endpoint};
use stampede_script::ast::SqlPiece;
use stampede_script::parser::MAX_ARGS;
use stampede_script::{parse_script, CommandKind, Script, Value, VarTable};

/// The run's scripts, parsed into one variable table.
pub struct ParsedScripts {
    pub scripts: Vec<WeightedScript>,
    pub variables: VarTable,
}

/// Parses every script of `spec`, for its errors only.
pub fn check_scripts(spec: &RunSpec) -> Result<(), Failure> {
    parse_scripts(spec).map(|_| ())
}

pub fn parse_scripts(spec: &RunSpec) -> Result<ParsedScripts, Failure> {
    let mut variables = VarTable::default();
    let mut scripts = Vec::new();
    for (choice, weight) in &spec.scripts {
        let (source, description, text) = match choice {
            ScriptChoice::Builtin(name) => {
                let builtin = builtins::find_builtin(name)?;
                (
                    builtin.name.to_string(),
                    builtin.description.to_string(),
                    builtin.script.to_string(),
                )
            }
            ScriptChoice::File(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::input(format!("could not open file \"{path}\": {e}")))?;
                (path.clone(), path.clone(), text)
            }
        };
        let script = parse_script(&source, &description, &text, &mut variables)
            .map_err(|e| Failure::input(e.to_string()))?;
        if spec.protocol != Protocol::Simple {
            check_parameter_count(&script, &variables)?;
        }
        scripts.push(WeightedScript {
            script,
            weight: *weight,
        });
    }
    Ok(ParsedScripts { scripts, variables })
}

/// pgbench's limit under the extended and prepared protocols: each `:var` of a statement is a
/// parameter, and a statement takes at most MAX_ARGS - 1 of them.
fn check_parameter_count(script: &Script, variables: &VarTable) -> Result<(), Failure> {
    for command in &script.commands {
        let CommandKind::Sql(sql) = &command.kind else {
            continue;
        };
        if sql.params.len() >= MAX_ARGS {
            let text: String = sql
                .pieces
                .iter()
                .map(|piece| match piece {
                    SqlPiece::Text(text) => text.clone(),
                    SqlPiece::Var(slot) => format!(":{}", variables.names()[*slot]),
                })
                .collect();
            return Err(Failure::input(format!(
                "statement has too many arguments (maximum is {}): {text}",
                MAX_ARGS - 1
            )));
        }
    }
    Ok(())
}

/// The driver's plan: the parsed scripts, their variables' first values (`-D`, `:scale`,
/// `:random_seed`) and every limit the options set.
pub fn run_plan(spec: &RunSpec, target: &ConnSpec, parsed: ParsedScripts, scale: i64) -> RunPlan {
    let ParsedScripts {
        scripts,
        mut variables,
    } = parsed;
    let defined: Vec<(usize, Value)> = spec
        .defines
        .iter()
        .map(|(name, value)| {
            (
                variables.slot(name),
                Value::Text(std::sync::Arc::new(value.clone())),
            )
        })
        .collect();
    let random_seed = spec.random_seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    });
    if let Some(seed) = spec.random_seed {
        eprintln!("stampede: setting random seed to {seed}");
    }
    let automatic =
        ["scale", "client_id", "random_seed", "default_seed"].map(|n| variables.slot(n));
    let mut initial_values = vec![Value::Unset; variables.names().len()];
    initial_values[automatic[0]] = Value::Int(scale);
    initial_values[automatic[2]] = Value::Int(random_seed as i64);
    let user_defined = |slot: usize| defined.iter().any(|(s, _)| *s == slot);
    for (slot, value) in &defined {
        initial_values[*slot] = value.clone();
    }
    RunPlan {
        endpoint: Endpoint::Postgres(target.clone()),
        clients: spec.clients,
        threads: spec.threads,
        limit: match spec.duration_secs {
            Some(secs) => RunLimit::Duration(Duration::from_secs(secs)),
            None => RunLimit::TransactionsPerClient(spec.transactions_per_client),
        },
        protocol: spec.protocol,
        scripts,
        client_id_slot: (!user_defined(automatic[1])).then_some(automatic[1]),
        default_seed_slot: (!user_defined(automatic[3])).then_some(automatic[3]),
        variables,
        initial_values,
        random_seed,
        connect_per_transaction: spec.connect_per_transaction,
        interval: Duration::from_secs(1),
        rate: spec.rate,
        latency_limit: spec
            .latency_limit_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        errors: spec.errors.clone(),
        report_per_command: spec.report_per_command,
        log: spec.log.as_ref().map(|log| TxnLogSpec {
            prefix: log.prefix.clone(),
            pid: std::process::id(),
            sampling_rate: log.sampling_rate,
            aggregate_interval: log.aggregate_interval,
            failures_detailed: spec.failures_detailed,
        }),
        stop: spec.stop.clone(),
        closing_script: None,
        binary_results: false,
        cpu_affinity: spec.cpu_affinity.clone(),
        pauses: None,
        debug: spec.debug,
        stall_timeout: spec.stall_timeout,
        warmup: std::time::Duration::ZERO,
        share: spec.share.as_ref().map(|make| make.share(spec.threads)),
    }
}
