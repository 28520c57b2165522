//! What one iibench run does, checked: iibench.py's options after its own fix-up
//! (`rows_per_commit` never above `inserts_per_second`), each bad value refused with its name.

use stampede_base::error::Failure;

use super::args::IibenchArgs;

/// The random columns' ranges and the data column's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct DataShape {
    pub length_min: u64,
    pub length_max: u64,
    pub random_pct: u64,
    pub cashregisters: u64,
    pub products: u64,
    pub customers: u64,
    pub max_price: u64,
}

impl Default for DataShape {
    /// iibench.py's defaults.
    fn default() -> DataShape {
        DataShape {
            length_min: 10,
            length_max: 10,
            random_pct: 50,
            cashregisters: 1000,
            products: 10_000,
            customers: 100_000,
            max_price: 500,
        }
    }
}

/// Range partitions on transactionid.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Partitions {
    pub count: u64,
    /// 0: max_rows / count, as iibench.py computes it (a fraction, truncated per bound).
    pub rows_each: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub table: String,
    pub max_rows: u64,
    pub rows_per_commit: u64,
    /// Rows a second; 0 is no limit.
    pub inserts_per_second: u64,
    pub query_threads: usize,
    pub query_pk_only: bool,
    pub rows_per_query: u64,
    pub delete_per_insert: bool,
    pub secondary_indexes: u8,
    pub secondary_at_start: bool,
    pub secondary_at_end: bool,
    pub setup: bool,
    pub data: DataShape,
    pub seed: u64,
    pub secs_per_report: u64,
    /// 0: run until max_rows are in.
    pub max_seconds: u64,
    pub no_inserts: bool,
    pub resync_get_min: u64,
    pub print_get_min: bool,
    pub prepared_queries: bool,
    pub prepared_inserts: bool,
    pub initial_size: u64,
    pub htap_seconds: u64,
    pub storage_engine: String,
    pub engine_options: String,
    pub unique_checks: bool,
    pub bulk_load: bool,
    pub partitions: Partitions,
}

impl Default for Options {
    /// iibench.py's defaults.
    fn default() -> Options {
        Options {
            table: "purchases_index".into(),
            max_rows: 10_000,
            rows_per_commit: 1000,
            inserts_per_second: 0,
            query_threads: 0,
            query_pk_only: false,
            rows_per_query: 10,
            delete_per_insert: false,
            secondary_indexes: 3,
            secondary_at_start: false,
            secondary_at_end: false,
            setup: false,
            data: DataShape::default(),
            seed: 3_221_223_452,
            secs_per_report: 10,
            max_seconds: 0,
            no_inserts: false,
            resync_get_min: 1000,
            print_get_min: false,
            prepared_queries: false,
            prepared_inserts: false,
            initial_size: 0,
            htap_seconds: 0,
            storage_engine: "innodb".into(),
            engine_options: String::new(),
            unique_checks: true,
            bulk_load: true,
            partitions: Partitions::default(),
        }
    }
}

impl Options {
    /// INSERT statements the run sends: max_rows in rows_per_commit steps, the last one whole
    /// (iibench.py lets the rows exceed max_rows by less than rows_per_commit).
    pub fn insert_rounds(&self) -> u64 {
        self.max_rows.div_ceil(self.rows_per_commit)
    }

    /// iibench.py's fix-up: a rate limit below rows_per_commit lowers rows_per_commit to it.
    pub fn fixed_up(mut self) -> Options {
        if self.inserts_per_second > 0 && self.rows_per_commit > self.inserts_per_second {
            self.rows_per_commit = self.inserts_per_second;
        }
        self
    }
}

/// A count that must be at least `min`.
fn at_least(value: i64, min: i64, name: &str) -> Result<u64, Failure> {
    if value < min {
        return Err(Failure::input(format!(
            "--{name} must be at least {min} (not {value})"
        )));
    }
    Ok(value as u64)
}

/// A count from `min` to `max`: the bounds that keep one statement's text, or the table's
/// partitions, within what the servers take (and this process's memory).
fn between(value: i64, min: i64, max: i64, name: &str) -> Result<u64, Failure> {
    if value > max {
        return Err(Failure::input(format!(
            "--{name} must be at most {max} (not {value})"
        )));
    }
    at_least(value, min, name)
}

/// Rows in one INSERT: 100,000 rows of 4000 bytes are a 400 MB statement.
const MAX_ROWS_PER_COMMIT: i64 = 100_000;
/// Ids or rows one query asks for (PostgreSQL's prepared statement takes 65535 parameters).
const MAX_ROWS_PER_QUERY: i64 = 65_535;
/// MySQL's most partitions in a table.
const MAX_PARTITIONS: i64 = 8192;

/// iibench.py's options as a run of stampede's takes them; `postgres` says which engine.
pub fn from_args(args: &IibenchArgs, postgres: bool) -> Result<Options, Failure> {
    let data = DataShape {
        length_min: at_least(args.data_length_min, 1, "data_length_min")?,
        length_max: at_least(args.data_length_max, 1, "data_length_max")?,
        random_pct: at_least(args.data_random_pct, 0, "data_random_pct")?,
        cashregisters: at_least(args.cashregisters, 1, "cashregisters")?,
        products: at_least(args.products, 1, "products")?,
        customers: at_least(args.customers, 1, "customers")?,
        max_price: at_least(args.max_price, 1, "max_price")?,
    };
    check_data(&data)?;
    let options = Options {
        table: table_name(&args.table_name)?,
        max_rows: at_least(args.max_rows, 1, "max_rows")?,
        rows_per_commit: between(
            args.rows_per_commit,
            1,
            MAX_ROWS_PER_COMMIT,
            "rows_per_commit",
        )?,
        inserts_per_second: at_least(args.inserts_per_second, 0, "inserts_per_second")?,
        query_threads: at_least(args.query_threads, 0, "query_threads")? as usize,
        query_pk_only: args.query_pk_only,
        rows_per_query: between(args.rows_per_query, 1, MAX_ROWS_PER_QUERY, "rows_per_query")?,
        delete_per_insert: args.delete_per_insert,
        secondary_indexes: secondary_indexes(args.num_secondary_indexes)?,
        secondary_at_start: args.secondary_at_start,
        secondary_at_end: args.secondary_at_end,
        setup: args.setup,
        data,
        seed: args.seed as u64,
        secs_per_report: at_least(args.secs_per_report, 1, "secs_per_report")?,
        max_seconds: at_least(args.max_seconds, 0, "max_seconds")?,
        no_inserts: args.no_inserts,
        resync_get_min: at_least(args.resync_get_min, 0, "resync_get_min")?,
        print_get_min: args.print_get_min,
        prepared_queries: args.use_prepared_query,
        prepared_inserts: args.use_prepared_insert,
        initial_size: at_least(args.initial_size, 0, "initial_size")?,
        htap_seconds: at_least(args.htap_transaction_seconds, 0, "htap_transaction_seconds")?,
        storage_engine: args.engine.clone(),
        engine_options: args.engine_options.clone(),
        unique_checks: args.unique_checks != 0,
        bulk_load: args.bulk_load != 0,
        partitions: Partitions {
            count: between(args.num_partitions, 0, MAX_PARTITIONS, "num_partitions")?,
            rows_each: at_least(args.rows_per_partition, 0, "rows_per_partition")?,
        },
    };
    check_combination(&options, postgres)?;
    Ok(options.fixed_up())
}

fn check_data(data: &DataShape) -> Result<(), Failure> {
    if data.length_min > data.length_max {
        return Err(Failure::input(format!(
            "--data_length_min {} is above --data_length_max {}",
            data.length_min, data.length_max
        )));
    }
    if data.length_max > 4000 {
        return Err(Failure::input(format!(
            "--data_length_max {}: the data column is varchar(4000)",
            data.length_max
        )));
    }
    if data.random_pct > 100 {
        return Err(Failure::input(format!(
            "--data_random_pct {} is not a percentage",
            data.random_pct
        )));
    }
    Ok(())
}

fn secondary_indexes(value: i64) -> Result<u8, Failure> {
    if !(0..=3).contains(&value) {
        return Err(Failure::input(format!(
            "--num_secondary_indexes must be 0 to 3 (not {value})"
        )));
    }
    Ok(value as u8)
}

/// A table name that can go into the statements unquoted, as iibench.py puts it there.
pub fn table_name(name: &str) -> Result<String, Failure> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 48;
    if !valid {
        return Err(Failure::input(format!(
            "--table_name \"{name}\": letters, digits and _ only, starting with a letter, at most 48"
        )));
    }
    Ok(name.to_string())
}

fn check_combination(options: &Options, postgres: bool) -> Result<(), Failure> {
    if options.no_inserts && options.max_seconds == 0 {
        return Err(Failure::input(
            "--no_inserts needs --max_seconds: with no inserts nothing ends the run (iibench.py runs until killed)",
        ));
    }
    if options.no_inserts && options.query_threads == 0 && options.htap_seconds == 0 {
        return Err(Failure::input(
            "--no_inserts with no --query_threads runs nothing",
        ));
    }
    if !postgres && options.prepared_queries {
        return Err(Failure::input(
            "--use_prepared_query: PostgreSQL only, as in iibench.py",
        ));
    }
    if !postgres && options.prepared_inserts {
        return Err(Failure::input(
            "--use_prepared_insert: PostgreSQL only, as in iibench.py",
        ));
    }
    let rows_per_insert = options.clone().fixed_up().rows_per_commit;
    if options.prepared_inserts && rows_per_insert * 6 > 65535 {
        return Err(Failure::input(format!(
            "--use_prepared_insert with {} rows per commit: a prepared INSERT takes at most 65535 parameters (10922 rows)",
            rows_per_insert
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_below_rows_per_commit_lowers_it_as_iibench_does() {
        let options = Options {
            rows_per_commit: 50,
            inserts_per_second: 20,
            ..Options::default()
        }
        .fixed_up();
        assert_eq!(options.rows_per_commit, 20);
        let unlimited = Options::default().fixed_up();
        assert_eq!(unlimited.rows_per_commit, 1000);
    }

    #[test]
    fn the_last_insert_is_whole() {
        let options = Options {
            max_rows: 1001,
            rows_per_commit: 100,
            ..Options::default()
        };
        assert_eq!(options.insert_rounds(), 11);
    }

    #[test]
    fn table_names_go_into_statements_unquoted() {
        assert_eq!(table_name("pi1").unwrap(), "pi1");
        for bad in ["", "1pi", "pi-1", "pi 1", "pi;drop"] {
            assert!(table_name(bad).is_err(), "{bad}");
        }
    }
}
