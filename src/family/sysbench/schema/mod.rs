//! sysbench's tables, `sbtestN(id, k, c CHAR(120), pad CHAR(60))`, on either engine. What both
//! engines share is here: the names, which loading connection takes which table, the rows —
//! ids 1..table_size in order, k from the default distribution over 1..table_size, c and pad
//! groups of random digits, one stream per table, so both engines hold the same rows — what
//! must exist before a run, and what cleanup drops. Each engine's DDL, loading and maintenance
//! are in its own file (`postgres.rs`, `mysql.rs`).

pub mod mysql;
pub mod postgres;

use super::oltp_options::{OltpOptions, RandKind};
use stampede_base::error::Failure;
use stampede_script::extensions::sysbench_random;
use stampede_script::prng::PgPrng;

pub fn table_name(table: u32) -> String {
    format!("sbtest{table}")
}

/// The number of an sbtest table (`sbtest12` → 12); none for any other name.
pub fn table_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("sbtest")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// How many connections load the tables: `--threads`, at most one a table, at least one (no
/// tables is no work, not a panic).
pub fn loading_connections(threads: usize, tables: u32) -> usize {
    threads.min(tables as usize).max(1)
}

/// The tables loading connection `worker` (of `connections`) creates: every connections-th.
pub fn tables_of(worker: usize, connections: usize, tables: u32) -> impl Iterator<Item = u32> {
    (1..=tables).filter(move |t| (*t as usize - 1) % connections == worker)
}

/// `sbtest1..tables` (sysbench's cleanup) and then any further sbtest table left behind.
pub fn tables_to_drop(tables: u32, existing: &[u32]) -> Vec<u32> {
    let mut numbers: Vec<u32> = (1..=tables).collect();
    numbers.extend(existing.iter().filter(|t| !(1..=tables).contains(*t)));
    numbers
}

/// Refuses to run before prepare: every table the test reads must exist.
pub fn require_tables(existing: &[u32], tables: u32) -> Result<(), Failure> {
    let missing: Vec<String> = (1..=tables)
        .filter(|t| !existing.contains(t))
        .map(table_name)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let what = if missing.len() == 1 {
        format!("table {} does not exist", missing[0])
    } else {
        format!("tables {} do not exist", missing.join(", "))
    };
    Err(Failure::run(format!(
        "{what}; run `stampede sysbench prepare --tables {tables}` first"
    )))
}

/// bulk_insert's table for one thread, as its Lua `prepare` creates it (both engines accept it).
pub fn bulk_insert_table(table: u32) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS sbtest{table} (id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, PRIMARY KEY (id))"
    )
}

/// One row of an sbtest table.
pub struct Row {
    pub id: u32,
    pub k: i64,
    pub c: String,
    pub pad: String,
}

/// The rows of one table, in id order, from the table's own random stream.
pub struct TableRows<'a> {
    rng: PgPrng,
    options: &'a OltpOptions,
    next_id: u32,
}

impl<'a> TableRows<'a> {
    pub fn new(options: &'a OltpOptions, seed: u64, table: u32) -> TableRows<'a> {
        TableRows {
            // A stream per table, so that tables load alike however they are spread.
            rng: PgPrng::seeded(seed ^ (table as u64).wrapping_mul(0x9E37_79B9)),
            options,
            next_id: 1,
        }
    }
}

impl Iterator for TableRows<'_> {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        let size = self.options.table_size;
        if self.next_id > size {
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        let k = draw(&mut self.rng, self.options, size as i64);
        let c = sysbench_random::digit_groups(&mut self.rng, 10);
        let pad = sysbench_random::digit_groups(&mut self.rng, 5);
        Some(Row { id, k, c, pad })
    }
}

/// `sysbench.rand.default(1, high)` for the loader.
fn draw(rng: &mut PgPrng, options: &OltpOptions, high: i64) -> i64 {
    let r = &options.rand;
    match r.kind {
        RandKind::Uniform => sysbench_random::uniform(rng, 1, high),
        RandKind::Gaussian => sysbench_random::gaussian(rng, 1, high, r.spec_iter),
        RandKind::Special => {
            sysbench_random::special(rng, 1, high, r.spec_iter, r.spec_pct, r.spec_res)
        }
        RandKind::Pareto => sysbench_random::pareto(rng, 1, high, r.pareto_h),
        RandKind::Zipfian => sysbench_random::zipfian(rng, 1, high, r.zipfian_exp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sbtest_names_with_digits_are_tables() {
        assert_eq!(table_number("sbtest12"), Some(12));
        for other in [
            "sbtest",
            "sbtest+1",
            "sbtest1a",
            "sbtest_1",
            "pgbench_accounts",
        ] {
            assert_eq!(table_number(other), None, "{other}");
        }
    }

    #[test]
    fn tables_are_dealt_round_the_connections_and_extras_are_dropped_last() {
        let connections = loading_connections(8, 5);
        assert_eq!(connections, 5);
        assert_eq!(loading_connections(4, 0), 1);
        assert_eq!(loading_connections(0, 3), 1);
        let dealt: Vec<Vec<u32>> = (0..2).map(|w| tables_of(w, 2, 5).collect()).collect();
        assert_eq!(dealt, vec![vec![1, 3, 5], vec![2, 4]]);
        assert_eq!(tables_to_drop(3, &[0, 1, 2, 7, 9]), vec![1, 2, 3, 0, 7, 9]);
        assert!(require_tables(&[1, 2], 2).is_ok());
        let missing = require_tables(&[1], 3).unwrap_err();
        assert!(missing
            .to_string()
            .starts_with("tables sbtest2, sbtest3 do not exist"));
    }
}
