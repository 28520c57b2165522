//! Where a workload command connects: `-h -p -U -d` (pgbench's letters), else PG* variables,
//! else the managed default server; and the one rule for counts that must be positive.

use clap::{ArgAction, Args};

use crate::error::Failure;
use crate::server::resolve_target;
use crate::server::target::{ConnFlags, ConnSpec};

/// Where the database is; unset ones follow PG* variables, or the managed default server.
/// `-h` is the host, as in pgbench and psql, so help is `-?`/`--help`: a command that
/// flattens these sets `disable_help_flag`.
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    #[arg(short = '?', long = "help", action = ArgAction::Help, help = "Print help")]
    pub help: Option<bool>,
    /// Server host or socket directory
    #[arg(short = 'h', long)]
    pub host: Option<String>,
    /// Server port
    #[arg(short = 'p', long)]
    pub port: Option<String>,
    /// User name
    #[arg(short = 'U', long)]
    pub user: Option<String>,
    /// Database name, or a postgresql:// URI
    #[arg(short = 'd', long)]
    pub dbname: Option<String>,
}

pub fn connection(args: &ConnectionArgs) -> Result<ConnSpec, Failure> {
    resolve_target(&ConnFlags {
        host: args.host.clone(),
        port: args.port.clone(),
        user: args.user.clone(),
        dbname: args.dbname.clone(),
    })
}

/// A count option that must be at least 1 and fit `T`.
pub fn positive<T: TryFrom<i64>>(value: i64, name: &str) -> Result<T, Failure> {
    T::try_from(value)
        .ok()
        .filter(|_| value >= 1)
        .ok_or_else(|| Failure::input(format!("--{name} must be at least 1 (not {value})")))
}
