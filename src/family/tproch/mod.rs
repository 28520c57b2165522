//! TPROC-H, HammerDB's TPC-H-derived analytic workload: HammerDB's schema, keys and indexes,
//! dbgen's rows (the `tpchgen` crate) streamed in by parallel COPY, TPC-H's 22 queries with
//! HammerDB's substitution parameters and TPC-H's stream orders, the refresh functions on
//! dbgen's update sets, the power and throughput tests with TPC-H's derived metrics, and the
//! `stampede tproch` command.

pub mod args;
pub mod build;
pub mod check;
pub mod command;
pub mod data;
pub mod generate;
pub mod lab;
pub mod load;
pub mod metrics;
pub mod mysql;
pub mod params;
pub mod queries;
pub mod refresh;
pub mod run;
pub mod schema;
pub mod session;
pub mod streams;
