//! Evaluation with pgbench's exact rules: operators are functions; NULL arguments give NULL
//! (except for IS and debug); AND/OR/CASE are lazy; integers overflow into errors; doubles mix
//! in by widening; `%` is always integer; doubles become integers by rounding to even.

use std::io::Write;

use super::ast::{Expr, Function, VarSlot};
use super::extensions::{sysbench_bulk, sysbench_random, tpcc_names};
use super::prng::PgPrng;
use super::value::{format_g15, Value};
pub use crate::error::EvalError;

/// What an expression can read while it is evaluated: the client's variables and random state,
/// and where it is (for `debug()`'s output).
pub struct EvalContext<'a> {
    pub variables: &'a [Value],
    pub variable_names: &'a [String],
    pub random: &'a mut PgPrng,
    pub script_index: usize,
    pub command_index: usize,
}

pub type EvalResult = Result<Value, EvalError>;

const MIN_GAUSSIAN_PARAM: f64 = 2.0;
const MIN_ZIPFIAN_PARAM: f64 = 1.001;
const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// pgbench's MAX_FARGS: a function call (least, greatest) takes at most this many arguments.
const MAX_FUNCTION_ARGUMENTS: usize = 16;

pub fn evaluate(expr: &Expr, ctx: &mut EvalContext<'_>) -> EvalResult {
    match expr {
        Expr::Constant(value) => Ok(value.clone()),
        Expr::Var(slot) => read_variable(*slot, ctx),
        Expr::Call(Function::And | Function::Or, args) => logical(expr, args, ctx),
        Expr::Call(Function::Case, args) => case(args, ctx),
        // On the per-transaction path: arguments in exactly-sized arrays, no allocation.
        Expr::Call(function, args) if args.len() <= 3 => match args.as_slice() {
            [] => call_with_values(*function, &[], ctx),
            [a] => {
                let values = [evaluate(a, ctx)?];
                call_with_values(*function, &values, ctx)
            }
            [a, b] => {
                // `:tnum = 2`, `:aid + 1`: integer operands read in place, no recursion.
                if let (Some(l), Some(r)) = (int_operand(a, ctx), int_operand(b, ctx)) {
                    if let Some(value) = int_fast_path(*function, l, r) {
                        return Ok(value);
                    }
                }
                let values = [evaluate(a, ctx)?, evaluate(b, ctx)?];
                if let [Value::Int(l), Value::Int(r)] = values {
                    if let Some(value) = int_fast_path(*function, l, r) {
                        return Ok(value);
                    }
                }
                call_with_values(*function, &values, ctx)
            }
            [a, b, c] => {
                let values = [evaluate(a, ctx)?, evaluate(b, ctx)?, evaluate(c, ctx)?];
                call_with_values(*function, &values, ctx)
            }
            _ => unreachable!("guarded by the length check"),
        },
        Expr::Call(_, args) if args.len() > MAX_FUNCTION_ARGUMENTS => {
            Err(EvalError::TooManyArguments {
                most: MAX_FUNCTION_ARGUMENTS,
            })
        }
        Expr::Call(function, args) => evaluate_many(*function, args, ctx),
    }
}

/// A call of four or more arguments. Up to pgbench's limit they fit on the stack (sysbench's
/// default sb_rand_special takes five, once or more per statement); kept out of `evaluate`
/// so that its frame stays small.
#[inline(never)]
fn evaluate_many(function: Function, args: &[Expr], ctx: &mut EvalContext<'_>) -> EvalResult {
    let mut values: [Value; MAX_FUNCTION_ARGUMENTS] = Default::default();
    for (value, arg) in values.iter_mut().zip(args) {
        *value = evaluate(arg, ctx)?;
    }
    call_with_values(function, &values[..args.len()], ctx)
}

/// An integer constant or a variable holding an integer, read without evaluating.
fn int_operand(expr: &Expr, ctx: &EvalContext<'_>) -> Option<i64> {
    match expr {
        Expr::Constant(Value::Int(value)) => Some(*value),
        Expr::Var(slot) => match ctx.variables[*slot] {
            Value::Int(value) => Some(value),
            _ => None,
        },
        _ => None,
    }
}

/// Integer `+ - * < <= = <>` without overflow: the common case, decided without the general
/// dispatch. Anything else (overflow included, for its error) takes the general path.
fn int_fast_path(function: Function, l: i64, r: i64) -> Option<Value> {
    match function {
        Function::Add => l.checked_add(r).map(Value::Int),
        Function::Sub => l.checked_sub(r).map(Value::Int),
        Function::Mul => l.checked_mul(r).map(Value::Int),
        Function::Lt => Some(Value::Bool(l < r)),
        Function::Le => Some(Value::Bool(l <= r)),
        Function::Eq => Some(Value::Bool(l == r)),
        Function::Ne => Some(Value::Bool(l != r)),
        _ => None,
    }
}

/// Replaces calls whose arguments are all constants by their value, where evaluating once at
/// parse time gives what every run would: pure functions (not the random ones, not debug())
/// that succeed. A call that fails is left alone, so the error still comes at run time with
/// pgbench's message.
pub fn fold_constants(expr: Expr) -> Expr {
    let Expr::Call(function, args) = expr else {
        return expr;
    };
    let args: Vec<Expr> = args.into_iter().map(fold_constants).collect();
    let pure = !function.draws_random() && function != Function::Debug;
    let call = Expr::Call(function, args);
    let Expr::Call(_, args) = &call else {
        unreachable!("just built")
    };
    if !pure || !args.iter().all(|a| matches!(a, Expr::Constant(_))) {
        return call;
    }
    let mut unused_random = PgPrng::seeded(0);
    let mut ctx = EvalContext {
        variables: &[],
        variable_names: &[],
        random: &mut unused_random,
        script_index: 0,
        command_index: 0,
    };
    match evaluate(&call, &mut ctx) {
        Ok(value) => Expr::Constant(value),
        Err(_) => call,
    }
}

/// NULL arguments make the result NULL, except for IS and debug().
fn call_with_values(function: Function, values: &[Value], ctx: &mut EvalContext<'_>) -> EvalResult {
    let has_null = values.iter().any(|v| matches!(v, Value::Null));
    if has_null && !matches!(function, Function::Is | Function::Debug) {
        return Ok(Value::Null);
    }
    call(function, values, ctx)
}

fn read_variable(slot: VarSlot, ctx: &EvalContext<'_>) -> EvalResult {
    let name = || &ctx.variable_names[slot];
    match &ctx.variables[slot] {
        Value::Unset => Err(EvalError::Undefined(name().clone())),
        Value::Text(text) => text_to_value(text).ok_or_else(|| EvalError::Malformed {
            variable: name().clone(),
            text: text.to_string(),
        }),
        other => Ok(other.clone()),
    }
}

/// pgbench's makeVariableValue: how a text variable (from -D or \gset) reads as a value.
pub fn text_to_value(text: &str) -> Option<Value> {
    let len = text.len();
    if len == 0 {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let is_prefix_of = |word: &str| word.starts_with(lower.as_str());
    if lower == "null" {
        Some(Value::Null)
    } else if is_prefix_of("true") || is_prefix_of("yes") || lower == "on" {
        Some(Value::Bool(true))
    } else if is_prefix_of("false") || is_prefix_of("no") || lower == "off" || lower == "of" {
        Some(Value::Bool(false))
    } else if looks_like_int(text) {
        text.trim()
            .trim_start_matches('+')
            .parse::<i64>()
            .ok()
            .map(Value::Int)
    } else {
        parse_c_double(text).map(Value::Double)
    }
}

fn looks_like_int(text: &str) -> bool {
    let trimmed = text.trim_start();
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// strtod over the whole string: decimal forms, exponents, inf and nan.
fn parse_c_double(text: &str) -> Option<f64> {
    let trimmed = text.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if ["inf", "infinity", "nan"].contains(&unsigned) {
        return lower.parse::<f64>().ok();
    }
    if !trimmed.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    trimmed.parse::<f64>().ok().filter(|d| d.is_finite())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Unset => "none",
        Value::Text(_) => "text",
        other => other.type_name(),
    }
}

/// coerceToBool: only booleans are booleans.
fn to_bool(value: &Value) -> Result<bool, EvalError> {
    match value {
        Value::Bool(b) => Ok(*b),
        other => Err(coerce(other, "boolean")),
    }
}

/// valueTruth, for CASE and \if: NULL is false, numbers are true when non-zero.
pub fn truth(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
        _ => false,
    }
}

/// coerceToInt: doubles round half to even (rint) and must fit.
pub fn to_int(value: &Value) -> Result<i64, EvalError> {
    match value {
        Value::Int(i) => Ok(*i),
        Value::Double(d) => {
            let rounded = d.round_ties_even();
            // FLOAT8_FITS_IN_INT64: [-2^63, 2^63).
            const LIMIT: f64 = 9_223_372_036_854_775_808.0;
            if rounded.is_nan() || !(-LIMIT..LIMIT).contains(&rounded) {
                Err(EvalError::OutOfRange(format!(
                    "double to int overflow for {rounded:.6}"
                )))
            } else {
                Ok(rounded as i64)
            }
        }
        other => Err(coerce(other, "int")),
    }
}

pub fn to_double(value: &Value) -> Result<f64, EvalError> {
    match value {
        Value::Int(i) => Ok(*i as f64),
        Value::Double(d) => Ok(*d),
        other => Err(coerce(other, "double")),
    }
}

fn coerce(value: &Value, to: &'static str) -> EvalError {
    EvalError::Coerce {
        from: type_name(value),
        to,
    }
}

fn logical(expr: &Expr, args: &[Expr], ctx: &mut EvalContext<'_>) -> EvalResult {
    let is_and = matches!(expr, Expr::Call(Function::And, _));
    let first = evaluate(&args[0], ctx)?;
    if first == Value::Null {
        return Ok(Value::Null);
    }
    // AND stops at false, OR at true.
    if to_bool(&first)? != is_and {
        return Ok(Value::Bool(!is_and));
    }
    let second = evaluate(&args[1], ctx)?;
    if second == Value::Null {
        return Ok(Value::Null);
    }
    Ok(Value::Bool(to_bool(&second)?))
}

fn case(args: &[Expr], ctx: &mut EvalContext<'_>) -> EvalResult {
    let (branches, else_part) = args.split_at(args.len() - 1);
    for pair in branches.chunks(2) {
        if truth(&evaluate(&pair[0], ctx)?) {
            return evaluate(&pair[1], ctx);
        }
    }
    evaluate(&else_part[0], ctx)
}

fn call(function: Function, values: &[Value], ctx: &mut EvalContext<'_>) -> EvalResult {
    use Function::*;
    match function {
        Add | Sub | Mul | Div | Mod | Eq | Ne | Le | Lt => {
            arithmetic(function, &values[0], &values[1])
        }
        BitAnd | BitOr | BitXor | ShiftLeft | ShiftRight => {
            let (l, r) = (to_int(&values[0])?, to_int(&values[1])?);
            Ok(Value::Int(match function {
                BitAnd => l & r,
                BitOr => l | r,
                BitXor => l ^ r,
                ShiftLeft => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }))
        }
        Not => Ok(Value::Bool(!to_bool(&values[0])?)),
        Pi => Ok(Value::Double(std::f64::consts::PI)),
        Abs => match &values[0] {
            Value::Int(i) => Ok(Value::Int(i.wrapping_abs())),
            other => Ok(Value::Double(to_double(other)?.abs())),
        },
        Debug => {
            debug(&values[0], ctx);
            Ok(values[0].clone())
        }
        Double => Ok(Value::Double(to_double(&values[0])?)),
        Sqrt => Ok(Value::Double(to_double(&values[0])?.sqrt())),
        Ln => Ok(Value::Double(to_double(&values[0])?.ln())),
        Exp => Ok(Value::Double(to_double(&values[0])?.exp())),
        Int => Ok(Value::Int(to_int(&values[0])?)),
        Least | Greatest => extremum(function == Greatest, values),
        Random | RandomGaussian | RandomExponential | RandomZipfian => {
            random(function, values, ctx)
        }
        SbUniform | SbGaussian | SbSpecial | SbPareto | SbZipfian | SbDigits => {
            sysbench_random(function, values, ctx)
        }
        SbBulkRows => Ok(Value::Int(sysbench_bulk::rows_fitting(
            to_int(&values[0])?,
            to_int(&values[1])?,
        ))),
        SbBulkValues => sysbench_bulk::values(to_int(&values[0])?, to_int(&values[1])?)
            .map(|text| Value::Text(std::sync::Arc::new(text))),
        TpccLastName => tpcc_names::last_name(to_int(&values[0])?)
            .map(|text| Value::Text(std::sync::Arc::new(text))),
        Text => {
            let mut text = String::new();
            values[0].write_text(&mut text);
            Ok(Value::Text(std::sync::Arc::new(text)))
        }
        Pow => Ok(Value::Double(
            to_double(&values[0])?.powf(to_double(&values[1])?),
        )),
        Is => Ok(Value::Bool(is_same(&values[0], &values[1]))),
        HashMurmur2 => Ok(Value::Int(hash_murmur2(
            to_int(&values[0])?,
            to_int(&values[1])? as u64,
        ))),
        HashFnv1a => Ok(Value::Int(hash_fnv1a(
            to_int(&values[0])?,
            to_int(&values[1])? as u64,
        ))),
        Permute => {
            let (value, size, seed) = (
                to_int(&values[0])?,
                to_int(&values[1])?,
                to_int(&values[2])?,
            );
            if size <= 0 {
                return Err(EvalError::Argument(
                    "permute size parameter must be greater than zero".into(),
                ));
            }
            Ok(Value::Int(permute(value, size, seed)))
        }
        And | Or | Case => unreachable!("evaluated lazily"),
    }
}

/// sysbench's distributions over [a, b] (first two arguments) with their parameters after.
fn sysbench_random(function: Function, values: &[Value], ctx: &mut EvalContext<'_>) -> EvalResult {
    let rng = &mut *ctx.random;
    if function == Function::SbDigits {
        let groups = to_int(&values[0])?;
        if !(0..=1000).contains(&groups) {
            return Err(EvalError::Argument(format!(
                "sb_rand_digits: {groups} groups is out of range 0..1000"
            )));
        }
        return Ok(Value::Text(std::sync::Arc::new(
            sysbench_random::digit_groups(rng, groups as usize),
        )));
    }
    let (low, high) = (to_int(&values[0])?, to_int(&values[1])?);
    if low > high {
        return Err(EvalError::Argument(
            "empty range given to a sysbench distribution".into(),
        ));
    }
    // The distributions compute high - low + 1, which must not overflow.
    let span = high.checked_sub(low).filter(|span| *span < i64::MAX / 2);
    if span.is_none_or(|span| low.checked_add(span + 1).is_none()) {
        return Err(EvalError::Argument(
            "sysbench distribution range is too large".into(),
        ));
    }
    let positive = |value: &Value, name: &str| -> Result<u32, EvalError> {
        let n = to_int(value)?;
        u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
            EvalError::Argument(format!("{name} must be a positive integer (not {n})"))
        })
    };
    let drawn = match function {
        Function::SbUniform => sysbench_random::uniform(rng, low, high),
        Function::SbGaussian => {
            sysbench_random::gaussian(rng, low, high, positive(&values[2], "iterations")?)
        }
        Function::SbSpecial => {
            let res = to_int(&values[4])?;
            if !(0..100).contains(&res) {
                return Err(EvalError::Argument(format!(
                    "special distribution: res must be in 0..99 (not {res})"
                )));
            }
            let pct = positive(&values[3], "pct")?;
            let iterations = positive(&values[2], "iterations")?;
            sysbench_random::special(rng, low, high, iterations, pct, res as u32)
        }
        Function::SbPareto => {
            let h = to_double(&values[2])?;
            if !(h > 0.0 && h < 1.0) {
                return Err(EvalError::Argument(format!(
                    "pareto h must be between 0 and 1 (not {h})"
                )));
            }
            sysbench_random::pareto(rng, low, high, h)
        }
        _ => {
            let exponent = to_double(&values[2])?;
            if exponent.is_nan() || exponent < 0.0 {
                return Err(EvalError::Argument(format!(
                    "zipfian exponent must be at least 0 (not {exponent})"
                )));
            }
            sysbench_random::zipfian(rng, low, high, exponent)
        }
    };
    Ok(Value::Int(drawn))
}

/// pgbench's IS compares the types and the boolean payload (NULL IS NULL, x IS TRUE/FALSE).
fn is_same(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        _ => false,
    }
}

fn arithmetic(function: Function, left: &Value, right: &Value) -> EvalResult {
    use Function::*;
    let any_double = matches!(left, Value::Double(_)) || matches!(right, Value::Double(_));
    if any_double && function != Mod {
        let (l, r) = (to_double(left)?, to_double(right)?);
        return Ok(match function {
            Add => Value::Double(l + r),
            Sub => Value::Double(l - r),
            Mul => Value::Double(l * r),
            Div => Value::Double(l / r),
            Eq => Value::Bool(l == r),
            Ne => Value::Bool(l != r),
            Le => Value::Bool(l <= r),
            _ => Value::Bool(l < r),
        });
    }
    let (l, r) = (to_int(left)?, to_int(right)?);
    let overflow = |op: &str| EvalError::OutOfRange(format!("bigint {op} out of range"));
    Ok(match function {
        Add => Value::Int(l.checked_add(r).ok_or_else(|| overflow("add"))?),
        Sub => Value::Int(l.checked_sub(r).ok_or_else(|| overflow("sub"))?),
        Mul => Value::Int(l.checked_mul(r).ok_or_else(|| overflow("mul"))?),
        Eq => Value::Bool(l == r),
        Ne => Value::Bool(l != r),
        Le => Value::Bool(l <= r),
        Lt => Value::Bool(l < r),
        _ => {
            if r == 0 {
                return Err(EvalError::DivisionByZero);
            }
            if r == -1 {
                if function == Mod {
                    return Ok(Value::Int(0));
                }
                return l
                    .checked_neg()
                    .map(Value::Int)
                    .ok_or_else(|| overflow("div"));
            }
            Value::Int(if function == Div { l / r } else { l % r })
        }
    })
}

fn extremum(greatest: bool, values: &[Value]) -> EvalResult {
    if values.iter().any(|v| matches!(v, Value::Double(_))) {
        let mut best = to_double(&values[0])?;
        for value in &values[1..] {
            let d = to_double(value)?;
            // C's Min/Max macros: keep the current one unless the new one strictly wins.
            if (greatest && d > best) || (!greatest && d < best) {
                best = d;
            }
        }
        return Ok(Value::Double(best));
    }
    let mut best = to_int(&values[0])?;
    for value in &values[1..] {
        let i = to_int(value)?;
        best = if greatest { best.max(i) } else { best.min(i) };
    }
    Ok(Value::Int(best))
}

fn random(function: Function, values: &[Value], ctx: &mut EvalContext<'_>) -> EvalResult {
    let (low, high) = (to_int(&values[0])?, to_int(&values[1])?);
    if low > high {
        return Err(EvalError::Argument("empty range given to random".into()));
    }
    if high
        .checked_sub(low)
        .and_then(|d| d.checked_add(1))
        .is_none()
    {
        return Err(EvalError::Argument("random range is too large".into()));
    }
    let rng = &mut *ctx.random;
    if function == Function::Random {
        return Ok(Value::Int(rng.int_in_range(low, high)));
    }
    let param = to_double(&values[2])?;
    let span = (high - low + 1) as f64;
    let drawn = match function {
        Function::RandomGaussian => {
            if param < MIN_GAUSSIAN_PARAM {
                return Err(EvalError::Argument(format!(
                    "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM:.6} (not {param:.6})"
                )));
            }
            let stdev = loop {
                let z = rng.next_normal();
                if z >= -param && z < param {
                    break z;
                }
            };
            low + (span * ((stdev + param) / (param * 2.0))) as i64
        }
        Function::RandomZipfian => {
            if !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&param) {
                return Err(EvalError::Argument(format!(
                    "zipfian parameter must be in range [{MIN_ZIPFIAN_PARAM:.3}, {MAX_ZIPFIAN_PARAM:.0}] (not {param:.6})"
                )));
            }
            low - 1 + zipfian(rng, high - low + 1, param)
        }
        _ => {
            if param <= 0.0 {
                return Err(EvalError::Argument(format!(
                    "exponential parameter must be greater than zero (not {param:.6})"
                )));
            }
            let cut = (-param).exp();
            let uniform = 1.0 - rng.next_f64();
            let rand = -(cut + (1.0 - cut) * uniform).ln() / param;
            low + (span * rand) as i64
        }
    };
    Ok(Value::Int(drawn))
}

/// Devroye's rejection method, as pgbench's computeIterativeZipfian.
fn zipfian(rng: &mut PgPrng, n: i64, s: f64) -> i64 {
    if n <= 1 {
        return 1;
    }
    let b = 2f64.powf(s - 1.0);
    loop {
        let u = rng.next_f64();
        let v = rng.next_f64();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            return x as i64;
        }
    }
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
const MM2_ROT: u32 = 47;

pub fn hash_fnv1a(value: i64, seed: u64) -> i64 {
    let mut result = FNV_OFFSET_BASIS ^ seed;
    let mut v = value;
    for _ in 0..8 {
        let octet = (v & 0xff) as u64;
        v >>= 8;
        result = (result ^ octet).wrapping_mul(FNV_PRIME);
    }
    result as i64
}

pub fn hash_murmur2(value: i64, seed: u64) -> i64 {
    let mut result = seed ^ MM2_MUL_TIMES_8;
    let mut k = value as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// pgbench's pseudorandom permutation of `[0, size)`: six rounds of odd multiply, xor and
/// rotate on overlapping halves, plus a random offset.
pub fn permute(value: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut state = PgPrng::seeded(seed as u64);
    let size = size as u64;
    let mut v = (value as u64) % size;
    let mask_len = 63 - size.leading_zeros();
    let mask = (1u64 << mask_len) - 1;
    let rotate = |x: u64| ((x << 1) & mask) | (x >> (mask_len - 1));
    for _ in 0..6 {
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        if v <= mask {
            v = rotate((v.wrapping_mul(m) ^ r) & mask);
        }
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - rotate((t.wrapping_mul(m) ^ r) & mask);
        }
        let offset = state.u64_in_range(0, size - 1);
        v = (v + offset) % size;
    }
    v as i64
}

/// `debug(script=S,command=C): <type> <value>` on stderr, as pgbench prints it.
fn debug(value: &Value, ctx: &EvalContext<'_>) {
    let rendered = match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Int(i) => format!("int {i}"),
        Value::Double(d) => format!("double {}", format_g15(*d)),
        other => format!("{} {other:?}", type_name(other)),
    };
    let line = format!(
        "debug(script={},command={}): {rendered}\n",
        ctx.script_index,
        ctx.command_index + 1
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::VarTable;
    use crate::expr::ExprParser;

    fn folded(text: &str) -> Expr {
        let mut vars = VarTable::default();
        fold_constants(ExprParser::parse(text, &mut vars).unwrap())
    }

    #[test]
    fn constants_fold_but_random_debug_and_errors_stay() {
        assert!(matches!(
            folded("1 + 2 * 3 - abs(-4)"),
            Expr::Constant(Value::Int(3))
        ));
        match folded("random(1, 10 * 2) + 3 * 2") {
            Expr::Call(Function::Add, args) => {
                assert!(matches!(&args[0], Expr::Call(Function::Random, inner)
                    if matches!(inner[1], Expr::Constant(Value::Int(20)))));
                assert!(matches!(args[1], Expr::Constant(Value::Int(6))));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            folded("debug(2 * 2)"),
            Expr::Call(Function::Debug, _)
        ));
        assert!(matches!(folded("1 / 0"), Expr::Call(Function::Div, _)));
        assert!(matches!(folded(":x + 1"), Expr::Call(Function::Add, _)));
    }

    fn eval(text: &str) -> Result<Value, String> {
        let mut vars = VarTable::default();
        let expr = ExprParser::parse(text, &mut vars).map_err(|e| e.message)?;
        let mut random = PgPrng::seeded(1);
        let values = vec![Value::Int(0); vars.names().len()];
        let mut ctx = EvalContext {
            variables: &values,
            variable_names: vars.names(),
            random: &mut random,
            script_index: 0,
            command_index: 0,
        };
        evaluate(&expr, &mut ctx).map_err(|e| e.to_string())
    }

    #[test]
    fn operators_follow_pgbench() {
        assert_eq!(eval("7 / 2"), Ok(Value::Int(3)));
        assert_eq!(eval("-7 % 3"), Ok(Value::Int(-1)));
        assert_eq!(eval("7.5 % 2"), Ok(Value::Int(0)));
        assert_eq!(eval("1.0 / 0"), Ok(Value::Double(f64::INFINITY)));
        assert_eq!(eval("1 / 0"), Err("division by zero".into()));
        assert_eq!(
            eval("9223372036854775807 + 1"),
            Err("bigint add out of range".into())
        );
        assert_eq!(
            eval("-9223372036854775808 / -1"),
            Err("bigint div out of range".into())
        );
        assert_eq!(eval("3 > 2 AND 2 >= 2"), Ok(Value::Bool(true)));
        assert_eq!(eval("~0"), Ok(Value::Int(-1)));
        assert_eq!(eval("1 << 4 | 1"), Ok(Value::Int(17)));
        assert_eq!(eval("NULL + 1"), Ok(Value::Null));
        assert_eq!(eval("NULL IS NULL"), Ok(Value::Bool(true)));
        assert_eq!(eval("1 ISNULL"), Ok(Value::Bool(false)));
        assert_eq!(eval("true IS NOT FALSE"), Ok(Value::Bool(true)));
        assert_eq!(eval("NOT 1"), Err("cannot coerce int to boolean".into()));
        assert_eq!(eval("int(2.5) + int(3.5)"), Ok(Value::Int(6)));
        assert_eq!(
            eval("CASE WHEN 0 THEN 1 WHEN 2 THEN 3 ELSE 4 END"),
            Ok(Value::Int(3))
        );
        assert_eq!(eval("CASE WHEN false THEN 1 END"), Ok(Value::Null));
        assert_eq!(eval("greatest(1, 2.5, 2)"), Ok(Value::Double(2.5)));
        assert_eq!(eval("abs(-9223372036854775808)"), Ok(Value::Int(i64::MIN)));
        assert!(eval("nope(1)")
            .unwrap_err()
            .contains("unexpected function name"));
        assert!(eval("random(1)")
            .unwrap_err()
            .contains("unexpected number of arguments"));
    }

    #[test]
    fn text_variables_read_like_pgbench() {
        assert_eq!(text_to_value("y"), Some(Value::Bool(true)));
        assert_eq!(text_to_value("of"), Some(Value::Bool(false)));
        assert_eq!(text_to_value(" 42"), Some(Value::Int(42)));
        assert_eq!(text_to_value("1e3"), Some(Value::Double(1000.0)));
        assert_eq!(text_to_value("NULL"), Some(Value::Null));
        assert_eq!(text_to_value("abc"), None);
    }

    #[test]
    fn permute_is_a_permutation() {
        for size in [1i64, 2, 3, 7, 64, 1000] {
            let mut seen: Vec<i64> = (0..size).map(|v| permute(v, size, 12345)).collect();
            seen.sort();
            assert_eq!(seen, (0..size).collect::<Vec<_>>(), "size {size}");
        }
    }
}
