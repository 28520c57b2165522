//! Statement logging switched on for a while on a server stampede can reach, and what it
//! logged read back through the server (pg_read_binary_file of the collector's files), so a
//! capture needs neither postgresql.conf edits nor access to the server's disk. Every setting
//! changed is put back as it was (ALTER SYSTEM SET to its former value, or RESET), and said.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::log::LogFormat;
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string, sql};

/// What the capture reads: a log's text and its format.
pub struct LoggedText {
    pub name: String,
    pub text: String,
    pub format: LogFormat,
}

struct Change {
    name: &'static str,
    value: String,
    before: String,
    /// Set by ALTER SYSTEM before: put back with SET, else RESET.
    in_auto_conf: bool,
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
    let format = chosen_format(&query_string(conn, "SHOW log_destination")?);
    let changes = changes(conn, format)?;
    let start = log_position(conn, format)?;
    apply(conn, &changes, note)?;
    note(&format!(
        "capture: logging every statement for {seconds} s (Ctrl-C ends it early)"
    ));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let restored = restore(conn, &changes, note);
    let text = read_since(conn, format, &start)?;
    restored?;
    Ok(text)
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

fn changes(conn: &ConnSpec, format: LogFormat) -> Result<Vec<Change>, Failure> {
    let mut wanted: Vec<(&'static str, &str)> = vec![
        ("log_statement", "all"),
        ("log_connections", "on"),
        ("log_disconnections", "on"),
        ("log_parameter_max_length", "-1"),
    ];
    if format == LogFormat::Stderr {
        wanted.push(("log_line_prefix", "%m|%u|%d|%c|"));
    }
    let rows = query_rows(
        conn,
        "SELECT name, setting, coalesce(sourcefile, '') LIKE '%postgresql.auto.conf' FROM pg_settings WHERE name IN ('log_statement', 'log_connections', 'log_disconnections', 'log_parameter_max_length', 'log_line_prefix')",
    )?;
    let mut changes = Vec::new();
    for (name, value) in wanted {
        let Some(row) = rows.iter().find(|r| r[0].as_deref() == Some(name)) else {
            continue;
        };
        let before = row[1].clone().unwrap_or_default();
        if before != value {
            changes.push(Change {
                name,
                value: value.to_string(),
                before,
                in_auto_conf: row[2].as_deref() == Some("t"),
            });
        }
    }
    Ok(changes)
}

fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Sets every change; when one fails, those already set are put back before the error.
fn apply(conn: &ConnSpec, changes: &[Change], note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
    for (done, change) in changes.iter().enumerate() {
        let set = sql(
            conn,
            &format!(
                "ALTER SYSTEM SET {} = {}",
                change.name,
                quote(&change.value)
            ),
        );
        if let Err(e) = set {
            let _ = restore(conn, &changes[..done], note);
            return Err(e);
        }
        note(&format!(
            "capture: set {} = {} (was {})",
            change.name,
            quote(&change.value),
            quote(&change.before)
        ));
    }
    if let Err(e) = reload(conn, changes, |c| c.value.as_str()) {
        let _ = restore(conn, changes, note);
        return Err(e);
    }
    Ok(())
}

fn restore(conn: &ConnSpec, changes: &[Change], note: &mut dyn FnMut(&str)) -> Result<(), Failure> {
    for change in changes {
        let statement = if change.in_auto_conf {
            format!(
                "ALTER SYSTEM SET {} = {}",
                change.name,
                quote(&change.before)
            )
        } else {
            format!("ALTER SYSTEM RESET {}", change.name)
        };
        sql(conn, &statement)?;
        note(&format!(
            "capture: put back {} = {}",
            change.name,
            quote(&change.before)
        ));
    }
    reload(conn, changes, |c| c.before.as_str())
}

/// Reloads the configuration and waits until a new session sees every value.
fn reload(
    conn: &ConnSpec,
    changes: &[Change],
    value: impl Fn(&Change) -> &str,
) -> Result<(), Failure> {
    if changes.is_empty() {
        return Ok(());
    }
    sql(conn, "SELECT pg_reload_conf()")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut seen = true;
        for change in changes {
            let now = query_string(
                conn,
                &format!(
                    "SELECT setting FROM pg_settings WHERE name = '{}'",
                    change.name
                ),
            )?;
            seen &= now == value(change);
        }
        if seen {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Failure::run(
                "the server did not take the new logging settings within 10 s of pg_reload_conf()",
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
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
) -> Result<Vec<LoggedText>, Failure> {
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
) -> Result<LoggedText, Failure> {
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
    Ok(LoggedText {
        name: format!("{path} (from byte {from})"),
        text: String::from_utf8_lossy(&bytes).into_owned(),
        format,
    })
}
