//! The pgbench family as a lab workload: loads with stampede's pgbench loader, runs through the
//! same path as `stampede pgbench`, and keeps only what follows the warmup. Seed 002's two
//! variants share it: `pgbench-extra-indexes` (pgbench's scripts over four more indexes) and
//! `analytics` (its four queries, a variant each, over a dataset with the accounts copy).

use std::time::Duration;

use super::command::{InitSpec, RunSpec, VacuumBeforeRun};
use super::{init as pgbench_init, run as pgbench_run};
use crate::family::api::{
    LabWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, ALL_PROTOCOLS,
};
use crate::family::common::measure::{measure_after_warmup, message, RunOutcome};
use crate::family::pgbench::analytics;
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::builtins;
use crate::family::pgbench::loader::{parse_steps, InitStep};
use crate::family::pgbench::schema::{PartitionMethod, SchemaOptions};
use crate::server::target::ConnSpec;

/// Which of the pgbench-schema workloads: pgbench's own, seed 002's variant with four extra
/// indexes, or seed 002's analytical queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Plain,
    ExtraIndexes,
    Analytics,
}

pub struct PgbenchLab {
    flavor: Flavor,
}

/// The lab workloads on pgbench's tables.
pub const KINDS: &[LabWorkloadKind] = &[
    LabWorkloadKind {
        name: "pgbench",
        protocols: ALL_PROTOCOLS,
        create: |options| PgbenchLab::create("pgbench", Flavor::Plain, options),
        metrics: &[],
    },
    LabWorkloadKind {
        name: "pgbench-extra-indexes",
        protocols: ALL_PROTOCOLS,
        create: |options| {
            PgbenchLab::create("pgbench-extra-indexes", Flavor::ExtraIndexes, options)
        },
        metrics: &[],
    },
    LabWorkloadKind {
        name: "analytics",
        protocols: ALL_PROTOCOLS,
        create: |options| PgbenchLab::create("analytics", Flavor::Analytics, options),
        metrics: &[],
    },
];

impl PgbenchLab {
    /// Refuses options: the pgbench workloads take their settings from the lab's own keys.
    fn create(
        name: &str,
        flavor: Flavor,
        options: &[(String, String)],
    ) -> Result<Box<dyn LabWorkload>, String> {
        match options.first() {
            Some((option, _)) => Err(format!(
                "workload \"{name}\": options: unknown option \"{option}\"; this workload takes none"
            )),
            None => Ok(Box::new(PgbenchLab { flavor })),
        }
    }
}

fn choice(script: &str) -> ScriptChoice {
    if script.ends_with(".sql") {
        ScriptChoice::File(script.to_string())
    } else {
        ScriptChoice::Builtin(script.to_string())
    }
}

impl LabWorkload for PgbenchLab {
    fn load(&self, conn: &ConnSpec, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), String> {
        let mut steps = parse_steps(InitStep::DEFAULT)?;
        if self.flavor == Flavor::ExtraIndexes {
            steps.push(InitStep::ExtraIndexes);
        }
        let spec = InitSpec {
            steps,
            schema: SchemaOptions {
                scale,
                fillfactor: 100,
                unlogged: false,
                partitions: 0,
                partition_method: PartitionMethod::Range,
            },
            quiet: true,
        };
        pgbench_init::run(&spec, conn, note).map_err(message)?;
        if self.flavor == Flavor::Analytics {
            // Part of the dataset, so that no run pays for it.
            pgbench_run::create_accounts_copy_blocking(conn, note).map_err(message)?;
        }
        Ok(())
    }

    fn writes(&self, script: &str) -> bool {
        // Custom scripts may write; only the read-only builtins are known not to.
        script != "select-only" && !script.starts_with("analytics-")
    }

    fn family(&self, script: &str) -> String {
        if self.flavor == Flavor::Analytics {
            return "analytics".into();
        }
        if self.writes(script) { "write" } else { "read" }.to_string()
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        if self.flavor == Flavor::Analytics && !analytics_variants().iter().any(|v| v == script) {
            return Err(format!(
                "workload \"analytics\": unknown query \"{script}\"; the queries are: {}",
                analytics_variants().join(", ")
            ));
        }
        match choice(script) {
            ScriptChoice::Builtin(name) => builtins::find_builtin(&name).map(|_| ()),
            ScriptChoice::File(path) => std::fs::metadata(&path)
                .map(|_| ())
                .map_err(|e| format!("could not open file \"{path}\": {e}")),
        }
    }

    fn default_variants(&self) -> Vec<String> {
        match self.flavor {
            Flavor::Analytics => analytics_variants(),
            Flavor::Plain | Flavor::ExtraIndexes => vec!["tpcb-like".into()],
        }
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        // Through the path of `stampede pgbench`, so the lab measures what the command does.
        measure_after_warmup(request, observer, &mut |seconds, on_event| {
            let report =
                pgbench_run::benchmark(&run_spec(request, seconds)?, request.conn, on_event)
                    .map_err(message)?;
            let cpu = &report.client_cpu;
            Ok(RunOutcome {
                aborted_clients: report.aborted_clients,
                client_cpu: Duration::from_secs_f64(cpu.user_s + cpu.system_s),
            })
        })
    }
}

/// Seed 002's queries, each a variant of its own (a cell per query).
fn analytics_variants() -> Vec<String> {
    analytics::QUERIES
        .iter()
        .map(|(name, _, _)| name.to_string())
        .collect()
}

fn run_spec(request: &RunRequest<'_>, seconds: u64) -> Result<RunSpec, String> {
    let protocol = request.protocol;
    Ok(RunSpec {
        // The lab hands each run pristine, vacuumed data.
        vacuum: VacuumBeforeRun::None,
        // Builtins read the scale from the data; custom scripts get it as :scale.
        scale_given: request.script.ends_with(".sql").then_some(request.scale),
        stop: Some(request.stop.clone()),
        cpu_affinity: request.client_cpus.map(<[usize]>::to_vec),
        untracked_control: true,
        ..RunSpec::timed(
            vec![(choice(request.script), 1)],
            request.clients,
            request.threads.clamp(1, request.clients),
            seconds,
            protocol,
        )
    })
}
