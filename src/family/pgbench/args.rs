//! `stampede pgbench`: pgbench's option names and meanings. Values stay text here so that the
//! command can check them with pgbench's own wording.

use clap::{ArgAction, Args};

#[derive(Debug, Args, Default)]
pub struct PgbenchArgs {
    #[arg(long = "help", action = ArgAction::Help, help = "Print help")]
    pub help: Option<bool>,

    // ---- initialization
    /// Invoke initialization mode
    #[arg(short = 'i', long = "initialize", help_heading = "Initialization")]
    pub initialize: bool,
    /// Run selected initialization steps, in the order given (default "dtgvp"; all: "dtgGvpf")
    #[arg(
        short = 'I',
        long = "init-steps",
        value_name = "STEPS",
        help_heading = "Initialization"
    )]
    pub init_steps: Option<String>,
    /// Set fill factor of the tables (10..100)
    #[arg(
        short = 'F',
        long = "fillfactor",
        value_name = "NUM",
        help_heading = "Initialization"
    )]
    pub fillfactor: Option<String>,
    /// Do not run VACUUM during initialization / before the run
    #[arg(short = 'n', long = "no-vacuum", help_heading = "Initialization")]
    pub no_vacuum: bool,
    /// Quiet logging (one message each 5 seconds)
    #[arg(short = 'q', long = "quiet", help_heading = "Initialization")]
    pub quiet: bool,
    /// Scaling factor
    #[arg(
        short = 's',
        long = "scale",
        value_name = "NUM",
        help_heading = "Initialization"
    )]
    pub scale: Option<String>,
    /// Create foreign key constraints between tables
    #[arg(long = "foreign-keys", help_heading = "Initialization")]
    pub foreign_keys: bool,
    /// Partition pgbench_accounts into NUM parts
    #[arg(
        long = "partitions",
        value_name = "NUM",
        help_heading = "Initialization"
    )]
    pub partitions: Option<String>,
    /// Partition pgbench_accounts with this method (range or hash)
    #[arg(
        long = "partition-method",
        value_name = "METHOD",
        help_heading = "Initialization"
    )]
    pub partition_method: Option<String>,
    /// Create tables as unlogged tables
    #[arg(long = "unlogged-tables", help_heading = "Initialization")]
    pub unlogged_tables: bool,
    /// Also create four extra indexes (Kaarel Moppel's PostgreSQL 12 study): pgbench_accounts (bid),
    /// pgbench_history (tid),
    /// (bid, aid) and (mtime)
    #[arg(long = "extra-indexes", help_heading = "Initialization")]
    pub extra_indexes: bool,

    // ---- scripts
    /// Add builtin script NAME weighted at W (default 1); "list" shows the builtins
    #[arg(
        short = 'b',
        long = "builtin",
        value_name = "NAME[@W]",
        help_heading = "Scripts"
    )]
    pub builtin: Vec<String>,
    /// Add script FILENAME weighted at W (default 1)
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILENAME[@W]",
        help_heading = "Scripts"
    )]
    pub file: Vec<String>,
    /// Skip updates of pgbench_tellers and pgbench_branches (same as "-b simple-update")
    #[arg(short = 'N', long = "skip-some-updates", action = ArgAction::Count, help_heading = "Scripts")]
    pub skip_some_updates: u8,
    /// Perform SELECT-only transactions (same as "-b select-only")
    #[arg(short = 'S', long = "select-only", action = ArgAction::Count, help_heading = "Scripts")]
    pub select_only: u8,
    /// Show the text of builtin script NAME and exit
    #[arg(long = "show-script", value_name = "NAME", help_heading = "Scripts")]
    pub show_script: Option<String>,

    // ---- benchmarking
    /// Number of concurrent database clients (default 1)
    #[arg(
        short = 'c',
        long = "client",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub clients: Option<String>,
    /// Establish a new connection for each transaction
    #[arg(short = 'C', long = "connect", help_heading = "Benchmarking")]
    pub connect: bool,
    /// Define variable for use by custom script
    #[arg(
        short = 'D',
        long = "define",
        value_name = "VARNAME=VALUE",
        help_heading = "Benchmarking"
    )]
    pub define: Vec<String>,
    /// Number of threads (default 1)
    #[arg(
        short = 'j',
        long = "jobs",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub jobs: Option<String>,
    /// Protocol for submitting queries: simple, extended or prepared (default simple)
    #[arg(
        short = 'M',
        long = "protocol",
        value_name = "MODE",
        help_heading = "Benchmarking"
    )]
    pub protocol: Option<String>,
    /// Show progress report every NUM seconds
    #[arg(
        short = 'P',
        long = "progress",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub progress: Option<String>,
    /// Seed the random generator: "time", "rand" or an unsigned integer
    #[arg(
        long = "random-seed",
        value_name = "SEED",
        help_heading = "Benchmarking"
    )]
    pub random_seed: Option<String>,
    /// Number of transactions each client runs (default 10)
    #[arg(
        short = 't',
        long = "transactions",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub transactions: Option<String>,
    /// Duration of benchmark test in seconds
    #[arg(
        short = 'T',
        long = "time",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub time: Option<String>,
    /// Target rate in transactions per second (Poisson schedule; latency from the scheduled start)
    #[arg(
        short = 'R',
        long = "rate",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub rate: Option<String>,
    /// Count transactions lasting more than NUM ms as late; with -R, skip those already late
    #[arg(
        short = 'L',
        long = "latency-limit",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub latency_limit: Option<String>,
    /// Report latencies, failures and retries per command
    #[arg(
        short = 'r',
        long = "report-per-command",
        help_heading = "Benchmarking"
    )]
    pub report_per_command: bool,
    /// Write transaction times to a log file per thread (pgbench's format)
    #[arg(short = 'l', long = "log", help_heading = "Benchmarking")]
    pub log: bool,
    /// Prefix for transaction time log files (default "pgbench_log")
    #[arg(
        long = "log-prefix",
        value_name = "PREFIX",
        help_heading = "Benchmarking"
    )]
    pub log_prefix: Option<String>,
    /// Fraction of transactions to log (e.g. 0.01 for 1%)
    #[arg(
        long = "sampling-rate",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub sampling_rate: Option<String>,
    /// Aggregate the log over NUM seconds
    #[arg(
        long = "aggregate-interval",
        value_name = "NUM",
        help_heading = "Benchmarking"
    )]
    pub aggregate_interval: Option<String>,
    /// Maximum number of tries per transaction after serialization/deadlock failures (default 1; 0 = unlimited)
    #[arg(long = "max-tries", value_name = "NUM", help_heading = "Benchmarking")]
    pub max_tries: Option<String>,
    /// Report the failures grouped by basic types
    #[arg(long = "failures-detailed", help_heading = "Benchmarking")]
    pub failures_detailed: bool,
    /// Print messages of all errors
    #[arg(long = "verbose-errors", help_heading = "Benchmarking")]
    pub verbose_errors: bool,
    /// Exit at once, with status 2, when any client aborts
    #[arg(long = "exit-on-abort", help_heading = "Benchmarking")]
    pub exit_on_abort: bool,
    /// Count SQL errors other than serialization/deadlock as failures instead of aborting
    #[arg(long = "continue-on-error", help_heading = "Benchmarking")]
    pub continue_on_error: bool,
    /// Use Unix epoch timestamps in progress lines
    #[arg(long = "progress-timestamp", help_heading = "Benchmarking")]
    pub progress_timestamp: bool,
    /// Vacuum all four standard tables before the run
    #[arg(short = 'v', long = "vacuum-all", help_heading = "Benchmarking")]
    pub vacuum_all: bool,
    /// Write the full result (summary, percentiles, per-second series) as JSON to FILE
    #[arg(long = "json", value_name = "FILE", help_heading = "Benchmarking")]
    pub json: Option<String>,

    // ---- connection
    /// Database server host or socket directory
    #[arg(
        short = 'h',
        long = "host",
        value_name = "HOSTNAME",
        help_heading = "Connection"
    )]
    pub host: Option<String>,
    /// Database server port number
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        help_heading = "Connection"
    )]
    pub port: Option<String>,
    /// Connect as specified database user
    #[arg(
        short = 'U',
        long = "username",
        value_name = "USERNAME",
        help_heading = "Connection"
    )]
    pub username: Option<String>,
    /// Database name, libpq URI or key=value connection string
    #[arg(
        short = 'd',
        long = "dbname",
        value_name = "DBNAME",
        help_heading = "Connection"
    )]
    pub dbname: Option<String>,
    /// Database name, libpq URI or key=value connection string (as pgbench's last argument)
    #[arg(value_name = "DBNAME")]
    pub positional_dbname: Option<String>,
}

/// Which script options were given, in command-line order (pgbench numbers scripts that way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptChoice {
    Builtin(String),
    File(String),
}

/// Recovers the command-line order of `-b`, `-f`, `-S` and `-N` from clap's indices.
pub fn script_choices(matches: &clap::ArgMatches) -> Vec<ScriptChoice> {
    let mut ordered: Vec<(usize, ScriptChoice)> = Vec::new();
    let mut collect = |id: &str, make: &dyn Fn(String) -> ScriptChoice| {
        if let (Some(indices), Some(values)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        {
            for (index, value) in indices.zip(values) {
                ordered.push((index, make(value.clone())));
            }
        }
    };
    collect("builtin", &ScriptChoice::Builtin);
    collect("file", &ScriptChoice::File);
    for (id, name) in [
        ("select_only", "select-only"),
        ("skip_some_updates", "simple-update"),
    ] {
        let given = matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        if let (true, Some(indices)) = (given, matches.indices_of(id)) {
            for index in indices {
                ordered.push((index, ScriptChoice::Builtin(name.to_string())));
            }
        }
    }
    ordered.sort_by_key(|(index, _)| *index);
    ordered.into_iter().map(|(_, choice)| choice).collect()
}
