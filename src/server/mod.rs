//! Targets: a connection the user gives, or a cluster stampede manages (binaries, initdb,
//! start/stop as a non-root user). Knows nothing about workloads.

pub mod binaries;
pub mod build;
pub mod build_tree;
pub mod cluster;
pub mod debian;
pub mod debian_packages;
pub mod download;
pub mod git_source;
pub mod managed;
pub mod mariadb;
pub mod profile;
pub mod provision;
pub mod release;
pub mod setup;

use crate::conn::{ConnFlags, ConnSpec};
use crate::error::Failure;
use managed::{default_home, ManagedServer};

/// The connection to use: the one the user gave, or else the managed default server (started or
/// created as needed, announced in one line on stderr).
pub fn resolve_target(flags: &ConnFlags) -> Result<ConnSpec, Failure> {
    if !flags.is_unspecified() {
        return ConnSpec::resolve(flags).map_err(Failure::into_input);
    }
    let mut setup = setup::SetupLine::on_stderr();
    let (server, created) =
        ManagedServer::ensure_running(&default_home(), &mut |event| setup.show(event))
            .map_err(Failure::into_input)?;
    if created {
        eprintln!("created the managed default server");
    }
    eprintln!("{}", server.describe());
    Ok(server.conn_spec())
}
