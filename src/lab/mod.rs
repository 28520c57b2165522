//! The lab: a TOML matrix of targets × workloads × scales × clients × runs, expanded into an
//! interleaved plan, run on servers the lab manages or reaches by URL, resumable, recorded in the results database.

pub mod claims;
pub mod executor;
pub mod live_record;
pub mod lock;
pub mod plan;
pub mod pods;
pub mod round_metric;
pub mod rounds;
pub mod shards;
pub mod spec;
pub mod spec_text;
pub mod targets;
pub mod window;
