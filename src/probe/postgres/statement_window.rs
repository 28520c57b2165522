//! pg_stat_statements over one run without resetting it (other users' statistics stay): the
//! run database's statements are read before and after, and each statement's calls, mean and
//! standard deviation of execution time in between follow from the differences of its calls,
//! total time and sum of squares (calls × (stddev² + mean²): pg_stat_statements keeps the
//! population variance).

use std::collections::HashMap;

use serde::Serialize;
use tokio_postgres::{Client, SimpleQueryMessage};

/// A statement's running totals (summed over users and nesting levels).
#[derive(Debug, Clone, PartialEq)]
pub struct StatementTotals {
    pub queryid: String,
    pub query: String,
    pub calls: f64,
    pub total_ms: f64,
    pub sum_squares_ms: f64,
}

/// A statement's executions between two readings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementWindow {
    pub query: String,
    pub calls: u64,
    pub mean_ms: f64,
    pub stddev_ms: f64,
}

/// The current database's statement totals; `None` when pg_stat_statements is not installed
/// there (or not loaded).
pub async fn read_totals(client: &Client) -> Option<Vec<StatementTotals>> {
    let version: i64 = first_value(client, "SHOW server_version_num")
        .await?
        .parse()
        .ok()?;
    // PostgreSQL 12 names the columns total_time/stddev_time; 13 and later *_exec_time.
    let (total, stddev) = if version >= 130000 {
        ("total_exec_time", "stddev_exec_time")
    } else {
        ("total_time", "stddev_time")
    };
    let sql = format!(
        "SELECT queryid::text, min(query), sum(calls)::float8::text, sum({total})::float8::text,
                sum(calls * ({stddev} ^ 2 + ({total} / greatest(calls, 1)) ^ 2))::float8::text
         FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         GROUP BY queryid"
    );
    let messages = client.simple_query(&sql).await.ok()?;
    let number = |text: Option<&str>| text.and_then(|t| t.parse().ok()).unwrap_or(0.0);
    Some(
        messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(StatementTotals {
                    queryid: row.get(0).unwrap_or_default().to_string(),
                    query: row.get(1).unwrap_or_default().to_string(),
                    calls: number(row.get(2)),
                    total_ms: number(row.get(3)),
                    sum_squares_ms: number(row.get(4)),
                }),
                _ => None,
            })
            .collect(),
    )
}

async fn first_value(client: &Client, sql: &str) -> Option<String> {
    let messages = client.simple_query(sql).await.ok()?;
    messages.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
        _ => None,
    })
}

/// The statements executed between `before` and `after`, most time first.
pub fn window(before: &[StatementTotals], after: &[StatementTotals]) -> Vec<StatementWindow> {
    let earlier: HashMap<&str, &StatementTotals> =
        before.iter().map(|s| (s.queryid.as_str(), s)).collect();
    let mut out: Vec<(f64, StatementWindow)> = after
        .iter()
        .filter_map(|now| {
            let (calls, total, squares) = match earlier.get(now.queryid.as_str()) {
                Some(then) => (
                    now.calls - then.calls,
                    now.total_ms - then.total_ms,
                    now.sum_squares_ms - then.sum_squares_ms,
                ),
                None => (now.calls, now.total_ms, now.sum_squares_ms),
            };
            if calls < 1.0 {
                return None;
            }
            let mean = total / calls;
            let variance = (squares / calls - mean * mean).max(0.0);
            Some((
                total,
                StatementWindow {
                    query: now.query.clone(),
                    calls: calls as u64,
                    mean_ms: mean,
                    stddev_ms: variance.sqrt(),
                },
            ))
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter().map(|(_, w)| w).collect()
}

/// A statement's text with its constants and parameters as `?`, whitespace collapsed and no
/// final semicolon: pg_stat_statements' normalized text and the SQL a script sent compare
/// equal in this form.
pub fn comparable(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.trim().trim_end_matches(';').chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        let starts_number = c.is_ascii_digit() && !(previous.is_alphanumeric() || previous == '_');
        if c == '$' || starts_number {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('?');
            previous = '?';
        } else if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            previous = ' ';
        } else {
            out.push(c);
            previous = c;
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalized_and_sent_texts_compare_equal() {
        assert_eq!(
            comparable("SELECT count(*) FROM t1 JOIN t2 USING (aid) WHERE aid % $1 = $2"),
            comparable("SELECT count(*) FROM t1 JOIN t2 USING (aid)\n  WHERE aid % 2 = 0;")
        );
        assert_eq!(
            comparable("SELECT a1 FROM t WHERE x = 10.5"),
            "SELECT a1 FROM t WHERE x = ?"
        );
    }

    fn totals(calls: f64, times: &[f64]) -> StatementTotals {
        StatementTotals {
            queryid: "1".into(),
            query: "SELECT 1".into(),
            calls,
            total_ms: times.iter().sum(),
            sum_squares_ms: times.iter().map(|t| t * t).sum(),
        }
    }

    #[test]
    fn the_window_holds_only_the_executions_in_between() {
        let before = totals(2.0, &[100.0, 300.0]);
        let after = totals(5.0, &[100.0, 300.0, 10.0, 20.0, 30.0]);
        let window = window(&[before], &[after]);
        assert_eq!(window.len(), 1);
        assert_eq!(window[0].calls, 3);
        assert!((window[0].mean_ms - 20.0).abs() < 1e-9);
        // Population standard deviation of 10, 20, 30.
        assert!((window[0].stddev_ms - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
    }
}
