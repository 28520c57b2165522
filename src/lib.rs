//! stampede: a PostgreSQL benchmark lab in one binary.
//!
//! Data flows left to right: `cli` → `lab` → `server` → `workload` → `driver` → `probe` →
//! `store` → `analysis` → `report`; `commands` wires them together for each subcommand.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod driver;
pub mod lab;
pub mod probe;
pub mod report;
pub mod script;
pub mod server;
pub mod store;
pub mod workload;
