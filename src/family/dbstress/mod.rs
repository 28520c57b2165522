//! dbSTRESS (study 003): its five tables and statements, the `stampede dbstress` command and the
//! lab workload `dbstress`.

pub mod args;
pub mod command;
pub mod lab;
pub mod mysql;
pub mod spread;
pub mod statements;
