//! What each subcommand does: turns parsed flags into specs, resolves the target server, runs
//! workload and driver, and hands the numbers to `report`.

pub mod compare;
pub mod dbstress;
pub mod lab;
pub mod lab_dbstress;
pub mod lab_pgbench;
pub mod lab_run;
pub mod lab_sysbench;
pub mod lab_tpcc;
pub mod pgbench;
pub mod pgbench_init;
pub mod pgbench_run;
pub mod quickstart;
pub mod report;
pub mod server;
pub mod sysbench;
pub mod tpcc;
pub mod tpcc_run;

use crate::server::managed::{default_home, ManagedServer};
use crate::server::target::{ConnFlags, ConnSpec};

/// Why a command failed, which decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: options, scripts, or a target that cannot be used (exit 1).
    Input(String),
    /// The run itself failed or was aborted (exit 2).
    Run(String),
    /// The run ended with results already printed, but incomplete (exit 2, message printed).
    Incomplete,
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Input(_) => 1,
            Failure::Run(_) | Failure::Incomplete => 2,
        }
    }
}

pub type CommandResult = Result<(), Failure>;

/// The connection to use: the one the user gave, or else the managed default server (started or
/// created as needed, announced in one line on stderr).
pub fn resolve_target(flags: &ConnFlags) -> Result<ConnSpec, Failure> {
    if !flags.is_unspecified() {
        return ConnSpec::resolve(flags).map_err(Failure::Input);
    }
    let (server, created) =
        ManagedServer::ensure_running(&default_home()).map_err(Failure::Input)?;
    if created {
        eprintln!("created the managed default server");
    }
    eprintln!("{}", server.describe());
    Ok(server.conn_spec())
}

/// A small tokio runtime for control-plane work (setup queries, the loader).
pub fn control_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()
        .expect("tokio runtime")
}
