//! `stampede ibench step|run|cleanup`. `step` takes iibench.py's own options, spelled as his
//! (`--max_rows=…`, `--rows_per_commit=…`), so a script that runs `python3 iibench.py …` can run
//! `stampede ibench step …` instead; `run` is the benchmark's whole sequence as his scripts drive
//! it, with stampede's connection flags.

use clap::{Args, Subcommand};

pub use crate::family::common::connection::EngineConnectionArgs;

#[derive(Debug, Subcommand)]
pub enum IbenchAction {
    /// One iibench.py run, with its options and its output (the per-interval lines, the
    /// response-time histograms, Totals)
    Step(Box<IibenchArgs>),
    /// The Insert Benchmark's steps as its scripts run them: l.i0 (load), l.x (secondary
    /// indexes), l.i1 and l.i2 (inserts and deletes), then qrN/qpN (range or point queries
    /// while a writer holds N rows/s); a summary per step
    #[command(disable_help_flag = true)]
    Run(Box<RunArgs>),
    /// Drop the benchmark's tables (pi1 … piN)
    #[command(disable_help_flag = true)]
    Cleanup(CleanupArgs),
}

/// iibench.py's options, with its names and defaults. The MongoDB-only ones are accepted and,
/// as in iibench.py on PostgreSQL and MySQL, change nothing.
#[derive(Debug, Args)]
pub struct IibenchArgs {
    /// postgres or mysql (MariaDB, MySQL); stampede does not run MongoDB
    #[arg(long, default_value = "postgres")]
    pub dbms: String,
    /// Host (PostgreSQL: host or socket directory; unset follows PGHOST or the managed server)
    #[arg(long = "db_host")]
    pub db_host: Option<String>,
    /// Port (stampede's own: iibench.py takes PostgreSQL's from PGPORT, MySQL's is 3306)
    #[arg(long = "db_port")]
    pub db_port: Option<String>,
    /// Database
    #[arg(long = "db_name")]
    pub db_name: Option<String>,
    /// User
    #[arg(long = "db_user")]
    pub db_user: Option<String>,
    /// Password (PGPASSWORD or MYSQL_PWD keep it off the command line)
    #[arg(long = "db_password")]
    pub db_password: Option<String>,
    /// MySQL: the server's socket file
    #[arg(long = "db_socket")]
    pub db_socket: Option<std::path::PathBuf>,
    /// MySQL: connect by the socket (iibench.py's default; it cannot be turned off there)
    #[arg(long = "mysql_use_socket")]
    pub mysql_use_socket: bool,
    /// MySQL: an option file for the client (not read by stampede)
    #[arg(long = "db_config_file", default_value = "")]
    pub db_config_file: String,
    /// The table
    #[arg(long = "table_name", default_value = "purchases_index")]
    pub table_name: String,
    /// Rows to insert
    #[arg(
        long = "max_rows",
        default_value_t = 10_000,
        allow_negative_numbers = true
    )]
    pub max_rows: i64,
    /// Rows per INSERT (one transaction)
    #[arg(
        long = "rows_per_commit",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub rows_per_commit: i64,
    /// Limit the inserts to this many rows a second (0: no limit)
    #[arg(
        long = "inserts_per_second",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub inserts_per_second: i64,
    /// Connections running queries while the inserts run
    #[arg(
        long = "query_threads",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub query_threads: i64,
    /// Queries by primary key only (point queries) instead of the secondary indexes' ranges
    #[arg(long = "query_pk_only")]
    pub query_pk_only: bool,
    /// Rows each query fetches
    #[arg(
        long = "rows_per_query",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub rows_per_query: i64,
    /// Delete the oldest rows_per_commit rows for every insert, keeping the row count
    #[arg(long = "delete_per_insert")]
    pub delete_per_insert: bool,
    /// Secondary indexes (0 to 3)
    #[arg(
        long = "num_secondary_indexes",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    pub num_secondary_indexes: i64,
    /// Create the secondary indexes with the table
    #[arg(long = "secondary_at_start")]
    pub secondary_at_start: bool,
    /// Create the secondary indexes after the inserts
    #[arg(long = "secondary_at_end")]
    pub secondary_at_end: bool,
    /// Drop and create the table first
    #[arg(long)]
    pub setup: bool,
    /// Shortest value of the data column
    #[arg(
        long = "data_length_min",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub data_length_min: i64,
    /// Longest value of the data column
    #[arg(
        long = "data_length_max",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub data_length_max: i64,
    /// Percent of the data column that is random
    #[arg(
        long = "data_random_pct",
        default_value_t = 50,
        allow_negative_numbers = true
    )]
    pub data_random_pct: i64,
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub cashregisters: i64,
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub products: i64,
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true)]
    pub customers: i64,
    #[arg(
        long = "max_price",
        default_value_t = 500,
        allow_negative_numbers = true
    )]
    pub max_price: i64,
    /// Seed of the random numbers
    #[arg(long, default_value_t = 3_221_223_452, allow_negative_numbers = true)]
    pub seed: i64,
    /// Seconds between progress lines
    #[arg(
        long = "secs_per_report",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub secs_per_report: i64,
    /// Stop after this many seconds (0: when max_rows are in)
    #[arg(
        long = "max_seconds",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub max_seconds: i64,
    /// No inserts: queries only (stampede needs --max_seconds then; iibench.py runs until killed)
    #[arg(long = "no_inserts")]
    pub no_inserts: bool,
    /// Read min(transactionid) again every this many inserts (0: once)
    #[arg(
        long = "resync_get_min",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub resync_get_min: i64,
    /// Print each min(transactionid) read
    #[arg(long = "print_get_min")]
    pub print_get_min: bool,
    /// PostgreSQL: the queries as prepared statements (PREPARE, then EXECUTE)
    #[arg(long = "use_prepared_query")]
    pub use_prepared_query: bool,
    /// PostgreSQL: the inserts as a prepared statement
    #[arg(long = "use_prepared_insert")]
    pub use_prepared_insert: bool,
    /// Rows inserted before the measured inserts start
    #[arg(
        long = "initial_size",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub initial_size: i64,
    /// Seconds a background transaction stays open, again and again (0: none)
    #[arg(
        long = "htap_transaction_seconds",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub htap_transaction_seconds: i64,
    /// MySQL: the table's storage engine
    #[arg(long, default_value = "innodb")]
    pub engine: String,
    /// Options appended to CREATE TABLE
    #[arg(long = "engine_options", default_value = "")]
    pub engine_options: String,
    /// MySQL (MyRocks, TokuDB): 0 turns unique checks off for the inserts
    #[arg(
        long = "unique_checks",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub unique_checks: i64,
    /// MySQL (MyRocks): bulk load for the inserts
    #[arg(long = "bulk_load", default_value_t = 1, allow_negative_numbers = true)]
    pub bulk_load: i64,
    /// Range partitions on transactionid (0: none)
    #[arg(
        long = "num_partitions",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub num_partitions: i64,
    /// Rows per partition (0: max_rows / num_partitions)
    #[arg(
        long = "rows_per_partition",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub rows_per_partition: i64,
    /// With N iibench processes, this one's number (names nothing in stampede)
    #[arg(long = "my_id", default_value_t = 0, allow_negative_numbers = true)]
    pub my_id: i64,
    /// Unused by iibench.py
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub warmup: i64,
    /// Unused by iibench.py
    #[arg(
        long = "max_table_rows",
        default_value_t = 10_000_000,
        allow_negative_numbers = true
    )]
    pub max_table_rows: i64,
    /// MongoDB only
    #[arg(long, default_value = "none")]
    pub dbopt: String,
    /// MongoDB only
    #[arg(long = "mongo_w", default_value_t = 1, allow_negative_numbers = true)]
    pub mongo_w: i64,
    /// MongoDB only
    #[arg(long = "mongo_r", default_value = "local")]
    pub mongo_r: String,
    /// MongoDB only
    #[arg(long = "mongo_j")]
    pub mongo_j: bool,
    /// MongoDB only
    #[arg(long = "mongo_trx")]
    pub mongo_trx: bool,
    /// MongoDB only
    #[arg(long = "name_cash", default_value = "cashregisterid")]
    pub name_cash: String,
    /// MongoDB only
    #[arg(long = "name_cust", default_value = "customerid")]
    pub name_cust: String,
    /// MongoDB only
    #[arg(long = "name_ts", default_value = "dateandtime")]
    pub name_ts: String,
    /// MongoDB only
    #[arg(long = "name_price", default_value = "price")]
    pub name_price: String,
    /// MongoDB only
    #[arg(long = "name_prod", default_value = "product")]
    pub name_prod: String,
    /// MongoDB only
    #[arg(long = "name_data", default_value = "data")]
    pub name_data: String,
}

/// The sequence, with the parameters his scripts take (`iq.sh`: dop, only1t, nr1, nr2,
/// querysecs, delete_per_insert, the query steps).
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// The steps, in order: l.i0, l.x, l.i1, l.i2 and qrN/qpN (range/point queries while the
    /// writer inserts N rows a second per client)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "l.i0,l.x,l.i1,l.i2,qr100,qp100,qr500,qp500,qr1000,qp1000"
    )]
    pub steps: Vec<String>,
    /// Clients, each an iibench of its own (his dop); each has its own table unless --shared-table
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub clients: i64,
    /// One table, pi1, for every client (his only1t)
    #[arg(long = "shared-table")]
    pub shared_table: bool,
    /// Rows l.i0 loads, over all clients (his nr1)
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    pub rows: i64,
    /// Rows l.i1 and l.i2 insert, over all clients: 4/5 in l.i1 (50 per commit), 1/5 in l.i2
    /// (5 per commit) (his nr2)
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    pub writes: i64,
    /// Seconds each query step runs (his querysecs)
    #[arg(
        long = "query-seconds",
        default_value_t = 1800,
        allow_negative_numbers = true
    )]
    pub query_seconds: i64,
    /// No deletes in l.i1, l.i2 and the query steps: the table grows
    #[arg(long = "no-deletes")]
    pub no_deletes: bool,
    /// Seconds the server is left to settle after l.i2's VACUUM/ANALYZE and checkpoint
    /// (default: his 60 + 1 per million rows, at most 1200)
    #[arg(long, allow_negative_numbers = true)]
    pub settle: Option<i64>,
    /// Seed of the random numbers (default: from the clock); client n uses seed + n
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Write each client's iibench.py output of each step here (STEP/ib.N, as his o.ib files)
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<std::path::PathBuf>,
    /// Write the steps' results as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}

#[derive(Debug, Args)]
pub struct CleanupArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Tables pi1 … piN to drop
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub clients: i64,
}
