//! pgbench's TPC-B-like family and study 002's additions on its tables: the `stampede pgbench`
//! command (flags, init, run, report), its tables and loader (`-i`), its builtin scripts, the
//! analytical queries, and the lab workloads `pgbench`, `pgbench-extra-indexes` and `analytics`.

pub mod analytics;
pub mod args;
pub mod assemble;
pub mod builtins;
pub mod command;
pub mod init;
pub mod lab;
pub mod loader;
pub mod plan;
pub mod progress;
pub mod quickstart;
pub mod report;
pub mod run;
pub mod schema;
pub mod setup;
pub mod spec;
pub mod spread;
