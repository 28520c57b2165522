//! `stampede capture` and `stampede replay`: flags only.

use std::path::PathBuf;

use clap::Args;

use crate::family::common::connection::ConnectionArgs;

/// Reads PostgreSQL's log (or switches logging on for a while on a server and reads it) into
/// a replay file.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Log files, in order (the server's .log, .csv or .json files); none with --seconds
    pub logs: Vec<PathBuf>,
    /// The replay file to write
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// stderr, csvlog or jsonlog (default: from each file's name, .csv and .json, else stderr)
    #[arg(long)]
    pub format: Option<String>,
    /// Only this database's sessions
    #[arg(long)]
    pub database: Option<String>,
    /// Refuse the log when more than this share of its messages cannot be used (percent)
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub max_unusable: f64,
    /// Switch statement logging on for this many seconds on the server the connection flags
    /// name (ALTER SYSTEM and a reload, put back afterwards), then read what it logged
    #[arg(long)]
    pub seconds: Option<u64>,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Replays a capture: each captured session as a client, with its statements, timing and
/// parameters.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The replay file `stampede capture` wrote
    pub file: PathBuf,
    /// 1 = as captured, 2 = twice as fast, 0 = as fast as possible
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Threads the sessions are spread over (default: the machine's cores)
    #[arg(short = 'j', long)]
    pub jobs: Option<usize>,
    /// Write the result as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also send the capture's statements that change the server rather than the data
    /// (ALTER SYSTEM, pg_reload_conf(), pg_terminate_backend(), CHECKPOINT, role, tablespace
    /// and database DDL), which a replay otherwise refuses
    #[arg(long)]
    pub allow_admin: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
}
