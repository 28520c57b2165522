//! stampede: a benchmark lab for PostgreSQL and MariaDB/MySQL in one binary.
//!
//! Data flows left to right: spec (`app::cli`, `lab::spec`) → plan (`lab`) → `server` →
//! workload (`family`) → `driver` → `probe` → `store` → `stampede_stats` → `report`. `app` holds the
//! generic commands; each workload family keeps everything of its own under `family/<name>/`.
//!
//! The layers below this crate are crates of their own (`crates/`), so none of them can import
//! anything above it; the code uses them under their own names (`stampede_conn`,
//! `stampede_wire`, `stampede_stats`, …), so `crate::` always means a folder of this crate.

pub mod app;
pub mod bisect;
pub mod driver;
pub mod family;
pub mod lab;
pub mod live;
pub mod pods;
pub mod probe;
pub mod report;
pub mod server;

#[cfg(test)]
mod tidy;
