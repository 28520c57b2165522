//! The plan of each distinct statement a run executed, as pg_stat_statements normalized it
//! (constants as $n). A generic plan works on every major: PREPARE the normalized text, force
//! the generic plan, and EXPLAIN EXECUTE it with NULL parameters; nothing is executed.

use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::named_rows;

/// Statements that have a plan; transaction control and utility statements do not.
fn plannable(query: &str) -> bool {
    let first = query
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(
        first.as_str(),
        "select" | "insert" | "update" | "delete" | "with" | "values" | "table"
    )
}

/// The highest `$n` in the text: the number of parameters to pass.
fn parameter_count(query: &str) -> usize {
    let bytes = query.as_bytes();
    let mut highest = 0;
    for (i, _) in query.match_indices('$') {
        let digits: String = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .map(|b| *b as char)
            .collect();
        highest = highest.max(digits.parse().unwrap_or(0));
    }
    highest
}

/// SQL's typed literals (`date '1998-12-01'`, `interval '3 month'`) become `date $4` once
/// pg_stat_statements has normalized them, which does not parse: written as casts of their
/// parameters (`$4::date`) they do, with the same types.
fn typed_parameters_as_casts(query: &str) -> String {
    const TYPES: [&str; 5] = ["date", "interval", "timestamptz", "timestamp", "time"];
    let mut out = String::with_capacity(query.len() + 16);
    let mut rest = query;
    'scan: while !rest.is_empty() {
        for name in TYPES {
            let Some(head) = rest.get(..name.len()) else {
                continue;
            };
            let boundary = out
                .chars()
                .last()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
            if boundary && head.eq_ignore_ascii_case(name) {
                let after = rest[name.len()..].trim_start();
                let digits = after
                    .strip_prefix('$')
                    .map_or(0, |d| d.bytes().take_while(u8::is_ascii_digit).count());
                if digits > 0 && after.len() < rest.len() - name.len() {
                    out.push_str(&after[..digits + 1]);
                    out.push_str("::");
                    out.push_str(name);
                    rest = &after[digits + 1..];
                    continue 'scan;
                }
            }
        }
        let next = rest
            .chars()
            .next()
            .expect("the loop runs while rest has characters");
        out.push(next);
        rest = &rest[next.len_utf8()..];
    }
    out
}

/// The text EXPLAIN prints for the statement, or why there is none.
pub fn explain(conn: &ConnSpec, query: &str) -> Option<String> {
    if !plannable(query) {
        return None;
    }
    let query = &typed_parameters_as_casts(query);
    let arguments = match parameter_count(query) {
        0 => String::new(),
        n => format!("({})", vec!["NULL"; n].join(", ")),
    };
    let batch = format!(
        "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; PREPARE stampede_explain AS {query}; EXPLAIN EXECUTE stampede_explain{arguments}; ROLLBACK"
    );
    let plan = match named_rows(conn, &batch) {
        Ok(rows) => rows
            .iter()
            .filter_map(|row| row.first()?.1.clone())
            .collect::<Vec<_>>()
            .join("\n"),
        Err(error) => format!("(no plan: {error})"),
    };
    Some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_literals_normalized_to_parameters_become_casts() {
        assert_eq!(
            typed_parameters_as_casts(
                "where l_shipdate <= date $4 - interval $5 and x < DATE $1 and up_date $2 and d = $3"
            ),
            "where l_shipdate <= $4::date - $5::interval and x < $1::date and up_date $2 and d = $3"
        );
        assert_eq!(
            typed_parameters_as_casts("date_trunc($1, t)"),
            "date_trunc($1, t)"
        );
    }

    #[test]
    fn parameters_and_plannable_statements() {
        assert_eq!(
            parameter_count("UPDATE t SET a = a + $1 WHERE id = $12 AND b = $2"),
            12
        );
        assert_eq!(parameter_count("SELECT 1"), 0);
        assert!(plannable("  select abalance from x"));
        assert!(plannable("WITH a AS (SELECT 1) SELECT * FROM a"));
        assert!(!plannable("BEGIN"));
        assert!(!plannable("END"));
        assert!(!plannable("vacuum pgbench_branches"));
    }
}
