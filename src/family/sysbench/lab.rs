//! The sysbench family as a lab workload: `scripts` are sysbench test names, `scale` is the
//! table size in units of 10,000 rows (sysbench's default table), `options` are sysbench's own
//! (`tables`, `rand_type`, `range_size`, ...). Loads with `sysbench prepare`'s loader and
//! measures through the same plans as `stampede sysbench run`. `sysbench-microbench` runs
//! Callaghan's suite the same way, its tests as the steps of one sequence.

use std::time::Duration;

use super::command::{oltp_options, test_plan};
use super::target::SysbenchTarget;
use crate::driver::RunLimit;
use crate::family::api::{FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest};
use crate::family::common::measure as lab_run;
use crate::family::common::options::{self, OptionsError};
use crate::family::sysbench::catalog;
use crate::family::sysbench::microbench::{self, Group, MicroTest};
use crate::family::sysbench::oltp_options::{OltpOptions, RandKind};
use crate::family::sysbench::subcommands::SysbenchArgs;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;

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

/// The spec's `options = { ... }`, read by sysbench's option names.
fn parse_options(
    workload: &str,
    options: &toml::Table,
) -> Result<(SysbenchArgs, OltpOptions), OptionsError> {
    let args: SysbenchArgs = options::parse(workload, options)?;
    RandKind::parse(&args.rand_type).map_err(|e| OptionsError::at(workload, "rand_type", e))?;
    let oltp = oltp_options(&args).map_err(|failure| {
        let message = failure.into_message();
        // The checks name the command-line flag (`--tables must be ...`): point at its key.
        let key = message
            .strip_prefix("--")
            .and_then(|rest| rest.split(' ').next())
            .map(|flag| flag.replace('-', "_"))
            .filter(|key| options.contains_key(key));
        match key {
            Some(key) => OptionsError::at(workload, &key, message),
            None => OptionsError::whole(workload, message),
        }
    })?;
    Ok((args, oltp))
}

/// sysbench's tests, and Callaghan's suite as one sequence.
pub const KINDS: &[LabWorkloadKind] = &[
    LabWorkloadKind::new("sysbench", |options| {
        Ok(Box::new(SysbenchLab::new(options)?))
    })
    .metrics(&[crate::family::common::measure::QPS]),
    LabWorkloadKind::new("sysbench-microbench", |options| {
        Ok(Box::new(MicrobenchLab::new(options)?))
    })
    .metrics(&[crate::family::common::measure::QPS]),
];

impl SysbenchLab {
    fn new(options: &toml::Table) -> Result<SysbenchLab, OptionsError> {
        if options.contains_key("postwrite_settle") {
            return Err(OptionsError::at(
                "sysbench",
                "postwrite_settle",
                "postwrite_settle: only sysbench-microbench has a postwrite step",
            ));
        }
        let (_, options) = parse_options("sysbench", options)?;
        Ok(SysbenchLab { options })
    }
}

impl MicrobenchLab {
    fn new(options: &toml::Table) -> Result<MicrobenchLab, OptionsError> {
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

/// A sysbench test the lab can run on its tables.
pub struct SysbenchTest {
    /// As sysbench names it (`oltp_read_only`).
    name: &'static str,
    writes: bool,
}

impl FamilyWorkload for SysbenchLab {
    type Variant = SysbenchTest;

    fn variant(&self, name: &str) -> Result<SysbenchTest, Failure> {
        if name == "bulk_insert" {
            return Err(Failure::input(
                "workload \"sysbench\": bulk_insert writes to tables of its own, not the sbtest \
                 tables the lab loads; run it with `stampede sysbench run bulk_insert`",
            ));
        }
        let generated = catalog::generate(name, &self.options, 1).map_err(Failure::input)?;
        let Some(name) = catalog::TESTS.into_iter().find(|test| *test == name) else {
            return Err(Failure::input(format!(
                "workload \"sysbench\": \"{name}\" is not one of sysbench's tests"
            )));
        };
        Ok(SysbenchTest {
            name,
            writes: generated.writes,
        })
    }

    fn default_variants(&self) -> Vec<String> {
        vec!["oltp_read_write".into()]
    }

    fn load(
        &self,
        conn: &Endpoint,
        scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        load(conn, &sized(&self.options, scale))
    }

    fn writes(&self, test: &SysbenchTest) -> bool {
        test.writes
    }

    fn group(&self, test: &SysbenchTest) -> String {
        family(test.name).to_string()
    }

    fn run(
        &self,
        test: &SysbenchTest,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let options = sized(&self.options, request.scale);
        measure(request, observer, test.name, &options)
    }
}

impl FamilyWorkload for MicrobenchLab {
    type Variant = MicroTest;

    fn variant(&self, name: &str) -> Result<MicroTest, Failure> {
        microbench::find(name).map_err(Failure::input)
    }

    fn default_variants(&self) -> Vec<String> {
        microbench::tests().iter().map(MicroTest::label).collect()
    }

    fn load(
        &self,
        conn: &Endpoint,
        scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        load(conn, &sized(&self.base, scale))
    }

    fn writes(&self, test: &MicroTest) -> bool {
        test.group() == Group::Write
    }

    fn group(&self, test: &MicroTest) -> String {
        test.group().name().into()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn between_steps(
        &self,
        conn: &Endpoint,
        previous: &MicroTest,
        next: &MicroTest,
        scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        if !microbench::postwrite_between(previous, next) {
            return Ok(());
        }
        let options = sized(&self.base, scale);
        let settle = self
            .settle
            .unwrap_or_else(|| microbench::default_settle_s(options.tables, options.table_size));
        let done = SysbenchTarget::of(conn).postwrite(options.tables)?;
        note(&format!("postwrite: {done}, settle {settle} s"));
        std::thread::sleep(Duration::from_secs(settle));
        Ok(())
    }

    fn run(
        &self,
        test: &MicroTest,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let options = test.options(&sized(&self.base, request.scale));
        measure(request, observer, test.lua, &options)
    }
}

/// Loads the sbtest tables with `sysbench prepare`'s loader.
fn load(conn: &Endpoint, options: &OltpOptions) -> Result<(), Failure> {
    SysbenchTarget::of(conn).prepare(options, stampede_base::cpu::cores(), 1, &|_| {})
}

/// The warmup, then the measured run of sysbench test `test`, through the plans of
/// `stampede sysbench run`.
fn measure(
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
    test: &str,
    options: &OltpOptions,
) -> Result<Measurement, Failure> {
    let protocol = request.protocol;
    let target = SysbenchTarget::of(request.conn);
    lab_run::warmup_and_measure(request, observer, &|seconds| {
        let limit = RunLimit::Duration(Duration::from_secs(seconds));
        let planned = test_plan(
            test,
            options,
            &target,
            request.clients as u32,
            protocol,
            limit,
            lab_run::seed(),
        )?;
        Ok(planned.plan)
    })
}
