//! csvlog: one CSV record per message (RFC 4180 quoting, newlines inside quoted fields), its
//! columns as the server's documentation lists them — the same 23 since 9.0, later versions
//! adding columns after them.

use super::{timestamp, LogRecord, Problem, ReadLog, CUT_AT_END};

/// log_time, user_name, database_name, process_id, connection_from, session_id, …
const LOG_TIME: usize = 0;
const USER: usize = 1;
const DATABASE: usize = 2;
const SESSION: usize = 5;
const SEVERITY: usize = 11;
const SQLSTATE: usize = 12;
const MESSAGE: usize = 13;
const DETAIL: usize = 14;
const QUERY: usize = 19;
const APPLICATION: usize = 22;
/// Columns every version writes (application_name is the 23rd).
const COLUMNS: usize = 23;

pub fn read(text: &str) -> ReadLog {
    let mut log = ReadLog {
        lines: super::count_lines(text),
        ..ReadLog::default()
    };
    let mut fields = Fields::new(text);
    while let Some(row) = fields.next_record() {
        match row {
            Row::Record { line, fields } => match record(line, fields) {
                Ok(record) => log.records.push(record),
                Err(reason) => log.problems.push(Problem { line, reason }),
            },
            Row::Cut { line } => log.problems.push(Problem {
                line,
                reason: CUT_AT_END.to_string(),
            }),
        }
    }
    log
}

fn record(line: usize, fields: Vec<String>) -> Result<LogRecord, String> {
    if fields.len() < COLUMNS {
        return Err(format!(
            "{} columns where csvlog writes at least {COLUMNS}",
            fields.len()
        ));
    }
    let at_ms = timestamp::parse_ms(&fields[LOG_TIME])
        .ok_or_else(|| format!("\"{}\" is not a log_time", fields[LOG_TIME]))?;
    let optional = |index: usize| Some(fields[index].clone()).filter(|v| !v.is_empty());
    Ok(LogRecord {
        line,
        at_ms,
        session: fields[SESSION].clone(),
        user: fields[USER].clone(),
        database: fields[DATABASE].clone(),
        application: optional(APPLICATION),
        severity: fields[SEVERITY].clone(),
        sqlstate: optional(SQLSTATE),
        message: fields[MESSAGE].clone(),
        detail: optional(DETAIL),
        statement: optional(QUERY),
    })
}

enum Row {
    Record {
        line: usize,
        fields: Vec<String>,
    },
    /// The text ended inside a quoted field or without the record's newline.
    Cut {
        line: usize,
    },
}

/// The text's records, read field by field.
struct Fields<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
}

impl<'a> Fields<'a> {
    fn new(text: &'a str) -> Fields<'a> {
        Fields {
            chars: text.chars().peekable(),
            line: 1,
        }
    }

    fn next_record(&mut self) -> Option<Row> {
        self.chars.peek()?;
        let line = self.line;
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        loop {
            let Some(c) = self.chars.next() else {
                return Some(Row::Cut { line });
            };
            if c == '\n' {
                self.line += 1;
            }
            match (quoted, c) {
                (true, '"') if self.chars.peek() == Some(&'"') => {
                    self.chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') => quoted = true,
                (false, ',') => fields.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    fields.push(field);
                    return Some(Row::Record { line, fields });
                }
                (false, '\r') => {}
                (false, c) => field.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"2026-12-02 02:14:29.687 UTC,"postgres","app",23327,"[local]",6b0f7f05.5b1f,4,"UPDATE",2026-12-02 02:14:29 UTC,3/39,0,LOG,00000,"execute P_1: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;","parameters: $1 = '3367', $2 = '62932'",,,,,,,,"pgbench","client backend",,-167177521545662223
2026-12-02 02:14:29.716 UTC,"postgres","app",23329,"[local]",6b0f7f05.5b21,4,"SELECT",2026-12-02 02:14:29 UTC,3/42,0,ERROR,22P02,"invalid input syntax for type integer: ""x""",,,,,,"select 'a''b',
 1 where 1 = $$x$$",28,,"psql","client backend",,0
"#;

    #[test]
    fn records_keep_quotes_and_newlines_of_their_fields() {
        let log = read(LOG);
        assert!(log.problems.is_empty(), "{:?}", log.problems);
        assert_eq!(log.lines, 3);
        assert_eq!(log.records.len(), 2);
        let execute = &log.records[0];
        assert_eq!(execute.session, "6b0f7f05.5b1f");
        assert_eq!(execute.sqlstate.as_deref(), Some("00000"));
        assert_eq!(
            execute.detail.as_deref(),
            Some("parameters: $1 = '3367', $2 = '62932'")
        );
        let error = &log.records[1];
        assert_eq!(error.line, 2);
        assert_eq!(
            error.message,
            r#"invalid input syntax for type integer: "x""#
        );
        assert_eq!(error.sqlstate.as_deref(), Some("22P02"));
        assert_eq!(
            error.statement.as_deref(),
            Some("select 'a''b',\n 1 where 1 = $$x$$")
        );
    }

    #[test]
    fn a_record_cut_off_or_short_of_columns_is_a_problem_with_its_line() {
        let cut = &LOG[..LOG.len() - 30];
        let log = read(cut);
        assert_eq!(log.records.len(), 1);
        assert_eq!(
            log.problems,
            [Problem {
                line: 2,
                reason: CUT_AT_END.into()
            }]
        );
        let log = read("a,b,c\n");
        assert_eq!(
            log.problems[0].reason,
            "3 columns where csvlog writes at least 23"
        );
    }
}
