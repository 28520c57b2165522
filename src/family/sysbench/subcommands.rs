//! `stampede sysbench prepare|run|cleanup`: sysbench's option names (with `-` or `_`, as
//! sysbench accepts both), its defaults, and its on/off switches.

use clap::{Args, Parser, Subcommand};
use serde::Deserialize;

use crate::family::common::options::on_off;

#[derive(Debug, Subcommand)]
pub enum SysbenchAction {
    /// Create and load the sbtest tables (tables in parallel over --threads connections)
    Prepare(Box<SysbenchArgs>),
    /// Run one test (oltp_read_only, oltp_read_write, ...) and print sysbench's report
    Run(Box<SysbenchArgs>),
    /// Drop the sbtest tables
    Cleanup(Box<SysbenchArgs>),
    /// QPS of suite results relative to the first file's, grouped as Callaghan's tables
    Relative(RelativeArgs),
}

#[derive(Debug, Args)]
pub struct RelativeArgs {
    /// `--json` files of `run --suite microbench`: the base first, then the others
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<std::path::PathBuf>,
}

/// An on/off switch: `--skip-trx`, `--skip-trx=on`, `--skip_trx=off`.
pub fn switch(value: &str) -> Result<bool, String> {
    match value {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        other => Err(format!("\"{other}\" is not on or off")),
    }
}

/// As a lab spec's `options = { ... }` takes them (`tables = 4`, `rand_type = "uniform"`), the
/// options the lab honours deserialize by their sysbench names; the ones the lab sets itself
/// (threads, time, table size from `scale`, the protocol) or does not apply are skipped, so a
/// spec that names them is refused.
#[derive(Debug, Args, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SysbenchArgs {
    /// The test: oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, select_random_points,
    /// select_random_ranges, bulk_insert, oltp_scan, oltp_inlist_select, oltp_inlist_update,
    /// oltp_points_covered, oltp_range_covered, oltp_read_only_count
    #[serde(skip)]
    pub test: Option<String>,
    /// Run a whole suite instead of one test: microbench (Callaghan's 42 microbenchmarks and
    /// the read-only-* variants, in his order, with the postwrite step)
    #[arg(long, value_name = "NAME")]
    #[serde(skip)]
    pub suite: Option<String>,
    /// Suite: seconds per read test
    #[arg(long = "read-secs", default_value_t = 300)]
    #[serde(skip)]
    pub read_secs: u64,
    /// Suite: seconds per write test
    #[arg(long = "write-secs", default_value_t = 600)]
    #[serde(skip)]
    pub write_secs: u64,
    /// Suite: seconds to wait after postwrite's VACUUM and CHECKPOINT (default: 60 + 1 per
    /// million rows, at most 1200)
    #[arg(long = "postwrite-settle", value_name = "SECONDS")]
    pub postwrite_settle: Option<u64>,

    // ---- tables (oltp_common.lua)
    /// Number of tables
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub tables: i64,
    /// Number of rows per table
    #[arg(
        long = "table-size",
        alias = "table_size",
        default_value_t = 10_000,
        allow_negative_numbers = true
    )]
    #[serde(skip)]
    pub table_size: i64,
    /// Range size for range SELECT queries
    #[arg(
        long = "range-size",
        alias = "range_size",
        default_value_t = 100,
        allow_negative_numbers = true
    )]
    pub range_size: i64,
    /// Number of point SELECT queries per transaction
    #[arg(long = "point-selects", alias = "point_selects", default_value_t = 10)]
    pub point_selects: u32,
    /// Number of simple range SELECT queries per transaction
    #[arg(long = "simple-ranges", alias = "simple_ranges", default_value_t = 1)]
    pub simple_ranges: u32,
    /// Number of SELECT SUM() queries per transaction
    #[arg(long = "sum-ranges", alias = "sum_ranges", default_value_t = 1)]
    pub sum_ranges: u32,
    /// Number of SELECT ORDER BY queries per transaction
    #[arg(long = "order-ranges", alias = "order_ranges", default_value_t = 1)]
    pub order_ranges: u32,
    /// Number of SELECT DISTINCT queries per transaction
    #[arg(
        long = "distinct-ranges",
        alias = "distinct_ranges",
        default_value_t = 1
    )]
    pub distinct_ranges: u32,
    /// Number of UPDATE index queries per transaction
    #[arg(long = "index-updates", alias = "index_updates", default_value_t = 1)]
    pub index_updates: u32,
    /// Number of UPDATE non-index queries per transaction
    #[arg(
        long = "non-index-updates",
        alias = "non_index_updates",
        default_value_t = 1
    )]
    pub non_index_updates: u32,
    /// Number of DELETE/INSERT combinations per transaction
    #[arg(long = "delete-inserts", alias = "delete_inserts", default_value_t = 1)]
    pub delete_inserts: u32,
    /// Enable/disable all range SELECT queries [on]
    #[arg(long = "range-selects", alias = "range_selects", value_name = "on|off", num_args = 0..=1, default_value = "on", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub range_selects: bool,
    /// Let the server number the rows (SERIAL); off: client-generated ids [on]
    #[arg(long = "auto-inc", alias = "auto_inc", value_name = "on|off", num_args = 0..=1, default_value = "on", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub auto_inc: bool,
    /// Don't start explicit transactions: every query in autocommit mode [off]
    #[arg(long = "skip-trx", alias = "skip_trx", value_name = "on|off", num_args = 0..=1, default_value = "off", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub skip_trx: bool,
    /// Use a secondary index in place of the PRIMARY KEY [off]
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_value = "off", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub secondary: bool,
    /// Create a secondary index on k in addition to the PRIMARY KEY [on]
    #[arg(long = "create-secondary", alias = "create_secondary", value_name = "on|off", num_args = 0..=1, default_value = "on", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub create_secondary: bool,
    /// select_random_points: values in the IN() list
    #[arg(long = "random-points", alias = "random_points", default_value_t = 10)]
    pub random_points: u32,
    /// select_random_ranges: BETWEEN ranges per SELECT
    #[arg(
        long = "number-of-ranges",
        alias = "number_of_ranges",
        default_value_t = 10
    )]
    pub number_of_ranges: u32,
    /// select_random_ranges: width of each BETWEEN range
    #[arg(long, default_value_t = 5)]
    pub delta: u32,
    /// oltp_inlist_*: the same --random-points keys in the middle of the table every event [off]
    #[arg(long = "hot-points", alias = "hot_points", value_name = "on|off", num_args = 0..=1, default_value = "off", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub hot_points: bool,
    /// oltp_points_covered / oltp_range_covered: select only the key [on]
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_value = "on", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub covered: bool,
    /// oltp_points_covered / oltp_range_covered: search by id, else by k [on]
    #[arg(long = "on-id", alias = "on_id", value_name = "on|off", num_args = 0..=1, default_value = "on", default_missing_value = "on", value_parser = switch)]
    #[serde(deserialize_with = "on_off")]
    pub on_id: bool,

    // ---- general
    /// Number of threads (each its own connection)
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    #[serde(skip)]
    pub threads: i64,
    /// Limit for total execution time in seconds [10]
    #[arg(long)]
    #[serde(skip)]
    pub time: Option<u64>,
    /// stampede's watchdog: abandon the run (status 2) when a thread has waited this long for
    /// the server (default: 60s, or --time when longer; 0 waits forever)
    #[arg(long = "stall-timeout", value_name = "DURATION")]
    #[serde(skip)]
    pub stall_timeout: Option<String>,
    /// Limit for the total number of events (0: no limit)
    #[arg(long, default_value_t = 0)]
    #[serde(skip)]
    pub events: u64,
    /// Average transaction rate (0: unlimited); latency then includes the wait for the schedule
    #[arg(long, default_value_t = 0.0)]
    #[serde(skip)]
    pub rate: f64,
    /// Print intermediate statistics every N seconds (0: off)
    #[arg(
        long = "report-interval",
        alias = "report_interval",
        default_value_t = 0
    )]
    #[serde(skip)]
    pub report_interval: u64,
    /// Run this many seconds before measuring; its statistics are discarded
    #[arg(long = "warmup-time", alias = "warmup_time", default_value_t = 0)]
    #[serde(skip)]
    pub warmup_time: u64,
    /// The percentile sysbench's report line shows (1-100; 0 leaves it out); p50, p95, p99 and
    /// max are always shown
    #[arg(long, default_value_t = 95.0)]
    #[serde(skip)]
    pub percentile: f64,
    /// Print a latency histogram
    #[arg(long, value_name = "on|off", num_args = 0..=1, default_value = "off", default_missing_value = "on", value_parser = switch)]
    #[serde(skip)]
    pub histogram: bool,
    /// Write the result as JSON to this file
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub json: Option<std::path::PathBuf>,
    /// Tries per event after a deadlock or serialization failure (0: until it succeeds, as
    /// sysbench restarts events on ignored errors; 1: no retry, the event is counted as an error)
    #[arg(long = "max-tries", default_value_t = 0)]
    #[serde(skip)]
    pub max_tries: u32,

    // ---- random numbers
    /// Distribution of row ids: uniform, gaussian, special, pareto, zipfian
    #[arg(long = "rand-type", alias = "rand_type", default_value = "special")]
    pub rand_type: String,
    /// Seed of the random numbers (0: from the clock)
    #[arg(long = "rand-seed", alias = "rand_seed", default_value_t = 0)]
    #[serde(skip)]
    pub rand_seed: u64,
    /// Iterations of the special and gaussian distributions
    #[arg(
        long = "rand-spec-iter",
        alias = "rand_spec_iter",
        default_value_t = 12
    )]
    pub rand_spec_iter: u32,
    /// Percentage of the range where 'special' values fall
    #[arg(long = "rand-spec-pct", alias = "rand_spec_pct", default_value_t = 1)]
    pub rand_spec_pct: u32,
    /// Percentage of 'special' values
    #[arg(long = "rand-spec-res", alias = "rand_spec_res", default_value_t = 75)]
    pub rand_spec_res: u32,
    /// Shape of the Pareto distribution
    #[arg(long = "rand-pareto-h", alias = "rand_pareto_h", default_value_t = 0.2)]
    pub rand_pareto_h: f64,
    /// Exponent of the Zipfian distribution
    #[arg(
        long = "rand-zipfian-exp",
        alias = "rand_zipfian_exp",
        default_value_t = 0.8
    )]
    pub rand_zipfian_exp: f64,

    // ---- database
    /// pgsql (PostgreSQL) or mysql (MySQL and MariaDB)
    #[arg(long = "db-driver", alias = "db_driver", default_value = "pgsql")]
    #[serde(skip)]
    pub db_driver: String,
    /// auto: server-side prepared statements; disable: plain queries
    #[arg(long = "db-ps-mode", alias = "db_ps_mode", default_value = "auto")]
    #[serde(skip)]
    pub db_ps_mode: String,
    /// Server host or socket directory (default: PGHOST or the managed default server)
    #[arg(long = "pgsql-host", alias = "pgsql_host")]
    #[serde(skip)]
    pub pgsql_host: Option<String>,
    /// Server port
    #[arg(long = "pgsql-port", alias = "pgsql_port")]
    #[serde(skip)]
    pub pgsql_port: Option<String>,
    /// User name
    #[arg(long = "pgsql-user", alias = "pgsql_user")]
    #[serde(skip)]
    pub pgsql_user: Option<String>,
    /// Password (prefer PGPASSWORD or ~/.pgpass: a flag is visible to other users)
    #[arg(long = "pgsql-password", alias = "pgsql_password")]
    #[serde(skip)]
    pub pgsql_password: Option<String>,
    /// Database name, or a postgresql:// URI
    #[arg(long = "pgsql-db", alias = "pgsql_db")]
    #[serde(skip)]
    pub pgsql_db: Option<String>,
    /// MySQL/MariaDB server host; localhost means its Unix socket
    #[arg(long = "mysql-host", alias = "mysql_host", default_value = "localhost")]
    #[serde(skip)]
    pub mysql_host: String,
    /// MySQL/MariaDB server port
    #[arg(long = "mysql-port", alias = "mysql_port", default_value_t = 3306)]
    #[serde(skip)]
    pub mysql_port: u16,
    /// MySQL/MariaDB Unix socket file
    #[arg(long = "mysql-socket", alias = "mysql_socket")]
    #[serde(skip)]
    pub mysql_socket: Option<std::path::PathBuf>,
    /// MySQL/MariaDB user
    #[arg(long = "mysql-user", alias = "mysql_user", default_value = "sbtest")]
    #[serde(skip)]
    pub mysql_user: String,
    /// MySQL/MariaDB password (or MYSQL_PWD)
    #[arg(
        long = "mysql-password",
        alias = "mysql_password",
        env = "MYSQL_PWD",
        hide_env_values = true
    )]
    #[serde(skip)]
    pub mysql_password: Option<String>,
    /// MySQL/MariaDB database
    #[arg(long = "mysql-db", alias = "mysql_db", default_value = "sbtest")]
    #[serde(skip)]
    pub mysql_db: String,
    /// Storage engine of the tables prepare creates
    #[arg(
        long = "mysql-storage-engine",
        alias = "mysql_storage_engine",
        default_value = "innodb"
    )]
    #[serde(skip)]
    pub mysql_storage_engine: String,
    /// MySQL/MariaDB errors after which the event starts again, counted as ignored errors:
    /// numbers separated by commas, "all" or "none"; any other error fails the event
    #[arg(
        long = "mysql-ignore-errors",
        alias = "mysql_ignore_errors",
        value_name = "LIST",
        default_value = "1213,1020,1205"
    )]
    #[serde(skip)]
    pub mysql_ignore_errors: String,

    // ---- Kubernetes
    #[command(flatten)]
    #[serde(skip)]
    pub kube: crate::pods::KubeArgs,
    #[command(flatten)]
    #[serde(skip)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}

impl Default for SysbenchArgs {
    /// sysbench's defaults, as the command line gives them when no option is named.
    fn default() -> Self {
        #[derive(Parser)]
        #[command(no_binary_name = true)]
        struct OptionsOnly {
            #[command(flatten)]
            args: SysbenchArgs,
        }
        OptionsOnly::parse_from(std::iter::empty::<String>()).args
    }
}
