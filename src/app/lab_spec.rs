//! A lab spec as the lab commands read it: the spec file, and one workload implementation
//! per `[[workload]]` with its options checked.

use std::path::Path;

use super::Failure;
use crate::family::api::LabWorkload;
use crate::lab::spec::{self, LabSpec};

/// The spec and one workload implementation per `[[workload]]`; a workload without `scripts`
/// gets its default variants.
pub fn load_spec(path: &Path) -> Result<(LabSpec, Vec<Box<dyn LabWorkload>>), Failure> {
    let spec = spec::load(path).map_err(|e| Failure::input(e.to_string()))?;
    spec::with_workloads(spec)
}
