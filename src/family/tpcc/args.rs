//! `stampede tpcc build|run|check|drop`: HammerDB TPROC-C's schema and data, its run, its
//! checks.

use clap::{Args, Subcommand};

pub use crate::family::common::connection::EngineConnectionArgs;

#[derive(Debug, Subcommand)]
pub enum TpccAction {
    /// Create the TPROC-C tables, load them in HammerDB's physical order (one connection per
    /// table, up to --threads at once), build keys and indexes, then ANALYZE (as HammerDB) and
    /// VACUUM
    #[command(disable_help_flag = true)]
    Build(BuildArgs),
    /// Run the TPROC-C mix with virtual users: NOPM and TPM as HammerDB computes them
    #[command(disable_help_flag = true)]
    Run(Box<RunArgs>),
    /// Check TPC-C's consistency conditions (3.3.2.1-4; --all adds 5-9 and the run's New-Order amounts)
    #[command(disable_help_flag = true)]
    Check(CheckArgs),
    /// Drop the TPROC-C tables and procedures
    #[command(disable_help_flag = true)]
    Drop(EngineConnectionArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Warehouses to load (HammerDB's pg_count_ware)
    #[arg(long, short = 'w', default_value_t = 1, allow_negative_numbers = true)]
    pub warehouses: i64,
    /// Connections loading in parallel, each one table at a time (default: the client's cores;
    /// at most 8, one per table)
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// Hash-partition order_line by warehouse into round(W/100) parts, as HammerDB does (only
    /// from 200 warehouses on, like HammerDB)
    #[arg(long)]
    pub partition: bool,
    /// CLUSTER every table on its primary key before ANALYZE and VACUUM (as Vik Fearing's
    /// PostgreSQL 12 vs 13 TPROC-C study did)
    #[arg(long)]
    pub cluster: bool,
    /// Seed of the data's random numbers (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Whose value rules where they differ: hammerdb (half the customers with bad credit,
    /// HammerDB's orders' customers) or tpc-c (clause 4.3.3.1)
    #[arg(long, default_value = "hammerdb")]
    pub rules: String,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Also the conditions that read whole tables (3.3.2.5-9, and the New-Order amounts of the orders a run created)
    #[arg(long)]
    pub all: bool,
    /// Refuse a database built with another warehouse count
    #[arg(long, short = 'w', allow_negative_numbers = true)]
    pub warehouses: Option<i64>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connection: EngineConnectionArgs,
    /// Virtual users: one connection each, home warehouses spread evenly (see --home-warehouses)
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub vu: i64,
    /// Run this long before measuring, in the same sessions (as HammerDB's ramp-up)
    #[arg(long, default_value = "2m")]
    pub rampup: String,
    /// The measured time
    #[arg(long, default_value = "5m")]
    pub duration: String,
    /// Abandon the run (status 2) when a virtual user has waited this long for the server
    /// (default: 60s, or --duration when longer; 0 waits forever)
    #[arg(long = "stall-timeout", value_name = "DURATION")]
    pub stall_timeout: Option<String>,
    /// Each transaction picks a warehouse from the virtual user's share of all warehouses
    /// instead of its home warehouse (HammerDB's all warehouses: more I/O)
    #[arg(long)]
    pub all_warehouses: bool,
    /// The virtual users' home warehouses: spread (client % W + 1) or random (drawn once per
    /// user with the run's seed, as HammerDB: users may share one) [default: spread]
    #[arg(long, value_name = "HOW")]
    pub home_warehouses: Option<String>,
    /// Transactions per virtual user instead of --duration (HammerDB's total iterations)
    #[arg(long, allow_negative_numbers = true)]
    pub iterations: Option<i64>,
    /// HammerDB's mix (10/10/1/1/1 of 23: New-Order, Payment, Order-Status, Delivery,
    /// Stock-Level), or five weights summing to 100 such as 45,43,4,4,4
    #[arg(long, default_value = "hammerdb")]
    pub mix: String,
    /// server: one CALL of a PL/pgSQL procedure per transaction (HammerDB's); client: the
    /// transactions' statements, prepared and sent by stampede
    #[arg(long, default_value = "server")]
    pub mode: String,
    /// How server mode sends its calls: simple (the simple protocol with literals, as HammerDB)
    /// or prepared [default: simple]
    #[arg(long, value_name = "PROTOCOL")]
    pub call: Option<String>,
    /// Each virtual user waits a keying time before and a think time after every transaction,
    /// as TPC-C's terminals (HammerDB's seconds: New-Order 18/12, Payment 3/12, Order-Status 2/5,
    /// Delivery 2/10, Stock-Level 2/5); latencies leave the pauses out
    #[arg(long)]
    pub keying_thinking: bool,
    /// Multiply the keying and think times by this factor (with --keying-thinking)
    #[arg(
        long,
        value_name = "FACTOR",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub keying_thinking_scale: f64,
    /// Refuse a database built with another warehouse count
    #[arg(long, short = 'w', allow_negative_numbers = true)]
    pub warehouses: Option<i64>,
    /// Seed of the virtual users' random numbers (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Whose inputs where they differ: hammerdb (uniform customer ids, the load's C for last
    /// names, one Stock-Level district per virtual user) or tpc-c (clauses 2.1.6, 2.5.1.2, 2.8.1)
    #[arg(long, default_value = "hammerdb")]
    pub rules: String,
    /// Write the result as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub kube: crate::pods::KubeArgs,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}
