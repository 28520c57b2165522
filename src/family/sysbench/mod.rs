//! The sysbench family: sysbench's oltp_* tests and select_random_* on the same `sbtestN`
//! tables, as scripts for the driver, with sysbench's options, defaults and report; Callaghan's
//! microbenchmark suite; the lab workloads `sysbench` and `sysbench-microbench`.

pub mod args;
pub mod catalog;
pub mod cmdline;
pub mod command;
pub mod front;
pub mod lab;
pub mod layout;
pub mod lua;
pub mod microbench;
pub mod mysql_schema;
pub mod options;
pub mod report;
pub mod schema;
pub mod spread;
pub mod target;
