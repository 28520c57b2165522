//! The sysbench family as a lab workload: `scripts` are sysbench test names, `scale` is the
//! table size in units of 10,000 rows (sysbench's default table), `options` are sysbench's own
//! (`tables`, `rand_type`, `range_size`, ...). Loads with `sysbench prepare`'s loader and
//! measures through the same plans as `stampede sysbench run`.

use std::time::Duration;

use clap::Parser;

use super::lab_run::{self, Window};
use super::sysbench::{oltp_options, test_plan, TestPlan};
use super::Failure;
use crate::cli::sysbench::SysbenchArgs;
use crate::driver::{self, DriverEvent, Protocol, RunLimit};
use crate::lab::workload::{LabWorkload, Measurement, RunObserver, RunRequest};
use crate::server::target::ConnSpec;
use crate::workload::sysbench::catalog;
use crate::workload::sysbench::microbench::Group;
use crate::workload::sysbench::options::OltpOptions;
use crate::workload::sysbench::schema::Preparer;

/// Rows per table per unit of a lab's `scale`.
pub const ROWS_PER_SCALE: i64 = 10_000;

pub struct SysbenchLab {
    options: OltpOptions,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct OptionsOnly {
    #[command(flatten)]
    args: SysbenchArgs,
}

impl SysbenchLab {
    /// From the spec's `options = { ... }`, read as sysbench's command-line options.
    pub fn new(options: &[(String, String)]) -> Result<SysbenchLab, String> {
        let argv: Vec<String> = options
            .iter()
            .map(|(name, value)| format!("--{}={value}", name.replace('_', "-")))
            .collect();
        let parsed = OptionsOnly::try_parse_from(&argv).map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            format!(
                "workload \"sysbench\": options: {}",
                first.trim_start_matches("error: ")
            )
        })?;
        let options = oltp_options(&parsed.args).map_err(|failure| match failure {
            Failure::Input(m) | Failure::Run(m) => format!("workload \"sysbench\": options: {m}"),
            Failure::Incomplete => "workload \"sysbench\": options".into(),
        })?;
        Ok(SysbenchLab { options })
    }

    fn sized(&self, scale: i64) -> OltpOptions {
        OltpOptions {
            table_size: (scale * ROWS_PER_SCALE).clamp(1, u32::MAX as i64) as u32,
            ..self.options.clone()
        }
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
    fn load(&self, conn: &ConnSpec, scale: i64) -> Result<(), String> {
        let preparer = Preparer {
            conn: conn.clone(),
            options: self.sized(scale),
            connections: crate::probe::cpu::cores(),
            seed: 1,
            rows_loaded: Default::default(),
        };
        super::control_runtime().block_on(preparer.prepare(&|_| {}))
    }

    fn writes(&self, script: &str) -> bool {
        catalog::generate(script, &self.options, 1).is_ok_and(|t| t.writes)
    }

    fn family(&self, script: &str) -> String {
        family(script).to_string()
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        catalog::generate(script, &self.options, 1).map(|_| ())
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        let options = self.sized(request.scale);
        let protocol = match request.protocol {
            Some(name) => {
                Protocol::from_name(name).ok_or_else(|| format!("unknown protocol {name}"))?
            }
            None => Protocol::Prepared,
        };
        let plan_for = |seconds: u64| -> Result<TestPlan, String> {
            let limit = RunLimit::Duration(Duration::from_secs(seconds));
            let mut planned = test_plan(
                request.script,
                &options,
                request.conn,
                request.clients as u32,
                protocol,
                limit,
                lab_run::seed(),
            )
            .map_err(lab_run::message)?;
            planned.plan.threads = request.threads.clamp(1, request.clients);
            planned.plan.stop = Some(request.stop.clone());
            planned.plan.cpu_affinity = request.client_cpus.map(<[usize]>::to_vec);
            Ok(planned)
        };
        let warmup_s = request.warmup.as_secs_f64().ceil() as u64;
        if warmup_s > 0 {
            let warmup = driver::run(plan_for(warmup_s)?.plan, &mut |_| {})?;
            lab_run::check_aborted(warmup.aborted_clients, "during the warmup")?;
        }
        observer.open_window();
        let duration_s = request.duration.as_secs_f64().ceil().max(1.0) as u64;
        let mut window = Window::new(duration_s);
        let result = driver::run(plan_for(duration_s)?.plan, &mut |event| {
            if let DriverEvent::Interval(interval) = event {
                window.add(interval, observer);
            }
        })?;
        lab_run::check_aborted(result.aborted_clients, "")?;
        Ok(window.measurement(result.client_cpu.total()))
    }
}
