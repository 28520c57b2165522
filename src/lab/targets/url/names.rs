//! The databases a lab makes on a server it did not start: named with a prefix of the lab's and
//! the target's names, and marked as the lab's (each engine's way: a comment, a row), so that the lab touches no other
//! database, finds its own again on resume, and refuses (never overwrites) one of its names
//! that it did not make.

use stampede_base::error::Failure;

/// PostgreSQL's longest identifier (NAMEDATALEN - 1).
const LONGEST_NAME: usize = 63;

/// The executor's names for its databases begin so (`stampede_pgbench_s10`, `stampede_run`).
const EXECUTOR_PREFIX: &str = "stampede_";

#[derive(Debug, Clone)]
pub struct OwnedDatabases {
    /// `stampede_<lab>_<target>_`, lower-cased, other characters as `_`.
    prefix: String,
    /// The comment each of the lab's databases carries.
    marker: String,
}

impl OwnedDatabases {
    pub fn new(lab: &str, target: &str) -> OwnedDatabases {
        let mut prefix = format!("stampede_{}_{}_", identifier(lab), identifier(target));
        // Room for the executor's longest names ("pgbench_s100000", "probe").
        if prefix.len() > LONGEST_NAME - 24 {
            let digest = fnv1a(prefix.as_bytes());
            prefix = format!("stampede_{digest:016x}_");
        }
        OwnedDatabases {
            prefix,
            marker: format!("made by stampede lab \"{lab}\" for target \"{target}\""),
        }
    }

    /// The server's name for the executor's `database`.
    pub fn name(&self, database: &str) -> String {
        let local = database.strip_prefix(EXECUTOR_PREFIX).unwrap_or(database);
        let mut name = format!("{}{}", self.prefix, identifier(local));
        name.truncate(LONGEST_NAME);
        name
    }

    /// The comment (PostgreSQL) or marker row (MariaDB) each of the lab's databases carries.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The refusal of a database of the lab's names that the lab did not make.
    pub fn not_ours(&self, name: &str) -> Failure {
        Failure::input(format!(
            "database \"{name}\" exists on the server but was not made by this lab (it is not marked \"{}\"); drop or rename it, or give the lab or target another name",
            self.marker
        ))
    }
}

/// FNV-1a: a digest that stays the same across releases (a resumed lab finds its databases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Lower-case letters, digits and `_`: a name that needs no quoting.
fn identifier(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_lab_and_target_and_stay_identifiers() {
        let owned = OwnedDatabases::new("Index-Scan", "no.index");
        assert_eq!(
            owned.name("stampede_pgbench_s10"),
            "stampede_index_scan_no_index_pgbench_s10"
        );
        assert_eq!(
            owned.name("stampede_run"),
            "stampede_index_scan_no_index_run"
        );
        let long = OwnedDatabases::new(&"a".repeat(40), "target");
        let name = long.name("stampede_sysbench_s100000");
        assert!(
            name.len() <= LONGEST_NAME
                && name.starts_with("stampede_")
                && name.ends_with("sysbench_s100000")
        );
        assert_ne!(
            long.name("stampede_run"),
            OwnedDatabases::new(&"a".repeat(41), "target").name("stampede_run")
        );
    }
}
