//! stampede: a PostgreSQL benchmark lab in one binary.
//!
//! Data flows left to right: `cli` → `server` → `workload` → `driver` → `probe` → `report`;
//! `commands` wires them together for each subcommand.

pub mod cli;
pub mod commands;
pub mod driver;
pub mod probe;
pub mod report;
pub mod script;
pub mod server;
pub mod workload;
