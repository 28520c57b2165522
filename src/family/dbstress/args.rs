//! `stampede dbstress prepare|run|cleanup`: dbSTRESS (study 003) on PostgreSQL or, with
//! `--engine mariadb`, on MariaDB/MySQL.

use clap::{Args, Subcommand};

pub use crate::family::common::connection::EngineConnectionArgs;

#[derive(Debug, Subcommand)]
pub enum DbstressAction {
    /// Create ZONE, SECTION, STAT, OBJECT and HISTORY (20 rows per object) per set, generated on
    /// the server over --threads connections, then the indexes and ANALYZE
    #[command(disable_help_flag = true)]
    Prepare(PrepareArgs),
    /// Run sessions of read-only or read+write transactions: TPS and response times per
    /// statement
    #[command(disable_help_flag = true)]
    Run(Box<RunArgs>),
    /// Drop the dbSTRESS tables
    #[command(disable_help_flag = true)]
    Cleanup(EngineConnectionArgs),
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Objects per set (HISTORY gets 20 rows per object)
    #[arg(long, default_value_t = 1_000_000, allow_negative_numbers = true)]
    pub objects: i64,
    /// Object sets: tables zoneN, sectionN, statN, objectN, historyN for N = 1..sets
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub sets: i64,
    /// Connections generating data in parallel (default: the client's cores)
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// A unique index on HISTORY (ref_object, horder), the port's --hpk
    #[arg(long)]
    pub history_unique: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// ro (SEL1 + SEL2) or rw (the reads, and every --rw-ratio-th transaction an UPDATE and a
    /// DELETE + INSERT of history rows)
    #[arg(long, default_value = "ro")]
    pub mode: String,
    /// Sessions (connections), each running transactions back to back
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub sessions: i64,
    /// Seconds to run
    #[arg(long, default_value_t = 60, allow_negative_numbers = true)]
    pub time: i64,
    /// Abandon the run (status 2) when a session has waited this long for the server
    /// (default: 60s, or --time when longer; 0 waits forever)
    #[arg(long = "stall-timeout", value_name = "DURATION")]
    pub stall_timeout: Option<String>,
    /// Prepared statements (the "prep" runs of the 2009 dbSTRESS study) instead of the simple
    /// protocol
    #[arg(long)]
    pub prepared: bool,
    /// rw: the writes run in every Nth transaction of a session
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub rw_ratio: i64,
    /// All statements of a transaction work on one object
    #[arg(long)]
    pub same_ref: bool,
    /// SELECT … FOR UPDATE in the reads
    #[arg(long)]
    pub for_update: bool,
    /// Each session draws objects from its own slice (no artificial lock waits)
    #[arg(long)]
    pub anti_dead: bool,
    /// Seed of the sessions' random numbers (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the result as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub kube: crate::pods::KubeArgs,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}
