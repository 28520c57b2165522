//! `stampede server status|start|stop|destroy` for the managed default server.

use super::{CommandResult, Failure};
use crate::cli::ServerAction;
use crate::server::managed::{default_home, ManagedServer};

pub fn run(action: &ServerAction) -> CommandResult {
    let home = default_home();
    if let ServerAction::Start = action {
        let (server, created) = ManagedServer::ensure_running(&home).map_err(Failure::Input)?;
        if created {
            println!("created the managed default server");
        }
        println!("{}", server.describe());
        return Ok(());
    }
    let Some(server) = ManagedServer::open(&home).map_err(Failure::Input)? else {
        println!(
            "no managed default server under {} (it is created on first use)",
            home.display()
        );
        return Ok(());
    };
    match action {
        ServerAction::Status => server.status_lines().iter().for_each(|l| println!("{l}")),
        ServerAction::Stop => {
            if server.stop().map_err(Failure::Run)? {
                println!("stopped the managed default server");
            } else {
                println!("the managed default server was not running");
            }
        }
        ServerAction::Destroy => {
            let root = server.destroy().map_err(Failure::Run)?;
            println!(
                "destroyed the managed default server ({} removed)",
                root.display()
            );
        }
        ServerAction::Start => unreachable!("handled above"),
    }
    Ok(())
}
