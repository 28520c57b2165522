//! The parsed form of a pgbench script.
//!
//! Variables are resolved to slots (indexes into a client's variable table) when a script is
//! compiled, so the per-transaction path never looks a name up.

use std::fmt;

/// Where a command starts in its source, for error messages (`file:line:col`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub line: usize,
    pub column: usize,
}

/// Index of a variable in a client's variable table.
pub type VarSlot = usize;

#[derive(Debug, Clone)]
pub struct Script {
    /// What pgbench prints as `transaction type:`, e.g. `<builtin: TPC-B (sort of)>` or a file name.
    pub description: String,
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone)]
pub struct Command {
    pub kind: CommandKind,
    pub span: Span,
    /// First line of the command's text, as pgbench shows it in per-statement reports.
    pub first_line: String,
}

#[derive(Debug, Clone)]
pub enum CommandKind {
    Sql(SqlCommand),
    Set { var: VarSlot, expr: Expr },
    Sleep { duration: SleepArg, unit: SleepUnit },
}

#[derive(Debug, Clone)]
pub struct SqlCommand {
    /// The text with `:name` references replaced by `$1..$n` (extended and prepared modes).
    pub parameterized: String,
    /// Slots of the variables bound to `$1..$n`, in order.
    pub params: Vec<VarSlot>,
    /// The text split around variable references, for simple mode where values are inlined.
    pub pieces: Vec<SqlPiece>,
}

#[derive(Debug, Clone)]
pub enum SqlPiece {
    Text(String),
    Var(VarSlot),
}

#[derive(Debug, Clone)]
pub enum SleepArg {
    Constant(i64),
    Var(VarSlot),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepUnit {
    Microseconds,
    Milliseconds,
    Seconds,
}

impl SleepUnit {
    pub fn to_micros(self, amount: i64) -> i64 {
        match self {
            SleepUnit::Microseconds => amount,
            SleepUnit::Milliseconds => amount.saturating_mul(1_000),
            SleepUnit::Seconds => amount.saturating_mul(1_000_000),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
    Var(VarSlot),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Call(Function, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
}

/// The functions of pgbench's expression language that are implemented so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Abs,
    Double,
    Int,
    Greatest,
    Least,
    Mod,
    Pi,
    Sqrt,
    Random,
}

impl Function {
    pub fn from_name(name: &str) -> Option<Function> {
        Some(match name.to_ascii_lowercase().as_str() {
            "abs" => Function::Abs,
            "double" => Function::Double,
            "int" => Function::Int,
            "greatest" => Function::Greatest,
            "least" => Function::Least,
            "mod" => Function::Mod,
            "pi" => Function::Pi,
            "sqrt" => Function::Sqrt,
            "random" => Function::Random,
            _ => return None,
        })
    }

    /// Accepted argument counts: (min, max); `None` means unbounded.
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            Function::Pi => (0, Some(0)),
            Function::Abs | Function::Double | Function::Int | Function::Sqrt => (1, Some(1)),
            Function::Mod | Function::Random => (2, Some(2)),
            Function::Greatest | Function::Least => (1, None),
        }
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Function::Abs => "abs",
            Function::Double => "double",
            Function::Int => "int",
            Function::Greatest => "greatest",
            Function::Least => "least",
            Function::Mod => "mod",
            Function::Pi => "pi",
            Function::Sqrt => "sqrt",
            Function::Random => "random",
        };
        f.write_str(name)
    }
}
