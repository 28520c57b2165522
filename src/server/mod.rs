//! Servers: a connection the user gives, or a server stampede manages — one folder per engine
//! (`postgres/`, `mariadb/`), importing nothing from each other; beside them what both share:
//! what getting binaries reports while it works (`setup`), downloads and digests (`fetch`),
//! Debian's signed archive and the servers unpacked from its packages (`debian/`), and what the
//! host gives a server (`host`: the account it runs as, the cache, the programs a step needs).
//! Knows nothing about workloads.

pub mod debian;
pub mod fetch;
pub mod host;
pub mod mariadb;
pub mod postgres;
pub mod profile;
pub mod setup;

use postgres::managed::{default_home, ManagedServer};
use stampede_base::error::Failure;
use stampede_conn::{ConnFlags, ConnSpec};
use std::ops::Range;

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

/// A TCP port on 127.0.0.1 that nothing listens on: the first free one of `range`, or any the
/// system hands out.
pub fn free_port(range: Option<Range<u16>>) -> Result<u16, Failure> {
    match range {
        Some(range) => range
            .clone()
            .find(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok())
            .ok_or_else(|| {
                Failure::run(format!(
                    "no free TCP port in {}..{}",
                    range.start, range.end
                ))
            }),
        None => std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .map_err(|e| Failure::run(format!("no free TCP port: {e}")).caused_by(e)),
    }
}
