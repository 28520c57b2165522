//! `stampede tpcc run`: virtual users run the TPROC-C mix through the driver (server mode: one
//! CALL per transaction); NOPM and TPM computed as HammerDB does, from the server's counters
//! around the measured run, beside the driver's own counts and latencies per transaction.

use crate::live::command_labels;
use std::cell::RefCell;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::built::{checked_warehouses, load_c_last};
use super::mysql;
use crate::driver::plan::{ErrorPolicy, Pauses, Protocol, RunLimit, RunPlan, WeightedScript};
use crate::driver::stats::ScriptStats;
use crate::driver::{DriverEvent, RunResult};
use crate::family::common::connection::{endpoint, positive};
use crate::family::common::measure::{check_aborted, ClientFairness, LatencySummary};
use crate::family::tpcc::args::RunArgs;
use crate::family::tpcc::inputs::{Inputs, WarehouseChoice};
use crate::family::tpcc::procedures::Routines;
use crate::family::tpcc::random::{NurandConstants, TpccRandom};
use crate::family::tpcc::rules::Rules;
use crate::family::tpcc::scripts::{self, Mix, Mode, KEYING_THINKING_S, NAMES};
use crate::pods::place::Place;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::Endpoint;
use stampede_control::mysql::ControlSession;
use stampede_control::postgres::queries::server_version_num;
use stampede_control::postgres::{connect_quietly, sql_error};
use stampede_script::{parse_script, VarTable};

/// The virtual users' application_name, to wait for their sessions to end.
const APPLICATION: &str = "stampede-tpcc";

/// The server's counters NOPM and TPM come from.
#[derive(Debug, Clone, Copy)]
pub struct Counters {
    /// sum(district.d_next_o_id).
    next_order_ids: i64,
    /// sum(xact_commit + xact_rollback) over pg_stat_database: every database, as HammerDB.
    transactions: i64,
}

/// What a run is asked for.
pub struct Settings {
    pub vu: usize,
    pub warehouse_choice: WarehouseChoice,
    pub rampup: Duration,
    pub limit: RunLimit,
    pub mix: Mix,
    pub mode: Mode,
    /// How server mode's calls are sent: simple (literals, HammerDB's way) or prepared.
    pub call: Protocol,
    /// Keying and think times, scaled by this factor (1 = HammerDB's seconds).
    pub keying_thinking: Option<f64>,
    /// Whose inputs where HammerDB's and TPC-C's differ.
    pub rules: Rules,
    pub seed: u64,
}

/// The run, on this host or as one pod of a spread run (`--pods`): the virtual users' ids (and
/// so their home warehouses, client % W + 1) are the whole run's, and NOPM stays exact across
/// pods — the counters are read while every pod holds its users between transactions.
pub fn run(args: &RunArgs) -> CommandResult {
    let settings = settings(args)?;
    let stall_timeout =
        crate::driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &settings.limit)?;
    let metrics = args.metrics.start(command_labels("tpcc"))?;
    let mut place = Place::of_this_process(Box::new(|interval| {
        if (interval.index + 1) % 10 == 0 {
            println!(
                "[ {}s ] {:.1} transactions/s",
                interval.index + 1,
                interval.stats.latency.count as f64
            );
        }
    }))?
    .fed(metrics.as_ref().map(|m| m.feed(Some(scripts::NAMES[0]))));
    let opened = endpoint(&args.connection).and_then(|endpoint| {
        check_engine(&endpoint, &settings)?;
        let (control, warehouses, load_c_last) = Control::open(&endpoint, args.warehouses)?;
        Ok((endpoint, control, warehouses, load_c_last))
    });
    // The rampup runs in the measured run's sessions, as HammerDB's virtual users keep theirs:
    // the counters are read between the two with no transaction in flight, and after the last
    // one before the sessions close (pg_stat_database then lags alike at both readings).
    // Without a rampup the window opens before any user connects: the leader reads the
    // counters before it joins, and the other pods' users connect once every pod has joined.
    let mut before = match &opened {
        Ok((_, control, ..)) if place.leads() && settings.rampup.is_zero() => {
            Some(control.settled_counters())
        }
        _ => None,
    };
    let (endpoint, control, warehouses, load_c_last) = place.join(opened, |_| {})?;
    if place.leads() {
        print_header(&settings, warehouses);
    }
    let constants = NurandConstants::for_run(
        &mut TpccRandom::seeded(settings.seed).prng,
        load_c_last,
        settings.rules,
    );
    let mut plan = plan(&endpoint, warehouses, constants, &settings)?;
    if place.is_pod() {
        // One thread per virtual user, the same on every pod, split as the users are.
        plan.threads = settings.vu;
    }
    plan.warmup = settings.rampup;
    plan.stop = Some(place.stop_flag());
    plan.stall_timeout = stall_timeout;
    let together = place.together();
    let read = || control.counters();
    let mut at_end = None;
    let ran = place.run(plan, &mut |event| match event {
        DriverEvent::WarmupEnded => {
            if let Some(counters) = together.read("rampup-ended", read) {
                before = Some(counters);
            }
        }
        DriverEvent::MeasuredEnded => {
            if let Some(counters) = together.read("measured-ended", read) {
                at_end = Some(counters);
            }
        }
        DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
        _ => {}
    })?;
    let Some(ran) = ran else {
        return Ok(());
    };
    let after = match at_end {
        Some(counters) => counters?,
        None => control.settled_counters()?,
    };
    check_aborted(ran.result.aborted_clients, "virtual user", "")?;
    let before = before.ok_or_else(|| Failure::run("the run was stopped within its rampup"))??;
    let mut report = TpccReport::new(&settings, &ran.result, before, after);
    report.spread = ran.spread;
    print!("{}", report.text());
    if let Some(path) = &args.json {
        crate::report::write_file(path, &report.json())?;
    }
    Ok(())
}

/// A control session on the built database, on either engine: what the build recorded, and
/// the server's counters NOPM and TPM come from.
pub enum Control {
    Postgres(Client),
    Mysql(RefCell<ControlSession>),
}

impl Control {
    /// The session, the built warehouses (checked against `expected`) and the C_LAST constant
    /// the load used.
    pub fn open(
        endpoint: &Endpoint,
        expected: Option<i64>,
    ) -> Result<(Control, i64, Option<i64>), Failure> {
        match endpoint {
            Endpoint::Postgres(conn) => control_runtime().block_on(async {
                let client = connect_quietly(conn).await.map_err(Failure::into_input)?;
                let warehouses = checked_warehouses(&client, expected).await?;
                let load_c_last = load_c_last(&client).await;
                Ok((Control::Postgres(client), warehouses, load_c_last))
            }),
            Endpoint::Mysql(spec) => {
                let mut session = ControlSession::connect(spec).map_err(Failure::into_input)?;
                let (built, load_c_last) = mysql::built::marker(&mut session)?;
                let warehouses = super::built::same_warehouses(built, expected)?;
                Ok((
                    Control::Mysql(RefCell::new(session)),
                    warehouses,
                    load_c_last,
                ))
            }
        }
    }

    /// The counters now.
    pub fn counters(&self) -> Result<Counters, Failure> {
        match self {
            Control::Postgres(client) => control_runtime().block_on(counters(client)),
            Control::Mysql(session) => {
                let (next_order_ids, transactions) =
                    mysql::built::counters(&mut session.borrow_mut())?;
                Ok(Counters {
                    next_order_ids,
                    transactions,
                })
            }
        }
    }

    /// The counters once the virtual users' work has reached them.
    pub fn settled_counters(&self) -> Result<Counters, Failure> {
        match self {
            Control::Postgres(client) => control_runtime().block_on(settled_counters(client)),
            Control::Mysql(_) => self.counters(),
        }
    }
}

/// What MariaDB/MySQL's TPROC-C is not: client mode, prepared calls and TPC-C's inputs are
/// PostgreSQL's (HammerDB's MariaDB procedures take its own inputs).
pub fn check_engine(endpoint: &Endpoint, settings: &Settings) -> Result<(), Failure> {
    let Endpoint::Mysql(_) = endpoint else {
        return Ok(());
    };
    let refused = if settings.mode != Mode::Server {
        "--mode client"
    } else if settings.call != Protocol::Simple {
        "--call prepared"
    } else if settings.rules != Rules::HammerDb {
        "--rules tpc-c"
    } else {
        return Ok(());
    };
    Err(Failure::input(format!(
        "{refused} runs on PostgreSQL only: on MariaDB/MySQL, TPROC-C is HammerDB's procedures called with HammerDB's inputs (--mode server, --call simple, --rules hammerdb)"
    )))
}

/// The run's first line: what runs, on what, how.
pub(super) fn print_header(settings: &Settings, warehouses: i64) {
    println!(
        "TPROC-C, {} mode{}: {} virtual user(s) on {warehouses} warehouse(s) ({}), mix {} (New-Order/Payment/Order-Status/Delivery/Stock-Level), rampup {} s, {}{} inputs, seed {}",
        settings.mode.name(),
        match settings.mode {
            Mode::Server => format!(" (calls sent {})", settings.protocol().name()),
            Mode::Client => String::new(),
        },
        settings.vu,
        settings.warehouse_choice.description(),
        settings.mix.text(),
        settings.rampup.as_secs(),
        match settings.keying_thinking {
            Some(1.0) => "keying and thinking, ".to_string(),
            Some(scale) => format!("keying and thinking × {scale}, "),
            None => String::new(),
        },
        settings.rules.name(),
        settings.seed
    );
}

pub(super) fn settings(args: &RunArgs) -> Result<Settings, Failure> {
    let vu = positive::<usize>(args.vu, "vu")?;
    let duration = |text: &str, name: &str| {
        stampede_base::duration::parse_duration(text).ok_or_else(|| {
            Failure::input(format!(
                "--{name} \"{text}\": give a duration such as 90s, 5m or 1h"
            ))
        })
    };
    // Whole seconds: the driver's warmup is a whole number of its one-second intervals.
    let rampup = Duration::from_secs(duration(&args.rampup, "rampup")?.as_secs_f64().ceil() as u64);
    let mode = Mode::parse(&args.mode)?;
    let limit = match args.iterations {
        Some(n) => RunLimit::TransactionsPerClient(positive::<u64>(n, "iterations")?),
        None => {
            RunLimit::Duration(duration(&args.duration, "duration")?.max(Duration::from_secs(1)))
        }
    };
    Ok(Settings {
        vu,
        warehouse_choice: warehouse_choice(
            args.all_warehouses,
            args.home_warehouses.as_deref(),
            vu,
            "--home-warehouses",
        )?,
        rampup,
        limit,
        mix: Mix::parse(&args.mix)?,
        mode,
        call: call_protocol(args, mode)?,
        keying_thinking: keying_thinking(args)?,
        rules: Rules::parse(&args.rules, "--rules")?,
        seed: args
            .seed
            .unwrap_or_else(crate::family::common::measure::seed),
    })
}

/// `--all-warehouses` and `--home-warehouses` (the lab's `all_warehouses` and
/// `home_warehouses`): every warehouse, or home warehouses spread evenly (the default) or drawn
/// at random (HammerDB's).
pub fn warehouse_choice(
    all_warehouses: bool,
    home: Option<&str>,
    virtual_users: usize,
    home_option: &str,
) -> Result<WarehouseChoice, Failure> {
    let home_choice = match home {
        None | Some("spread") => WarehouseChoice::Home,
        Some("random") => WarehouseChoice::RandomHome,
        Some(other) => {
            return Err(Failure::input(format!(
                "{home_option} \"{other}\": the home warehouses are spread (client % W + 1) or random (HammerDB's)"
            )))
        }
    };
    if !all_warehouses {
        return Ok(home_choice);
    }
    if home.is_some() {
        return Err(Failure::input(format!(
            "{home_option} applies to home warehouses; with all warehouses every transaction picks its own"
        )));
    }
    Ok(WarehouseChoice::All {
        virtual_users: virtual_users as i64,
    })
}

impl Settings {
    /// The driver's protocol: the calls' in server mode; client mode prepares its statements.
    pub fn protocol(&self) -> Protocol {
        match self.mode {
            Mode::Server => self.call,
            Mode::Client => Protocol::Prepared,
        }
    }
}

/// `--call`, which only server mode takes.
fn call_protocol(args: &RunArgs, mode: Mode) -> Result<Protocol, Failure> {
    let Some(text) = &args.call else {
        return Ok(Protocol::Simple);
    };
    let call = match text.as_str() {
        "simple" => Protocol::Simple,
        "prepared" => Protocol::Prepared,
        _ => {
            return Err(Failure::input(format!(
                "--call \"{text}\": the calls are sent simple (literals, as HammerDB) or prepared"
            )))
        }
    };
    if mode == Mode::Client {
        return Err(Failure::input(
            "--call applies to --mode server; client mode prepares its own statements",
        ));
    }
    Ok(call)
}

fn keying_thinking(args: &RunArgs) -> Result<Option<f64>, Failure> {
    let scale = args.keying_thinking_scale;
    // Up to 100: New-Order's 18 s keying becomes 30 min, and no pause overflows a Duration.
    if !(scale.is_finite() && scale > 0.0 && scale <= 100.0) {
        return Err(Failure::input(format!(
            "--keying-thinking-scale {scale}: give a factor above 0, at most 100"
        )));
    }
    if !args.keying_thinking && scale != 1.0 {
        return Err(Failure::input(
            "--keying-thinking-scale needs --keying-thinking",
        ));
    }
    Ok(args.keying_thinking.then_some(scale))
}

/// The driver's plan: the six scripts with the mix's weights, one client per virtual user.
pub fn plan(
    endpoint: &Endpoint,
    warehouses: i64,
    constants: NurandConstants,
    settings: &Settings,
) -> Result<RunPlan, Failure> {
    let mut variables = VarTable::default();
    let mut weighted = Vec::new();
    let inputs = Inputs::new(
        warehouses,
        settings.warehouse_choice,
        constants,
        settings.rules,
    );
    let (scripts, endpoint) = match endpoint {
        Endpoint::Postgres(conn) => {
            let routines = Routines::for_server(server_version_num(&conn.clone().untracked())?);
            let scripts = scripts::scripts(
                &inputs,
                settings.mix,
                settings.mode,
                routines,
                settings.call,
            );
            // The virtual users' sessions are told apart by name, to wait for them to end.
            let mut conn = conn.clone();
            conn.application_name = APPLICATION.into();
            (scripts, Endpoint::Postgres(conn))
        }
        Endpoint::Mysql(_) => (
            scripts::named(
                mysql::scripts::server_scripts(&inputs),
                scripts::weights(settings.mix, false),
            ),
            endpoint.clone(),
        ),
    };
    for (name, text, weight) in scripts {
        let script = parse_script(name, name, &text, &mut variables)
            .map_err(|e| Failure::input(format!("internal script {name}: {e}")))?;
        weighted.push(WeightedScript { script, weight });
    }
    let mut plan = RunPlan::for_workload(
        &endpoint,
        settings.vu,
        settings.limit,
        settings.protocol(),
        weighted,
        variables,
        settings.seed,
    );
    plan.threads = settings.vu.min(stampede_base::cpu::cores());
    plan.pauses = settings.keying_thinking.map(|scale| {
        KEYING_THINKING_S
            .iter()
            .map(|(keying, think)| Pauses {
                keying: Duration::from_secs_f64(keying * scale),
                mean_think: Duration::from_secs_f64(think * scale),
            })
            .collect()
    });
    plan.errors = ErrorPolicy::surviving(10);
    Ok(plan)
}

/// The counters once the virtual users' sessions are gone (a backend reports its statistics
/// as it exits, after it leaves pg_stat_activity, so the transaction count is read until it
/// stays still).
/// The run's NURand constants for the database at `endpoint` (see `NurandConstants::for_run`).
pub fn run_constants(
    endpoint: &Endpoint,
    seed: u64,
    rules: Rules,
) -> Result<NurandConstants, Failure> {
    let (_, _, load_c_last) = Control::open(endpoint, None)?;
    Ok(NurandConstants::for_run(
        &mut TpccRandom::seeded(seed).prng,
        load_c_last,
        rules,
    ))
}

/// The settled counters over a connection of its own, for callers outside a runtime (the lab).
pub fn read_counters(endpoint: &Endpoint) -> Result<Counters, Failure> {
    let (control, _, _) = Control::open(endpoint, None)?;
    control.settled_counters()
}

impl Counters {
    /// (NOPM, TPM) from `self` to `after` over `minutes`, as HammerDB computes them.
    pub fn per_minute(&self, after: &Counters, minutes: f64) -> (f64, f64) {
        let minutes = minutes.max(1e-9);
        (
            (after.next_order_ids - self.next_order_ids) as f64 / minutes,
            (after.transactions - self.transactions) as f64 / minutes,
        )
    }
}

async fn settled_counters(client: &Client) -> Result<Counters, Failure> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sessions: i64 = query_value(
            client,
            &format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{APPLICATION}' AND pid <> pg_backend_pid()"),
        )
        .await?;
        if sessions == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut last = counters(client).await?;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = counters(client).await?;
        // Each reading commits one transaction of its own.
        if now.transactions <= last.transactions + 1 {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

async fn counters(client: &Client) -> Result<Counters, Failure> {
    Ok(Counters {
        next_order_ids: query_value(client, "SELECT sum(d_next_o_id)::bigint FROM district")
            .await?,
        transactions: query_value(
            client,
            "SELECT sum(xact_commit + xact_rollback)::bigint FROM pg_stat_database",
        )
        .await?,
    })
}

async fn query_value(client: &Client, sql: &str) -> Result<i64, Failure> {
    let row = client
        .query_one(sql, &[])
        .await
        .map_err(|e| sql_error(sql, e))?;
    Ok(row.get::<_, Option<i64>>(0).unwrap_or(0))
}

/// One transaction type's line.
struct TypeLine {
    name: &'static str,
    stats: ScriptStats,
}

pub(super) struct TpccReport {
    mode: Mode,
    keying_thinking: Option<f64>,
    minutes: f64,
    nopm: f64,
    tpm: f64,
    /// New-Orders the server committed in the window (Δ sum(d_next_o_id)).
    new_orders_server: i64,
    lines: Vec<TypeLine>,
    /// Per second of the measured run: transactions completed (all types) and errors.
    series: Vec<(u64, u64, u64)>,
    /// Transactions per virtual user and their spread.
    fairness: Option<ClientFairness>,
    /// A run spread over Kubernetes pods: each pod's share.
    pub spread: Option<crate::pods::SpreadSummary>,
}

impl TpccReport {
    pub(super) fn new(
        settings: &Settings,
        result: &RunResult,
        before: Counters,
        after: Counters,
    ) -> TpccReport {
        // HammerDB divides by the configured minutes; the measured run's own length is exact.
        let minutes = result.bench_duration.as_secs_f64().max(1e-9) / 60.0;
        let new_orders_server = after.next_order_ids - before.next_order_ids;
        let (nopm, tpm) = before.per_minute(&after, minutes);
        TpccReport {
            mode: settings.mode,
            keying_thinking: settings.keying_thinking,
            minutes,
            nopm,
            tpm,
            new_orders_server,
            lines: NAMES
                .iter()
                .zip(&result.per_script)
                .map(|(name, stats)| TypeLine {
                    name,
                    stats: stats.clone(),
                })
                .collect(),
            series: result
                .intervals
                .iter()
                .map(|i| (i.index + 1, i.stats.latency.count, i.stats.failures.total()))
                .collect(),
            fairness: ClientFairness::of(&result.client_transactions),
            spread: None,
        }
    }

    fn committed_new_orders(&self) -> u64 {
        self.lines[0].stats.latency.count
    }

    pub(super) fn text(&self) -> String {
        let mut out = format!(
            "TEST RESULT : System achieved {:.0} NOPM from {:.0} PostgreSQL TPM\n\
             NOPM: new orders in district.d_next_o_id per minute; TPM: commits and rollbacks in pg_stat_database per minute, all databases (as HammerDB); over {:.2} min\n",
            self.nopm, self.tpm, self.minutes
        );
        out.push_str(&format!(
            "{:<20} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}\n",
            "transaction", "count", "per min", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"
        ));
        for line in &self.lines {
            let latency = LatencySummary::of(&line.stats.latency);
            out.push_str(&format!(
                "{:<20} {:>9} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7}\n",
                line.name,
                latency.count,
                latency.count as f64 / self.minutes,
                latency.p50,
                latency.p95,
                latency.p99,
                latency.max,
                line.stats.failures.total()
            ));
        }
        if let Some(fairness) = &self.fairness {
            out.push_str(&fairness.summary_line());
            out.push('\n');
        }
        out.push_str(&format!(
            "new orders committed: driver {}, server (Δ d_next_o_id) {}; rolled back (unused item): {}\n",
            self.committed_new_orders(),
            self.new_orders_server,
            self.lines[1].stats.latency.count
        ));
        if let Some(spread) = &self.spread {
            for line in crate::pods::summary::spread_lines(spread) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }

    pub(super) fn json(&self) -> String {
        let types: serde_json::Map<String, serde_json::Value> = self
            .lines
            .iter()
            .map(|line| {
                let latency = LatencySummary::of(&line.stats.latency);
                (
                    line.name.to_string(),
                    serde_json::json!({
                        "count": latency.count,
                        "errors": line.stats.failures.total(),
                        "retries": line.stats.retries,
                        "latency_ms": {"mean": latency.avg, "p50": latency.p50, "p95": latency.p95, "p99": latency.p99, "max": latency.max},
                    }),
                )
            })
            .collect();
        let mut report = serde_json::json!({
            "mode": self.mode.name(),
            "keying_thinking_scale": self.keying_thinking,
            "nopm": self.nopm,
            "tpm": self.tpm,
            "minutes": self.minutes,
            "new_orders_committed_driver": self.committed_new_orders(),
            "new_orders_committed_server": self.new_orders_server,
            "transactions": types,
            "fairness": self.fairness,
            "series": self.series.iter().map(|(second, transactions, errors)| {
                serde_json::json!({"second": second, "transactions": transactions, "errors": errors})
            }).collect::<Vec<_>>(),
        });
        if let Some(spread) = &self.spread {
            report["spread"] = serde_json::to_value(spread).expect("plain data serializes to JSON");
        }
        serde_json::to_string_pretty(&report).expect("plain data serializes to JSON")
    }
}
