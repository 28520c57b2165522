//! pgbench's builtin scripts, as script text run by the same engine as user scripts, and
//! study 002's analytical queries (`analytics-q1..q4`).

use crate::family::pgbench::analytics;
use stampede_base::error::Failure;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    pub script: &'static str,
}

pub const BUILTINS: [Builtin; 7] = [
    Builtin {
        name: "tpcb-like",
        description: "<builtin: TPC-B (sort of)>",
        script: "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    },
    Builtin {
        name: "simple-update",
        description: "<builtin: simple update>",
        script: "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    },
    Builtin {
        name: "select-only",
        description: "<builtin: select only>",
        script: "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    },
    analytics_query(0),
    analytics_query(1),
    analytics_query(2),
    analytics_query(3),
];

/// Study 002's analytical query `index` as a builtin of one statement.
const fn analytics_query(index: usize) -> Builtin {
    let (name, description, script) = analytics::QUERIES[index];
    Builtin {
        name,
        description,
        script,
    }
}

/// The builtins a `-b` name stands for: `analytics` is all four analytical queries, any other
/// name (or unambiguous prefix) one builtin.
pub fn expand_builtin(name: &str) -> Result<Vec<&'static Builtin>, NoBuiltin> {
    if name == analytics::ALL {
        return Ok(BUILTINS
            .iter()
            .filter(|b| analytics::QUERIES.iter().any(|(n, _, _)| *n == b.name))
            .collect());
    }
    find_builtin(name).map(|builtin| vec![builtin])
}

/// Finds a builtin by name or unambiguous prefix, with pgbench's error wording.
pub fn find_builtin(name: &str) -> Result<&'static Builtin, NoBuiltin> {
    let matches: Vec<&Builtin> = BUILTINS
        .iter()
        .filter(|b| b.name.starts_with(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(NoBuiltin::Unknown(name.into())),
        many => Err(NoBuiltin::Ambiguous {
            prefix: name.into(),
            matches: many.len(),
        }),
    }
}

/// A `-b` name that names no one builtin, shown in pgbench's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoBuiltin {
    Unknown(String),
    Ambiguous { prefix: String, matches: usize },
}

impl std::fmt::Display for NoBuiltin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoBuiltin::Unknown(name) => write!(
                f,
                "no builtin script found for name \"{name}\" (available: {})",
                builtin_names()
            ),
            NoBuiltin::Ambiguous { prefix, matches } => write!(
                f,
                "ambiguous builtin name: {matches} builtin scripts found for prefix \"{prefix}\""
            ),
        }
    }
}

impl From<NoBuiltin> for Failure {
    /// The user's `-b` (or a lab's `scripts`) to fix.
    fn from(error: NoBuiltin) -> Failure {
        Failure::input(error.to_string())
    }
}

pub fn builtin_names() -> String {
    BUILTINS
        .iter()
        .map(|b| b.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `-b list`: the listing pgbench prints.
pub fn listing() -> String {
    let mut out = String::from("Available builtin scripts:\n");
    for builtin in &BUILTINS {
        out.push_str(&format!(
            "  {:>13}: {}\n",
            builtin.name, builtin.description
        ));
    }
    out.push_str(&format!(
        "  {:>13}: <all four analytics queries, a script each>\n",
        analytics::ALL
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_resolve_when_unambiguous() {
        assert_eq!(find_builtin("tpcb").unwrap().name, "tpcb-like");
        assert_eq!(find_builtin("se").unwrap().name, "select-only");
        assert_eq!(
            find_builtin("s").unwrap_err(),
            NoBuiltin::Ambiguous {
                prefix: "s".into(),
                matches: 2
            }
        );
        assert!(find_builtin("s")
            .unwrap_err()
            .to_string()
            .starts_with("ambiguous builtin name: 2"));
        assert!(find_builtin("nope")
            .unwrap_err()
            .to_string()
            .starts_with("no builtin script found"));
    }

    #[test]
    fn builtins_parse() {
        for builtin in &BUILTINS {
            let mut vars = stampede_script::VarTable::default();
            stampede_script::parse_script(
                builtin.name,
                builtin.description,
                builtin.script,
                &mut vars,
            )
            .unwrap();
        }
    }
}
