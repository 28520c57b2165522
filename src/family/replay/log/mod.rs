//! PostgreSQL's server log as capture reads it: the three formats the server writes (stderr
//! with pgreplay's `log_line_prefix = '%m|%u|%d|%c|'`, csvlog, jsonlog), each turned into the
//! same records — one per message, its DETAIL and STATEMENT with it — and the lines that could
//! not be read, with the reason.

pub mod csvlog;
pub mod jsonlog;
pub mod stderr;
pub mod timestamp;

use std::path::Path;

/// One message of the log, as every format gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    /// Where it begins in its file (1-based).
    pub line: usize,
    /// The message's time in milliseconds, on the log's own clock (`log_timezone`).
    pub at_ms: i64,
    /// `%c`: the session's start time and process id in hex.
    pub session: String,
    pub user: String,
    pub database: String,
    /// `application_name`, where the format carries it (csvlog, jsonlog); stderr's prefix
    /// does not, so there the session's connection message names it.
    pub application: Option<String>,
    /// LOG, ERROR, FATAL, …
    pub severity: String,
    /// The SQLSTATE, where the format carries it (csvlog, jsonlog).
    pub sqlstate: Option<String>,
    pub message: String,
    pub detail: Option<String>,
    /// The statement an error happened in (`STATEMENT:`).
    pub statement: Option<String>,
}

/// A line capture could not use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub reason: String,
}

/// The log formats `log_destination` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Stderr,
    Csvlog,
    Jsonlog,
}

impl LogFormat {
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::Stderr => "stderr",
            LogFormat::Csvlog => "csvlog",
            LogFormat::Jsonlog => "jsonlog",
        }
    }

    pub fn parse(name: &str) -> Option<LogFormat> {
        match name {
            "stderr" => Some(LogFormat::Stderr),
            "csvlog" | "csv" => Some(LogFormat::Csvlog),
            "jsonlog" | "json" => Some(LogFormat::Jsonlog),
            _ => None,
        }
    }

    /// The server's own file names end in .csv and .json; anything else is stderr's.
    pub fn of_path(path: &Path) -> LogFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => LogFormat::Csvlog,
            Some("json") => LogFormat::Jsonlog,
            _ => LogFormat::Stderr,
        }
    }
}

/// A log's records and the lines that could not be read.
#[derive(Debug, Default)]
pub struct ReadLog {
    pub records: Vec<LogRecord>,
    pub problems: Vec<Problem>,
    pub lines: usize,
}

/// Reads a log's text in `format`. A text that does not end with a newline was cut off in
/// its last record, which is then a problem rather than a record.
pub fn read(text: &str, format: LogFormat) -> ReadLog {
    match format {
        LogFormat::Stderr => stderr::read(text),
        LogFormat::Csvlog => csvlog::read(text),
        LogFormat::Jsonlog => jsonlog::read(text),
    }
}

/// The reason a record at the end of a log without its final newline is left out.
pub const CUT_AT_END: &str = "the log ends inside this message (cut off: no final newline)";

/// Lines in a text, counting a last one without its newline.
pub fn count_lines(text: &str) -> usize {
    text.lines().count()
}
