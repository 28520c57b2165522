//! jsonlog (PostgreSQL 15 and later): one JSON object per line, keys as the server's
//! documentation lists them; a key whose value is empty is left out.

use serde::Deserialize;

use super::{timestamp, LogRecord, Problem, ReadLog, CUT_AT_END};

#[derive(Deserialize)]
struct Line {
    timestamp: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    dbname: String,
    application_name: Option<String>,
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    error_severity: String,
    state_code: Option<String>,
    #[serde(default)]
    message: String,
    detail: Option<String>,
    statement: Option<String>,
}

pub fn read(text: &str) -> ReadLog {
    let mut log = ReadLog {
        lines: super::count_lines(text),
        ..ReadLog::default()
    };
    let last = log.lines;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(line) {
            Ok(parsed) => match record(number, parsed) {
                Some(record) => log.records.push(record),
                None => log.problems.push(Problem {
                    line: number,
                    reason: "its timestamp is not %m's".into(),
                }),
            },
            Err(_) if number == last && !text.ends_with('\n') => log.problems.push(Problem {
                line: number,
                reason: CUT_AT_END.into(),
            }),
            Err(e) => log.problems.push(Problem {
                line: number,
                reason: format!("not a jsonlog object ({e})"),
            }),
        }
    }
    if !text.is_empty()
        && !text.ends_with('\n')
        && log.problems.last().map(|p| p.line) != Some(last)
    {
        // A complete object without its newline: the server writes both at once, so the
        // line may still have lost keys at its end.
        log.records.pop();
        log.problems.push(Problem {
            line: last,
            reason: CUT_AT_END.into(),
        });
    }
    log
}

fn record(line: usize, parsed: Line) -> Option<LogRecord> {
    Some(LogRecord {
        line,
        at_ms: timestamp::parse_ms(&parsed.timestamp)?,
        session: parsed.session_id,
        user: parsed.user,
        database: parsed.dbname,
        application: parsed.application_name.filter(|a| !a.is_empty()),
        severity: parsed.error_severity,
        sqlstate: parsed.state_code,
        message: parsed.message,
        detail: parsed.detail,
        statement: parsed.statement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"{"timestamp":"2026-12-02 02:14:29.687 UTC","user":"postgres","dbname":"app","pid":23327,"remote_host":"[local]","session_id":"6b0f7f05.5b1f","line_num":4,"ps":"UPDATE","session_start":"2026-12-02 02:14:29 UTC","vxid":"3/39","txid":0,"error_severity":"LOG","message":"execute P_1: UPDATE t SET v = v + $1 WHERE id = $2;","detail":"parameters: $1 = '3367', $2 = '62932'","application_name":"pgbench","backend_type":"client backend","query_id":-167177521545662223}
{"timestamp":"2026-12-02 02:14:29.717 UTC","user":"postgres","dbname":"app","pid":23329,"remote_host":"[local]","session_id":"6b0f7f05.5b21","line_num":6,"ps":"SELECT","session_start":"2026-12-02 02:14:29 UTC","vxid":"3/43","txid":0,"error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"select 1/0","application_name":"psql","backend_type":"client backend","query_id":0}
"#;

    #[test]
    fn each_line_is_a_record() {
        let log = read(LOG);
        assert!(log.problems.is_empty());
        assert_eq!(log.records.len(), 2);
        assert_eq!(
            log.records[0].detail.as_deref(),
            Some("parameters: $1 = '3367', $2 = '62932'")
        );
        assert_eq!(log.records[1].sqlstate.as_deref(), Some("22012"));
        assert_eq!(log.records[1].statement.as_deref(), Some("select 1/0"));
        assert_eq!(log.records[1].line, 2);
        assert_eq!(log.records[0].application.as_deref(), Some("pgbench"));
    }

    #[test]
    fn a_cut_last_line_and_a_foreign_line_are_problems() {
        let log = read(&LOG[..LOG.len() - 40]);
        assert_eq!(log.records.len(), 1);
        assert_eq!(log.problems[0].line, 2);
        assert_eq!(log.problems[0].reason, CUT_AT_END);
        let log = read("LOG: hello\n");
        assert_eq!(log.problems[0].line, 1);
        assert!(log.problems[0].reason.starts_with("not a jsonlog object"));
    }
}
