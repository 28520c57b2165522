//! The live registry of one process: the run in progress (or the last one) as cumulative
//! counters, a latency histogram with fixed buckets and gauges, and for a lab the runs done so
//! far. Updated once per interval from the driver's merged report; rendered at each scrape.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::openmetrics::{Exposition, Labels};
use crate::driver::stats::{LagStats, OtherClasses};
use crate::driver::{FailureCounts, IntervalReport, ScriptTally};

/// The histogram's upper bounds in seconds: 1, 1.5, 2, 3, 5 and 7 per decade from 10 µs to
/// 100 s — six buckets a decade, so a quantile read from them is within a bucket (≤ 50%) of the
/// exact one, and the HDR histogram's values (3 significant digits) fall on one side of each.
pub fn bucket_bounds_s() -> Vec<f64> {
    // Parsed from their decimal text, so each is the double nearest it and prints as written.
    let decimal = |text: String| text.parse::<f64>().expect("a decimal number");
    let mut bounds = Vec::new();
    for exponent in -5..2 {
        for mantissa in ["1", "1.5", "2", "3", "5", "7"] {
            bounds.push(decimal(format!("{mantissa}e{exponent}")));
        }
    }
    bounds.push(100.0);
    bounds
}

/// The transactions' latency, bucketed: counts per bound (not cumulative), beyond the last,
/// the exact sum.
#[derive(Debug, Clone, Default)]
struct LatencyBuckets {
    counts: Vec<u64>,
    over: u64,
    sum_s: f64,
}

impl LatencyBuckets {
    /// Adds an interval's histogram: each recorded value (its bucket's middle, in µs) into the
    /// first bound at or above it.
    fn add(&mut self, stats: &crate::driver::LatencyStats, bounds_us: &[f64]) {
        if self.counts.len() != bounds_us.len() {
            self.counts = vec![0; bounds_us.len()];
        }
        let histogram = &stats.histogram;
        for value in histogram.iter_recorded() {
            let us = histogram.median_equivalent(value.value_iterated_to()) as f64;
            let count = value.count_at_value();
            match bounds_us.iter().position(|&bound| us <= bound) {
                Some(i) => self.counts[i] += count,
                None => self.over += count,
            }
        }
        self.sum_s += stats.sum_us / 1e6;
    }
}

/// One run's series: everything since its start.
#[derive(Debug, Clone, Default)]
struct RunSeries {
    labels: Labels,
    scripts: Vec<String>,
    by_script: Vec<ScriptTally>,
    retries: u64,
    skipped: u64,
    late: u64,
    reconnects: u64,
    latency: LatencyBuckets,
    lag: LagStats,
    clients: usize,
    aborted_clients: usize,
    rate_limited: bool,
    /// A spread run's committed transactions by pod.
    by_pod: Vec<u64>,
    /// Rows inserted or deleted, by script, where a run counts them (the Insert Benchmark's
    /// operations); empty elsewhere.
    rows: Vec<u64>,
    seconds: u64,
    /// TPC-C: the script whose commits are new orders.
    new_order_script: Option<usize>,
    finished: bool,
    /// The registry's generation when the run ended.
    ended_at: u64,
}

/// How a run is described when it starts.
pub struct RunStart {
    pub labels: Labels,
    /// The run's scripts (transaction types) by the driver's script index.
    pub scripts: Vec<String>,
    pub clients: usize,
    /// `-R`: the schedule lag is a series of its own.
    pub rate_limited: bool,
    /// TPC-C: which script's commits are new orders (NOPM).
    pub new_order_script: Option<usize>,
}

#[derive(Default)]
struct State {
    /// The process's own labels (the command; the lab and its spec).
    labels: Labels,
    run: Option<RunSeries>,
    /// Ended runs no scrape has read since they ended: served beside the current run until one
    /// does, so a lab's next run starting at once does not take its predecessor's last second
    /// from Prometheus.
    unread: Vec<RunSeries>,
    /// A lab's runs by outcome, and how many it plans.
    runs_done: u64,
    runs_failed: u64,
    runs_planned: Option<u64>,
    /// Bumped by every change, so a scrape can be told to have read the last one.
    generation: u64,
    scraped_generation: u64,
    last_scrape: Option<Instant>,
    scrape_gap: Option<Duration>,
}

pub struct LiveMetrics {
    state: Mutex<State>,
    scraped: Condvar,
    bounds_s: Vec<f64>,
    bounds_us: Vec<f64>,
}

impl LiveMetrics {
    pub fn new(labels: Labels) -> LiveMetrics {
        let bounds_s = bucket_bounds_s();
        LiveMetrics {
            bounds_us: bounds_s.iter().map(|s| s * 1e6).collect(),
            bounds_s,
            state: Mutex::new(State {
                labels,
                ..State::default()
            }),
            scraped: Condvar::new(),
        }
    }

    fn change(&self, apply: impl FnOnce(&mut State)) {
        let mut state = self
            .state
            .lock()
            .expect("no thread panics holding the registry");
        apply(&mut state);
        state.generation += 1;
    }

    /// A run starts: its series begin at zero (the previous run's are gone from the scrape).
    pub fn start_run(&self, start: RunStart) {
        self.change(|state| {
            if let Some(ended) = state.run.take() {
                if ended.finished && ended.ended_at > state.scraped_generation {
                    state.unread.push(ended);
                }
            }
            state.run = Some(RunSeries {
                labels: start.labels,
                by_script: vec![ScriptTally::default(); start.scripts.len()],
                scripts: start.scripts,
                clients: start.clients,
                rate_limited: start.rate_limited,
                new_order_script: start.new_order_script,
                ..RunSeries::default()
            })
        });
    }

    /// An interval of the run in progress, merged over threads (and pods).
    pub fn observe(&self, interval: &IntervalReport) {
        let bounds_us = &self.bounds_us;
        self.change(|state| {
            let Some(run) = state.run.as_mut() else {
                return;
            };
            let stats = &interval.stats;
            run.latency.add(&stats.latency, bounds_us);
            run.lag.merge(&stats.lag);
            run.retries += stats.retries;
            run.skipped += stats.skipped;
            run.late += stats.late;
            run.reconnects += stats.reconnects;
            if run.scripts.len() == 1 {
                // One script named (a lab's cell): the interval's merged counts are its own,
                // whatever the workload's scripts were.
                run.by_script[0].merge(&ScriptTally {
                    committed: stats.latency.count,
                    failures: stats.failures,
                    statements: stats.statements,
                });
            } else {
                crate::driver::merge_tallies(&mut run.by_script, &interval.scripts);
            }
            if run.by_pod.len() < interval.by_pod.len() {
                run.by_pod.resize(interval.by_pod.len(), 0);
            }
            run.by_pod
                .iter_mut()
                .zip(&interval.by_pod)
                .for_each(|(total, pod)| *total += pod);
            run.seconds = run.seconds.max(interval.index + 1);
        });
    }

    /// What the driver's interval does not carry, from a run the driver does not run: rows
    /// by script.
    pub fn observe_rows(&self, rows: &[u64]) {
        self.change(|state| {
            let Some(run) = state.run.as_mut() else {
                return;
            };
            add_each(&mut run.rows, rows);
        });
    }

    pub fn client_aborted(&self) {
        self.change(|state| {
            if let Some(run) = state.run.as_mut() {
                run.aborted_clients += 1;
            }
        });
    }

    /// The run ended: its series stay (final) until the next run starts.
    pub fn end_run(&self, failed: bool) {
        self.change(|state| {
            let generation = state.generation + 1;
            if let Some(run) = state.run.as_mut() {
                run.finished = true;
                run.ended_at = generation;
            }
            if failed {
                state.runs_failed += 1;
            } else {
                state.runs_done += 1;
            }
        });
    }

    /// A lab's plan: how many runs it holds.
    pub fn plan_runs(&self, runs: u64) {
        self.change(|state| state.runs_planned = Some(runs));
    }

    /// Waits until a scrape has read everything observed so far — the run's final numbers —
    /// when something scrapes (at most twice its gap between scrapes but at least
    /// `LEAST_FINAL_WAIT`, as a busy machine delays a scraper's next request; never over
    /// `most`). A process that exits at once would leave Prometheus the numbers of its
    /// second-to-last scrape.
    pub fn wait_for_final_scrape(&self, most: Duration) {
        let state = self
            .state
            .lock()
            .expect("no thread panics holding the registry");
        let Some(gap) = state.scrape_gap else { return };
        let wanted = state.generation;
        let limit = (gap * 2).max(LEAST_FINAL_WAIT).min(most);
        let _ = self
            .scraped
            .wait_timeout_while(state, limit, |state| state.scraped_generation < wanted);
    }

    /// The OpenMetrics text of everything now.
    pub fn render(&self) -> String {
        let mut state = self
            .state
            .lock()
            .expect("no thread panics holding the registry");
        let now = Instant::now();
        if let Some(last) = state.last_scrape {
            state.scrape_gap = Some(now - last);
        }
        state.last_scrape = Some(now);
        state.scraped_generation = state.generation;
        let text = exposition(&state, &self.bounds_s);
        state.unread.clear();
        drop(state);
        self.scraped.notify_all();
        text
    }
}

/// The shortest wait for the final scrape: a scraper polling every 100 ms on a loaded machine
/// came 300 ms late.
const LEAST_FINAL_WAIT: Duration = Duration::from_secs(2);

/// Adds `from` into `into` element by element, `into` grown to hold them.
pub fn add_each(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    into.iter_mut().zip(from).for_each(|(total, n)| *total += n);
}

fn exposition(state: &State, bounds_s: &[f64]) -> String {
    let mut out = Exposition::default();
    out.family(
        "stampede",
        "info",
        None,
        "The stampede process and what it runs.",
    );
    out.sample(
        "stampede_info",
        &state.labels,
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    lab_families(&mut out, state);
    for run in state.unread.iter().chain(&state.run) {
        run_families(&mut out, run, state, bounds_s);
    }
    out.finish()
}

fn lab_families(out: &mut Exposition, state: &State) {
    let Some(planned) = state.runs_planned else {
        return;
    };
    out.family(
        "stampede_lab_runs_planned",
        "gauge",
        None,
        "Runs in the lab's plan.",
    );
    out.sample(
        "stampede_lab_runs_planned",
        &state.labels,
        &[],
        planned as f64,
    );
    out.family(
        "stampede_lab_runs",
        "counter",
        None,
        "Runs the lab finished, by outcome.",
    );
    for (outcome, count) in [("done", state.runs_done), ("failed", state.runs_failed)] {
        out.sample(
            "stampede_lab_runs_total",
            &state.labels,
            &[("outcome", outcome)],
            count as f64,
        );
    }
}

fn run_families(out: &mut Exposition, run: &RunSeries, state: &State, bounds_s: &[f64]) {
    let labels: Labels = state.labels.iter().chain(&run.labels).cloned().collect();
    out.family(
        "stampede_transactions",
        "counter",
        None,
        "Transactions committed, by script (transaction type).",
    );
    for (script, tally) in run.scripts.iter().zip(&run.by_script) {
        let script = [("script", script.as_str())];
        out.sample(
            "stampede_transactions_total",
            &labels,
            &script,
            tally.committed as f64,
        );
    }
    out.family(
        "stampede_failed_transactions",
        "counter",
        None,
        "Transactions that failed and were not retried (pgbench's failures), by script and SQLSTATE.",
    );
    for (script, tally) in run.scripts.iter().zip(&run.by_script) {
        for (kind, sqlstate, count) in failure_kinds(&tally.failures) {
            let extra = [
                ("script", script.as_str()),
                ("kind", kind),
                ("sqlstate", sqlstate.as_str()),
            ];
            out.sample(
                "stampede_failed_transactions_total",
                &labels,
                &extra,
                count as f64,
            );
        }
    }
    out.family(
        "stampede_statements",
        "counter",
        None,
        "SQL statements completed, by script.",
    );
    for (script, tally) in run.scripts.iter().zip(&run.by_script) {
        let script = [("script", script.as_str())];
        out.sample(
            "stampede_statements_total",
            &labels,
            &script,
            tally.statements as f64,
        );
    }
    rows_family(out, run, &labels);
    latency_family(out, run, &labels, bounds_s);
    counter_families(out, run, &labels);
    gauge_families(out, run, &labels);
}

/// The failure kinds with the SQLSTATE each stands for: serialization (40001), deadlock
/// (40P01), and the other errors by SQLSTATE class where the run knows it ("23": integrity
/// constraint violation), the rest (a lost connection, a class beyond the few a run keeps, an
/// error whose code TPROC-H's messages do not keep) as "other".
fn failure_kinds(failures: &FailureCounts) -> Vec<(&'static str, String, u64)> {
    let mut kinds = vec![
        ("serialization", "40001".to_string(), failures.serialization),
        ("deadlock", "40P01".to_string(), failures.deadlock),
    ];
    let mut classified = 0;
    for (class, count) in failures.classes.iter() {
        kinds.push(("other", OtherClasses::name(class), count));
        classified += count;
    }
    let rest = failures.other.saturating_sub(classified);
    kinds.push(("other", "other".to_string(), rest));
    kinds
}

fn rows_family(out: &mut Exposition, run: &RunSeries, labels: &Labels) {
    if run.rows.is_empty() {
        return;
    }
    out.family(
        "stampede_rows",
        "counter",
        None,
        "Rows inserted or deleted, by operation (the Insert Benchmark's).",
    );
    for (script, rows) in run.scripts.iter().zip(&run.rows) {
        out.sample(
            "stampede_rows_total",
            labels,
            &[("script", script.as_str())],
            *rows as f64,
        );
    }
}

fn latency_family(out: &mut Exposition, run: &RunSeries, labels: &Labels, bounds_s: &[f64]) {
    let name = "stampede_transaction_latency_seconds";
    out.family(
        name,
        "histogram",
        Some("seconds"),
        "Committed transactions' latency (from the schedule with -R), from the run's HDR histogram.",
    );
    let mut cumulative = 0;
    let counts = &run.latency.counts;
    for (i, bound) in bounds_s.iter().enumerate() {
        cumulative += counts.get(i).copied().unwrap_or(0);
        let le = super::openmetrics::number(*bound);
        out.sample(
            &format!("{name}_bucket"),
            labels,
            &[("le", &le)],
            cumulative as f64,
        );
    }
    let total = cumulative + run.latency.over;
    out.sample(
        &format!("{name}_bucket"),
        labels,
        &[("le", "+Inf")],
        total as f64,
    );
    out.sample(&format!("{name}_count"), labels, &[], total as f64);
    out.sample(&format!("{name}_sum"), labels, &[], run.latency.sum_s);
}

fn counter_families(out: &mut Exposition, run: &RunSeries, labels: &Labels) {
    let counters = [
        (
            "stampede_retries",
            "Retries of serialization failures and deadlocks (--max-tries).",
            run.retries,
        ),
        (
            "stampede_skipped_transactions",
            "Transactions skipped as already late (-R with -L).",
            run.skipped,
        ),
        (
            "stampede_late_transactions",
            "Committed transactions slower than --latency-limit.",
            run.late,
        ),
        (
            "stampede_reconnects",
            "Connections made again after the server dropped one.",
            run.reconnects,
        ),
        (
            "stampede_aborted_clients",
            "Clients that gave up after an error.",
            run.aborted_clients as u64,
        ),
    ];
    for (name, help, value) in counters {
        out.family(name, "counter", None, help);
        out.sample(&format!("{name}_total"), labels, &[], value as f64);
    }
    if run.rate_limited {
        let name = "stampede_schedule_lag_seconds";
        out.family(
            name,
            "summary",
            Some("seconds"),
            "How late transactions started against the -R schedule.",
        );
        out.sample(&format!("{name}_count"), labels, &[], run.lag.count as f64);
        out.sample(&format!("{name}_sum"), labels, &[], run.lag.sum_us / 1e6);
        let max = "stampede_schedule_lag_max_seconds";
        out.family(
            max,
            "gauge",
            Some("seconds"),
            "The largest schedule lag so far.",
        );
        out.sample(max, labels, &[], run.lag.max_us / 1e6);
    }
    if !run.by_pod.is_empty() {
        out.family(
            "stampede_pod_transactions",
            "counter",
            None,
            "A spread run's committed transactions, by pod.",
        );
        for (pod, committed) in run.by_pod.iter().enumerate() {
            let pod = pod.to_string();
            out.sample(
                "stampede_pod_transactions_total",
                labels,
                &[("pod", &pod)],
                *committed as f64,
            );
        }
    }
}

fn gauge_families(out: &mut Exposition, run: &RunSeries, labels: &Labels) {
    out.family(
        "stampede_clients",
        "gauge",
        None,
        "The run's clients (connections).",
    );
    out.sample("stampede_clients", labels, &[], run.clients as f64);
    out.family(
        "stampede_clients_connected",
        "gauge",
        None,
        "Clients still running (not aborted).",
    );
    let connected = run.clients.saturating_sub(run.aborted_clients);
    out.sample("stampede_clients_connected", labels, &[], connected as f64);
    out.family(
        "stampede_run_seconds",
        "gauge",
        Some("seconds"),
        "Measured seconds of the run so far.",
    );
    out.sample("stampede_run_seconds", labels, &[], run.seconds as f64);
    out.family(
        "stampede_run_finished",
        "gauge",
        None,
        "1 once the run has ended.",
    );
    out.sample(
        "stampede_run_finished",
        labels,
        &[],
        f64::from(u8::from(run.finished)),
    );
    if let Some(script) = run.new_order_script {
        let new_orders = run.by_script.get(script).map_or(0, |t| t.committed);
        out.family("stampede_tpcc_new_orders", "counter", None, "TPC-C New-Order transactions committed (the client's count; NOPM is its rate per minute).");
        out.sample(
            "stampede_tpcc_new_orders_total",
            labels,
            &[],
            new_orders as f64,
        );
        out.family(
            "stampede_tpcc_nopm",
            "gauge",
            None,
            "New orders per minute over the measured run so far (the client's count).",
        );
        let nopm = if run.seconds == 0 {
            0.0
        } else {
            new_orders as f64 * 60.0 / run.seconds as f64
        };
        out.sample("stampede_tpcc_nopm", labels, &[], nopm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::ScriptStats;

    fn interval(index: u64, latencies_us: &[f64], scripts: Vec<ScriptTally>) -> IntervalReport {
        let mut stats = ScriptStats::default();
        latencies_us.iter().for_each(|&us| stats.latency.record(us));
        stats.failures.deadlock = 1;
        stats.statements = 3 * latencies_us.len() as u64;
        IntervalReport {
            index,
            stats,
            end_unix_s: 0.0,
            scripts,
            by_pod: vec![latencies_us.len() as u64 - 1, 1],
        }
    }

    fn tally(committed: u64) -> ScriptTally {
        ScriptTally {
            committed,
            statements: 3 * committed,
            ..ScriptTally::default()
        }
    }

    fn value(text: &str, sample: &str) -> f64 {
        let line = text
            .lines()
            .find(|line| line.starts_with(sample))
            .unwrap_or_else(|| panic!("{sample} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn intervals_add_up_into_counters_buckets_and_gauges() {
        let metrics = LiveMetrics::new(vec![("command".into(), "tpcc".into())]);
        metrics.start_run(RunStart {
            labels: vec![("round".into(), "2".into())],
            scripts: vec!["new-order".into(), "payment".into()],
            clients: 4,
            rate_limited: false,
            new_order_script: Some(0),
        });
        let zero = metrics.render();
        assert_eq!(
            value(
                &zero,
                "stampede_transactions_total{command=\"tpcc\",round=\"2\",script=\"payment\"}"
            ),
            0.0
        );
        metrics.observe(&interval(
            0,
            &[120.0, 180.0, 900.0],
            vec![tally(2), tally(1)],
        ));
        metrics.observe(&interval(1, &[1500.0, 250_000.0], vec![tally(1), tally(1)]));
        metrics.client_aborted();
        let text = metrics.render();
        let labels = "command=\"tpcc\",round=\"2\"";
        let sample = |rest: &str| value(&text, rest);
        assert_eq!(
            sample(&format!(
                "stampede_transactions_total{{{labels},script=\"new-order\"}}"
            )),
            3.0
        );
        assert_eq!(
            sample(&format!(
                "stampede_transactions_total{{{labels},script=\"payment\"}}"
            )),
            2.0
        );
        // Bounds are inclusive: 120 µs and 180 µs fall under 0.00015 and 0.0002.
        let bucket = |le: &str| {
            sample(&format!(
                "stampede_transaction_latency_seconds_bucket{{{labels},le=\"{le}\"}}"
            ))
        };
        assert_eq!(bucket("0.0001"), 0.0);
        assert_eq!(bucket("0.00015"), 1.0);
        assert_eq!(bucket("0.0002"), 2.0);
        assert_eq!(bucket("0.001"), 3.0);
        assert_eq!(bucket("0.0015"), 4.0);
        assert_eq!(bucket("0.2"), 4.0);
        assert_eq!(bucket("0.3"), 5.0);
        assert_eq!(bucket("+Inf"), 5.0);
        assert_eq!(
            sample(&format!(
                "stampede_transaction_latency_seconds_count{{{labels}}}"
            )),
            5.0
        );
        let sum = sample(&format!(
            "stampede_transaction_latency_seconds_sum{{{labels}}}"
        ));
        assert!((sum - 0.2527).abs() < 1e-12, "{sum}");
        assert_eq!(
            sample(&format!("stampede_clients_connected{{{labels}}}")),
            3.0
        );
        assert_eq!(
            sample(&format!(
                "stampede_pod_transactions_total{{{labels},pod=\"0\"}}"
            )),
            3.0
        );
        assert_eq!(
            sample(&format!("stampede_tpcc_new_orders_total{{{labels}}}")),
            3.0
        );
        assert_eq!(sample(&format!("stampede_tpcc_nopm{{{labels}}}")), 90.0);
        assert!(text.ends_with("# EOF\n"));
        assert!(!text.contains("schedule_lag"), "no -R, no lag series");
    }

    fn start(metrics: &LiveMetrics, round: &str) {
        metrics.start_run(RunStart {
            labels: vec![("round".into(), round.into())],
            scripts: vec!["select-only".into()],
            clients: 1,
            rate_limited: false,
            new_order_script: None,
        });
    }

    #[test]
    fn an_ended_run_stays_until_a_scrape_has_read_it() {
        let metrics = LiveMetrics::new(Vec::new());
        let round = |n: &str| {
            format!("stampede_transactions_total{{round=\"{n}\",script=\"select-only\"}}")
        };
        start(&metrics, "1");
        metrics.observe(&interval(0, &[100.0, 200.0], Vec::new()));
        metrics.end_run(false);
        start(&metrics, "2");
        let both = metrics.render();
        assert_eq!(value(&both, &round("1")), 2.0, "{both}");
        assert_eq!(value(&both, &round("2")), 0.0, "{both}");
        assert_eq!(
            both.matches("# TYPE stampede_transactions counter").count(),
            1
        );
        metrics.end_run(false);
        metrics.render();
        start(&metrics, "3");
        let read = metrics.render();
        assert!(
            !read.contains("round=\"1\"") && !read.contains("round=\"2\""),
            "{read}"
        );
    }

    #[test]
    fn the_final_scrape_is_waited_for_only_when_something_scrapes() {
        let metrics = std::sync::Arc::new(LiveMetrics::new(Vec::new()));
        let started = Instant::now();
        metrics.wait_for_final_scrape(Duration::from_secs(5));
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "nobody scrapes: no wait"
        );
        metrics.render();
        metrics.render();
        metrics.end_run(false);
        let started = Instant::now();
        let scraper = {
            let metrics = metrics.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                metrics.render()
            })
        };
        metrics.wait_for_final_scrape(Duration::from_secs(5));
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "a scraper late by more than twice its gap is still waited for"
        );
        assert!(scraper.join().unwrap().contains("stampede_info"));
    }
}
