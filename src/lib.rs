//! stampede: a PostgreSQL benchmark lab in one binary.
//!
//! Data flows left to right: spec (`app::cli`, `lab::spec`) → plan (`lab`) → `server` →
//! workload (`family`) → `driver` → `probe` → `store` → `analysis` → `report`. `app` holds the
//! generic commands; each workload family keeps everything of its own under `family/<name>/`.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod app;
pub mod driver;
pub mod error;
pub mod family;
pub mod lab;
pub mod pg;
pub mod probe;
pub mod report;
pub mod script;
pub mod server;
pub mod store;
pub mod sys;
pub mod tls;
