//! TPROC-C, HammerDB's TPC-C-derived workload: the schema of study 001, TPC-C's data rules (HammerDB's
//! where they differ, by default), a parallel binary-COPY loader in HammerDB's physical order, the consistency conditions, and the five transactions as
//! PL/pgSQL procedures with the driver scripts that call them (server mode) or the same
//! statements sent by the driver (client mode); the `stampede tpcc` command and the lab
//! workload `tpcc`.

pub mod args;
pub mod build;
pub mod built;
pub mod check;
pub mod client_scripts;
pub mod command;
pub mod copy;
pub mod inputs;
pub mod lab;
pub mod load;
pub mod mysql;
pub mod procedures;
pub mod random;
pub mod rows;
pub mod rules;
pub mod run;
pub mod schema;
pub mod scripts;
pub mod spread;
