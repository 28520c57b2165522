//! A captured workload as a lab workload: `scripts` are replay files (each a variant, so each
//! a cell whose runs the lab compares between targets with paired intervals), `options.data`
//! the capture's starting data — a pg_dump file (plain, custom) or directory — restored once
//! per target into the dataset, of which every run gets a fresh copy (the lab's pristine copy
//! of writing workloads: CREATE DATABASE … TEMPLATE). The captured sessions are the clients
//! (`clients = [1]`, any other count refused at `lab plan`), the replay's length is the capture's at `options.speed` (the lab's
//! duration and warmup do not apply), `threads` spreads the sessions.
//!
//! A run's tps is transactions ended a second, its latency percentiles those of every
//! statement, `qps` its statements a second, and beside them the fidelity: statements replayed
//! of those captured (`replayed_pct`), errors and those the capture had not (`new_errors`),
//! the schedule lag (`lag_p50_ms`, `lag_p99_ms`, `late_pct`) and sessions that could not keep
//! up (`sessions_behind`). The lab's pg_stat_statements and plans of the replayed statements
//! give the report's per-statement comparison and the Why panel's plan changes.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::admin;
use super::play::{self, check, Plan, Replayed};
use super::replay_file::ReplayFile;
use super::report::ReplayReport;
use super::restore;
use crate::family::api::{
    FamilyWorkload, LabWorkloadKind, Measurement, RunObserver, RunRequest, SpecFiles, POSTGRES_ONLY,
};
use crate::family::common::measure::QPS;
use crate::family::common::options::{self, OptionsError};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_store::{RunMetrics, SeriesRow};

/// Each statement goes as it was captured (simple query, unnamed or named statement): the
/// spec's protocol has nothing to choose.
pub const KINDS: &[LabWorkloadKind] =
    &[
        LabWorkloadKind::new("replay", |options| Ok(Box::new(ReplayLab::new(options)?)))
            .simple_protocol_only()
            .engines(POSTGRES_ONLY)
            .scale_numbers_only()
            .clients_are_its_own()
            .metrics(&[QPS])
            .files(SpecFiles {
                scripts: Some(""),
                options: &["data"],
            }),
    ];

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReplayOptions {
    data: Option<String>,
    speed: Option<f64>,
    allow_admin: Option<bool>,
}

pub struct ReplayLab {
    data: PathBuf,
    speed: f64,
    /// Send the capture's statements that change the server (`admin.rs`).
    allow_admin: bool,
}

impl ReplayLab {
    fn new(options: &toml::Table) -> Result<ReplayLab, OptionsError> {
        let parsed: ReplayOptions = options::parse("replay", options)?;
        let data = parsed.data.ok_or_else(|| {
            OptionsError::whole(
                "replay",
                "data = \"…\" is needed: the capture's starting data, a pg_dump file or directory restored before the runs (each run replays on a fresh copy of it)",
            )
        })?;
        let data = PathBuf::from(data);
        if let Err(e) = restore::format_of(&data) {
            return Err(OptionsError::at("replay", "data", e.into_message()));
        }
        let speed = parsed.speed.unwrap_or(1.0);
        if !speed.is_finite() || speed < 0.0 {
            return Err(OptionsError::at(
                "replay",
                "speed",
                format!("speed = {speed}: 1 replays as captured, 2 twice as fast, 0 as fast as possible"),
            ));
        }
        Ok(ReplayLab {
            data,
            speed,
            allow_admin: parsed.allow_admin.unwrap_or(false),
        })
    }
}

impl FamilyWorkload for ReplayLab {
    type Variant = PathBuf;

    fn variant(&self, name: &str) -> Result<PathBuf, Failure> {
        ReplayFile::read(std::path::Path::new(name))
            .and_then(|file| {
                admin::refuse_admin(&file, self.allow_admin, "options.allow_admin = true")
            })
            .map(|_| PathBuf::from(name))
            .map_err(|e| e.map_message(|m| format!("workload \"replay\": {m}")))
    }

    fn default_variants(&self) -> Vec<String> {
        Vec::new()
    }

    fn load(
        &self,
        conn: &Endpoint,
        _scale: i64,
        note: &mut dyn FnMut(&str),
    ) -> Result<(), Failure> {
        let spec = conn.postgres("replay")?;
        note(&format!("restoring {}", self.data.display()));
        // Only an archive needs pg_restore: the newest stampede can get.
        let pg_restore = match restore::format_of(&self.data)? {
            restore::DumpFormat::Archive => {
                crate::server::postgres::release::client_programs(&mut |event| {
                    if let crate::server::setup::SetupEvent::Note(line) = event {
                        note(line)
                    }
                })?
                .join("pg_restore")
            }
            restore::DumpFormat::Plain => PathBuf::from("pg_restore"),
        };
        stampede_conn::control_runtime().block_on(async {
            let client = stampede_control::postgres::connect_quietly(spec).await?;
            restore::restore(&client, &self.data, &pg_restore).await
        })
    }

    /// The capture's length at the speed; as fast as possible is counted as the capture's
    /// length (what it takes depends on the target).
    fn run_time(&self, file: &PathBuf, spec_time: Duration) -> Duration {
        let Ok(captured) = ReplayFile::read(file) else {
            return spec_time;
        };
        let seconds = captured.duration_ms.max(0) as f64 / 1000.0;
        let speed = if self.speed > 0.0 { self.speed } else { 1.0 };
        Duration::from_secs_f64(seconds / speed)
    }

    fn writes(&self, _file: &PathBuf) -> bool {
        true
    }

    fn group(&self, _file: &PathBuf) -> String {
        "replay".into()
    }

    fn run(
        &self,
        file: &PathBuf,
        request: &RunRequest<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<Measurement, Failure> {
        let captured = ReplayFile::read(file)?;
        let conn = request.conn.postgres("replay")?.clone();
        let plan = Arc::new(Plan::new(
            captured,
            self.speed,
            conn,
            Arc::clone(&request.stop),
        ));
        stampede_conn::control_runtime().block_on(check::relations_exist(&plan))?;
        observer.open_window();
        let replayed = replay_with_progress(&plan, request.threads, observer)?;
        Ok(measurement(&plan, &replayed))
    }
}

/// Replays on its own threads while this one tells the observer each second's transactions.
fn replay_with_progress(
    plan: &Arc<Plan>,
    threads: usize,
    observer: &mut dyn RunObserver,
) -> Result<Replayed, Failure> {
    std::thread::scope(|scope| {
        let replaying = scope.spawn(|| play::replay(Arc::clone(plan), threads));
        let start = Instant::now();
        let (mut second, mut before) = (0u64, 0u64);
        while !replaying.is_finished() {
            let next = start + Duration::from_secs(second + 1);
            while Instant::now() < next && !replaying.is_finished() {
                std::thread::sleep(Duration::from_millis(20));
            }
            if Instant::now() >= next {
                let now = plan.transactions.load(Ordering::Relaxed);
                observer.second(second, (now - before) as f64);
                (second, before) = (second + 1, now);
            }
        }
        replaying
            .join()
            .unwrap_or_else(|_| Err(Failure::run("the replay's thread panicked")))
    })
}

/// The lab's record of a replay.
fn measurement(plan: &Plan, replayed: &Replayed) -> Measurement {
    let report = ReplayReport::new(plan, replayed);
    let outcome = &replayed.outcome;
    let all = outcome.all_latency();
    let ms = |micros: u64| micros as f64 / 1000.0;
    let mut workload = vec![
        (QPS.name.to_string(), report.statements_per_second),
        (
            "replayed_pct".to_string(),
            100.0 * report.statements_replayed as f64 / report.statements_captured.max(1) as f64,
        ),
        ("errors".to_string(), report.errors as f64),
        ("new_errors".to_string(), report.new_errors as f64),
        ("sessions_behind".to_string(), report.sessions_behind as f64),
    ];
    if let Some(lag) = &report.lag {
        workload.extend([
            ("lag_p50_ms".to_string(), lag.p50_ms),
            ("lag_p99_ms".to_string(), lag.p99_ms),
            ("late_pct".to_string(), lag.late_pct),
        ]);
    }
    let metrics = RunMetrics {
        duration_s: replayed.seconds,
        transactions: outcome.transactions,
        failures: report.errors,
        tps: report.tps,
        latency_avg_ms: all.mean() / 1000.0,
        latency_stddev_ms: all.stdev() / 1000.0,
        p50_ms: ms(all.value_at_quantile(0.50)),
        p90_ms: ms(all.value_at_quantile(0.90)),
        p95_ms: ms(all.value_at_quantile(0.95)),
        p99_ms: ms(all.value_at_quantile(0.99)),
        p999_ms: ms(all.value_at_quantile(0.999)),
        max_ms: ms(all.max()),
        client_cpu_us_per_txn: outcome.client_cpu.as_secs_f64() * 1e6
            / outcome.transactions.max(1) as f64,
        workload,
        served: None,
    };
    let series = outcome
        .per_second
        .iter()
        .enumerate()
        .map(|(second, transactions)| {
            let latency = outcome.per_second_latency.get(second);
            let at = |q: f64| latency.map_or(0.0, |h| ms(h.value_at_quantile(q)));
            SeriesRow {
                second: second as u64,
                tps: *transactions as f64,
                p50_ms: at(0.50),
                p99_ms: at(0.99),
                failed: 0,
            }
        })
        .collect();
    Measurement {
        metrics,
        series,
        pods: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(options: &str) -> Result<ReplayLab, OptionsError> {
        ReplayLab::new(&toml::from_str(options).unwrap())
    }

    #[test]
    fn the_starting_data_is_required_and_the_speed_checked() {
        let error = |text: &str| lab(text).err().unwrap().to_string();
        assert!(error("").contains("data = \"…\" is needed"));
        assert!(error("data = \"/nonexistent.sql\"").contains("could not open /nonexistent.sql"));
        let dump = std::env::temp_dir().join(format!("replay-lab-{}.sql", std::process::id()));
        std::fs::write(&dump, "SELECT 1;\n").unwrap();
        let data = format!("data = \"{}\"", dump.display());
        assert!(error(&format!("{data}\nspeed = -2")).contains("speed = -2: 1 replays"));
        assert_eq!(lab(&format!("{data}\nspeed = 0")).unwrap().speed, 0.0);
        assert!(error(&format!("{data}\nrate = 1")).contains("unknown option \"rate\""));
        std::fs::remove_file(&dump).unwrap();
    }
}
