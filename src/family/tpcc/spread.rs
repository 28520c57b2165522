//! `stampede tpcc run … --pods N`: what TPROC-C states for the one spread path. Its virtual
//! users split over the pods, one thread each, with one seed for all (the same NURand
//! constants, each user's own stream); the run itself is `run.rs`'s, on this host or in a pod.

use super::args::RunArgs;
use super::run;
use crate::family::common::connection::endpoint;
use crate::pods::launch::require_named_server;
use crate::pods::spread::{Split, Spread};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::Endpoint;

/// Launches the run as an Indexed Job once its options are checked.
pub fn launch(args: &RunArgs) -> CommandResult {
    let settings = run::settings(args)?;
    crate::driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &settings.limit)?;
    Spread {
        command: &["tpcc", "run"],
        kube: &args.kube,
        split: Split {
            count: settings.vu,
            what: "virtual user(s)",
            option: "--vu ",
        },
        checks: reachable_postgres(args),
        seed: ("--seed", settings.seed),
        json: args.json.as_ref().map(|p| p.display().to_string()),
        ship: None,
        extra: Vec::new(),
        password_variable: "PGPASSWORD",
    }
    .launch()
}

/// A PostgreSQL server the pods can reach.
fn reachable_postgres(args: &RunArgs) -> CommandResult {
    if let Endpoint::Mysql(_) = endpoint(&args.connection)? {
        return Err(Failure::input(
            "--pods spreads TPROC-C on PostgreSQL only; run MariaDB/MySQL's from one client",
        ));
    }
    require_named_server(
        args.connection.connection.host.as_deref(),
        &[args.connection.connection.dbname.as_ref()],
    )
}
