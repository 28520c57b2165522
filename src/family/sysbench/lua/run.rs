//! The `run` command and custom commands: worker threads with an interpreter each, the limits
//! (`--time`, `--events`, `--rate`), intermediate and checkpoint reports, and the final report
//! as sysbench prints them.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use super::context::Shared;
use super::control::{Arrivals, RunControl};
use super::live::LuaSource;
use super::log::{INFO, WARNING};
use super::spread::{LuaPod, Totals};
use super::state::Interpreter;
use super::stats::{self, Stats};
use crate::family::sysbench::layout::{self, Stat};
use crate::live::endpoint::MetricsEndpoint;
use crate::live::sampler::{Described, Sampler};
use crate::pods::SpreadSummary;
use stampede_base::error::Failure;
use stampede_script::prng::PgPrng;

/// The run's settings from the options, with sysbench's warnings for the deprecated aliases.
struct Settings {
    threads: usize,
    time_s: u64,
    events: u64,
    rate: u64,
    report_interval: u64,
    checkpoints: Vec<u64>,
    percentile: u32,
    histogram: bool,
}

fn settings(shared: &Shared) -> Settings {
    let options = shared.options();
    // A deprecated alias, when given, stands for its option (entry.rs warned of it).
    let aliased = |name: &str, alias: &str| {
        let alias = alias.replace('-', "_");
        options.int(if options.given(&alias) { &alias } else { name })
    };
    let mut checkpoints: Vec<u64> = options
        .list("report_checkpoints")
        .iter()
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    checkpoints.sort_unstable();
    Settings {
        threads: aliased("threads", "num-threads").max(1) as usize,
        events: aliased("events", "max-requests").max(0) as u64,
        time_s: aliased("time", "max-time").max(0) as u64,
        rate: aliased("rate", "tx-rate").max(0) as u64,
        report_interval: options.int("report_interval").max(0) as u64,
        checkpoints,
        percentile: options.int("percentile").clamp(0, 100) as u32,
        histogram: options.flag("histogram"),
    }
}

/// `run`: sysbench's run_test for a script; in a pod of a spread run (`--pods`), this pod's
/// threads of it, and on pod 0 the report of the whole run.
pub fn run(
    shared: &Arc<Shared>,
    main_state: &Interpreter,
    served: Option<&MetricsEndpoint>,
) -> i32 {
    let settings = settings(shared);
    let role = match crate::pods::PodRole::from_env() {
        Ok(role) => role,
        Err(failure) => {
            shared.log.fatal(failure.message());
            return 1;
        }
    };
    let first = role.as_ref().is_none_or(|role| role.index == 0);
    if settings.time_s == 0 && settings.events == 0 && first {
        shared.log.text(
            WARNING,
            "Both event and time limits are disabled, running an endless test",
        );
    }
    if let Err(message) = main_state
        .export_options(shared)
        .map_err(|e| super::state::message(&e))
        .and_then(|()| main_state.call_if_defined("init", ()))
    {
        shared.log.fatal(&message);
        return 1;
    }
    if !main_state.function_defined("event") {
        shared.log.fatal(&format!(
            "cannot find the event() function in {}",
            shared.script.short_name()
        ));
        return 1;
    }
    if first {
        print_run_mode(shared, &settings);
    }
    let (lines, printed) = channel();
    let pod = match role
        .map(|role| {
            if settings.checkpoints.is_empty() {
                LuaPod::start(role, settings.report_interval, settings.percentile, lines)
            } else {
                Err(Failure::input(
                    "--report-checkpoints is not supported with --pods",
                ))
            }
        })
        .transpose()
    {
        Ok(pod) => pod,
        Err(failure) => {
            shared.log.fatal(failure.message());
            return 1;
        }
    };
    let printer = pod
        .as_ref()
        .filter(|pod| pod.first())
        .map(|_| start_printer(shared, printed, settings.percentile));
    let code = run_threads(shared, main_state, &settings, pod, served);
    if let Some(printer) = printer {
        let _ = printer.join();
    }
    code
}

/// The workers of this process (all of the run's, or a pod's share), the reports, and the
/// script's `done`.
fn run_threads(
    shared: &Arc<Shared>,
    main_state: &Interpreter,
    settings: &Settings,
    pod: Option<LuaPod>,
    served: Option<&MetricsEndpoint>,
) -> i32 {
    let here = pod
        .as_ref()
        .map_or(0..settings.threads, |pod| pod.threads(settings.threads));
    let share = here.len() as f64 / settings.threads as f64;
    let control = Arc::new(RunControl {
        stats: Stats::new(settings.threads),
        created: Instant::now(),
        started_ns: AtomicU64::new(0),
        time_limit: (settings.time_s > 0).then(|| Duration::from_secs(settings.time_s)),
        max_events: pod.as_ref().map_or(settings.events, |pod| {
            pod.share(settings.events, settings.threads)
        }),
        issued: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        running: AtomicU32::new(0),
        arrivals: (settings.rate > 0).then(|| {
            Mutex::new(Arrivals {
                next: Instant::now(),
                // Each pod its share of the rate, as the driver's threads take theirs.
                mean_interval_s: 1.0 / (settings.rate as f64 * share),
                rng: PgPrng::seeded(shared.seed ^ 0xA5A5 ^ here.start as u64),
            })
        }),
        stop: match &pod {
            Some(pod) => pod.stop_flag(),
            None => stampede_base::signals::watch_signals_second_exits(),
        },
    });
    let _ = shared.run.set(control.clone());
    if pod.as_ref().is_none_or(LuaPod::first) {
        shared.log.notice("Initializing worker threads...\n");
    }
    let ready = Arc::new(Barrier::new(here.len() + 1));
    let go = Arc::new(Barrier::new(here.len() + 1));
    let workers: Vec<_> = here
        .clone()
        .map(|tid| {
            let (shared, ready, go) = (shared.clone(), ready.clone(), go.clone());
            std::thread::spawn(move || worker(&shared, tid, &ready, &go))
        })
        .collect();
    ready.wait();
    let start_failure = match &pod {
        _ if control.failed.load(Ordering::Relaxed) => {
            Some(Failure::run("Thread initialization failed!"))
        }
        Some(pod) => pod.start_together().err(),
        None => None,
    };
    if let Some(failure) = start_failure {
        control.failed.store(true, Ordering::Relaxed);
        go.wait();
        workers.into_iter().for_each(|w| drop(w.join()));
        shared.log.fatal(failure.message());
        if let Some(pod) = pod {
            let _ = pod.finish(Err(failure), here.len());
        }
        return 1;
    }
    control.start_now();
    let sampler = served.map(|served| {
        let described = Described {
            scripts: vec![shared.script.short_name()],
            clients: settings.threads,
            scheduled: false,
            rows: 0,
        };
        Sampler::start(
            served.feed(None),
            described,
            LuaSource::new(control.clone()),
        )
    });
    let cpu_start = stampede_base::cpu::process_cpu();
    control.running.store(here.len() as u32, Ordering::Relaxed);
    if pod.as_ref().is_none_or(LuaPod::first) {
        shared.log.notice("Threads started!\n");
    }
    let finished = Arc::new(AtomicBool::new(false));
    let reporter = match &pod {
        Some(pod) => Some(pod.start_reporter(&control, &finished)),
        None => start_reporter(shared, &control, settings, &finished),
    };
    go.wait();
    for worker in workers {
        let _ = worker.join();
    }
    let total_s = control.elapsed();
    let client_cpu_s = stampede_base::cpu::process_cpu()
        .since(&cpu_start)
        .total()
        .as_secs_f64();
    finished.store(true, Ordering::Relaxed);
    if let Some(reporter) = reporter {
        let _ = reporter.join();
    }
    if let Some(sampler) = sampler {
        sampler.finish(control.failed.load(Ordering::Relaxed));
    }
    shared.log.text(INFO, "Done.\n");
    let totals = if control.failed.load(Ordering::Relaxed) {
        Err(Failure::run("a worker thread failed"))
    } else {
        Ok((Totals::of(&control, total_s), client_cpu_s))
    };
    let (totals, spread) = match pod {
        None => match totals {
            Ok((totals, _)) => (totals, None),
            Err(_) => return 1,
        },
        Some(pod) => match pod.finish(totals, here.len()) {
            Ok(Some((totals, summary))) => (totals, Some(summary)),
            Ok(None) => return call_done(shared, main_state),
            Err(failure) => {
                shared.log.fatal(failure.message());
                return 1;
            }
        },
    };
    final_report(shared, main_state, &totals, spread.as_ref(), settings);
    call_done(shared, main_state)
}

fn call_done(shared: &Shared, main_state: &Interpreter) -> i32 {
    if let Err(message) = main_state.call_if_defined("done", ()) {
        shared.log.fatal(&message);
        return 1;
    }
    0
}

/// Pod 0's intermediate lines, from the pods' merged seconds, through the script's report
/// hook when it has one (in an interpreter of this thread's own).
fn start_printer(
    shared: &Arc<Shared>,
    stats: Receiver<Stat>,
    percentile: u32,
) -> std::thread::JoinHandle<()> {
    let shared = shared.clone();
    std::thread::spawn(move || {
        let state = report_hook(&shared);
        for stat in stats {
            report_intermediate(&shared, state.as_ref(), &stat, percentile);
        }
    })
}

fn print_run_mode(shared: &Shared, settings: &Settings) {
    let log = &shared.log;
    log.notice("Running the test with following options:");
    log.notice(&format!("Number of threads: {}", settings.threads));
    if settings.rate > 0 {
        log.notice(&format!("Target transaction rate: {}/sec", settings.rate));
    }
    if settings.report_interval > 0 {
        log.notice(&format!(
            "Report intermediate results every {} second(s)",
            settings.report_interval
        ));
    }
    if !settings.checkpoints.is_empty() {
        let list: Vec<String> = settings.checkpoints.iter().map(u64::to_string).collect();
        log.notice(&format!(
            "Report checkpoint(s) at {} seconds",
            list.join(", ")
        ));
    }
    let options = shared.options();
    if options.flag("debug") {
        log.notice("Debug mode enabled.\n");
    }
    if options.flag("validate") {
        log.notice("Validation checks: on.\n");
    }
    match options.int("rand_seed") {
        0 => log.notice("Initializing random number generator from current time\n"),
        seed => log.notice(&format!(
            "Initializing random number generator from seed ({seed}).\n"
        )),
    }
    log.notice("");
}

/// A worker: its interpreter, thread_init, then (once every worker is ready) thread_run and
/// thread_done.
fn worker(shared: &Arc<Shared>, tid: usize, ready: &Barrier, go: &Barrier) {
    let control = shared.run.get().expect("the run's control").clone();
    let state = Interpreter::new(shared, Some(tid)).and_then(|state| {
        state
            .export_options(shared)
            .map_err(|e| super::state::message(&e))?;
        state.call_if_defined("thread_init", tid)?;
        Ok(state)
    });
    let state = match state {
        Ok(state) => state,
        Err(message) => {
            shared.log.fatal(&message);
            control.failed.store(true, Ordering::Relaxed);
            ready.wait();
            go.wait();
            return;
        }
    };
    ready.wait();
    go.wait();
    if control.failed.load(Ordering::Relaxed) {
        return;
    }
    let outcome = state
        .call_if_defined("thread_run", tid)
        .and_then(|()| state.call_if_defined("thread_done", tid));
    if let Err(message) = outcome {
        shared.log.fatal(&message);
        control.failed.store(true, Ordering::Relaxed);
    }
    control.running.fetch_sub(1, Ordering::Relaxed);
}

/// The thread of intermediate (`--report-interval`) and checkpoint reports, with its own
/// interpreter when the script has a report hook.
fn start_reporter(
    shared: &Arc<Shared>,
    control: &Arc<RunControl>,
    settings: &Settings,
    finished: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    if settings.report_interval == 0 && settings.checkpoints.is_empty() {
        return None;
    }
    let (shared, control, finished) = (shared.clone(), control.clone(), finished.clone());
    let interval = settings.report_interval;
    let mut checkpoints = settings.checkpoints.clone();
    let percentile = settings.percentile;
    Some(std::thread::spawn(move || {
        let state = report_hook(&shared);
        let hook = state.as_ref();
        let mut next_report = interval;
        let mut last_report = 0.0;
        let mut last_checkpoint = 0.0;
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
            let elapsed = control.elapsed();
            if interval > 0 && elapsed >= next_report as f64 {
                let mut stat = control.stats.intermediate(percentile as f64);
                stat.time_total = next_report as f64;
                stat.time_interval = elapsed - last_report;
                stat.threads_running = control.running.load(Ordering::Relaxed);
                last_report = elapsed;
                next_report += interval;
                report_intermediate(&shared, hook, &stat, percentile);
            }
            if checkpoints.first().is_some_and(|&c| elapsed >= c as f64) {
                let at = checkpoints.remove(0);
                shared
                    .log
                    .notice(&format!("\n[ {at}s ] Checkpoint report:"));
                let (mut stat, timers, _) = control.stats.cumulative(percentile as f64, true);
                stat.time_total = elapsed;
                stat.time_interval = elapsed - last_checkpoint;
                last_checkpoint = elapsed;
                print_cumulative(&shared, &stat, &timers, percentile);
            }
        }
    }))
}

/// An interpreter of the calling thread's own when the script hooks the intermediate reports.
fn report_hook(shared: &Arc<Shared>) -> Option<Interpreter> {
    Interpreter::new(shared, None)
        .ok()
        .filter(|state| state.export_options(shared).is_ok())
        .filter(|state| state.hook_defined("sysbench.hooks.report_intermediate"))
}

fn report_intermediate(shared: &Shared, hook: Option<&Interpreter>, stat: &Stat, percentile: u32) {
    if let Some(state) = hook {
        if let Err(message) = state.call_hook("sysbench.hooks.report_intermediate", stat) {
            shared.log.fatal(&message);
        }
        return;
    }
    let sql = shared.sql_used.load(Ordering::Relaxed);
    shared
        .log
        .notice(&layout::intermediate_line(stat, percentile, sql));
}

fn print_cumulative(shared: &Shared, stat: &Stat, timers: &[layout::Timer], percentile: u32) {
    let mut text = String::new();
    if shared.sql_used.load(Ordering::Relaxed) {
        text.push_str(&layout::sql_statistics(stat));
    }
    text.push_str(&layout::general_statistics(stat, timers, percentile));
    // log_text prints each line; the report's last empty line is its own.
    let text = text.strip_suffix('\n').unwrap_or(&text);
    shared.log.notice(text);
}

fn final_report(
    shared: &Shared,
    main_state: &Interpreter,
    totals: &Totals,
    spread: Option<&SpreadSummary>,
    settings: &Settings,
) {
    let histogram = totals.histogram();
    let mut stat = Stat::of_run(
        &totals.counts,
        &totals.timers,
        &histogram,
        settings.percentile as f64,
    );
    stat.time_total = totals.total_s;
    stat.time_interval = totals.total_s;
    stat.threads_running = 0;
    if settings.histogram {
        shared
            .log
            .notice("Latency histogram (values are in milliseconds)");
        shared
            .log
            .notice(histogram.text().strip_suffix('\n').unwrap_or_default());
        shared.log.notice(" ");
    }
    match main_state.call_hook("sysbench.hooks.report_cumulative", &stat) {
        Ok(true) => {}
        Ok(false) => print_cumulative(shared, &stat, &totals.timers, settings.percentile),
        Err(message) => shared.log.fatal(&message),
    }
    for line in spread
        .into_iter()
        .flat_map(crate::pods::summary::spread_lines)
    {
        shared.log.notice(&line);
    }
    let json = shared.options().raw("json");
    if let Some(path) = json.filter(|p| !p.is_empty()) {
        let per_thread: Vec<u64> = totals.timers.iter().map(|t| t.events).collect();
        let text = json_result(shared, &stat, &histogram, &per_thread, spread);
        if let Err(failure) = crate::report::write_file(&path, &text) {
            shared.log.fatal(failure.message());
        }
    }
}

/// stampede's `--json` for a script's run: sysbench's numbers, latency percentiles and the
/// events each thread ran.
fn json_result(
    shared: &Shared,
    stat: &Stat,
    histogram: &stats::LogHistogram,
    per_thread: &[u64],
    spread: Option<&SpreadSummary>,
) -> String {
    let seconds = stat.time_total.max(f64::MIN_POSITIVE);
    let queries = stat.reads + stat.writes + stat.other;
    let value = serde_json::json!({
        "script": shared.script.short_name(),
        "threads": per_thread.len(),
        "time_s": stat.time_total,
        "events": stat.events,
        "tps": stat.events as f64 / seconds,
        "qps": queries as f64 / seconds,
        "queries": { "read": stat.reads, "write": stat.writes, "other": stat.other, "total": queries },
        "errors": stat.errors,
        "reconnects": stat.reconnects,
        "latency_ms": {
            "min": stat.latency_min * 1000.0,
            "avg": stat.latency_avg * 1000.0,
            "p50": histogram.percentile(50.0),
            "p95": histogram.percentile(95.0),
            "p99": histogram.percentile(99.0),
            "max": stat.latency_max * 1000.0,
            "sum": stat.latency_sum * 1000.0,
        },
        "fairness": crate::family::common::measure::ClientFairness::of(per_thread),
    });
    let mut value = value;
    if let Some(spread) = spread {
        value["spread"] = serde_json::to_value(spread).unwrap_or_default();
    }
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

/// A custom command (`sysbench.cmdline.commands`): in the main interpreter, or in a thread per
/// `--threads` when it is a parallel one.
pub fn custom_command(shared: &Arc<Shared>, main_state: &Interpreter, name: &str) -> i32 {
    let threads = settings(shared).threads;
    let parallel: bool = main_state
        .lua
        .load("return sysbench.cmdline.command_parallel(...)")
        .call(name)
        .unwrap_or(false);
    if !(parallel && threads > 1) {
        return call_custom(shared, main_state, name);
    }
    shared.log.notice("Initializing worker threads...\n");
    let failed = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|tid| {
            let (shared, failed, name) = (shared.clone(), failed.clone(), name.to_string());
            std::thread::spawn(move || match Interpreter::new(&shared, Some(tid)) {
                Ok(state) => {
                    if call_custom(&shared, &state, &name) != 0 {
                        failed.store(true, Ordering::Relaxed);
                    }
                }
                Err(message) => {
                    shared.log.fatal(&message);
                    failed.store(true, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.join();
    }
    i32::from(failed.load(Ordering::Relaxed))
}

fn call_custom(shared: &Shared, state: &Interpreter, name: &str) -> i32 {
    let outcome: Result<bool, String> = state
        .export_options(shared)
        .and_then(|()| {
            state
                .lua
                .load("return sysbench.cmdline.call_command(...)")
                .call(name)
        })
        .map_err(|e| super::state::message(&e));
    match outcome {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(message) => {
            shared.log.fatal(&format!(
                "`sysbench.cmdline.call_command' function failed: {message}"
            ));
            1
        }
    }
}
