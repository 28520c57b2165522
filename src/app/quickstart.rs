//! `stampede quickstart`: on the managed default server, initialize pgbench at a small scale and
//! measure select-only and tpcb-like at 1, 4 and 16 clients; one table at the end.

use super::{CommandResult, Failure};
use crate::app::cli::QuickstartArgs;
use crate::conn::ConnFlags;
use crate::driver::Protocol;
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::loader::{parse_steps, InitStep};
use crate::family::pgbench::schema::{PartitionMethod, SchemaOptions};
use crate::family::pgbench::spec::{InitSpec, RunSpec};
use crate::family::pgbench::{init as pgbench_init, run as pgbench_run};
use crate::report::table;
use crate::server::resolve_target;

const CLIENT_COUNTS: [usize; 3] = [1, 4, 16];
const WORKLOADS: [&str; 2] = ["select-only", "tpcb-like"];

pub fn run(args: &QuickstartArgs) -> CommandResult {
    if args.seconds == 0 || args.scale < 1 {
        return Err(Failure::input("--seconds and --scale must be at least 1"));
    }
    let target = resolve_target(&ConnFlags::default())?;
    let init = InitSpec {
        steps: parse_steps(InitStep::DEFAULT).expect("default steps parse"),
        schema: SchemaOptions {
            scale: args.scale,
            fillfactor: 100,
            unlogged: false,
            tablespace: None,
            index_tablespace: None,
            partitions: 0,
            partition_method: PartitionMethod::Range,
        },
        quiet: false,
    };
    pgbench_init::run(&init, &target, &mut |line| eprintln!("{line}"))?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut rows = Vec::new();
    for workload in WORKLOADS {
        for clients in CLIENT_COUNTS {
            eprintln!(
                "running {workload} with {clients} client(s) for {} s...",
                args.seconds
            );
            let spec = RunSpec::timed(
                vec![(ScriptChoice::Builtin(workload.into()), 1)],
                clients,
                clients.min(cores),
                args.seconds,
                Protocol::Prepared,
            );
            let report = pgbench_run::benchmark(&spec, &target, &mut |_| {})?;
            if report.aborted_clients > 0 {
                return Err(Failure::run(format!(
                    "{workload} at {clients} clients was aborted"
                )));
            }
            rows.push(vec![
                workload.to_string(),
                clients.to_string(),
                format!("{:.0}", report.tps),
                format!("{:.3}", report.latency_ms.p50),
                format!("{:.3}", report.latency_ms.p99),
            ]);
        }
    }
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
