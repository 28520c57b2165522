//! The plan of each distinct statement a run executed, as pg_stat_statements normalized it
//! (constants as $n). A generic plan works on every major: PREPARE the normalized text, force
//! the generic plan, and EXPLAIN EXECUTE it with NULL parameters; nothing is executed.

use crate::conn::ConnSpec;
use crate::pg::control::named_rows;

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

/// The text EXPLAIN prints for the statement, or why there is none.
pub fn explain(conn: &ConnSpec, query: &str) -> Option<String> {
    if !plannable(query) {
        return None;
    }
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
