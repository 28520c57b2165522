//! The script parser and evaluator must never panic: any text either parses into a script whose
//! expressions evaluate to a value or an error, or is rejected with a positioned message.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_script::eval::{evaluate, EvalContext};
use stampede_script::prng::PgPrng;
use stampede_script::{parse_script, CommandKind, Value, VarTable};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut vars = VarTable::default();
    let script = match parse_script("fuzz.sql", "fuzz.sql", text, &mut vars) {
        Ok(script) => script,
        Err(error) => {
            // Rendering the caret line must not panic either.
            let _ = error.to_string();
            return;
        }
    };
    // Every variable set, half as integers and half as text, so evaluation goes deep.
    let values: Vec<Value> = (0..vars.names().len())
        .map(|i| {
            if i % 2 == 0 {
                Value::Int(i as i64 - 3)
            } else {
                Value::Text(std::sync::Arc::new(format!("{}", i * 7)))
            }
        })
        .collect();
    let mut random = PgPrng::seeded(1);
    for (index, command) in script.commands.iter().enumerate() {
        let expr = match &command.kind {
            CommandKind::Set { expr, .. } => expr,
            CommandKind::If { condition, .. } | CommandKind::Elif { condition, .. } => condition,
            _ => continue,
        };
        let mut ctx = EvalContext {
            variables: &values,
            variable_names: vars.names(),
            random: &mut random,
            script_index: 0,
            command_index: index,
        };
        let _ = evaluate(expr, &mut ctx);
    }
});
