//! Statement logging switched on for a while on a server stampede can reach, and what it
//! logged read back through the server (pg_read_binary_file of the collector's files), so a
//! capture needs neither postgresql.conf edits nor access to the server's disk. Every setting
//! changed is put back as it was (ALTER SYSTEM SET to its former value, or RESET), and said.
//!
//! What is read is cut at two marks the capture's own session logs once the settings have
//! taken effect and before they are put back: the collector writes what reaches its pipe in
//! its own time, so a file's size read at a moment is no boundary, while the marks are in the
//! pipe's order. Outside them are the reload's messages and lines still in the old
//! `log_line_prefix`; inside, the capture's sessions are named `stampede-capture`, which
//! capture leaves out as stampede's own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::log::LogFormat;
use stampede_base::error::Failure;
use stampede_conn::postgres::APPLICATION_NAME;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string, sql};
use stampede_control::postgres::system_settings::{self, quote};

/// What the capture reads: a log's text and its format.
pub struct LoggedText {
    pub name: String,
    pub text: String,
    pub format: LogFormat,
}

/// Logs statements for `seconds` (or until `stop`), then reads what was logged.
pub fn capture_live(
    conn: &ConnSpec,
    seconds: u64,
    stop: &AtomicBool,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<LoggedText>, Failure> {
    if query_string(conn, "SHOW logging_collector")? != "on" {
        return Err(Failure::input(
            "logging_collector is off on the server: capture --seconds reads the files the collector writes (turning it on needs a restart); or give capture the server's log file",
        ));
    }
    let conn = &ConnSpec {
        application_name: format!("{APPLICATION_NAME}-capture"),
        ..conn.clone()
    };
    let format = chosen_format(&query_string(conn, "SHOW log_destination")?);
    let changes = system_settings::changes(conn, &wanted(format))?;
    let start = log_position(conn, format)?;
    let mut note = |line: &str| note(&format!("capture: {line}"));
    system_settings::apply(conn, &changes, &mut note)?;
    let marks = Marks::new();
    if let Err(e) = sql(conn, &marks.statement(&marks.begin)) {
        let _ = system_settings::restore(conn, &changes, &mut note);
        return Err(e);
    }
    note(&format!(
        "capture: logging every statement for {seconds} s (Ctrl-C ends it early)"
    ));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ended = sql(conn, &marks.statement(&marks.end));
    let restored = system_settings::restore(conn, &changes, &mut note);
    ended?;
    let texts = read_since(conn, format, &start)?;
    restored?;
    marks.cut(texts)
}

/// The two statements that bound what a live capture keeps, unique to this capture.
struct Marks {
    begin: String,
    end: String,
}

impl Marks {
    fn new() -> Marks {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = format!("{nonce}.{}", std::process::id());
        Marks {
            begin: format!("stampede capture begins {id}"),
            end: format!("stampede capture ends {id}"),
        }
    }

    fn statement(&self, mark: &str) -> String {
        format!("SELECT '{mark}'")
    }

    /// What lies after the line of the begin mark and before the line of the end mark.
    fn cut(&self, texts: Vec<FilePart>) -> Result<Vec<LoggedText>, Failure> {
        let mut kept = Vec::new();
        let mut begun = false;
        for mut logged in texts {
            if !begun {
                let Some(at) = logged.text.find(&self.begin) else {
                    continue;
                };
                let next_line = logged.text[at..]
                    .find('\n')
                    .map_or(logged.text.len(), |n| at + n + 1);
                logged.text.drain(..next_line);
                logged.from += next_line as i64;
                begun = true;
            }
            if let Some(at) = logged.text.find(&self.end) {
                let line_start = logged.text[..at].rfind('\n').map_or(0, |n| n + 1);
                logged.text.truncate(line_start);
                kept.push(logged);
                return Ok(kept.into_iter().map(LoggedText::from).collect());
            }
            kept.push(logged);
        }
        Err(Failure::run(format!(
            "the capture's {} mark is not in the server's log (is log_statement set per role or database?)",
            if begun { "end" } else { "start" }
        )))
    }
}

/// jsonlog, then csvlog, then stderr: the formats that carry SQLSTATEs first.
fn chosen_format(destinations: &str) -> LogFormat {
    let listed: Vec<String> = destinations
        .split(',')
        .map(|d| d.trim().to_ascii_lowercase())
        .collect();
    [LogFormat::Jsonlog, LogFormat::Csvlog]
        .into_iter()
        .find(|f| listed.iter().any(|d| d == f.name()))
        .unwrap_or(LogFormat::Stderr)
}

/// The logging a capture needs; the line prefix only when it reads the stderr log.
fn wanted(format: LogFormat) -> Vec<(String, String)> {
    let mut wanted = vec![
        ("log_statement", "all"),
        ("log_connections", "on"),
        ("log_disconnections", "on"),
        ("log_parameter_max_length", "-1"),
    ];
    if format == LogFormat::Stderr {
        wanted.push(("log_line_prefix", "%m|%u|%d|%c|"));
    }
    wanted
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// A part of one of the collector's files, from byte `from` on.
struct FilePart {
    path: String,
    from: i64,
    text: String,
    format: LogFormat,
}

impl From<FilePart> for LoggedText {
    fn from(part: FilePart) -> LoggedText {
        LoggedText {
            name: format!("{} (from byte {})", part.path, part.from),
            text: part.text,
            format: part.format,
        }
    }
}

/// The collector's current file of `format` and its size.
struct Position {
    file: String,
    size: i64,
}

fn current_file(conn: &ConnSpec, format: LogFormat) -> Result<String, Failure> {
    let file = query_string(
        conn,
        &format!("SELECT pg_current_logfile('{}')", format.name()),
    )?;
    if file.is_empty() {
        return Err(Failure::run(format!(
            "the server writes no {} file (pg_current_logfile is empty)",
            format.name()
        )));
    }
    Ok(file)
}

fn log_position(conn: &ConnSpec, format: LogFormat) -> Result<Position, Failure> {
    let file = current_file(conn, format)?;
    let size = query_string(
        conn,
        &format!("SELECT (pg_stat_file({})).size", quote(&file)),
    )?;
    Ok(Position {
        size: size.parse().unwrap_or(0),
        file,
    })
}

/// What was logged since `start`: the rest of its file and every later file of the format
/// the collector rotated to.
fn read_since(
    conn: &ConnSpec,
    format: LogFormat,
    start: &Position,
) -> Result<Vec<FilePart>, Failure> {
    let end = current_file(conn, format)?;
    let mut texts = vec![read_file(conn, &start.file, start.size, format)?];
    if end != start.file {
        let directory = start.file.rsplit_once('/').map_or("", |(d, _)| d);
        let extension = start.file.rsplit_once('.').map_or("", |(_, e)| e);
        let rows = query_rows(
            conn,
            &format!(
                "SELECT name FROM pg_ls_logdir() WHERE name LIKE {} ORDER BY modification, name",
                quote(&format!("%.{extension}"))
            ),
        )?;
        let start_name = start.file.rsplit('/').next().unwrap_or(&start.file);
        for name in rows.into_iter().filter_map(|r| r[0].clone()) {
            if name.as_str() > start_name {
                let path = format!("{directory}/{name}");
                texts.push(read_file(conn, &path, 0, format)?);
            }
        }
    }
    Ok(texts)
}

fn read_file(
    conn: &ConnSpec,
    path: &str,
    from: i64,
    format: LogFormat,
) -> Result<FilePart, Failure> {
    let hex = query_string(
        conn,
        &format!(
            "SELECT encode(pg_read_binary_file({}, {from}, (pg_stat_file({})).size - {from}), 'hex')",
            quote(path),
            quote(path)
        ),
    )?;
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect();
    Ok(FilePart {
        path: path.to_string(),
        from,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        format,
    })
}
