//! `stampede dbstress run … --pods N`: what dbstress states for the one spread path. Its
//! sessions split over the pods, a thread each as on one host, their numbers (and so
//! `--anti-dead`'s object slices) the whole run's, one seed for all; pod 0 reports the merged
//! run, per statement too.

use super::args::RunArgs;
use crate::pods::launch::require_named_server;
use crate::pods::spread::{Split, Spread};
use stampede_base::error::{CommandResult, Failure};

/// Launches the run as an Indexed Job once its options are checked.
pub fn launch(args: &RunArgs, sessions: u32, seed: u64) -> CommandResult {
    let mariadb = matches!(args.connection.engine.as_str(), "mariadb" | "mysql");
    Spread {
        command: &["dbstress", "run"],
        kube: &args.kube,
        split: Split {
            count: sessions as usize,
            what: "session(s)",
            option: "--sessions ",
        },
        checks: reachable(args, mariadb),
        seed: ("--seed", seed),
        json: args.json.as_ref().map(|p| p.display().to_string()),
        ship: None,
        extra: Vec::new(),
        password_variable: if mariadb { "MYSQL_PWD" } else { "PGPASSWORD" },
    }
    .launch()
}

/// The pods reach the server over the network: it is named, and not this machine's socket.
fn reachable(args: &RunArgs, mariadb: bool) -> CommandResult {
    let connection = &args.connection;
    if !mariadb {
        return require_named_server(
            connection.connection.host.as_deref(),
            &[connection.connection.dbname.as_ref()],
        );
    }
    let host = connection.connection.host.as_deref();
    if host.is_none_or(|h| h == "localhost") || connection.socket.is_some() {
        return Err(Failure::input(
            "--pods needs a server the pods can reach: give -h HOST (not localhost, which \
             is this machine's socket)",
        ));
    }
    Ok(())
}
