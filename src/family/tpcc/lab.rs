//! TPROC-C as a lab workload, the way seed 001 ran HammerDB: `scale` is the warehouse count,
//! `clients` the virtual users, `scripts` the modes (`server`, `client`), the lab's warmup the rampup;
//! every run gets a fresh copy of the built database, as seed 001 restored a base backup for
//! every virtual-user count. `options = { mix = "hammerdb" }` picks the mix. Each run stores
//! HammerDB's NOPM and TPM (`run_metrics`), from the server's counters around the measured run.

use super::run::{plan, read_counters, run_constants, Counters, Settings};
use crate::analysis::verdict::Direction;
use crate::driver::{Protocol, RunLimit};
use crate::family::api::{
    LabWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, WorkloadMetric,
};
use crate::family::common::measure::{self as lab_run, warmup_and_measure};
use crate::family::tpcc::load::Loader;
use crate::family::tpcc::scripts::{Mix, Mode, WarehouseChoice};
use crate::server::target::ConnSpec;

pub struct TpccLab {
    mix: Mix,
}

/// TPROC-C; its transactions run as prepared statements (CALLs in server mode), so the spec's
/// `protocol` may only say so.
pub const KINDS: &[LabWorkloadKind] = &[LabWorkloadKind {
    name: "tpcc",
    protocols: &[Protocol::Prepared],
    create: |options| Ok(Box::new(TpccLab::new(options)?)),
    metrics: &[
        // HammerDB's New-Orders per minute and all transactions per minute.
        WorkloadMetric {
            name: "nopm",
            direction: Direction::HigherIsBetter,
        },
        WorkloadMetric {
            name: "tpm",
            direction: Direction::HigherIsBetter,
        },
    ],
}];

impl TpccLab {
    fn new(options: &[(String, String)]) -> Result<TpccLab, String> {
        let mut mix = Mix::parse("45,43,4,4,4").expect("the default mix");
        for (name, value) in options {
            if name != "mix" {
                return Err(format!(
                    "workload \"tpcc\": options: unknown option \"{name}\"; the options are: mix"
                ));
            }
            mix = Mix::parse(value).map_err(|e| format!("workload \"tpcc\": options: {e}"))?;
        }
        Ok(TpccLab { mix })
    }
}

impl LabWorkload for TpccLab {
    fn load(&self, conn: &ConnSpec, scale: i64, _note: &mut dyn FnMut(&str)) -> Result<(), String> {
        let loader = Loader {
            conn: conn.clone(),
            warehouses: scale,
            connections: crate::probe::cpu::cores(),
            seed: 1,
            partitions: 1,
            now_unix_us: (crate::store::unix_now() * 1e6) as i64,
            rows_loaded: Default::default(),
        };
        crate::pg::control_runtime().block_on(loader.build(&|_| {}))
    }

    fn writes(&self, _script: &str) -> bool {
        true
    }

    fn family(&self, _script: &str) -> String {
        "write".into()
    }

    fn check_variant(&self, script: &str) -> Result<(), String> {
        if Mode::NAMES.contains(&script) {
            return Ok(());
        }
        Err(format!(
            "workload \"tpcc\": unknown mode \"{script}\"; the modes are: {}",
            Mode::NAMES.join(", ")
        ))
    }

    fn default_variants(&self) -> Vec<String> {
        vec![Mode::NAMES[0].into()]
    }

    fn run(
        &self,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, String> {
        let seed = lab_run::seed();
        let constants = run_constants(request.conn, seed)?;
        let mut counted = CountedWindow {
            inner: observer,
            conn: request.conn,
            before: None,
        };
        let mut measurement = warmup_and_measure(request, &mut counted, &|seconds| {
            let settings = Settings {
                vu: request.clients,
                warehouse_choice: WarehouseChoice::Home,
                rampup: std::time::Duration::ZERO,
                limit: RunLimit::Duration(std::time::Duration::from_secs(seconds)),
                mix: self.mix,
                mode: Mode::parse(request.script)?,
                keying_thinking: None,
                seed,
            };
            plan(request.conn, request.scale, constants, &settings).map_err(lab_run::message)
        })?;
        let before = counted.before.ok_or("the measured window never opened")??;
        let after = read_counters(request.conn)?;
        let (nopm, tpm) = before.per_minute(&after, measurement.metrics.duration_s / 60.0);
        measurement.metrics.workload = vec![("nopm".into(), nopm), ("tpm".into(), tpm)];
        Ok(measurement)
    }
}

/// Reads the server's NOPM and TPM counters as the measured window opens (the warmup's
/// sessions have ended), then lets the lab open it.
struct CountedWindow<'a> {
    inner: &'a mut dyn RunObserver,
    conn: &'a ConnSpec,
    before: Option<Result<Counters, String>>,
}

impl RunObserver for CountedWindow<'_> {
    fn open_window(&mut self) {
        self.before = Some(read_counters(self.conn));
        self.inner.open_window();
    }

    fn second(&mut self, index: u64, tps: f64) {
        self.inner.second(index, tps);
    }
}
