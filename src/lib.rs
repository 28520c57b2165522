//! stampede: a benchmark lab for PostgreSQL and MariaDB/MySQL in one binary.
//!
//! Data flows left to right: spec (`app::cli`, `lab::spec`) → plan (`lab`) → `server` →
//! workload (`family`) → `driver` → `probe` → `store` → `analysis` → `report`. `app` holds the
//! generic commands; each workload family keeps everything of its own under `family/<name>/`.
//!
//! The layers below this crate are crates of their own (`crates/`), so none of them can import
//! anything above it; they are re-exported here under the names the code uses.

pub use stampede_base::{cpu, duration, error, signals, sys};
pub use stampede_conn as conn;
pub use stampede_conn::{pg, tls};
pub use stampede_lua as lua;
pub use stampede_script as script;
pub use stampede_stats as analysis;
pub use stampede_store as store;
pub use stampede_wire as wire;

pub mod app;
pub mod bisect;
pub mod driver;
pub mod family;
pub mod lab;
pub mod pods;
pub mod probe;
pub mod report;
pub mod server;

#[cfg(test)]
mod tidy;
