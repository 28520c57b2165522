//! `stampede tproch build|run|check|drop`: HammerDB TPROC-H's schema and dbgen's data, its
//! query streams and refresh functions, its checks.

use clap::{Args, Subcommand};

pub use crate::family::common::connection::EngineConnectionArgs;

#[derive(Debug, Subcommand)]
pub enum TprochAction {
    /// Create HammerDB's TPROC-H tables, stream dbgen's rows into them with parallel COPY, add
    /// HammerDB's keys and indexes, then VACUUM and ANALYZE
    #[command(disable_help_flag = true)]
    Build(BuildArgs),
    /// Write dbgen's `.tbl` files (a big table in parts: `lineitem.tbl.1` …, as `dbgen -C`
    /// names them) without a server: to load elsewhere, or to time generation alone
    Generate(GenerateArgs),
    /// Run query sets with virtual users as HammerDB does (one user with --refresh: TPC-H's
    /// power test), or TPC-H's power and throughput tests with --tpch-streams
    #[command(disable_help_flag = true)]
    Run(Box<RunArgs>),
    /// Check the tables against dbgen's row counts, their indexes, and HammerDB's consistency
    /// check (each order's total from its lines)
    #[command(disable_help_flag = true)]
    Check(EngineConnectionArgs),
    /// Drop the TPROC-H tables (never a table of the same name that is not TPROC-H's)
    #[command(disable_help_flag = true)]
    Drop(EngineConnectionArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// TPC-H's scale factor: SF 1 is about 1 GB of data (HammerDB's pg_scale_fact)
    #[arg(
        long = "scale-factor",
        short = 's',
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub scale_factor: f64,
    /// Connections loading in parallel (HammerDB's build threads; default: the client's cores)
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<i64>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// TPC-H's scale factor
    #[arg(
        long = "scale-factor",
        short = 's',
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub scale_factor: f64,
    /// Threads generating in parallel (default: the machine's cores)
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// The folder to write into (made when missing; a file already there is refused)
    #[arg(long, value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Virtual users: one query stream each; with --refresh the first is the refresh stream
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub vu: i64,
    /// Query sets each query stream runs (HammerDB's total query sets)
    #[arg(
        long = "query-sets",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub query_sets: i64,
    /// max_parallel_workers_per_gather in each query stream's session (HammerDB's degree of
    /// parallelism)
    #[arg(
        long = "degree-of-parallel",
        default_value_t = 2,
        allow_negative_numbers = true
    )]
    pub degree_of_parallel: i64,
    /// Run the refresh functions: one user runs RF1, its queries and RF2 (the power test);
    /// several users give the first to RF1/RF2 pairs (--update-sets of them)
    #[arg(long)]
    pub refresh: bool,
    /// RF1/RF2 pairs the refresh stream runs (with --refresh and several users)
    #[arg(
        long = "update-sets",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub update_sets: i64,
    /// Milliseconds the refresh stream waits before each order it inserts or deletes
    /// (HammerDB's trickle refresh; the power test never waits)
    #[arg(
        long = "trickle-refresh",
        default_value_t = 1000,
        allow_negative_numbers = true
    )]
    pub trickle_refresh: i64,
    /// Stop at the first query that fails (otherwise the failure is reported and the stream
    /// goes on)
    #[arg(long = "raise-query-error")]
    pub raise_query_error: bool,
    /// Print each query's text and rows
    #[arg(long)]
    pub verbose: bool,
    /// Only these queries, e.g. 1,6,14 (each in its stream's place)
    #[arg(long, value_name = "LIST")]
    pub queries: Option<String>,
    /// TPC-H's performance test: a power test, then this many query streams beside a refresh
    /// stream of as many update sets; prints Power@Size, Throughput@Size and QphH@Size
    #[arg(long = "tpch-streams", value_name = "S", allow_negative_numbers = true)]
    pub tpch_streams: Option<i64>,
    /// Every query with TPC-H's qualification values (clause 2.4, "Validation"), whose answers
    /// TPC-H publishes for scale factor 1, instead of HammerDB's random draws
    #[arg(long)]
    pub qualification: bool,
    /// Seed of the substitution parameters (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the result as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}
