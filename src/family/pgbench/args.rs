//! `stampede pgbench`: pgbench's option names and meanings. Values stay text here so that the
//! command can check them with pgbench's own wording.

use clap::{ArgAction, Args};

#[derive(Debug, Args, Default)]
pub struct PgbenchArgs {
    #[arg(
        short = '?',
        long = "help",
        action = ArgAction::HelpLong,
        help = "Show this help, then exit",
        help_heading = "Common options"
    )]
    pub help: Option<bool>,
    /// Output version information, then exit
    #[arg(short = 'V', long = "version", help_heading = "Common options")]
    pub version: bool,
    /// Print debugging output: what each client executes, sends and receives (pgbench 17+:
    /// the long option only, `-d` is `--dbname`)
    #[arg(long = "debug", help_heading = "Common options")]
    pub debug: bool,

    // ---- initialization
    /// Invoke initialization mode
    #[arg(
        short = 'i',
        long = "initialize",
        help_heading = "Initialization options"
    )]
    pub initialize: bool,
    /// Run selected initialization steps, in the order given (default "dtgvp"; all: "dtgGvpf")
    #[arg(
        short = 'I',
        long = "init-steps",
        value_name = "STEPS",
        help_heading = "Initialization options"
    )]
    pub init_steps: Option<String>,
    /// Set fill factor of the tables (10..100)
    #[arg(
        short = 'F',
        long = "fillfactor",
        value_name = "NUM",
        help_heading = "Initialization options"
    )]
    pub fillfactor: Option<String>,
    /// Do not run VACUUM during initialization / before the run
    #[arg(
        short = 'n',
        long = "no-vacuum",
        help_heading = "Initialization options"
    )]
    pub no_vacuum: bool,
    /// Quiet logging (one message each 5 seconds)
    #[arg(short = 'q', long = "quiet", help_heading = "Initialization options")]
    pub quiet: bool,
    /// Scaling factor
    #[arg(
        short = 's',
        long = "scale",
        value_name = "NUM",
        help_heading = "Initialization options"
    )]
    pub scale: Option<String>,
    /// Create foreign key constraints between tables
    #[arg(long = "foreign-keys", help_heading = "Initialization options")]
    pub foreign_keys: bool,
    /// Partition pgbench_accounts into NUM parts
    #[arg(
        long = "partitions",
        value_name = "NUM",
        help_heading = "Initialization options"
    )]
    pub partitions: Option<String>,
    /// Partition pgbench_accounts with this method (range or hash)
    #[arg(
        long = "partition-method",
        value_name = "METHOD",
        help_heading = "Initialization options"
    )]
    pub partition_method: Option<String>,
    /// Create tables as unlogged tables
    #[arg(long = "unlogged-tables", help_heading = "Initialization options")]
    pub unlogged_tables: bool,
    /// Create tables in the specified tablespace
    #[arg(
        long = "tablespace",
        value_name = "TABLESPACE",
        help_heading = "Initialization options"
    )]
    pub tablespace: Option<String>,
    /// Create indexes in the specified tablespace
    #[arg(
        long = "index-tablespace",
        value_name = "TABLESPACE",
        help_heading = "Initialization options"
    )]
    pub index_tablespace: Option<String>,
    /// Also create four extra indexes (Kaarel Moppel's PostgreSQL 12 study): pgbench_accounts (bid),
    /// pgbench_history (tid),
    /// (bid, aid) and (mtime)
    #[arg(long = "extra-indexes", help_heading = "Initialization options")]
    pub extra_indexes: bool,

    // ---- scripts
    /// Add builtin script NAME weighted at W (default 1); "list" shows the builtins
    #[arg(
        short = 'b',
        long = "builtin",
        value_name = "NAME[@W]",
        help_heading = "Options to select what to run"
    )]
    pub builtin: Vec<String>,
    /// Add script FILENAME weighted at W (default 1)
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILENAME[@W]",
        help_heading = "Options to select what to run"
    )]
    pub file: Vec<String>,
    /// Skip updates of pgbench_tellers and pgbench_branches (same as "-b simple-update")
    // Each occurrence adds a script, so these append (a count would be reset by the
    // last-one-wins rule for repeated options).
    #[arg(
        short = 'N',
        long = "skip-some-updates",
        action = ArgAction::Append,
        num_args = 0,
        default_missing_value = "simple-update",
        help_heading = "Options to select what to run"
    )]
    pub skip_some_updates: Vec<String>,
    /// Perform SELECT-only transactions (same as "-b select-only")
    #[arg(
        short = 'S',
        long = "select-only",
        action = ArgAction::Append,
        num_args = 0,
        default_missing_value = "select-only",
        help_heading = "Options to select what to run"
    )]
    pub select_only: Vec<String>,
    /// Show the text of builtin script NAME and exit
    #[arg(
        long = "show-script",
        value_name = "NAME",
        help_heading = "Options to select what to run"
    )]
    pub show_script: Option<String>,

    // ---- benchmarking
    /// Number of concurrent database clients (default 1)
    #[arg(
        short = 'c',
        long = "client",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub clients: Option<String>,
    /// Establish a new connection for each transaction
    #[arg(short = 'C', long = "connect", help_heading = "Benchmarking options")]
    pub connect: bool,
    /// Define variable for use by custom script
    #[arg(
        short = 'D',
        long = "define",
        value_name = "VARNAME=VALUE",
        help_heading = "Benchmarking options"
    )]
    pub define: Vec<String>,
    /// Number of threads (default 1)
    #[arg(
        short = 'j',
        long = "jobs",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub jobs: Option<String>,
    /// Protocol for submitting queries: simple, extended or prepared (default simple)
    #[arg(
        short = 'M',
        long = "protocol",
        value_name = "MODE",
        help_heading = "Benchmarking options"
    )]
    pub protocol: Option<String>,
    /// Show progress report every NUM seconds
    #[arg(
        short = 'P',
        long = "progress",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub progress: Option<String>,
    /// Seed the random generator: "time", "rand" or an unsigned integer
    #[arg(
        long = "random-seed",
        value_name = "SEED",
        help_heading = "Benchmarking options"
    )]
    pub random_seed: Option<String>,
    /// Number of transactions each client runs (default 10)
    #[arg(
        short = 't',
        long = "transactions",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub transactions: Option<String>,
    /// Duration of benchmark test in seconds
    #[arg(
        short = 'T',
        long = "time",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub time: Option<String>,
    /// Target rate in transactions per second (Poisson schedule; latency from the scheduled start)
    #[arg(
        short = 'R',
        long = "rate",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub rate: Option<String>,
    /// Count transactions lasting more than NUM ms as late; with -R, skip those already late
    #[arg(
        short = 'L',
        long = "latency-limit",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub latency_limit: Option<String>,
    /// Report latencies, failures and retries per command
    #[arg(
        short = 'r',
        long = "report-per-command",
        help_heading = "Benchmarking options"
    )]
    pub report_per_command: bool,
    /// Write transaction times to a log file per thread (pgbench's format)
    #[arg(short = 'l', long = "log", help_heading = "Benchmarking options")]
    pub log: bool,
    /// Prefix for transaction time log files (default "pgbench_log")
    #[arg(
        long = "log-prefix",
        value_name = "PREFIX",
        help_heading = "Benchmarking options"
    )]
    pub log_prefix: Option<String>,
    /// Fraction of transactions to log (e.g. 0.01 for 1%)
    #[arg(
        long = "sampling-rate",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub sampling_rate: Option<String>,
    /// Aggregate the log over NUM seconds
    #[arg(
        long = "aggregate-interval",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub aggregate_interval: Option<String>,
    /// Maximum number of tries per transaction after serialization/deadlock failures (default 1; 0 = unlimited)
    #[arg(
        long = "max-tries",
        value_name = "NUM",
        help_heading = "Benchmarking options"
    )]
    pub max_tries: Option<String>,
    /// Report the failures grouped by basic types
    #[arg(long = "failures-detailed", help_heading = "Benchmarking options")]
    pub failures_detailed: bool,
    /// Print messages of all errors
    #[arg(long = "verbose-errors", help_heading = "Benchmarking options")]
    pub verbose_errors: bool,
    /// Exit at once, with status 2, when any client aborts
    #[arg(long = "exit-on-abort", help_heading = "Benchmarking options")]
    pub exit_on_abort: bool,
    /// Abandon the run (status 2) when a client has waited this long for the server, during
    /// or after -T (default: 60s, or -T when longer; 0 waits forever, as pgbench does)
    #[arg(
        long = "stall-timeout",
        value_name = "DURATION",
        help_heading = "Benchmarking options"
    )]
    pub stall_timeout: Option<String>,
    /// Count SQL errors other than serialization/deadlock as failures instead of aborting
    #[arg(long = "continue-on-error", help_heading = "Benchmarking options")]
    pub continue_on_error: bool,
    /// Use Unix epoch timestamps in progress lines
    #[arg(long = "progress-timestamp", help_heading = "Benchmarking options")]
    pub progress_timestamp: bool,
    /// Vacuum all four standard tables before the run
    #[arg(
        short = 'v',
        long = "vacuum-all",
        help_heading = "Benchmarking options"
    )]
    pub vacuum_all: bool,
    /// Write the full result (summary, percentiles, per-second series) as JSON to FILE
    #[arg(
        long = "json",
        value_name = "FILE",
        help_heading = "Benchmarking options"
    )]
    pub json: Option<String>,

    // ---- connection
    /// Database server host or socket directory
    #[arg(
        short = 'h',
        long = "host",
        value_name = "HOSTNAME",
        help_heading = "Common options"
    )]
    pub host: Option<String>,
    /// Database server port number
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        help_heading = "Common options"
    )]
    pub port: Option<String>,
    /// Connect as specified database user
    #[arg(
        short = 'U',
        long = "username",
        value_name = "USERNAME",
        help_heading = "Common options"
    )]
    pub username: Option<String>,
    /// Database name, libpq URI or key=value connection string (pgbench 17+'s -d)
    // getopt takes the next word as the value whatever it starts with: `-d --x` names the
    // database "--x", as in pgbench.
    #[arg(
        short = 'd',
        long = "dbname",
        allow_hyphen_values = true,
        value_name = "DBNAME",
        help_heading = "Common options"
    )]
    pub dbname: Option<String>,
    /// Database name, libpq URI or key=value connection string (as pgbench's last argument)
    #[arg(value_name = "DBNAME")]
    pub positional_dbname: Option<String>,
    #[command(flatten)]
    pub kube: crate::pods::KubeArgs,
    #[command(flatten)]
    pub metrics: crate::live::endpoint::MetricsArgs,
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
    // -S and -N hold their builtin's name once per occurrence.
    collect("select_only", &ScriptChoice::Builtin);
    collect("skip_some_updates", &ScriptChoice::Builtin);
    ordered.sort_by_key(|(index, _)| *index);
    ordered.into_iter().map(|(_, choice)| choice).collect()
}
