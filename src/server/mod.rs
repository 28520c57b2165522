//! Targets: a connection the user gives, or a cluster stampede manages (binaries, initdb,
//! start/stop as a non-root user). Knows nothing about workloads.

pub mod binaries;
pub mod cluster;
pub mod control;
pub mod download;
pub mod managed;
pub mod profile;
pub mod target;
