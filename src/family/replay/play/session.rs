//! One captured session replayed: it connects at its captured time, sends each statement at
//! its own (scaled by the speed; at once at speed 0) the way it was sent — a simple query, the
//! unnamed statement, or a named statement parsed once — and disconnects when it did. Asked to
//! stop, it ends only between transactions, so every transaction is replayed whole.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::alarm::Alarm;
use super::outcome::{Outcome, BEHIND_SHARE};
use super::Plan;
use crate::family::replay::replay_file::{CapturedSession, CapturedStatement, Sent};
use crate::live::sampler::Tally;
use stampede_wire::pg::PgConn;
use stampede_wire::reply::Reply;

/// A long wait is cut into pieces this long, so that a stop is seen.
const STOP_CHECK: Duration = Duration::from_millis(100);

pub async fn play(plan: &Plan, session: &CapturedSession, start: Instant) -> Outcome {
    let mut outcome = Outcome {
        sessions: 1,
        ..Outcome::default()
    };
    let alarm = match Alarm::new() {
        Ok(alarm) => alarm,
        Err(e) => return failed(outcome, session, format!("no timer: {e}")),
    };
    if !wait(plan, &alarm, plan.due(start, session.start_ms)).await {
        outcome.not_sent = session.statements.len() as u64;
        return outcome;
    }
    let mut conn = match PgConn::connect(&plan.conn).await {
        Ok(conn) => conn,
        Err(e) => return failed(outcome, session, format!("could not connect: {e}")),
    };
    let mut player = Player {
        plan,
        prepared: HashMap::new(),
        idle: true,
        began: None,
    };
    let mut late = 0u64;
    for (index, statement) in session.statements.iter().enumerate() {
        let due = plan.due(start, statement.at_ms);
        if player.idle && plan.stopped() {
            outcome.not_sent += (session.statements.len() - index) as u64;
            break;
        }
        if plan.speed > 0.0 {
            if player.idle && !wait(plan, &alarm, due).await {
                outcome.not_sent += (session.statements.len() - index) as u64;
                break;
            }
            let _ = alarm.until(due).await;
            let lag = Instant::now().saturating_duration_since(due).as_micros() as u64;
            late += u64::from(lag > super::outcome::LATE_US);
            outcome.record_lag(lag);
            if let Some(tally) = &plan.live {
                tally.lagged(0, lag as f64);
            }
        }
        if let Err(reason) = player.send(&mut conn, statement, start, &mut outcome).await {
            outcome.not_sent += (session.statements.len() - index) as u64;
            return failed(outcome, session, reason);
        }
    }
    if plan.speed > 0.0 && late as f64 > BEHIND_SHARE * session.statements.len() as f64 {
        outcome.behind = 1;
    }
    if let Some(end) = session.end_ms {
        wait(plan, &alarm, plan.due(start, end)).await;
    }
    conn.close().await;
    outcome
}

fn failed(mut outcome: Outcome, session: &CapturedSession, reason: String) -> Outcome {
    outcome.failed_sessions = 1;
    if outcome.not_sent == 0 {
        outcome.not_sent = session.statements.len() as u64 - outcome.replayed;
    }
    outcome.first_failure = Some(format!("session {}: {reason}", session.id));
    outcome
}

/// Waits until `deadline` in pieces, false when asked to stop first.
async fn wait(plan: &Plan, alarm: &Alarm, deadline: Instant) -> bool {
    if plan.speed == 0.0 {
        return !plan.stopped();
    }
    loop {
        if plan.stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        if deadline - now <= STOP_CHECK {
            let _ = alarm.until(deadline).await;
            return !plan.stopped();
        }
        let _ = alarm.until(now + STOP_CHECK).await;
    }
}

struct Player<'a> {
    plan: &'a Plan,
    /// Named statements parsed on this connection, by name: their text.
    prepared: HashMap<String, u32>,
    /// Whether the session is outside a transaction block.
    idle: bool,
    /// When the transaction under way sent its first statement.
    began: Option<Instant>,
}

impl Player<'_> {
    /// Sends one statement as it was sent and reads its reply; Err when the connection is gone.
    async fn send(
        &mut self,
        conn: &mut PgConn,
        statement: &CapturedStatement,
        start: Instant,
        outcome: &mut Outcome,
    ) -> Result<(), String> {
        let text = &self.plan.file.texts[statement.text as usize];
        let queued = match &statement.sent {
            Sent::Simple => conn.queue_simple_query(text),
            Sent::Unnamed => queue_unnamed(conn, text, &statement.params),
            Sent::Named(name) => self.queue_named(conn, name, statement, text),
        };
        queued.map_err(|e| e.to_string())?;
        let sent = Instant::now();
        let began = *self.began.get_or_insert(sent);
        let reply = conn.round_trip(false).await.map_err(|e| e.to_string())?;
        let shape = self.plan.shape_of[statement.text as usize];
        let second = start.elapsed().as_secs() as usize;
        outcome.record_latency(shape, sent.elapsed().as_micros() as u64, second);
        outcome.replayed += 1;
        if matches!(statement.sent, Sent::Simple) {
            self.forget_deallocated(text);
        }
        self.account(&reply, statement, shape, text, outcome);
        self.idle = reply.transaction_status == b'I';
        if self.idle {
            outcome.transaction_at(second);
            self.plan.transactions.fetch_add(1, Ordering::Relaxed);
            self.began = None;
        }
        if let Some(tally) = &self.plan.live {
            tally_reply(tally, &reply, self.idle.then(|| began.elapsed()));
        }
        Ok(())
    }

    fn queue_named(
        &mut self,
        conn: &mut PgConn,
        name: &str,
        statement: &CapturedStatement,
        text: &str,
    ) -> Result<(), stampede_wire::reply::ConnError> {
        match self.prepared.get(name) {
            Some(known) if *known == statement.text => {}
            Some(_) => {
                conn.queue_close_statement(name)?;
                conn.queue_parse(name, text)?;
                self.prepared.insert(name.to_string(), statement.text);
            }
            None => {
                conn.queue_parse(name, text)?;
                self.prepared.insert(name.to_string(), statement.text);
            }
        }
        bind_execute(conn, name, &statement.params)
    }

    /// DEALLOCATE and DISCARD drop the session's prepared statements: a name used after
    /// them is parsed again, as the application's driver did.
    fn forget_deallocated(&mut self, text: &str) {
        let word = crate::family::replay::message::first_word(text);
        if word == "discard" {
            self.prepared.clear();
        } else if word == "deallocate" {
            let rest = text.trim().trim_end_matches(';');
            let last = rest.split_whitespace().last().unwrap_or("");
            if last.eq_ignore_ascii_case("all") {
                self.prepared.clear();
            } else {
                self.prepared.remove(last.trim_matches('"'));
            }
        }
    }

    fn account(
        &self,
        reply: &Reply,
        statement: &CapturedStatement,
        shape: u32,
        text: &str,
        outcome: &mut Outcome,
    ) {
        match (&reply.error, &statement.error) {
            (Some(error), captured) => {
                *outcome.errors.entry(error.code.clone()).or_default() += 1;
                *outcome.shape_errors.entry(shape).or_default() += 1;
                if captured.is_none() {
                    outcome.new_errors += 1;
                    if outcome.first_new_error.is_none() {
                        let shown = crate::family::replay::summary::one_line(text, 80);
                        outcome.first_new_error =
                            Some(format!("{} ({}) in: {shown}", error.message, error.code));
                    }
                }
            }
            (None, Some(_)) => outcome.gone_errors += 1,
            (None, None) => {}
        }
    }
}

/// A reply for `--metrics-addr`: a statement answered (or failed, by its SQLSTATE), and a
/// transaction that ended with it — its latency from its first statement's sending.
fn tally_reply(tally: &Tally, reply: &Reply, ended: Option<Duration>) {
    match &reply.error {
        None => tally.answered(0, 0),
        Some(error) => tally.failed(0, 0, Some(&error.code), 0),
    }
    if let Some(latency) = ended {
        tally.committed(0, 0, latency, 0);
    }
}

fn queue_unnamed(
    conn: &mut PgConn,
    text: &str,
    params: &[Option<String>],
) -> Result<(), stampede_wire::reply::ConnError> {
    conn.queue_parse("", text)?;
    bind_execute(conn, "", params)
}

fn bind_execute(
    conn: &mut PgConn,
    name: &str,
    params: &[Option<String>],
) -> Result<(), stampede_wire::reply::ConnError> {
    conn.queue_bind(
        name,
        params.iter().map(|p| p.as_deref().map(str::as_bytes)),
        false,
    )?;
    conn.queue_execute()?;
    conn.queue_sync();
    Ok(())
}

impl Plan {
    /// When a captured offset falls in this replay.
    pub fn due(&self, start: Instant, at_ms: i64) -> Instant {
        if self.speed == 0.0 {
            return start;
        }
        start + Duration::from_secs_f64(at_ms.max(0) as f64 / 1000.0 / self.speed)
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
