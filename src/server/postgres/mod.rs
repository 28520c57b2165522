//! PostgreSQL servers stampede owns: its binaries from every source (the system, a bin/ path,
//! zonky's builds, Debian's packages, builds from a tarball or a git checkout, a checkout's
//! commits one after another for bisect), its clusters (initdb, start, stop as a non-root
//! user), the managed default server, the lab's provisioned clusters and their profiles.

pub mod binaries;
pub mod build;
pub mod build_tree;
pub mod cluster;
pub mod download;
pub mod git_source;
pub mod managed;
pub mod profile;
pub mod provision;
pub mod release;
