//! What stampede shows while it runs, to something other than its terminal: the run's numbers
//! as OpenMetrics text for Prometheus (`metrics`: counters, the latency histogram, gauges, fed
//! by the driver's intervals, or by `sampler` for runs the driver does not run), served at
//! `--metrics-addr` (`endpoint`).
//!
//! Nothing here is on the measured path: the registry is updated once per interval from the
//! interval's merged report, on the thread that already merges it, and read by a scrape.

pub mod endpoint;
pub mod metrics;
pub mod openmetrics;
pub mod sampler;

/// The labels of a run command's series: which command made them.
pub fn command_labels(command: &str) -> openmetrics::Labels {
    vec![("command".to_string(), command.to_string())]
}
