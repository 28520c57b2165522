//! What every family shares: connection options for the workload commands, measuring a run
//! (warmup, measured window, per-second series, latency summary), a session for statements
//! sent as text on either engine, and a local server's CPU and I/O over an interval.

pub mod connection;
pub mod measure;
pub mod options;
pub mod server_work;
pub mod sql_session;
