//! A run spread over the pods of a Kubernetes Indexed Job (`--pods N`).
//!
//! A family gets `--pods` by stating how its work splits (`spread.rs`) and running its one
//! pipeline with a `Place` (`place.rs`: this host, or one pod). On the user's side, `launch`
//! turns the command line into the pods' command line, the Job's manifests (`stampede_kube`)
//! and a followed run whose coordinator output comes back to the terminal. In each pod, `role` says which pod it is (from the Job's environment); pod 0 runs
//! the coordinator (`stampede_spread`) beside its own share; every pod runs its share of the
//! run's threads through the driver, starting at the agreed time, and sends its intervals and
//! result; pod 0 merges them into the run a single host would have reported. `terminal` frames a
//! pod's output for the launcher; `live_frames` carries the merged run's live numbers to a
//! launcher that serves `--metrics-addr`.

pub mod launch;
pub mod live_frames;
pub mod options;
pub mod place;
pub mod role;
pub mod spread;
pub mod summary;
pub mod terminal;
#[cfg(test)]
mod tests;

pub use options::KubeArgs;
pub use role::{PodRole, PodRun, PodShare, PodSummary, SpreadResult, SpreadSummary};
