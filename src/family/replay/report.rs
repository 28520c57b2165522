//! A replay's result as `stampede replay` prints it and `--json` writes it: the fidelity
//! summary (statements replayed of those captured, errors by SQLSTATE class against the
//! capture's, sessions that could not keep up), the schedule lag, throughput, and each
//! statement shape's latency percentiles.

use serde::Serialize;

use super::play::outcome::{class_name, Outcome, LATE_US};
use super::play::{Plan, Replayed};
use super::summary::one_line;

#[derive(Debug, Serialize)]
pub struct ReplayReport {
    pub speed: f64,
    pub seconds: f64,
    pub captured_seconds: f64,
    pub sessions: u64,
    pub sessions_behind: u64,
    pub sessions_failed: u64,
    pub first_failure: Option<String>,
    pub statements_captured: u64,
    pub statements_replayed: u64,
    pub statements_not_sent: u64,
    /// Statements the capture itself left out (COPY, partial transactions, …).
    pub left_out_at_capture: u64,
    pub transactions: u64,
    pub tps: f64,
    pub statements_per_second: f64,
    /// None at speed 0, where nothing is scheduled.
    pub lag: Option<Lag>,
    pub errors: u64,
    pub captured_errors: u64,
    pub errors_by_class: Vec<ErrorClass>,
    /// Statements that failed in the replay and not in the capture, and the reverse.
    pub new_errors: u64,
    pub gone_errors: u64,
    pub first_new_error: Option<String>,
    pub client_cpu_us_per_statement: f64,
    pub statements: Vec<StatementLatency>,
    /// Transactions that ended in each second.
    pub per_second: Vec<u64>,
}

#[derive(Debug, Serialize)]
pub struct Lag {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The share of statements sent more than 10 ms after their time, in percent.
    pub late_pct: f64,
}

#[derive(Debug, Serialize)]
pub struct ErrorClass {
    pub class: String,
    pub name: String,
    pub errors: u64,
}

#[derive(Debug, Serialize)]
pub struct StatementLatency {
    pub statement: String,
    pub calls: u64,
    pub errors: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

impl ReplayReport {
    pub fn new(plan: &Plan, replayed: &Replayed) -> ReplayReport {
        let outcome = &replayed.outcome;
        let file = &plan.file;
        let seconds = replayed.seconds.max(1e-9);
        let captured_errors = file
            .sessions
            .iter()
            .flat_map(|s| &s.statements)
            .filter(|s| s.error.is_some())
            .count() as u64;
        ReplayReport {
            speed: plan.speed,
            seconds: replayed.seconds,
            captured_seconds: file.duration_ms as f64 / 1000.0,
            sessions: outcome.sessions,
            sessions_behind: outcome.behind,
            sessions_failed: outcome.failed_sessions,
            first_failure: outcome.first_failure.clone(),
            statements_captured: file.statements() as u64,
            statements_replayed: outcome.replayed,
            statements_not_sent: outcome.not_sent,
            left_out_at_capture: file.left_out.iter().map(|l| l.statements).sum(),
            transactions: outcome.transactions,
            tps: outcome.transactions as f64 / seconds,
            statements_per_second: outcome.replayed as f64 / seconds,
            lag: (plan.speed > 0.0 && !outcome.lag.is_empty()).then(|| lag(outcome)),
            errors: outcome.errors_total(),
            captured_errors,
            errors_by_class: outcome
                .error_classes()
                .into_iter()
                .map(|(class, errors)| ErrorClass {
                    name: class_name(&class).to_string(),
                    class,
                    errors,
                })
                .collect(),
            new_errors: outcome.new_errors,
            gone_errors: outcome.gone_errors,
            first_new_error: outcome.first_new_error.clone(),
            client_cpu_us_per_statement: outcome.client_cpu.as_secs_f64() * 1e6
                / outcome.replayed.max(1) as f64,
            statements: statements(plan, outcome),
            per_second: outcome.per_second.clone(),
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let speed = if self.speed == 0.0 {
            "as fast as possible".to_string()
        } else {
            format!("speed {}", self.speed)
        };
        out.push_str(&format!(
            "replayed {} of {} captured statements in {:.2} s ({speed}; captured over {:.2} s)\n",
            self.statements_replayed, self.statements_captured, self.seconds, self.captured_seconds
        ));
        if self.statements_not_sent > 0 || self.left_out_at_capture > 0 {
            out.push_str(&format!(
                "not sent: {} (and {} left out at capture)\n",
                self.statements_not_sent, self.left_out_at_capture
            ));
        }
        out.push_str(&format!(
            "sessions: {} ({} could not keep up, {} failed)\n",
            self.sessions, self.sessions_behind, self.sessions_failed
        ));
        if let Some(failure) = &self.first_failure {
            out.push_str(&format!("first failure: {failure}\n"));
        }
        out.push_str(&format!(
            "transactions: {} ({:.1} tps), {:.1} statements a second, client CPU {:.1} µs a statement\n",
            self.transactions, self.tps, self.statements_per_second, self.client_cpu_us_per_statement
        ));
        match &self.lag {
            Some(lag) => out.push_str(&format!(
                "schedule lag: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {:.2}% of statements more than {} ms late\n",
                lag.p50_ms, lag.p90_ms, lag.p99_ms, lag.max_ms, lag.late_pct, LATE_US / 1000
            )),
            None => out.push_str("schedule lag: none (speed 0 sends each statement when its session is ready)\n"),
        }
        out.push_str(&self.errors_line());
        out.push_str("statement latency (ms):\n");
        out.push_str(&format!(
            "  {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}  statement\n",
            "calls", "errors", "mean", "p50", "p99", "max"
        ));
        for s in &self.statements {
            out.push_str(&format!(
                "  {:>9} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3}  {}\n",
                s.calls,
                s.errors,
                s.mean_ms,
                s.p50_ms,
                s.p99_ms,
                s.max_ms,
                one_line(&s.statement, 90)
            ));
        }
        out
    }

    fn errors_line(&self) -> String {
        let classes: Vec<String> = self
            .errors_by_class
            .iter()
            .map(|c| format!("{} {} ({})", c.errors, c.class, c.name))
            .collect();
        let mut line = format!(
            "errors: {} (the capture's: {}){}; {} not in the capture, {} of the capture's did not recur\n",
            self.errors,
            self.captured_errors,
            if classes.is_empty() {
                String::new()
            } else {
                format!(" by class: {}", classes.join(", "))
            },
            self.new_errors,
            self.gone_errors
        );
        if let Some(first) = &self.first_new_error {
            line.push_str(&format!("first error not in the capture: {first}\n"));
        }
        line
    }
}

fn lag(outcome: &Outcome) -> Lag {
    let lag = &outcome.lag;
    Lag {
        p50_ms: ms(lag.value_at_quantile(0.50)),
        p90_ms: ms(lag.value_at_quantile(0.90)),
        p99_ms: ms(lag.value_at_quantile(0.99)),
        max_ms: ms(lag.max()),
        late_pct: 100.0 * outcome.late as f64 / lag.len().max(1) as f64,
    }
}

/// Each shape's latencies, the most called first.
fn statements(plan: &Plan, outcome: &Outcome) -> Vec<StatementLatency> {
    let mut rows: Vec<StatementLatency> = outcome
        .latency
        .iter()
        .map(|(shape, h)| StatementLatency {
            statement: plan.shapes[*shape as usize].clone(),
            calls: h.len(),
            errors: outcome.shape_errors.get(shape).copied().unwrap_or(0),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.calls
            .cmp(&a.calls)
            .then_with(|| a.statement.cmp(&b.statement))
    });
    rows
}
