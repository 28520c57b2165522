//! `stampede quickstart`: on the managed default server, pgbench's quickstart cells
//! (`family::pgbench::quickstart`), one table at the end.

use super::{CommandResult, Failure};
use crate::app::cli::QuickstartArgs;
use crate::family::pgbench::quickstart;
use crate::report::table;
use crate::server::resolve_target;
use stampede_conn::ConnFlags;

pub fn run(args: &QuickstartArgs) -> CommandResult {
    if args.seconds == 0 || args.scale < 1 {
        return Err(Failure::input("--seconds and --scale must be at least 1"));
    }
    let target = resolve_target(&ConnFlags::default())?;
    let cells = quickstart::measure(args.scale, args.seconds, &target, &mut |line| {
        eprintln!("{line}")
    })?;
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|cell| {
            vec![
                cell.workload.to_string(),
                cell.clients.to_string(),
                format!("{:.0}", cell.tps),
                format!("{:.3}", cell.p50_ms),
                format!("{:.3}", cell.p99_ms),
            ]
        })
        .collect();
    println!();
    print!(
        "{}",
        table::render(&["workload", "clients", "tps", "p50 ms", "p99 ms"], &rows)
    );
    println!(
        "\nscale {}, {} s per cell, prepared protocol, unix socket. Next: `stampede pgbench --help`.",
        args.scale, args.seconds
    );
    Ok(())
}
