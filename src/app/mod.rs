//! The generic commands — lab, compare, report, server, quickstart — and the top-level
//! command line; each family's own command lives in its folder under `family/`.

pub mod bisect;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod dispatch;
pub mod export;
pub mod gate;
pub mod history;
pub mod judge;
pub mod lab;
pub mod lab_clean;
pub mod lab_metrics;
pub mod lab_results;
pub mod lab_shards;
pub mod lab_spec;
pub mod live_page;
pub mod progress;
pub mod quickstart;
pub mod report;
pub mod server;
pub mod shell;

pub use stampede_base::error::{CommandResult, Failure};
