//! pgbench's TPC-B-like family: its tables, its loader (`-i`) and its builtin scripts.

pub mod builtins;
pub mod loader;
pub mod schema;
