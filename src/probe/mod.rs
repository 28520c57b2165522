//! Measurements taken beside the load: the client's own CPU, the server's counters.

pub mod cpu;
pub mod pgstat;
pub mod run_stats;
