//! TPROC-C as a lab workload, the way study 001 ran HammerDB: `scale` is the warehouse count,
//! `clients` the virtual users, `scripts` the modes (`server`, `client`), the lab's warmup the rampup;
//! every run gets a fresh copy of the built database, as study 001 restored a base backup for
//! every virtual-user count. `options = { mix = "45,43,4,4,4" }` picks another mix than HammerDB's,
//! `home_warehouses = "random"` HammerDB's random home warehouses, `all_warehouses = true`
//! HammerDB's all warehouses. Each run stores
//! HammerDB's NOPM and TPM (`run_metrics`), from the server's counters around the measured run.

use super::run::{
    check_engine, plan, read_counters, run_constants, warehouse_choice, Counters, Settings,
};
use crate::driver::{Protocol, RunLimit};
use crate::family::api::{
    EngineRefusal, FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest,
    WorkloadMetric,
};
use crate::family::common::measure::{self as lab_run, warmup_and_measure};
use crate::family::common::options::{self, OptionsError};
use crate::family::tpcc::load::Loader;
use crate::family::tpcc::rules::Rules;
use crate::family::tpcc::scripts::{Mix, Mode};
use stampede_base::error::Failure;
use stampede_conn::{Endpoint, Engine};
use stampede_stats::verdict::Direction;

pub struct TpccLab {
    mix: Mix,
    rules: Rules,
    all_warehouses: bool,
    home_warehouses: Option<String>,
}

/// TPROC-C; `protocol` is how server mode sends its CALLs (simple, with literals, as HammerDB
/// by default); client mode prepares its statements whatever it says.
pub const KINDS: &[LabWorkloadKind] =
    &[
        LabWorkloadKind::new("tpcc", |options| Ok(Box::new(TpccLab::new(options)?)))
            .protocols(&[Protocol::Simple, Protocol::Prepared], Protocol::Simple)
            .metrics(&[
                // HammerDB's New-Orders per minute and all transactions per minute.
                WorkloadMetric {
                    name: "nopm",
                    direction: Direction::HigherIsBetter,
                    from_server: true,
                },
                WorkloadMetric {
                    name: "tpm",
                    direction: Direction::HigherIsBetter,
                    from_server: true,
                },
            ]),
    ];

/// `options = { ... }`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TpccOptions {
    /// Five weights or `hammerdb`, as `--mix` takes them.
    mix: Option<String>,
    /// `hammerdb` or `tpc-c`, as `tpcc build --rules` and `tpcc run --rules` take them: the
    /// load's values and the runs' inputs.
    rules: Option<String>,
    /// `spread` (the default) or `random`, as `tpcc run --home-warehouses`.
    home_warehouses: Option<String>,
    /// As `tpcc run --all-warehouses`.
    all_warehouses: Option<bool>,
}

impl TpccLab {
    fn new(options: &toml::Table) -> Result<TpccLab, OptionsError> {
        let parsed: TpccOptions = options::parse("tpcc", options)?;
        let mix = Mix::parse(parsed.mix.as_deref().unwrap_or("hammerdb"))
            .map_err(|e| OptionsError::at("tpcc", "mix", e))?;
        let rules = Rules::parse(parsed.rules.as_deref().unwrap_or("hammerdb"), "rules")
            .map_err(|e| OptionsError::at("tpcc", "rules", e))?;
        let all_warehouses = parsed.all_warehouses.unwrap_or(false);
        let home_warehouses = parsed.home_warehouses;
        warehouse_choice(
            all_warehouses,
            home_warehouses.as_deref(),
            1,
            "home_warehouses",
        )
        .map_err(|e| OptionsError::at("tpcc", "home_warehouses", e.message()))?;
        Ok(TpccLab {
            mix,
            rules,
            all_warehouses,
            home_warehouses,
        })
    }
}

impl FamilyWorkload for TpccLab {
    type Variant = Mode;

    fn load(
        &self,
        conn: &Endpoint,
        scale: i64,
        _note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        let loader = Loader {
            conn: conn.clone(),
            warehouses: scale,
            connections: stampede_base::cpu::cores(),
            seed: 1,
            partitions: 1,
            rules: self.rules,
            now_unix_us: (stampede_store::unix_now() * 1e6) as i64,
            rows_loaded: Default::default(),
        };
        stampede_conn::control_runtime().block_on(super::build::build(&loader, &|_| {}))
    }

    fn check_engine(
        &self,
        engine: Engine,
        mode: &Mode,
        protocol: Protocol,
    ) -> Result<(), EngineRefusal> {
        if engine != Engine::Mysql {
            return Ok(());
        }
        let what = if *mode == Mode::Client {
            "the client mode"
        } else if protocol != Protocol::Simple {
            "protocol = \"prepared\""
        } else if self.rules != Rules::HammerDb {
            "rules = \"tpc-c\""
        } else {
            return Ok(());
        };
        Err(EngineRefusal {
            what,
            runs_on: Engine::Postgres,
            why: "MariaDB/MySQL's TPROC-C is HammerDB's procedures called with HammerDB's inputs",
        })
    }

    fn writes(&self, _mode: &Mode) -> bool {
        true
    }

    fn group(&self, _mode: &Mode) -> String {
        "write".into()
    }

    fn variant(&self, name: &str) -> Result<Mode, Failure> {
        Mode::parse(name).map_err(|_| {
            Failure::input(format!(
                "workload \"tpcc\": unknown mode \"{name}\"; the modes are: {}",
                Mode::NAMES.join(", ")
            ))
        })
    }

    fn default_variants(&self) -> Vec<String> {
        vec![Mode::NAMES[0].into()]
    }

    fn run(
        &self,
        mode: &Mode,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let conn = request.conn;
        let seed = lab_run::seed();
        let constants = run_constants(conn, seed, self.rules)?;
        let mut counted = CountedWindow {
            inner: observer,
            conn,
            before: None,
        };
        let warehouse_choice = warehouse_choice(
            self.all_warehouses,
            self.home_warehouses.as_deref(),
            request.clients,
            "home_warehouses",
        )?;
        let mut measurement = warmup_and_measure(request, &mut counted, &|seconds| {
            let settings = Settings {
                vu: request.clients,
                warehouse_choice,
                rampup: std::time::Duration::ZERO,
                limit: RunLimit::Duration(std::time::Duration::from_secs(seconds)),
                mix: self.mix,
                mode: *mode,
                call: request.protocol,
                keying_thinking: None,
                rules: self.rules,
                seed,
            };
            check_engine(conn, &settings)?;
            plan(conn, request.scale, constants, &settings)
        })?;
        let before = counted
            .before
            .ok_or_else(|| Failure::run("the measured window never opened"))??;
        let after = read_counters(conn)?;
        let (nopm, tpm) = before.per_minute(&after, measurement.metrics.duration_s / 60.0);
        measurement.metrics.workload = vec![("nopm".into(), nopm), ("tpm".into(), tpm)];
        Ok(measurement)
    }
}

/// Reads the server's NOPM and TPM counters as the measured window opens (the warmup's
/// sessions have ended), then lets the lab open it.
struct CountedWindow<'a> {
    inner: &'a mut dyn RunObserver,
    conn: &'a Endpoint,
    before: Option<Result<Counters, Failure>>,
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
