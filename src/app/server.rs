//! `stampede server status|start|stop|destroy` for the managed default server.

use super::{CommandResult, Failure};
use crate::app::cli::ServerAction;
use crate::report::table;
use crate::server::binaries::Binaries;
use crate::server::download;
use crate::server::managed::{default_home, ManagedServer};

pub fn run(action: &ServerAction) -> CommandResult {
    if let ServerAction::Versions = action {
        return versions();
    }
    let home = default_home();
    if let ServerAction::Start = action {
        let (server, created) =
            ManagedServer::ensure_running(&home).map_err(Failure::into_input)?;
        if created {
            println!("created the managed default server");
        }
        println!("{}", server.describe());
        return Ok(());
    }
    let Some(server) = ManagedServer::open(&home).map_err(Failure::into_input)? else {
        println!(
            "no managed default server under {} (it is created on first use)",
            home.display()
        );
        return Ok(());
    };
    match action {
        ServerAction::Status => server.status_lines().iter().for_each(|l| println!("{l}")),
        ServerAction::Stop => {
            if server.stop()? {
                println!("stopped the managed default server");
            } else {
                println!("the managed default server was not running");
            }
        }
        ServerAction::Destroy => {
            let root = server.destroy()?;
            println!(
                "destroyed the managed default server ({} removed)",
                root.display()
            );
        }
        ServerAction::Start | ServerAction::Versions => unreachable!("handled above"),
    }
    Ok(())
}

/// Majors 12–18: the system's binaries, the newest build on Maven Central (zonky), and what is
/// cached.
fn versions() -> CommandResult {
    let root = download::cache_root();
    let cached = download::cached_versions(&root);
    let system = Binaries::find_best().ok();
    let mut rows = Vec::new();
    for major in 12..=18u32 {
        let available = download::newest_available(&major.to_string()).unwrap_or_else(|e| {
            format!(
                "unavailable ({})",
                e.message().split(": ").last().unwrap_or("")
            )
        });
        let here: Vec<String> = cached
            .iter()
            .filter(|(v, _)| v.split('.').next() == Some(&major.to_string()))
            .map(|(v, _)| v.clone())
            .collect();
        let system_note = system
            .as_ref()
            .filter(|b| b.major() == Some(major))
            .map(|b| b.bin_dir.display().to_string())
            .unwrap_or_default();
        rows.push(vec![
            major.to_string(),
            available,
            here.join(", "),
            system_note,
        ]);
    }
    print!(
        "{}",
        table::render(
            &["major", "newest on Maven Central", "cached", "system"],
            &rows
        )
    );
    println!("cache: {}", root.display());
    Ok(())
}
