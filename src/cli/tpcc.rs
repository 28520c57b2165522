//! `stampede tpcc build|check|drop`: HammerDB TPROC-C's schema and data.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum TpccAction {
    /// Create the TPROC-C tables, load them by warehouse over --threads connections, build keys
    /// and indexes, then ANALYZE and VACUUM FREEZE
    Build(BuildArgs),
    /// Check TPC-C's consistency conditions (3.3.2.1-4; --all adds 5-9)
    Check(CheckArgs),
    /// Drop the TPROC-C tables
    Drop(ConnectionArgs),
}

/// Where the database is; unset ones follow PG* variables, or the managed default server.
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    /// Server host or socket directory
    #[arg(short = 'h', long)]
    pub host: Option<String>,
    /// Server port
    #[arg(short = 'p', long)]
    pub port: Option<String>,
    /// User name
    #[arg(short = 'U', long)]
    pub user: Option<String>,
    /// Database name, or a postgresql:// URI
    #[arg(short = 'd', long)]
    pub dbname: Option<String>,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Warehouses to load (HammerDB's pg_count_ware)
    #[arg(long, short = 'w', default_value_t = 1, allow_negative_numbers = true)]
    pub warehouses: i64,
    /// Connections loading in parallel (default: the client's cores)
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// Hash-partition order_line by warehouse into round(W/100) parts, as HammerDB does (only
    /// from 200 warehouses on, like HammerDB)
    #[arg(long)]
    pub partition: bool,
    /// CLUSTER every table on its primary key before ANALYZE and VACUUM FREEZE (seed 001)
    #[arg(long)]
    pub cluster: bool,
    /// Seed of the data's random numbers (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Also the conditions that read whole tables (3.3.2.5-9)
    #[arg(long)]
    pub all: bool,
    /// Refuse a database built with another warehouse count
    #[arg(long, short = 'w', allow_negative_numbers = true)]
    pub warehouses: Option<i64>,
}
