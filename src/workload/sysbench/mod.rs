//! The sysbench family: sysbench's oltp_* tests and select_random_* on the same `sbtestN`
//! tables, as scripts for the driver, with sysbench's options and defaults.

pub mod catalog;
pub mod microbench;
pub mod options;
pub mod schema;
