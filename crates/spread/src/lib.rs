//! A run spread over several client hosts (the pods of a Kubernetes Indexed Job): one
//! coordinator and one worker per pod, speaking JSON lines over TCP.
//!
//! The run's phases, each a barrier the coordinator holds:
//! 1. every worker joins (pod 0 only after it prepared the server, so no pod's clients connect
//!    before the preparation's counters are read) and measures its clock against the
//!    coordinator's (`clock`);
//! 2. every worker's clients are connected: the coordinator names one start time on its own
//!    clock, each worker turns it into its own clock and starts then;
//! 3. workers send each interval's report as it closes (`intervals` lines them up by index, for
//!    progress) and their final report, which the caller merges (histograms add exactly).
//!
//! A worker that fails or disconnects ends the run everywhere: the others are told to abort.
//! The payloads are JSON values: this crate knows nothing of what a report holds.

pub mod clock;
pub mod coordinator;
pub mod intervals;
pub mod message;
pub mod worker;

pub use coordinator::{Coordinator, CoordinatorEvent, PodOutcome};
pub use worker::Worker;

/// Why a spread run could not go on: a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadError(pub String);

impl std::fmt::Display for SpreadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpreadError {}

impl SpreadError {
    pub fn new(message: impl Into<String>) -> SpreadError {
        SpreadError(message.into())
    }
}
