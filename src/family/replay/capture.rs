//! A server log's records as a replay file: each session's statements in order with their
//! times, how they were sent and their parameters, and what had to be left out. A transaction
//! the log holds only part of (begun before its first message, or still open after its last)
//! is left out whole, so that a replay sends every transaction whole or not at all.

use std::collections::{HashMap, HashSet};

use super::log::{LogFormat, LogRecord, Problem, ReadLog};
use super::message::{self, Message, TransactionEdge};
use super::normalize::highest_parameter;
use super::replay_file::{CapturedSession, CapturedStatement, LeftOut, ReplayFile, Sent, VERSION};
use stampede_base::error::Failure;

/// Problems listed in an error or a warning; the rest are counted.
const LISTED_PROBLEMS: usize = 10;

/// Why stampede's own sessions are not replayed: its capture, its lab's control sessions and
/// probes, its runs' clients — all named `stampede…` — are not the application's workload, and
/// replaying them would change the target's configuration (ALTER SYSTEM, pg_reload_conf).
pub const OWN_SESSIONS: &str =
    "of stampede's own sessions (application_name stampede…: a capture, a lab's control sessions and probes, a run's clients)";

pub struct CaptureOptions {
    /// Only this database's sessions.
    pub database: Option<String>,
    /// The share of the log's messages that may be unreadable, in percent.
    pub max_unusable_pct: f64,
}

/// A log (one file of it) as capture read it.
pub struct LogFile {
    pub name: String,
    pub log: ReadLog,
}

/// The replay file and the lines that could not be used.
pub struct Captured {
    pub file: ReplayFile,
    /// (log file, problem).
    pub problems: Vec<(String, Problem)>,
    pub messages: usize,
}

pub fn capture(
    logs: Vec<LogFile>,
    format: LogFormat,
    options: &CaptureOptions,
) -> Result<Captured, Failure> {
    let mut builder = Builder::default();
    let mut problems = Vec::new();
    let mut messages = 0;
    let mut first_message = None;
    for file in logs {
        messages += file.log.records.len() + file.log.problems.len();
        problems.extend(
            file.log
                .problems
                .into_iter()
                .map(|p| (file.name.clone(), p)),
        );
        for record in file.log.records {
            first_message.get_or_insert_with(|| record.clone());
            let wanted = options
                .database
                .as_ref()
                .is_none_or(|db| *db == record.database);
            if !record.session.is_empty() && wanted {
                if let Err(unreplayable) = builder.accept(&record) {
                    problems.push((
                        file.name.clone(),
                        Problem {
                            line: record.line,
                            reason: unreplayable.to_string(),
                        },
                    ));
                }
            }
        }
        builder.sources.push(file.name);
    }
    refuse_unusable(&problems, messages, options.max_unusable_pct)?;
    let first = first_message.ok_or_else(|| Failure::input("the log holds no message"))?;
    let file = builder.finish(format, &first);
    if file.statements() == 0 {
        return Err(Failure::input(no_statement_message(options, &file)));
    }
    Ok(Captured {
        file,
        problems,
        messages,
    })
}

fn no_statement_message(options: &CaptureOptions, file: &ReplayFile) -> String {
    let scope = match &options.database {
        Some(db) => format!(" of database \"{db}\""),
        None => String::new(),
    };
    if let Some(own) = file.left_out.iter().find(|l| l.reason == OWN_SESSIONS) {
        return format!(
            "the log holds no statement{scope} to replay: its {} statement(s) are of stampede's own sessions (application_name stampede…), which capture leaves out; capture while the application runs",
            own.statements
        );
    }
    format!(
        "the log holds no statement{scope} to replay: the server logs them with log_statement = 'all' or log_min_duration_statement = 0"
    )
}

/// Refuses a log of which more than `max_pct` of the messages could not be used, listing
/// the first of them.
fn refuse_unusable(
    problems: &[(String, Problem)],
    messages: usize,
    max_pct: f64,
) -> Result<(), Failure> {
    let share = 100.0 * problems.len() as f64 / messages.max(1) as f64;
    if problems.is_empty() || share <= max_pct {
        return Ok(());
    }
    Err(Failure::input(format!(
        "{} of the log's {messages} messages could not be used ({share:.1}%, more than --max-unusable {max_pct}%); nothing was written:\n{}",
        problems.len(),
        problem_lines(problems)
    )))
}

/// "file:line: reason" for the first problems, and how many more there are.
pub fn problem_lines(problems: &[(String, Problem)]) -> String {
    let mut lines: Vec<String> = problems
        .iter()
        .take(LISTED_PROBLEMS)
        .map(|(file, p)| format!("  {file}:{}: {}", p.line, p.reason))
        .collect();
    if problems.len() > LISTED_PROBLEMS {
        lines.push(format!("  … and {} more", problems.len() - LISTED_PROBLEMS));
    }
    lines.join("\n")
}

#[derive(Default)]
struct Builder {
    sources: Vec<String>,
    sessions: Vec<SessionBuilder>,
    by_id: HashMap<String, usize>,
    texts: Vec<String>,
    text_ids: HashMap<String, u32>,
    left_out: Vec<LeftOut>,
    /// Sessions named `stampede…`, left out whole.
    own: HashSet<String>,
    last_ms: i64,
}

struct SessionBuilder {
    session: CapturedSession,
    /// The log line of each statement, for what is left out.
    lines: Vec<usize>,
    /// The last statement was logged when it began (`log_statement`): an ERROR that follows
    /// is its outcome.
    last_logged_at_start: bool,
}

impl Builder {
    fn accept(&mut self, record: &LogRecord) -> Result<(), Unreplayable> {
        self.last_ms = self.last_ms.max(record.at_ms);
        if self.is_own(record) {
            if record.severity == "LOG"
                && matches!(
                    message::classify(&record.message),
                    Message::Statement { .. }
                )
            {
                self.leave_out(OWN_SESSIONS, record.line);
            }
            return Ok(());
        }
        if matches!(record.severity.as_str(), "ERROR" | "FATAL" | "PANIC") {
            return self.failed(record);
        }
        if record.severity != "LOG" {
            return Ok(());
        }
        match message::classify(&record.message) {
            Message::Connected { .. } => {
                self.session(record, false);
            }
            Message::Disconnected => {
                self.session(record, true).session.end_ms = Some(record.at_ms);
            }
            Message::Statement {
                duration_ms,
                prepared,
                text,
            } => {
                let logged_at_start = !record.message.starts_with("duration: ");
                let at_ms = record.at_ms - duration_ms.round() as i64;
                self.statement(record, at_ms, prepared, text, logged_at_start)?;
            }
            Message::Fetch => self.leave_out(
                "a fetch from a named portal (a cursor's further rows): not replayed",
                record.line,
            ),
            Message::Part | Message::Other => {}
        }
        Ok(())
    }

    /// Whether `record` is of a session named `stampede…`: csvlog and jsonlog name each
    /// record's application, stderr only the session's connection message.
    fn is_own(&mut self, record: &LogRecord) -> bool {
        let named = match (&record.application, message::classify(&record.message)) {
            (Some(application), _) => Some(application.as_str()),
            (None, Message::Connected { application }) => application,
            _ => None,
        };
        if named.is_some_and(|name| name.starts_with(stampede_conn::postgres::APPLICATION_NAME)) {
            self.own.insert(record.session.clone());
        }
        self.own.contains(&record.session)
    }

    /// The session of `record`, begun now if the log has not shown it before (before its
    /// connection was logged, unless this is that connection).
    fn session(&mut self, record: &LogRecord, began_before: bool) -> &mut SessionBuilder {
        let index = *self.by_id.entry(record.session.clone()).or_insert_with(|| {
            self.sessions.push(SessionBuilder {
                session: CapturedSession {
                    id: record.session.clone(),
                    user: record.user.clone(),
                    database: record.database.clone(),
                    start_ms: record.at_ms,
                    end_ms: None,
                    began_before,
                    statements: Vec::new(),
                },
                lines: Vec::new(),
                last_logged_at_start: false,
            });
            self.sessions.len() - 1
        });
        &mut self.sessions[index]
    }

    fn statement(
        &mut self,
        record: &LogRecord,
        at_ms: i64,
        prepared: Option<&str>,
        text: &str,
        logged_at_start: bool,
    ) -> Result<(), Unreplayable> {
        if is_copy_with_client(text) {
            self.leave_out(
                "COPY from or to the client (its data is not in the log): not replayed",
                record.line,
            );
            return Ok(());
        }
        let params = match prepared {
            Some(_) => parameters(record, text)?,
            None => Vec::new(),
        };
        let sent = match prepared {
            None => Sent::Simple,
            Some("") => Sent::Unnamed,
            Some(name) => Sent::Named(name.to_string()),
        };
        let text = self.text_id(text);
        let session = self.session(record, true);
        session.session.statements.push(CapturedStatement {
            at_ms,
            text,
            sent,
            params,
            error: None,
        });
        session.lines.push(record.line);
        session.last_logged_at_start = logged_at_start;
        Ok(())
    }

    /// An ERROR ends the statement it names: the session's last one when `log_statement`
    /// logged it as it began; otherwise (`log_min_duration_statement` logs only statements
    /// that end) the failed statement is logged here alone, and is added.
    fn failed(&mut self, record: &LogRecord) -> Result<(), Unreplayable> {
        let Some(&index) = self.by_id.get(&record.session) else {
            return match &record.statement {
                Some(text) => self.failed_statement(record, text),
                None => Ok(()),
            };
        };
        let session = &mut self.sessions[index];
        let code = record.sqlstate.clone().unwrap_or_else(|| "ERROR".into());
        let texts = &self.texts;
        let last = session.session.statements.last_mut();
        match (last, &record.statement) {
            (Some(last), Some(text))
                if session.last_logged_at_start
                    && last.error.is_none()
                    && texts[last.text as usize] == *text =>
            {
                last.error = Some(code);
                Ok(())
            }
            (_, Some(text)) => self.failed_statement(record, text),
            (_, None) => Ok(()),
        }
    }

    fn failed_statement(&mut self, record: &LogRecord, text: &str) -> Result<(), Unreplayable> {
        if highest_parameter(&text.chars().collect::<Vec<_>>()) > 0 {
            return Err(Unreplayable::FailedWithoutParameters);
        }
        self.statement(record, record.at_ms, None, text, false)?;
        let session = self.session(record, true);
        let last = session
            .session
            .statements
            .last_mut()
            .expect("self.statement added one just above");
        last.error = Some(record.sqlstate.clone().unwrap_or_else(|| "ERROR".into()));
        Ok(())
    }

    fn text_id(&mut self, text: &str) -> u32 {
        if let Some(id) = self.text_ids.get(text) {
            return *id;
        }
        let id = self.texts.len() as u32;
        self.texts.push(text.to_string());
        self.text_ids.insert(text.to_string(), id);
        id
    }

    fn leave_out(&mut self, reason: &str, line: usize) {
        self.leave_out_many(reason, 1, line);
    }

    fn leave_out_many(&mut self, reason: &str, statements: u64, line: usize) {
        match self.left_out.iter_mut().find(|l| l.reason == reason) {
            Some(known) => known.statements += statements,
            None => self.left_out.push(LeftOut {
                reason: reason.to_string(),
                statements,
                first_line: line,
            }),
        }
    }

    fn finish(mut self, format: LogFormat, first: &LogRecord) -> ReplayFile {
        let base = first.at_ms;
        let mut sessions = Vec::new();
        for mut builder in std::mem::take(&mut self.sessions) {
            self.trim_partial_transactions(&mut builder);
            // Only its end is in the log: nothing of it to replay.
            if builder.session.began_before && builder.session.statements.is_empty() {
                continue;
            }
            let mut session = builder.session;
            session.start_ms -= base;
            session.end_ms = session.end_ms.map(|end| end - base);
            for statement in &mut session.statements {
                statement.at_ms -= base;
            }
            sessions.push(session);
        }
        ReplayFile {
            stampede_replay: VERSION,
            source: self.sources,
            format: format.name().to_string(),
            first_message: first_message_text(first),
            duration_ms: self.last_ms - base,
            texts: self.texts,
            sessions,
            left_out: self.left_out,
        }
    }

    /// Leaves out a transaction the log holds only part of: one that began before the
    /// session's first logged statement, and one still open when the log ended.
    fn trim_partial_transactions(&mut self, builder: &mut SessionBuilder) {
        let edges = self.edges(builder);
        if builder.session.began_before {
            let first_edge = edges.iter().position(|e| *e != TransactionEdge::None);
            if let Some(end) = first_edge.filter(|&i| edges[i] == TransactionEdge::End) {
                self.drop_statements(
                    builder,
                    0..end + 1,
                    "in a transaction that began before the log's first message",
                );
            }
        }
        if builder.session.end_ms.is_some() {
            return;
        }
        let edges = self.edges(builder);
        let last_edge = edges.iter().rposition(|e| *e != TransactionEdge::None);
        if let Some(begin) = last_edge.filter(|&i| edges[i] == TransactionEdge::Begin) {
            let end = edges.len();
            self.drop_statements(
                builder,
                begin..end,
                "in a transaction still open at the log's last message",
            );
        }
    }

    /// How each of the session's statements moves its transaction.
    fn edges(&self, builder: &SessionBuilder) -> Vec<TransactionEdge> {
        builder
            .session
            .statements
            .iter()
            .map(|s| message::transaction_edge(&self.texts[s.text as usize]))
            .collect()
    }

    fn drop_statements(
        &mut self,
        builder: &mut SessionBuilder,
        range: std::ops::Range<usize>,
        reason: &str,
    ) {
        let line = builder.lines[range.start];
        let count = range.len() as u64;
        builder.session.statements.drain(range.clone());
        builder.lines.drain(range);
        self.leave_out_many(reason, count, line);
    }
}

fn first_message_text(first: &LogRecord) -> String {
    let seconds = first.at_ms.div_euclid(1000);
    let time = stampede_base::calendar::UtcTime::from_unix(seconds).second_text();
    format!("{time}.{:03}", first.at_ms.rem_euclid(1000))
}

/// `COPY … FROM STDIN` / `TO STDOUT`: the rows went over the protocol, not into the log.
fn is_copy_with_client(text: &str) -> bool {
    if message::first_word(text) != "copy" {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    lower.contains("stdin") || lower.contains("stdout")
}

/// An Execute's parameters from its DETAIL; every `$n` the text has must have its value.
fn parameters(record: &LogRecord, text: &str) -> Result<Vec<Option<String>>, Unreplayable> {
    let wanted = highest_parameter(&text.chars().collect::<Vec<_>>());
    let params = match &record.detail {
        Some(detail) => message::parameters(detail)
            .ok_or_else(|| Unreplayable::ParametersCutOff(detail.clone()))?,
        None => Vec::new(),
    };
    if params.len() < wanted {
        return Err(Unreplayable::ParametersMissing {
            wanted,
            logged: params.len(),
        });
    }
    Ok(params)
}

/// A statement the log does not hold whole enough to replay: reported with its line.
#[derive(Debug)]
enum Unreplayable {
    /// A DETAIL whose parameters are cut off or not as the server writes them.
    ParametersCutOff(String),
    /// Fewer parameters logged than the text's highest `$n`.
    ParametersMissing { wanted: usize, logged: usize },
    /// A failed statement with parameters, logged without their values.
    FailedWithoutParameters,
}

impl std::fmt::Display for Unreplayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreplayable::ParametersCutOff(detail) => write!(
                f,
                "its parameters are cut off or not as the server writes them: {detail}"
            ),
            Unreplayable::ParametersMissing { wanted, logged } => write!(
                f,
                "a statement with ${wanted} logged with {logged} parameter(s) (log_parameter_max_length = 0 leaves them out; 13 and later log them)"
            ),
            Unreplayable::FailedWithoutParameters => f.write_str(
                "a failed statement logged without its parameters (log_min_duration_statement logs only those that end): left out",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::replay::log;

    /// One jsonlog line of session `session`, named `application`.
    fn line(ms: u32, session: &str, application: &str, message: &str) -> String {
        format!(
            r#"{{"timestamp":"2026-12-06 10:00:00.{ms:03} UTC","user":"app","dbname":"shop","session_id":"{session}","error_severity":"LOG","message":"{message}","application_name":"{application}"}}"#
        ) + "\n"
    }

    /// A jsonlog text captured whole, every database, no unusable line allowed.
    fn capture_jsonlog(text: &str) -> Result<Captured, Failure> {
        let logs = vec![LogFile {
            name: "a.json".into(),
            log: log::read(text, LogFormat::Jsonlog),
        }];
        let options = CaptureOptions {
            database: None,
            max_unusable_pct: 0.0,
        };
        capture(logs, LogFormat::Jsonlog, &options)
    }

    #[test]
    fn stampede_s_own_sessions_are_left_out_whole_and_counted() {
        let text = [
            line(
                1,
                "a.1",
                "stampede-capture",
                "statement: ALTER SYSTEM RESET log_statement",
            ),
            line(
                2,
                "a.1",
                "stampede-capture",
                "statement: SELECT pg_reload_conf()",
            ),
            line(
                3,
                "b.2",
                "shop-api",
                "statement: INSERT INTO items VALUES (1)",
            ),
            line(
                4,
                "a.1",
                "stampede-capture",
                "disconnection: session time: 0:00:00.004",
            ),
            line(5, "b.2", "shop-api", "statement: SELECT * FROM items"),
        ]
        .concat();
        let captured = capture_jsonlog(&text).unwrap();
        assert!(captured.problems.is_empty());
        let file = captured.file;
        assert_eq!(file.sessions.len(), 1);
        assert_eq!(file.statements(), 2);
        assert!(file.texts.iter().all(|t| !t.contains("ALTER SYSTEM")));
        let own = file.left_out.iter().find(|l| l.reason == OWN_SESSIONS);
        assert_eq!(own.map(|l| (l.statements, l.first_line)), Some((2, 1)));
    }

    #[test]
    fn a_log_of_stampede_s_sessions_alone_says_so() {
        let text = line(1, "a.1", "stampede", "statement: SELECT 1");
        let message = match capture_jsonlog(&text) {
            Err(e) => e.into_message(),
            Ok(_) => panic!("captured stampede's own statement"),
        };
        assert!(
            message.contains("its 1 statement(s) are of stampede's own sessions"),
            "{message}"
        );
    }
}
