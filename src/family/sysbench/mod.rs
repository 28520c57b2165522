//! The sysbench family: sysbench's oltp_* tests and select_random_* on the same `sbtestN`
//! tables, as scripts for the driver, with sysbench's options, defaults and report; Callaghan's
//! microbenchmark suite; the lab workloads `sysbench` and `sysbench-microbench`.
//!
//! The command line, by role: `entry` reads `stampede sysbench ARGS` as sysbench reads its own
//! (options anywhere, a Lua script or a built-in test) and hands stampede's form (`run TEST
//! --threads 4`) to `subcommands`, the clap definitions of `prepare|run|cleanup`;
//! `sysbench_cmdline` is sysbench 1.0.20's option syntax and table (types, defaults, help, a
//! script's own options); `oltp_options` are the oltp tests' options with sysbench's defaults.

pub mod catalog;
pub mod command;
pub mod entry;
pub mod lab;
pub mod layout;
pub mod lua;
pub mod microbench;
pub mod oltp_options;
pub mod report;
pub mod schema;
pub mod spread;
pub mod subcommands;
pub mod sysbench_cmdline;
pub mod target;
