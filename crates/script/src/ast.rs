//! The parsed form of a pgbench script.
//!
//! Variables are resolved to slots (indexes into a client's variable table) when a script is
//! compiled, so the per-transaction path never looks a name up.

use std::collections::HashMap;

use super::value::Value;

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
    Set {
        var: VarSlot,
        expr: Expr,
    },
    Sleep {
        duration: SleepArg,
        unit: SleepUnit,
    },
    /// `\if`: when false, continue at `on_false` (the next `\elif`, `\else` or `\endif`).
    If {
        condition: Expr,
        on_false: usize,
    },
    /// `\elif`: tested only when jumped to; reached from a taken branch it skips to `end`.
    Elif {
        condition: Expr,
        on_false: usize,
        end: usize,
    },
    /// `\else`: entered when jumped to; reached from a taken branch it skips to `end`.
    Else {
        end: usize,
    },
    Endif,
    /// `\startpipeline`: queries are sent without waiting, until `\endpipeline`.
    StartPipeline,
    /// `\syncpipeline`: a Sync inside the pipeline (a transaction boundary; results come later).
    SyncPipeline,
    /// `\endpipeline`: the final Sync, then every result of the pipeline is read.
    EndPipeline,
    /// `\shell` (no target) and `\setshell var` (stores the integer the command prints).
    Shell {
        words: Vec<ShellWord>,
        target: Option<VarSlot>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellWord {
    Literal(String),
    Var(VarSlot),
}

/// Where `\gset` / `\aset` put a query's result columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultStore {
    /// `\aset`: the last row of every query that returns rows; `\gset`: exactly one row.
    pub all_queries: bool,
    pub prefix: String,
}

#[derive(Debug, Clone)]
pub struct SqlCommand {
    /// The text with `:name` references replaced by `$1..$n` (extended and prepared modes).
    pub parameterized: String,
    /// Slots of the variables bound to `$1..$n`, in order.
    pub params: Vec<VarSlot>,
    /// The text split around variable references, for simple mode where values are inlined.
    pub pieces: Vec<SqlPiece>,
    pub store: Option<ResultStore>,
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
    Constant(Value),
    Var(VarSlot),
    /// Operators are functions too, as in pgbench: `a > b` is `Lt(b, a)`, `-x` is `Sub(0, x)`.
    Call(Function, Vec<Expr>),
}

/// Every function of pgbench's expression language, operators included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Abs,
    Least,
    Greatest,
    Debug,
    Pi,
    Sqrt,
    Ln,
    Exp,
    Int,
    Double,
    Random,
    RandomGaussian,
    RandomExponential,
    RandomZipfian,
    Pow,
    And,
    Or,
    Not,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
    Eq,
    Ne,
    Le,
    Lt,
    Is,
    /// `CASE WHEN c1 THEN r1 ... ELSE e END` as `(c1, r1, ..., e)`.
    Case,
    HashMurmur2,
    HashFnv1a,
    Permute,
    /// sysbench's distributions and random strings (stampede's extension of the language, for
    /// the sysbench workloads; pgbench has no such functions).
    SbUniform,
    SbGaussian,
    SbSpecial,
    SbPareto,
    SbZipfian,
    SbDigits,
    /// sysbench's bulk_insert: rows a 512 KiB buffer holds, and their VALUES text.
    SbBulkRows,
    SbBulkValues,
    /// TPC-C's C_LAST of a number 0..999 (stampede's extension, for the client-mode TPROC-C).
    TpccLastName,
    /// A value as text (stampede's extension): a MySQL prepared statement binds it as a
    /// string, so that a CHAR key compared with it is looked up by its index.
    Text,
}

/// How many arguments a named function takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    AtLeastOne,
    /// One value and an optional seed (`:default_seed` when omitted).
    Hash,
    /// Value, size and an optional seed (`:default_seed` when omitted).
    Permute,
}

/// Functions callable by name, with their arity (pgbench's PGBENCH_FUNCTIONS table).
pub const NAMED_FUNCTIONS: [(&str, Function, Arity); 31] = [
    ("abs", Function::Abs, Arity::Exactly(1)),
    ("least", Function::Least, Arity::AtLeastOne),
    ("greatest", Function::Greatest, Arity::AtLeastOne),
    ("debug", Function::Debug, Arity::Exactly(1)),
    ("pi", Function::Pi, Arity::Exactly(0)),
    ("sqrt", Function::Sqrt, Arity::Exactly(1)),
    ("ln", Function::Ln, Arity::Exactly(1)),
    ("exp", Function::Exp, Arity::Exactly(1)),
    ("int", Function::Int, Arity::Exactly(1)),
    ("double", Function::Double, Arity::Exactly(1)),
    ("random", Function::Random, Arity::Exactly(2)),
    (
        "random_gaussian",
        Function::RandomGaussian,
        Arity::Exactly(3),
    ),
    (
        "random_exponential",
        Function::RandomExponential,
        Arity::Exactly(3),
    ),
    ("random_zipfian", Function::RandomZipfian, Arity::Exactly(3)),
    ("pow", Function::Pow, Arity::Exactly(2)),
    ("power", Function::Pow, Arity::Exactly(2)),
    ("mod", Function::Mod, Arity::Exactly(2)),
    ("hash", Function::HashMurmur2, Arity::Hash),
    ("hash_murmur2", Function::HashMurmur2, Arity::Hash),
    ("hash_fnv1a", Function::HashFnv1a, Arity::Hash),
    ("permute", Function::Permute, Arity::Permute),
    ("sb_rand_uniform", Function::SbUniform, Arity::Exactly(2)),
    ("sb_rand_gaussian", Function::SbGaussian, Arity::Exactly(3)),
    ("sb_rand_special", Function::SbSpecial, Arity::Exactly(5)),
    ("sb_rand_pareto", Function::SbPareto, Arity::Exactly(3)),
    ("sb_rand_zipfian", Function::SbZipfian, Arity::Exactly(3)),
    ("sb_rand_digits", Function::SbDigits, Arity::Exactly(1)),
    ("sb_bulk_rows", Function::SbBulkRows, Arity::Exactly(2)),
    ("sb_bulk_values", Function::SbBulkValues, Arity::Exactly(2)),
    ("tpcc_last_name", Function::TpccLastName, Arity::Exactly(1)),
    ("text", Function::Text, Arity::Exactly(1)),
];

impl Function {
    /// Whether each call draws from the client's random state (so it is never folded into a
    /// constant).
    pub fn draws_random(self) -> bool {
        use Function::*;
        matches!(
            self,
            Random
                | RandomGaussian
                | RandomExponential
                | RandomZipfian
                | SbUniform
                | SbGaussian
                | SbSpecial
                | SbPareto
                | SbZipfian
                | SbDigits
        )
    }

    pub fn by_name(name: &str) -> Option<(Function, Arity)> {
        NAMED_FUNCTIONS
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f, a)| (*f, *a))
    }
}

/// Variable names of all scripts of a run, mapped to slots in each client's variable table.
#[derive(Debug, Default, Clone)]
pub struct VarTable {
    names: Vec<String>,
    index: HashMap<String, VarSlot>,
}

impl VarTable {
    pub fn slot(&mut self, name: &str) -> VarSlot {
        if let Some(slot) = self.index.get(name) {
            return *slot;
        }
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    pub fn lookup(&self, name: &str) -> Option<VarSlot> {
        self.index.get(name).copied()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }
}
