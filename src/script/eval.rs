//! Evaluation of expressions with pgbench's rules: integer overflow and division by zero are
//! errors, integers widen to doubles when mixed, `AND`/`OR` are lazy.

use super::ast::{BinaryOp, Expr, Function, UnaryOp, VarSlot};
use super::prng::PgPrng;
use super::value::Value;

/// What an expression can read while it is evaluated: the client's variables and random state.
pub struct EvalContext<'a> {
    pub variables: &'a [Value],
    pub variable_names: &'a [String],
    pub random: &'a mut PgPrng,
}

pub type EvalResult = Result<Value, String>;

pub fn evaluate(expr: &Expr, ctx: &mut EvalContext<'_>) -> EvalResult {
    match expr {
        Expr::Int(i) => Ok(Value::Int(*i)),
        Expr::Double(d) => Ok(Value::Double(*d)),
        Expr::Bool(b) => Ok(Value::Bool(*b)),
        Expr::Null => Ok(Value::Null),
        Expr::Var(slot) => read_variable(*slot, ctx),
        Expr::Unary(op, operand) => {
            let value = evaluate(operand, ctx)?;
            apply_unary(*op, value)
        }
        Expr::Binary(BinaryOp::And, left, right) => {
            let l = evaluate(left, ctx)?;
            if l == Value::Null {
                return Ok(Value::Null);
            }
            if !truth(&l)? {
                return Ok(Value::Bool(false));
            }
            let r = evaluate(right, ctx)?;
            if r == Value::Null {
                return Ok(Value::Null);
            }
            Ok(Value::Bool(truth(&r)?))
        }
        Expr::Binary(BinaryOp::Or, left, right) => {
            let l = evaluate(left, ctx)?;
            if l == Value::Null {
                return Ok(Value::Null);
            }
            if truth(&l)? {
                return Ok(Value::Bool(true));
            }
            let r = evaluate(right, ctx)?;
            if r == Value::Null {
                return Ok(Value::Null);
            }
            Ok(Value::Bool(truth(&r)?))
        }
        Expr::Binary(op, left, right) => {
            let l = evaluate(left, ctx)?;
            let r = evaluate(right, ctx)?;
            apply_binary(*op, l, r)
        }
        Expr::Call(function, args) => call(*function, args, ctx),
    }
}

fn read_variable(slot: VarSlot, ctx: &EvalContext<'_>) -> EvalResult {
    match &ctx.variables[slot] {
        Value::Unset => Err(format!(
            "undefined variable \"{}\"",
            ctx.variable_names[slot]
        )),
        Value::Text(text) => match Value::from_definition(text) {
            Value::Text(_) => Err(format!(
                "malformed variable \"{}\" value: \"{}\"",
                ctx.variable_names[slot], text
            )),
            number => Ok(number),
        },
        other => Ok(other.clone()),
    }
}

pub fn truth(value: &Value) -> Result<bool, String> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::Int(i) => Ok(*i != 0),
        Value::Double(d) => Ok(*d != 0.0),
        other => Err(format!("cannot coerce {} to boolean", other.type_name())),
    }
}

pub fn to_int(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(i) => Ok(*i),
        Value::Double(d) => {
            let d = d.floor();
            if d.is_nan() || d < i64::MIN as f64 || d >= -(i64::MIN as f64) {
                Err(format!("double to int overflow for {d}"))
            } else {
                Ok(d as i64)
            }
        }
        other => Err(format!("cannot coerce {} to int", other.type_name())),
    }
}

pub fn to_double(value: &Value) -> Result<f64, String> {
    match value {
        Value::Int(i) => Ok(*i as f64),
        Value::Double(d) => Ok(*d),
        other => Err(format!("cannot coerce {} to double", other.type_name())),
    }
}

fn apply_unary(op: UnaryOp, value: Value) -> EvalResult {
    if value == Value::Null {
        return Ok(Value::Null);
    }
    match op {
        UnaryOp::Neg => match value {
            Value::Int(i) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| "bigint out of range".to_string()),
            other => Ok(Value::Double(-to_double(&other)?)),
        },
        UnaryOp::Not => Ok(Value::Bool(!truth(&value)?)),
        UnaryOp::BitNot => Ok(Value::Int(!to_int(&value)?)),
    }
}

fn both_int(l: &Value, r: &Value) -> bool {
    matches!((l, r), (Value::Int(_), Value::Int(_)))
}

fn apply_binary(op: BinaryOp, l: Value, r: Value) -> EvalResult {
    if l == Value::Null || r == Value::Null {
        return Ok(Value::Null);
    }
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => arithmetic(op, &l, &r),
        BinaryOp::Mod => {
            let (a, b) = (to_int(&l)?, to_int(&r)?);
            if b == 0 {
                return Err("division by zero".into());
            }
            // i64::MIN % -1 overflows in hardware; the mathematical answer is 0.
            Ok(Value::Int(if b == -1 { 0 } else { a % b }))
        }
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            compare(op, &l, &r)
        }
        BinaryOp::BitAnd => Ok(Value::Int(to_int(&l)? & to_int(&r)?)),
        BinaryOp::BitOr => Ok(Value::Int(to_int(&l)? | to_int(&r)?)),
        BinaryOp::BitXor => Ok(Value::Int(to_int(&l)? ^ to_int(&r)?)),
        BinaryOp::ShiftLeft => Ok(Value::Int(to_int(&l)?.wrapping_shl(to_int(&r)? as u32))),
        BinaryOp::ShiftRight => Ok(Value::Int(to_int(&l)?.wrapping_shr(to_int(&r)? as u32))),
        BinaryOp::And | BinaryOp::Or => unreachable!("evaluated lazily in evaluate()"),
    }
}

fn arithmetic(op: BinaryOp, l: &Value, r: &Value) -> EvalResult {
    if both_int(l, r) {
        let (a, b) = (to_int(l)?, to_int(r)?);
        let result = match op {
            BinaryOp::Add => a.checked_add(b),
            BinaryOp::Sub => a.checked_sub(b),
            BinaryOp::Mul => a.checked_mul(b),
            BinaryOp::Div => {
                if b == 0 {
                    return Err("division by zero".into());
                }
                a.checked_div(b)
            }
            _ => unreachable!(),
        };
        return result
            .map(Value::Int)
            .ok_or_else(|| "bigint out of range".into());
    }
    let (a, b) = (to_double(l)?, to_double(r)?);
    Ok(Value::Double(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => {
            if b == 0.0 {
                return Err("division by zero".into());
            }
            a / b
        }
        _ => unreachable!(),
    }))
}

fn compare(op: BinaryOp, l: &Value, r: &Value) -> EvalResult {
    let ordering = if both_int(l, r) {
        to_int(l)?.cmp(&to_int(r)?)
    } else {
        let (a, b) = (to_double(l)?, to_double(r)?);
        a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal)
    };
    use std::cmp::Ordering::*;
    Ok(Value::Bool(match op {
        BinaryOp::Eq => ordering == Equal,
        BinaryOp::Ne => ordering != Equal,
        BinaryOp::Lt => ordering == Less,
        BinaryOp::Le => ordering != Greater,
        BinaryOp::Gt => ordering == Greater,
        BinaryOp::Ge => ordering != Less,
        _ => unreachable!(),
    }))
}

fn call(function: Function, args: &[Expr], ctx: &mut EvalContext<'_>) -> EvalResult {
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(evaluate(arg, ctx)?);
    }
    if values.contains(&Value::Null) {
        return Ok(Value::Null);
    }
    match function {
        Function::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Function::Abs => match &values[0] {
            Value::Int(i) => i
                .checked_abs()
                .map(Value::Int)
                .ok_or_else(|| "bigint out of range".into()),
            other => Ok(Value::Double(to_double(other)?.abs())),
        },
        Function::Double => Ok(Value::Double(to_double(&values[0])?)),
        Function::Int => Ok(Value::Int(to_int(&values[0])?)),
        Function::Sqrt => Ok(Value::Double(to_double(&values[0])?.sqrt())),
        Function::Mod => apply_binary(BinaryOp::Mod, values[0].clone(), values[1].clone()),
        Function::Greatest | Function::Least => extremum(function, &values),
        Function::Random => {
            let (low, high) = (to_int(&values[0])?, to_int(&values[1])?);
            random_in_range(ctx.random, low, high).map(Value::Int)
        }
    }
}

fn extremum(function: Function, values: &[Value]) -> EvalResult {
    let pick_greater = function == Function::Greatest;
    if values.iter().all(|v| matches!(v, Value::Int(_))) {
        let ints = values.iter().map(to_int).collect::<Result<Vec<_>, _>>()?;
        let best = if pick_greater {
            ints.iter().max()
        } else {
            ints.iter().min()
        };
        return Ok(Value::Int(*best.expect("at least one argument")));
    }
    let doubles = values
        .iter()
        .map(to_double)
        .collect::<Result<Vec<_>, _>>()?;
    let best = doubles
        .into_iter()
        .reduce(|a, b| if (b > a) == pick_greater { b } else { a })
        .expect("at least one argument");
    Ok(Value::Double(best))
}

pub fn random_in_range(random: &mut PgPrng, low: i64, high: i64) -> Result<i64, String> {
    if high < low {
        return Err("empty range given to random".into());
    }
    match high.checked_sub(low).and_then(|span| span.checked_add(1)) {
        Some(_) => Ok(random.int_in_range(low, high)),
        None => Err("random range is too large".into()),
    }
}
