//! What `stampede quickstart` measures on pgbench's tables: initialize at a small scale, then
//! select-only and tpcb-like at 1, 4 and 16 clients, prepared, for a few seconds each. The
//! command (`app/quickstart.rs`) only resolves the server and prints the table.

use crate::driver::Protocol;
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::loader::{parse_steps, InitStep};
use crate::family::pgbench::schema::SchemaOptions;
use crate::family::pgbench::spec::{InitSpec, RunSpec};
use crate::family::pgbench::{init, run};
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;

pub const CLIENT_COUNTS: [usize; 3] = [1, 4, 16];
pub const WORKLOADS: [&str; 2] = ["select-only", "tpcb-like"];

/// One measured cell of the quickstart.
pub struct Cell {
    pub workload: &'static str,
    pub clients: usize,
    pub tps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Initializes pgbench's tables at `scale` on `target` and measures every cell for `seconds`;
/// `say` gets the progress lines.
pub fn measure(
    scale: i64,
    seconds: u64,
    target: &ConnSpec,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Cell>, Failure> {
    let spec = InitSpec {
        steps: parse_steps(InitStep::DEFAULT).expect("default steps parse"),
        schema: SchemaOptions::at_scale(scale),
        quiet: false,
    };
    init::run(&spec, target, &mut |line| say(line))?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut cells = Vec::new();
    for workload in WORKLOADS {
        for clients in CLIENT_COUNTS {
            say(&format!(
                "running {workload} with {clients} client(s) for {seconds} s..."
            ));
            let spec = RunSpec::timed(
                vec![(ScriptChoice::Builtin(workload.into()), 1)],
                clients,
                clients.min(cores),
                seconds,
                Protocol::Prepared,
            );
            let report = run::benchmark_here(&spec, target, &mut |_| {})?;
            if report.aborted_clients > 0 {
                return Err(Failure::run(format!(
                    "{workload} at {clients} clients was aborted"
                )));
            }
            cells.push(Cell {
                workload,
                clients,
                tps: report.tps,
                p50_ms: report.latency_ms.p50,
                p99_ms: report.latency_ms.p99,
            });
        }
    }
    Ok(cells)
}
