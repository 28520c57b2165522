//! The pgbench script language: parsing into an AST with source spans, values, evaluation and
//! pgbench's PRNG. Knows nothing about connections.

pub mod ast;
pub mod error;
pub mod eval;
pub mod expr;
pub mod extensions;
pub mod fuzzing;
pub mod parser;
pub mod prng;
pub mod value;

pub use ast::{Command, CommandKind, Script, VarTable};
pub use parser::{parse_script, ScriptError};
pub use value::Value;
