//! The fuzzers' entry (cargo-fuzz's target and the CI smoke): any text either parses into a
//! script whose expressions evaluate to a value or an error, or is refused with a positioned
//! message. A panic is a bug.

use super::eval::{evaluate, EvalContext};
use super::prng::PgPrng;
use super::{parse_script, CommandKind, Value, VarTable};

/// Parses `text` and evaluates every `\set`, `\if` and `\elif` expression with every
/// variable set, half as integers and half as text, so that evaluation goes deep.
pub fn parse_and_evaluate(text: &str) {
    let mut vars = VarTable::default();
    let script = match parse_script("fuzz.sql", "fuzz.sql", text, &mut vars) {
        Ok(script) => script,
        Err(error) => {
            // Rendering the caret line must not panic either.
            let _ = error.to_string();
            return;
        }
    };
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
}
