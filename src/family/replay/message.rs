//! What a log message says about a session, in the server's own words: its connection and
//! disconnection, a statement logged by `log_statement` (`statement:`, `execute …:`) or by
//! `log_min_duration_statement` (the same after `duration: … ms  `, logged when it ended).

/// A message as capture reads it.
#[derive(Debug, PartialEq)]
pub enum Message<'a> {
    /// `connection authorized: …`, with the `application_name` it names (PostgreSQL 12 and
    /// later name it when the client set one).
    Connected {
        application: Option<&'a str>,
    },
    Disconnected,
    Statement {
        /// The message's time is the statement's end: it began this long before.
        duration_ms: f64,
        /// None for a simple query, Some("") for the unnamed statement, or its name.
        prepared: Option<&'a str>,
        text: &'a str,
    },
    /// A fetch from a named portal: a cursor's further rows, which a replay cannot ask for
    /// without the portal the log does not show.
    Fetch,
    /// Parse and Bind (their Execute follows), and a duration logged alone for a statement
    /// `log_statement` logged before.
    Part,
    Other,
}

pub fn classify(message: &str) -> Message<'_> {
    if let Some(rest) = message.strip_prefix("connection authorized: ") {
        // The name is the last field but for an `SSL enabled (…)` that may follow it: the
        // name's beginning is what capture reads.
        let application = rest.split_once("application_name=").map(|(_, name)| name);
        return Message::Connected { application };
    }
    if message.starts_with("disconnection: ") {
        return Message::Disconnected;
    }
    let (duration_ms, rest) = match message.strip_prefix("duration: ") {
        Some(rest) => match rest.split_once(" ms") {
            Some((number, rest)) => match number.parse::<f64>() {
                Ok(ms) => (ms, rest.trim_start_matches(' ')),
                Err(_) => return Message::Other,
            },
            None => return Message::Other,
        },
        None => (0.0, message),
    };
    if rest.is_empty() {
        return Message::Part;
    }
    if let Some(text) = rest.strip_prefix("statement: ") {
        return Message::Statement {
            duration_ms,
            prepared: None,
            text,
        };
    }
    if rest.starts_with("execute fetch from ") {
        return Message::Fetch;
    }
    if let Some(named) = rest.strip_prefix("execute ") {
        if let Some((name, text)) = named.split_once(": ") {
            // "S_1/C_2": the statement and the portal it ran in.
            let statement = name.split('/').next().unwrap_or(name);
            let prepared = if statement == "<unnamed>" {
                ""
            } else {
                statement
            };
            return Message::Statement {
                duration_ms,
                prepared: Some(prepared),
                text,
            };
        }
    }
    if rest.starts_with("parse ") || rest.starts_with("bind ") {
        return Message::Part;
    }
    Message::Other
}

/// The parameters of a DETAIL line, `parameters: $1 = '5', $2 = NULL` (PostgreSQL 13 and
/// later; earlier versions say `Parameters:`); None when the detail is not that, or is
/// malformed.
pub fn parameters(detail: &str) -> Option<Vec<Option<String>>> {
    let rest = detail
        .strip_prefix("parameters: ")
        .or_else(|| detail.strip_prefix("Parameters: "))?;
    let chars: Vec<char> = rest.chars().collect();
    let mut values = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            return None;
        }
        i += 1;
        let digits: String = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if digits.parse::<usize>().ok()? != values.len() + 1 {
            return None;
        }
        i += digits.len();
        let equals: String = chars[i..].iter().take(3).collect();
        if equals != " = " {
            return None;
        }
        i += 3;
        let (value, end) = value_at(&chars, i)?;
        values.push(value);
        i = end;
        if i < chars.len() {
            let separator: String = chars[i..].iter().take(2).collect();
            if separator != ", " {
                return None;
            }
            i += 2;
        }
    }
    Some(values)
}

/// `'text'` (doubled quotes inside) or NULL at `i`, and where it ends.
fn value_at(chars: &[char], i: usize) -> Option<(Option<String>, usize)> {
    let null: String = chars[i..].iter().take(4).collect();
    if null == "NULL" {
        return Some((None, i + 4));
    }
    if chars.get(i) != Some(&'\'') {
        return None;
    }
    let mut value = String::new();
    let mut j = i + 1;
    loop {
        match chars.get(j)? {
            '\'' if chars.get(j + 1) == Some(&'\'') => {
                value.push('\'');
                j += 2;
            }
            '\'' => return Some((Some(value), j + 1)),
            c => {
                value.push(*c);
                j += 1;
            }
        }
    }
}

/// The first word of a statement, lowercased, past comments and whitespace.
pub fn first_word(text: &str) -> String {
    leading_words(text, 1).pop().unwrap_or_default()
}

/// The first `n` words of a statement, lowercased, past comments and whitespace.
pub fn leading_words(text: &str, n: usize) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = text;
    while words.len() < n {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
            continue;
        }
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
            continue;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphabetic() || *c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        rest = &rest[word.len()..];
        words.push(word.to_ascii_lowercase());
    }
    words
}

/// How a statement moves a session's transaction.
#[derive(Debug, PartialEq, Eq)]
pub enum TransactionEdge {
    Begin,
    End,
    None,
}

/// BEGIN / START TRANSACTION open a block; COMMIT, END, ROLLBACK, ABORT close it (but not a
/// savepoint's ROLLBACK TO, nor COMMIT/ROLLBACK PREPARED, which act on another).
pub fn transaction_edge(text: &str) -> TransactionEdge {
    let words = leading_words(text, 2);
    let word = words.first().map_or("", String::as_str);
    let second = words.get(1).map_or("", String::as_str);
    match word {
        "begin" => TransactionEdge::Begin,
        "start" if second == "transaction" => TransactionEdge::Begin,
        "commit" | "rollback" | "end" | "abort" if !matches!(second, "prepared" | "to") => {
            TransactionEdge::End
        }
        _ => TransactionEdge::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_as_each_setting_logs_them() {
        assert_eq!(
            classify("statement: select 1"),
            Message::Statement {
                duration_ms: 0.0,
                prepared: None,
                text: "select 1"
            }
        );
        assert_eq!(
            classify("duration: 0.123 ms  statement: select 1"),
            Message::Statement {
                duration_ms: 0.123,
                prepared: None,
                text: "select 1"
            }
        );
        assert_eq!(
            classify("execute P_1: UPDATE t SET v = $1"),
            Message::Statement {
                duration_ms: 0.0,
                prepared: Some("P_1"),
                text: "UPDATE t SET v = $1"
            }
        );
        assert_eq!(
            classify("duration: 2.5 ms  execute <unnamed>: SELECT $1"),
            Message::Statement {
                duration_ms: 2.5,
                prepared: Some(""),
                text: "SELECT $1"
            }
        );
        assert_eq!(
            classify("execute S_1/C_2: SELECT x FROM t"),
            Message::Statement {
                duration_ms: 0.0,
                prepared: Some("S_1"),
                text: "SELECT x FROM t"
            }
        );
        assert_eq!(
            classify("execute fetch from S_1/C_2: SELECT x"),
            Message::Fetch
        );
        assert_eq!(
            classify("duration: 0.050 ms  parse <unnamed>: SELECT 1"),
            Message::Part
        );
        assert_eq!(
            classify("duration: 0.050 ms  bind P_1: SELECT 1"),
            Message::Part
        );
        assert_eq!(classify("duration: 0.050 ms"), Message::Part);
        assert_eq!(
            classify("connection authorized: user=app database=shop application_name=psql"),
            Message::Connected {
                application: Some("psql")
            }
        );
        assert_eq!(
            classify("connection authorized: user=app database=shop"),
            Message::Connected { application: None }
        );
        assert_eq!(
            classify(
                "disconnection: session time: 0:00:00.004 user=app database=shop host=[local]"
            ),
            Message::Disconnected
        );
        assert_eq!(classify("checkpoint starting: time"), Message::Other);
    }

    #[test]
    fn parameters_as_the_detail_line_gives_them() {
        assert_eq!(
            parameters("parameters: $1 = '-4561', $2 = NULL, $3 = 'it''s, $4 = ''x'''"),
            Some(vec![
                Some("-4561".into()),
                None,
                Some("it's, $4 = 'x'".into())
            ])
        );
        assert_eq!(
            parameters("Parameters: $1 = ''"),
            Some(vec![Some(String::new())])
        );
        assert_eq!(
            parameters("parameters: $1 = '5"),
            None,
            "cut inside a value"
        );
        assert_eq!(parameters("parameters: $2 = '5'"), None, "not in order");
        assert_eq!(parameters("Key (id)=(1) already exists."), None);
    }

    #[test]
    fn transactions_open_and_close_as_the_server_reads_the_words() {
        assert_eq!(transaction_edge("BEGIN;"), TransactionEdge::Begin);
        assert_eq!(
            transaction_edge("  /* app */ start transaction isolation level serializable"),
            TransactionEdge::Begin
        );
        assert_eq!(transaction_edge("END;"), TransactionEdge::End);
        assert_eq!(transaction_edge("commit"), TransactionEdge::End);
        assert_eq!(
            transaction_edge("ROLLBACK TO SAVEPOINT a"),
            TransactionEdge::None
        );
        assert_eq!(
            transaction_edge("COMMIT PREPARED 'x'"),
            TransactionEdge::None
        );
        assert_eq!(transaction_edge("select 1"), TransactionEdge::None);
    }
}
