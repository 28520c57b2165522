//! Your own workload: captured from PostgreSQL's log (`stampede capture`) into a replay file
//! of sessions, statements, timing and parameters, and replayed against any server
//! (`stampede replay`, the lab's `replay` workload) with its sessions as clients, saying how
//! faithful the replay was.

pub mod admin;
pub mod args;
pub mod capture;
pub mod command;
pub mod lab;
pub mod log;
pub mod logging;
pub mod message;
pub mod normalize;
pub mod play;
pub mod replay_file;
pub mod report;
pub mod restore;
pub mod summary;
