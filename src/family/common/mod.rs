//! What every family shares: connection options for the workload commands, and measuring a run
//! (warmup, measured window, per-second series, latency summary).

pub mod connection;
pub mod measure;
pub mod options;
