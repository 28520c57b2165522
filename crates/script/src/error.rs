//! Why an expression could not be evaluated: the evaluator's and its extensions' one error
//! type, so a caller can tell a script's mistake (a variable never set, a bad argument) from
//! arithmetic that ran out of range.

/// Why an expression could not be evaluated; shown in pgbench's words (the client aborts
/// with them).
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// A variable read before the script set it.
    Undefined(String),
    /// A variable whose text is no number.
    Malformed {
        variable: String,
        text: String,
    },
    /// A value of a type the operation does not take.
    Coerce {
        from: &'static str,
        to: &'static str,
    },
    /// A result that does not fit its type: "bigint add out of range".
    OutOfRange(String),
    DivisionByZero,
    /// An argument outside what its function takes, in pgbench's or sysbench's words.
    Argument(String),
    /// More arguments than pgbench takes in one call (at `most`).
    TooManyArguments {
        most: usize,
    },
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Undefined(name) => write!(f, "undefined variable \"{name}\""),
            EvalError::Malformed { variable, text } => {
                write!(f, "malformed variable \"{variable}\" value: \"{text}\"")
            }
            EvalError::Coerce { from, to } => write!(f, "cannot coerce {from} to {to}"),
            EvalError::OutOfRange(message) | EvalError::Argument(message) => f.write_str(message),
            EvalError::DivisionByZero => f.write_str("division by zero"),
            EvalError::TooManyArguments { most } => {
                write!(f, "too many function arguments, maximum is {most}")
            }
        }
    }
}

impl std::error::Error for EvalError {}
