//! Workload families. Each gives its schema, a loader and its transaction scripts; none measures
//! time (that is the driver's job).

pub mod analytics;
pub mod dbstress;
pub mod pgbench;
pub mod sysbench;
pub mod tpcc;
