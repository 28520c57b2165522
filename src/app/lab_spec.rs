//! A lab spec as the lab commands read it: the spec file, and one workload implementation
//! per `[[workload]]` with its options checked.

use std::path::Path;

use super::Failure;
use crate::family::{self, api::LabWorkload};
use crate::lab::spec::{self, LabSpec};

/// The spec and one workload implementation per `[[workload]]`; a workload without `scripts`
/// gets its default variants.
pub fn load_spec(path: &Path) -> Result<(LabSpec, Vec<Box<dyn LabWorkload>>), Failure> {
    let mut spec = spec::load(path).map_err(|e| Failure::input(e.to_string()))?;
    let workloads = workloads(&spec)?;
    for (workload, implementation) in spec.workloads.iter_mut().zip(&workloads) {
        if workload.scripts.is_empty() {
            workload.scripts = implementation.default_variants();
        }
    }
    Ok((spec, workloads))
}

fn workloads(spec: &LabSpec) -> Result<Vec<Box<dyn LabWorkload>>, Failure> {
    spec.workloads
        .iter()
        .map(|w| {
            let kind = family::lab_workload(&w.name).expect("the spec admits only known workloads");
            (kind.create)(&w.options).map_err(|e| Failure::input(e.message))
        })
        .collect()
}
