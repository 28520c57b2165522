//! The sysbench family as a lab workload: `scripts` are sysbench test names, `scale` is the
//! table size in units of 10,000 rows (sysbench's default table), `options` are sysbench's own
//! (`tables`, `rand_type`, `range_size`, ...). Loads with `sysbench prepare`'s loader and
//! measures through the same plans as `stampede sysbench run`. `sysbench-microbench` runs
//! Callaghan's suite the same way, its tests as the steps of one sequence.

use std::time::Duration;

use clap::Parser;

use super::command::{oltp_options, test_plan};
use crate::driver::RunLimit;
use crate::error::Failure;
use crate::family::api::{
    LabWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, ALL_PROTOCOLS,
};
use crate::family::common::measure as lab_run;
use crate::family::sysbench::args::SysbenchArgs;
use crate::family::sysbench::catalog;
use crate::family::sysbench::microbench::{self, Group, MicroTest};
use crate::family::sysbench::options::OltpOptions;
use crate::family::sysbench::schema::{self, Preparer};
use crate::server::target::ConnSpec;

/// Rows per table per unit of a lab's `scale`.
pub const ROWS_PER_SCALE: i64 = 10_000;

pub struct SysbenchLab {
    options: OltpOptions,
}

/// Callaghan's microbenchmark suite as one sequence: `scripts` are its test labels
/// (`point-query.pre_range=100`, all 47 in suite order by default), run in order on one data
/// copy per target, with postwrite (VACUUM, CHECKPOINT, settle) where writes meet reads.
pub struct MicrobenchLab {
    base: OltpOptions,
    /// Seconds to settle after postwrite; None: the suite's default for the table size.
    settle: Option<u64>,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct OptionsOnly {
    #[command(flatten)]
    args: SysbenchArgs,
}

/// The spec's `options = { ... }`, read as sysbench's command-line options.
fn parse_options(
    workload: &str,
    options: &[(String, String)],
) -> Result<(SysbenchArgs, OltpOptions), String> {
    let argv: Vec<String> = options
        .iter()
        .map(|(name, value)| format!("--{}={value}", name.replace('_', "-")))
        .collect();
    let parsed = OptionsOnly::try_parse_from(&argv).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        format!(
            "workload \"{workload}\": options: {}",
            first.trim_start_matches("error: ")
        )
    })?;
    let options = oltp_options(&parsed.args).map_err(|failure| match failure {
        Failure::Input(m) | Failure::Run(m) => format!("workload \"{workload}\": options: {m}"),
        Failure::Incomplete => format!("workload \"{workload}\": options"),
    })?;
    Ok((parsed.args, options))
}

/// sysbench's tests, and Callaghan's suite as one sequence.
pub const KINDS: &[LabWorkloadKind] = &[
    LabWorkloadKind {
        name: "sysbench",
        protocols: ALL_PROTOCOLS,
        create: |options| Ok(Box::new(SysbenchLab::new(options)?)),
        metrics: &[],
    },
    LabWorkloadKind {
        name: "sysbench-microbench",
        protocols: ALL_PROTOCOLS,
        create: |options| Ok(Box::new(MicrobenchLab::new(options)?)),
        metrics: &[],
    },
];

impl SysbenchLab {
    fn new(options: &[(String, String)]) -> Result<SysbenchLab, String> {
        let (_, options) = parse_options("sysbench", options)?;
        Ok(SysbenchLab { options })
    }
}

impl MicrobenchLab {
    fn new(options: &[(String, String)]) -> Result<MicrobenchLab, String> {
        let (args, base) = parse_options("sysbench-microbench", options)?;
        Ok(MicrobenchLab {
            base,
            settle: args.postwrite_settle,
        })
    }
}

/// The options at a lab scale: `scale` units of 10,000 rows per table.
fn sized(options: &OltpOptions, scale: i64) -> OltpOptions {
    OltpOptions {
        table_size: (scale * ROWS_PER_SCALE).clamp(1, u32::MAX as i64) as u32,
        ..options.clone()
    }
}

/// The group a sysbench test belongs to, as Callaghan's tables group his microbenchmarks.
pub fn family(test: &str) -> &'static str {
    let group = match test {
        "oltp_point_select"
        | "select_random_points"
        | "oltp_inlist_select"
        | "oltp_points_covered" => Group::Point,
        "oltp_read_only" | "oltp_read_only_count" | "select_random_ranges" => {
            Group::RangeAggregation
        }
        "oltp_range_covered" | "oltp_scan" => Group::RangeNoAggregation,
        _ => Group::Write,
    };
    group.name()
}

impl LabWorkload for SysbenchLab {
    fn load(&self, conn: &ConnSpec, scale: i64, _note: &mut dyn FnMut(&str)) -> Result<(), String> {
        load(conn, &sized(&self.options, scale))
    }

    fn writes(&self, script: &str) -> bool {
        catalog::generate(script, &self.options, 1).is_ok_and(|t| t.writes)
    }

    fn family(&self, script: &str) -> String {
        family(script).to_string()
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        if script == "bulk_insert" {
            return Err(
                "workload \"sysbench\": bulk_insert writes to tables of its own, not the sbtest \
                 tables the lab loads; run it with `stampede sysbench run bulk_insert`"
                    .into(),
            );
        }
        catalog::generate(script, &self.options, 1).map(|_| ())
    }

    fn default_variants(&self) -> Vec<String> {
        vec!["oltp_read_write".into()]
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        let options = sized(&self.options, request.scale);
        measure(request, observer, request.script, &options)
    }
}

impl LabWorkload for MicrobenchLab {
    fn load(&self, conn: &ConnSpec, scale: i64, _note: &mut dyn FnMut(&str)) -> Result<(), String> {
        load(conn, &sized(&self.base, scale))
    }

    fn writes(&self, script: &str) -> bool {
        microbench::find(script).is_ok_and(|t| t.group() == Group::Write)
    }

    fn family(&self, script: &str) -> String {
        microbench::find(script).map_or_else(|_| script.to_string(), |t| t.group().name().into())
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        microbench::find(script).map(|_| ())
    }

    fn default_variants(&self) -> Vec<String> {
        microbench::tests().iter().map(MicroTest::label).collect()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn between_steps(
        &self,
        conn: &ConnSpec,
        previous: &str,
        next: &str,
        scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        if !microbench::postwrite_between(&microbench::find(previous)?, &microbench::find(next)?) {
            return Ok(());
        }
        let options = sized(&self.base, scale);
        let settle = self
            .settle
            .unwrap_or_else(|| microbench::default_settle_s(options.tables, options.table_size));
        note(&format!(
            "postwrite: VACUUM (ANALYZE, INDEX_CLEANUP ON), CHECKPOINT, settle {settle} s"
        ));
        crate::pg::control_runtime().block_on(async {
            let client = schema::connect(conn).await?;
            schema::postwrite(&client, options.tables).await
        })?;
        std::thread::sleep(Duration::from_secs(settle));
        Ok(())
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        let test = microbench::find(request.script)?;
        let options = test.options(&sized(&self.base, request.scale));
        measure(request, observer, test.lua, &options)
    }
}

/// Loads the sbtest tables with `sysbench prepare`'s loader.
fn load(conn: &ConnSpec, options: &OltpOptions) -> Result<(), String> {
    let preparer = Preparer {
        conn: conn.clone(),
        options: options.clone(),
        connections: crate::probe::cpu::cores(),
        seed: 1,
        rows_loaded: Default::default(),
    };
    crate::pg::control_runtime().block_on(preparer.prepare(&|_| {}))
}

/// The warmup, then the measured run of sysbench test `test`, through the plans of
/// `stampede sysbench run`.
fn measure(
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
    test: &str,
    options: &OltpOptions,
) -> Result<Measurement, String> {
    let protocol = request.protocol;
    lab_run::warmup_and_measure(request, observer, &|seconds| {
        let limit = RunLimit::Duration(Duration::from_secs(seconds));
        let planned = test_plan(
            test,
            options,
            request.conn,
            request.clients as u32,
            protocol,
            limit,
            lab_run::seed(),
        )
        .map_err(lab_run::message)?;
        Ok(planned.plan)
    })
}
