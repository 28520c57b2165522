//! The pgbench family as a lab workload: loads with stampede's pgbench loader, runs through the
//! same path as `stampede pgbench`, and keeps only what follows the warmup. Study 002's two
//! variants share it: `pgbench-extra-indexes` (pgbench's scripts over four more indexes) and
//! `analytics` (its four queries, a variant each, over a dataset with the accounts copy).

use std::time::Duration;

use super::spec::{InitSpec, RunSpec, VacuumBeforeRun};
use super::{init as pgbench_init, run as pgbench_run, setup as pgbench_setup};
use crate::family::api::{
    CreateWorkload, FamilyWorkload, LabWorkload, LabWorkloadKind, Measurement, RunObserver,
    RunRequest, SpecFiles, POSTGRES_ONLY,
};
use crate::family::common::measure::{measure_after_warmup, RunOutcome};
use crate::family::common::options::{self, OptionsError};
use crate::family::pgbench::analytics;
use crate::family::pgbench::args::ScriptChoice;
use crate::family::pgbench::builtins::{self, Builtin};
use crate::family::pgbench::loader::{parse_steps, InitStep};
use crate::family::pgbench::schema::SchemaOptions;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;

/// Which of the pgbench-schema workloads: pgbench's own, study 002's variant with four extra
/// indexes, or study 002's analytical queries.
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
    pgbench_kind("pgbench", |options| {
        PgbenchLab::create("pgbench", Flavor::Plain, options)
    }),
    pgbench_kind("pgbench-extra-indexes", |options| {
        PgbenchLab::create("pgbench-extra-indexes", Flavor::ExtraIndexes, options)
    }),
    pgbench_kind("analytics", |options| {
        PgbenchLab::create("analytics", Flavor::Analytics, options)
    }),
];

/// What the pgbench workloads share: PostgreSQL only, scripts that end in `.sql` are files.
const fn pgbench_kind(name: &'static str, create: CreateWorkload) -> LabWorkloadKind {
    LabWorkloadKind::new(name, create)
        .engines(POSTGRES_ONLY)
        .metrics(&[crate::family::common::measure::QPS])
        .files(SpecFiles {
            scripts: Some(".sql"),
            options: &[],
        })
}

/// The pgbench workloads take their settings from the lab's own keys.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

impl PgbenchLab {
    fn create(
        name: &str,
        flavor: Flavor,
        options: &toml::Table,
    ) -> Result<Box<dyn LabWorkload>, OptionsError> {
        options::parse::<NoOptions>(name, options)?;
        Ok(Box::new(PgbenchLab { flavor }))
    }
}

/// What one run executes: a builtin (study 002's queries are builtins too) or a script file.
pub enum PgbenchVariant {
    Builtin(&'static Builtin),
    File(String),
}

impl PgbenchVariant {
    fn choice(&self) -> ScriptChoice {
        match self {
            PgbenchVariant::Builtin(builtin) => ScriptChoice::Builtin(builtin.name.to_string()),
            PgbenchVariant::File(path) => ScriptChoice::File(path.clone()),
        }
    }
}

impl FamilyWorkload for PgbenchLab {
    type Variant = PgbenchVariant;

    fn variant(&self, name: &str) -> Result<PgbenchVariant, Failure> {
        if self.flavor == Flavor::Analytics && !analytics_variants().iter().any(|v| v == name) {
            return Err(Failure::input(format!(
                "workload \"analytics\": unknown query \"{name}\"; the queries are: {}",
                analytics_variants().join(", ")
            )));
        }
        if name.ends_with(".sql") {
            return std::fs::metadata(name)
                .map(|_| PgbenchVariant::File(name.to_string()))
                .map_err(|e| Failure::input(format!("could not open file \"{name}\": {e}")));
        }
        Ok(PgbenchVariant::Builtin(builtins::find_builtin(name)?))
    }

    fn default_variants(&self) -> Vec<String> {
        match self.flavor {
            Flavor::Analytics => analytics_variants(),
            Flavor::Plain | Flavor::ExtraIndexes => vec!["tpcb-like".into()],
        }
    }

    fn load(&self, conn: &Endpoint, scale: i64, note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
        let conn = conn.postgres("pgbench")?;
        let mut steps = parse_steps(InitStep::DEFAULT)?;
        if self.flavor == Flavor::ExtraIndexes {
            steps.push(InitStep::ExtraIndexes);
        }
        let spec = InitSpec {
            steps,
            schema: SchemaOptions::at_scale(scale),
            quiet: true,
        };
        pgbench_init::run(&spec, conn, note)?;
        if self.flavor == Flavor::Analytics {
            // Part of the dataset, so that no run pays for it.
            pgbench_setup::create_accounts_copy_blocking(conn, note)?;
        }
        Ok(())
    }

    fn writes(&self, variant: &PgbenchVariant) -> bool {
        // Custom scripts may write; only the read-only builtins are known not to.
        match variant {
            PgbenchVariant::Builtin(builtin) => {
                builtin.name != "select-only" && !builtin.name.starts_with("analytics-")
            }
            PgbenchVariant::File(_) => true,
        }
    }

    fn group(&self, variant: &PgbenchVariant) -> String {
        if self.flavor == Flavor::Analytics {
            return "analytics".into();
        }
        if FamilyWorkload::writes(self, variant) {
            "write"
        } else {
            "read"
        }
        .to_string()
    }

    fn run(
        &self,
        variant: &PgbenchVariant,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let conn = request.conn.postgres("pgbench")?;
        // Through the path of `stampede pgbench`, so the lab measures what the command does.
        measure_after_warmup(request, observer, &mut |seconds, on_event| {
            let report =
                pgbench_run::benchmark_here(&run_spec(variant, request, seconds), conn, on_event)?;
            let cpu = &report.client_cpu;
            Ok(RunOutcome {
                aborted_clients: report.aborted_clients,
                client_cpu: Duration::from_secs_f64(cpu.user_s + cpu.system_s),
                client_transactions: report
                    .fairness
                    .as_ref()
                    .map(|f| f.per_client.clone())
                    .unwrap_or_default(),
            })
        })
    }
}

/// Study 002's queries, each a variant of its own (a cell per query).
fn analytics_variants() -> Vec<String> {
    analytics::QUERIES
        .iter()
        .map(|(name, _, _)| name.to_string())
        .collect()
}

fn run_spec(variant: &PgbenchVariant, request: &RunRequest<'_>, seconds: u64) -> RunSpec {
    let protocol = request.protocol;
    RunSpec {
        // The lab hands each run pristine, vacuumed data.
        vacuum: VacuumBeforeRun::None,
        // Builtins read the scale from the data; custom scripts get it as :scale.
        scale_given: matches!(variant, PgbenchVariant::File(_)).then_some(request.scale),
        stop: Some(request.stop.clone()),
        cpu_affinity: request.client_cpus.map(<[usize]>::to_vec),
        untracked_control: true,
        stall_timeout: request.stall_timeout,
        share: request.share.clone(),
        ..RunSpec::timed(
            vec![(variant.choice(), 1)],
            request.clients,
            request.threads.clamp(1, request.clients),
            seconds,
            protocol,
        )
    }
}
