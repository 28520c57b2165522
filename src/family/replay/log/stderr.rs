//! The stderr format with pgreplay's prefix: `%m|%u|%d|%c|SEVERITY:  message`, a message's
//! further lines each starting with a tab, its DETAIL and STATEMENT on lines of their own
//! right after it (the server writes one message's lines together).

use super::{timestamp, LogRecord, Problem, ReadLog, CUT_AT_END};

/// What a line without the prefix is told.
pub const NO_PREFIX: &str =
    "no `%m|%u|%d|%c|` prefix (capture needs log_line_prefix = '%m|%u|%d|%c|')";

/// Where a continuation line's text goes: the field the previous line began.
#[derive(Clone, Copy)]
enum Field {
    Message,
    Detail,
    Statement,
    /// HINT, CONTEXT, QUERY, LOCATION: read and left aside.
    Other,
    /// A line that was not read: its continuation is not either.
    Skipped,
}

pub fn read(text: &str) -> ReadLog {
    let mut log = ReadLog::default();
    let mut field = Field::Skipped;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        log.lines = number;
        if let Some(rest) = line.strip_prefix('\t') {
            continue_field(&mut log.records, field, rest);
            continue;
        }
        match prefixed(line, number) {
            Some(record) => field = attach(&mut log.records, record),
            None => {
                log.problems.push(Problem {
                    line: number,
                    reason: NO_PREFIX.to_string(),
                });
                field = Field::Skipped;
            }
        }
    }
    if !text.is_empty() && !text.ends_with('\n') {
        drop_cut_record(&mut log, field);
    }
    log
}

/// The last line had no newline: the message it belongs to is cut off.
fn drop_cut_record(log: &mut ReadLog, field: Field) {
    if matches!(field, Field::Skipped) {
        return;
    }
    if let Some(record) = log.records.pop() {
        log.problems.push(Problem {
            line: record.line,
            reason: CUT_AT_END.to_string(),
        });
    }
}

/// A line with the prefix as a record of its own (its DETAIL or STATEMENT still apart).
fn prefixed(line: &str, number: usize) -> Option<LogRecord> {
    let mut parts = line.splitn(5, '|');
    let at_ms = timestamp::parse_ms(parts.next()?)?;
    let (user, database, session) = (parts.next()?, parts.next()?, parts.next()?);
    let rest = parts.next()?;
    let (severity, message) = rest.split_once(":  ")?;
    if severity.is_empty()
        || !severity
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return None;
    }
    Some(LogRecord {
        line: number,
        at_ms,
        session: session.to_string(),
        user: user.to_string(),
        database: database.to_string(),
        application: None,
        severity: severity.to_string(),
        sqlstate: None,
        message: message.to_string(),
        detail: None,
        statement: None,
    })
}

/// Adds a record, or its DETAIL/STATEMENT line to the message before it of the same session;
/// the field that line's continuations go to.
fn attach(records: &mut Vec<LogRecord>, record: LogRecord) -> Field {
    let secondary = match record.severity.as_str() {
        "DETAIL" => Field::Detail,
        "STATEMENT" => Field::Statement,
        "HINT" | "CONTEXT" | "QUERY" | "LOCATION" => Field::Other,
        _ => {
            records.push(record);
            return Field::Message;
        }
    };
    let Some(last) = records
        .last_mut()
        .filter(|last| last.session == record.session)
    else {
        return Field::Skipped;
    };
    match secondary {
        Field::Detail => last.detail = Some(record.message),
        Field::Statement => last.statement = Some(record.message),
        _ => {}
    }
    secondary
}

fn continue_field(records: &mut [LogRecord], field: Field, text: &str) {
    let Some(last) = records.last_mut() else {
        return;
    };
    let target = match field {
        Field::Message => &mut last.message,
        Field::Detail => last.detail.get_or_insert_with(String::new),
        Field::Statement => last.statement.get_or_insert_with(String::new),
        Field::Other | Field::Skipped => return,
    };
    target.push('\n');
    target.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-12-02 02:14:29.490 UTC|[unknown]|[unknown]|6b0f7f05.5b1b|LOG:  connection received: host=[local]
2026-12-02 02:14:29.691 UTC|postgres|app|6b0f7f05.5b1f|LOG:  execute P_1: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;
2026-12-02 02:14:29.691 UTC|postgres|app|6b0f7f05.5b1f|DETAIL:  parameters: $1 = '-4561', $2 = '29668'
2026-12-02 02:14:29.716 UTC|postgres|app|6b0f7f05.5b21|LOG:  statement: select 1
\t  from t
waiting for server to start
2026-12-02 02:14:29.717 UTC|postgres|app|6b0f7f05.5b21|ERROR:  division by zero
2026-12-02 02:14:29.717 UTC|postgres|app|6b0f7f05.5b21|STATEMENT:  select 1/0
";

    #[test]
    fn messages_gather_their_detail_statement_and_continuation_lines() {
        let log = read(LOG);
        assert_eq!(log.lines, 8);
        assert_eq!(log.records.len(), 4);
        let execute = &log.records[1];
        assert_eq!(execute.line, 2);
        assert_eq!(
            (execute.user.as_str(), execute.database.as_str()),
            ("postgres", "app")
        );
        assert_eq!(execute.session, "6b0f7f05.5b1f");
        assert_eq!(
            execute.detail.as_deref(),
            Some("parameters: $1 = '-4561', $2 = '29668'")
        );
        assert_eq!(log.records[2].message, "statement: select 1\n  from t");
        assert_eq!(log.records[3].severity, "ERROR");
        assert_eq!(log.records[3].statement.as_deref(), Some("select 1/0"));
        assert_eq!(
            log.problems,
            [Problem {
                line: 6,
                reason: NO_PREFIX.into()
            }]
        );
    }

    #[test]
    fn a_log_cut_inside_its_last_message_leaves_that_message_out() {
        let cut = &LOG[..LOG.find("select 1/0").unwrap() + 6];
        let log = read(cut);
        assert_eq!(log.records.len(), 3, "the ERROR's STATEMENT line is cut");
        assert_eq!(log.problems.last().unwrap().line, 7);
        let cut = &LOG[..LOG.find("  from t").unwrap() + 4];
        let log = read(cut);
        assert_eq!(log.records.len(), 2);
        assert_eq!(log.problems.last().unwrap().line, 4);
        assert_eq!(log.problems.last().unwrap().reason, CUT_AT_END);
    }

    #[test]
    fn the_default_prefix_is_not_read() {
        let log = read("2026-12-02 02:14:29.394 UTC [23322] LOG:  database system is ready\n");
        assert!(log.records.is_empty());
        assert_eq!(log.problems[0].line, 1);
    }
}
