//! Command-line definitions. Parsing only: each command's module (`app/`, `family/<name>/`)
//! turns its flags into a spec.

use clap::{Args, Parser, Subcommand};

use crate::family::{dbstress, ibench, pgbench, replay, sysbench, tpcc, tproch};

#[derive(Debug, Parser)]
#[command(
    name = "stampede",
    version,
    about = "A benchmark lab for PostgreSQL and MariaDB/MySQL in one binary",
    long_about = "A benchmark lab for PostgreSQL and MariaDB/MySQL in one binary.\n\nWith no connection options and no PG* environment variables, commands use the managed default server (created on first use)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: TopCommand,
}

#[derive(Debug, Subcommand)]
pub enum TopCommand {
    /// pgbench's options and output, with percentiles, client CPU and JSON
    #[command(
        disable_help_flag = true,
        disable_version_flag = true,
        allow_negative_numbers = true,
        // pgbench lets the last of an option given twice win.
        args_override_self = true,
        long_about = "stampede pgbench is a benchmarking tool for PostgreSQL: pgbench's options, \
            scripts and output, with latency percentiles, client CPU and JSON.",
        after_help = "Report bugs to stampede's issue tracker (pgbench's options are PostgreSQL 18's)."
    )]
    Pgbench(Box<pgbench::args::PgbenchArgs>),
    /// Initialize pgbench on the managed default server and print tps and latency at 1, 4, 16 clients
    Quickstart(QuickstartArgs),
    /// Matrix experiments from a TOML spec: plan, run, resume
    Lab {
        #[command(subcommand)]
        action: LabAction,
    },
    /// Compare two targets of a lab cell by cell: medians, ratio with a 95% interval, verdict
    Compare(CompareArgs),
    /// Every target of a lab against a base: verdicts, statements, work per transaction
    Report(ReportArgs),
    /// The commit that made a change: PostgreSQL built at each step between two refs, every step
    /// decided with the lab's statistics
    Bisect(BisectArgs),
    /// Every invocation of a lab spec as a series per cell, with its change points
    History(HistoryArgs),
    /// A CI gate: one invocation of a lab against another, exit 3 on a decided regression
    Gate(GateArgs),
    /// Results in another tool's format: Bencher's (bmf), Apache Otava's CSV,
    /// github-action-benchmark's JSON, HammerDB's job report, gate's verdicts as JUnit XML
    Export(ExportArgs),
    /// sysbench's oltp_* tests: prepare, run, cleanup, with sysbench's options and report
    Sysbench {
        #[command(subcommand)]
        action: sysbench::subcommands::SysbenchAction,
    },
    /// HammerDB's TPROC-C: build the schema and data, check TPC-C's consistency conditions
    Tpcc {
        #[command(subcommand)]
        action: tpcc::args::TpccAction,
    },
    /// HammerDB's TPROC-H (TPC-H's 22 queries and refresh functions): build with dbgen's data,
    /// run query streams, the power and throughput tests, check
    Tproch {
        #[command(subcommand)]
        action: tproch::args::TprochAction,
    },
    /// dbSTRESS (Dimitri Kravtchuk's benchmark): prepare its tables, run read-only or read+write sessions
    Dbstress {
        #[command(subcommand)]
        action: dbstress::args::DbstressAction,
    },
    /// Mark Callaghan's Insert Benchmark: iibench.py's steps (load, index, inserts with deletes,
    /// queries under a steady write rate), rates second by second
    Ibench {
        #[command(subcommand)]
        action: ibench::args::IbenchAction,
    },
    /// Read PostgreSQL's log (or log a server for a while) into a replay file: sessions,
    /// statements, timing, parameters
    #[command(disable_help_flag = true)]
    Capture(Box<replay::args::CaptureArgs>),
    /// Replay a capture against a server: its sessions as clients, with their timing
    /// (--speed), and how faithful the replay was
    #[command(disable_help_flag = true, allow_negative_numbers = true)]
    Replay(Box<replay::args::ReplayArgs>),
    /// A live page of a lab from its results (a SQLite file or the PostgreSQL results URL a
    /// fleet's shards write), updated as the lab runs; read-only
    Serve(ServeArgs),
    /// Manage the managed default server
    Server {
        #[command(subcommand)]
        action: ServerAction,
    },
    /// Print shell completions for bash, zsh, fish, elvish or powershell
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff; `stampede man | man -l -` to read it), or write every page
    Man {
        /// Write stampede.1 and a page per subcommand (stampede-pgbench.1, …) into this directory
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

/// `lab run --serve [ADDR]` (and `lab resume`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PageArgs {
    /// Serve a live page of the lab while it runs: --serve (127.0.0.1 and a free port, printed)
    /// or --serve=ADDR (HOST:PORT or a port; beyond this machine it needs --serve-token)
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:0"
    )]
    pub serve: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// The lab to show (default: the newest, followed as new invocations start)
    #[arg(long)]
    pub lab: Option<String>,
    /// Where to listen: HOST:PORT, or a port alone (loopback); beyond this machine it needs
    /// --serve-token
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub addr: String,
    #[command(flatten)]
    pub token: crate::live::endpoint::TokenArgs,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// The target compared against
    pub base: String,
    /// The target compared
    pub other: String,
    /// The lab, when the database holds several
    #[arg(long)]
    pub lab: Option<String>,
    /// What to rank by (see `metric_help`)
    #[arg(long, default_value = "tps", help = metric_help())]
    pub metric: String,
    /// Leave a run out of the analysis (repeatable), e.g. one the report's Noise section flags
    #[arg(long = "exclude-run", value_name = "RUN_ID")]
    pub exclude_runs: Vec<i64>,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// The target every other is compared against (default: the lab's first target)
    #[arg(long)]
    pub base: Option<String>,
    /// html (one self-contained file with charts), md (Markdown), csv (one number per row) or json
    /// (default: from the -o file's extension .html, .md, .csv or .json, else md)
    #[arg(long)]
    pub format: Option<String>,
    /// Write to this file instead of standard output
    #[arg(short = 'o', long)]
    pub output: Option<std::path::PathBuf>,
    /// The lab, when the database holds several
    #[arg(long)]
    pub lab: Option<String>,
    /// What to rank by (see `metric_help`)
    #[arg(long, default_value = "tps", help = metric_help())]
    pub metric: String,
    /// A run to chart second by second with its checkpoints (repeatable; default: each target's
    /// median run in the base's cell with the most clients)
    #[arg(long = "series-run", value_name = "RUN_ID")]
    pub series_runs: Vec<i64>,
    /// Leave a run out of the analysis (repeatable), e.g. one the Noise section flags; the
    /// report lists it
    #[arg(long = "exclude-run", value_name = "RUN_ID")]
    pub exclude_runs: Vec<i64>,
}

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// Only this spec's history (its name), when the database holds several
    #[arg(long)]
    pub lab: Option<String>,
    /// The series' metric (see `metric_help`)
    #[arg(long, default_value = "tps", help = metric_help())]
    pub metric: String,
    /// Compare each target over this control target of the same invocation (an unchanged
    /// reference run interleaved with the candidates); default: the spec's `control`; `none`
    /// for the raw values
    #[arg(long, value_name = "TARGET|none")]
    pub control: Option<String>,
    /// Also write a chart per cell, points with their intervals and the changes marked, into
    /// this HTML file
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// The spec's history to gate (default: the one the latest invocation belongs to)
    #[arg(long)]
    pub lab: Option<String>,
    /// The invocation to judge: latest, or a tag (key=value, or a value any tag or lab name has)
    #[arg(long, value_name = "latest|TAG", default_value = "latest")]
    pub lab_run: String,
    /// The reference: previous (the invocation before it on the same machine) or a tag
    #[arg(long, value_name = "previous|TAG", default_value = "previous")]
    pub against: String,
    /// A regression smaller than this is no failure, e.g. 2%
    #[arg(long, value_name = "PERCENT", default_value = "2%")]
    pub threshold: String,
    /// What to gate on (see `metric_help`)
    #[arg(long, default_value = "tps", help = metric_help())]
    pub metric: String,
    /// Compare each target over this control target of the same invocation (an unchanged
    /// reference run interleaved with the candidates); default: the spec's `control`; `none`
    /// for the raw values
    #[arg(long, value_name = "TARGET|none")]
    pub control: Option<String>,
    /// Also write JUnit XML (a test case per cell) into this file (as `--export junit=FILE`)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<std::path::PathBuf>,
    /// Also write FORMAT to PATH (repeatable): junit (the gate's verdicts), bmf, otava,
    /// github-action-benchmark or hammerdb-job-report-v1 (the gated invocation's results; see
    /// `stampede export`)
    #[arg(long = "export", value_name = "FORMAT=PATH")]
    pub exports: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The results database: a SQLite file or a postgresql:// URL
    pub results: String,
    /// bmf (Bencher Metric Format), otava (Apache Otava's CSV of the history),
    /// github-action-benchmark (its custom JSON), hammerdb-job-report-v1 (HammerDB's job
    /// report of each TPROC-C cell; -o DIRECTORY for several) or junit (gate's verdicts)
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// The spec's history (default: the one the latest invocation belongs to)
    #[arg(long)]
    pub lab: Option<String>,
    /// The invocation: latest, or a tag (key=value, or a value any tag or lab name has); for
    /// otava, the history up to it
    #[arg(long, value_name = "latest|TAG", default_value = "latest")]
    pub invocation: String,
    /// A metric to export (repeatable; default: every one the runs have, tps alone for
    /// github-action-benchmark; see `metric_help`)
    #[arg(long = "metric", value_name = "METRIC", help = metric_help())]
    pub metrics: Vec<String>,
    /// Write to this file instead of standard output
    #[arg(short = 'o', long)]
    pub output: Option<std::path::PathBuf>,
    /// junit: the reference, as gate's --against
    #[arg(long, value_name = "previous|TAG", default_value = "previous")]
    pub against: String,
    /// junit: as gate's --threshold
    #[arg(long, value_name = "PERCENT", default_value = "2%")]
    pub threshold: String,
    /// junit: as gate's --control
    #[arg(long, value_name = "TARGET|none")]
    pub control: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct BisectArgs {
    /// A lab spec with one target (the template every commit is built and run with:
    /// postgres = { cflags, configure, patches }, profile, settings) and the one cell to watch
    pub spec: std::path::PathBuf,
    /// The PostgreSQL git checkout (default: the target's postgres.source); it is not touched:
    /// commits are built in a clone that shares its objects
    #[arg(long, value_name = "DIR")]
    pub source: Option<std::path::PathBuf>,
    /// The commit before the change (tag, branch or hash)
    #[arg(long, value_name = "REF")]
    pub good: String,
    /// The commit after the change; --good must be its ancestor
    #[arg(long, value_name = "REF")]
    pub bad: String,
    /// What decides each step: tps, p99 or server_cpu (the server processes' CPU per transaction)
    #[arg(long, default_value = "tps")]
    pub metric: String,
    /// Descend into merges (default: first parents only, a merge is one step)
    #[arg(long)]
    pub all_parents: bool,
    /// Continue an interrupted bisection: decided steps are read from the results, builds from
    /// the cache
    #[arg(long)]
    pub resume: bool,
    /// Where to write the HTML report of the first commit against its parent (default:
    /// <spec>-bisect.html beside the spec)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct QuickstartArgs {
    /// Seconds per measurement
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// pgbench scale factor to initialize
    #[arg(long, default_value_t = 10)]
    pub scale: i64,
}

#[derive(Debug, Subcommand)]
pub enum ServerAction {
    /// Where the managed default server lives and whether it runs
    Status,
    /// Start the managed default server (creating it if needed)
    Start,
    /// Stop the managed default server
    Stop,
    /// Stop the managed default server and delete its data
    Destroy,
    /// PostgreSQL majors reachable and from where (zonky builds on Maven Central, Debian's
    /// archive), what is cached, and the builds from source in the cache
    Versions,
    /// Print the bin/ path of the newest PostgreSQL client programs stampede can get (pg_dump,
    /// pg_restore, psql): the machine's own, else Debian's postgresql-client unpacked into the
    /// cache (zonky's builds hold the server alone)
    ClientPrograms,
    /// Download PostgreSQL (a major such as 15 or 19, or an exact version such as 15.15.0 or
    /// 19rc1) into the cache and print its bin/ path: zonky's build from Maven Central, else the
    /// release from Debian's archive (built from its tarball, or Debian's own build unpacked)
    Download {
        /// A major (its newest release), or an exact version
        version: String,
    },
    /// Build PostgreSQL from a release tarball or a source directory into the cache and print
    /// its bin/ path (a second request for the same source, patches and flags is a cache hit)
    Build {
        /// A release tarball (.tar.gz, .tar.bz2, .tar.xz) or a source directory (a git checkout)
        source: std::path::PathBuf,
        /// CFLAGS for configure, e.g. "-O2 -fno-omit-frame-pointer" (configure's default when absent)
        #[arg(long, allow_hyphen_values = true)]
        cflags: Option<String>,
        /// One configure argument (repeatable, in order), e.g. --configure --enable-debug
        #[arg(long = "configure", allow_hyphen_values = true, value_name = "ARG")]
        configure: Vec<String>,
        /// A patch applied with `patch -p1` before configure (repeatable, in order)
        #[arg(long = "patch", value_name = "FILE")]
        patches: Vec<std::path::PathBuf>,
    },
}

/// `lab run --shards N` and its Kubernetes options (also the spec's `[kubernetes]`).
#[derive(Debug, Args, Clone, Default)]
#[command(mut_arg("pods", |a| a.hide(true)))]
pub struct FleetArgs {
    /// Shard the lab's cells over N pods of a Kubernetes Indexed Job, one machine each (every
    /// target of a cell, and all its rounds, on one pod); the results must be a PostgreSQL URL
    #[arg(long, value_name = "N", help_heading = "Sharded over a fleet")]
    pub shards: Option<usize>,
    /// The Secret holding the results database's password (SECRET or SECRET/KEY, key
    /// "password" by default) [default: a Secret of the Job's own from the results URL's]
    #[arg(
        long,
        value_name = "SECRET[/KEY]",
        help_heading = "Sharded over a fleet"
    )]
    pub results_secret: Option<String>,
    /// Let several shards share a node (one-node clusters, tests: their numbers share its
    /// cores); by default each shard has a node of its own
    #[arg(long, help_heading = "Sharded over a fleet")]
    pub shared_nodes: bool,
    #[command(flatten)]
    pub kube: crate::pods::KubeArgs,
}

#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Show the expanded runs, their order and the estimated duration; runs nothing
    Plan {
        spec: std::path::PathBuf,
        /// Show which shard each run falls to with `lab run --shards N`, and each shard's time
        #[arg(long, value_name = "N")]
        shards: Option<usize>,
        /// Have the API server check each Kubernetes object the lab would create (a
        /// cloudnativepg target's Cluster) as if created, admission webhooks included; a refusal
        /// or an API server out of reach fails the plan
        #[arg(long)]
        dry_run: bool,
    },
    /// Run every cell of the spec, recording each run in the results database
    Run {
        spec: std::path::PathBuf,
        /// When a target cannot be provisioned (download, initdb, start, load), skip its runs
        /// and go on with the other targets instead of stopping
        #[arg(long)]
        keep_going: bool,
        /// Keep the datasets the lab made on servers it reaches by URL when it ends (they are
        /// dropped otherwise; a managed server's stay in its folder)
        #[arg(long)]
        keep_data: bool,
        /// Keep the CloudNativePG Clusters the lab created when it ends (they are deleted with
        /// their volumes otherwise); `lab resume` reuses a kept Cluster whose spec is the same
        #[arg(long)]
        keep_clusters: bool,
        /// Name this invocation in the spec's history, e.g. commit=$(git rev-parse HEAD) or
        /// night=42 (repeatable); `history` and `gate` show and select by them
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
        /// When it ends, also write its results in FORMAT to PATH (repeatable): bmf, otava,
        /// github-action-benchmark, hammerdb-job-report-v1, junit (see `stampede export`)
        #[arg(long = "export", value_name = "FORMAT=PATH")]
        exports: Vec<String>,
        #[command(flatten)]
        fleet: Box<FleetArgs>,
        #[command(flatten)]
        live: crate::live::endpoint::MetricsArgs,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Continue an interrupted lab with its next unfinished run (a sharded lab: re-create the
    /// shards with runs to record)
    Resume {
        spec: std::path::PathBuf,
        /// As for `run`
        #[arg(long)]
        keep_going: bool,
        /// As for `run`
        #[arg(long)]
        keep_data: bool,
        /// As for `run`
        #[arg(long)]
        keep_clusters: bool,
        /// As for `run`
        #[arg(long = "export", value_name = "FORMAT=PATH")]
        exports: Vec<String>,
        #[command(flatten)]
        fleet: Box<FleetArgs>,
        #[command(flatten)]
        live: crate::live::endpoint::MetricsArgs,
        #[command(flatten)]
        page: PageArgs,
    },
    /// One shard's pod of a lab run with --shards (the lab's Job runs it)
    #[command(hide = true)]
    ShardRun {
        #[arg(long)]
        lab_id: i64,
        #[arg(long)]
        shards: usize,
        /// The shards of this Job, by completion index
        #[arg(long, value_delimiter = ',')]
        shard_list: Vec<usize>,
        /// The results database, without its password (that comes from a Secret)
        #[arg(long)]
        results: String,
        #[arg(long)]
        keep_going: bool,
        spec: std::path::PathBuf,
    },
    /// One pod's part of a lab run whose workload says `pods = N` (the lab's Job runs it)
    #[command(hide = true)]
    PodRun { request: std::path::PathBuf },
    /// Remove the lab's clusters (its servers' data directories, `<results>.servers/`), stopping
    /// any still running, and the CloudNativePG Clusters it left; the results database is kept
    #[command(alias = "cleanup")]
    Clean { spec: std::path::PathBuf },
    /// Measure the lab's noise: its base target against an identical twin in paired rounds,
    /// every cell; prints and stores the detectable change and the rounds an auto lab needs
    Calibrate {
        spec: std::path::PathBuf,
        /// Paired rounds per cell (run again with more to extend a stored calibration)
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(3..=1000))]
        rounds: u32,
    },
}

/// `--metric`'s help: tps and p99, then the metrics the workloads declare, from the registry.
fn metric_help() -> String {
    let declared: Vec<String> = crate::family::workload_metrics()
        .iter()
        .map(|metric| {
            let better = match metric.direction {
                stampede_stats::verdict::Direction::HigherIsBetter => "higher",
                stampede_stats::verdict::Direction::LowerIsBetter => "lower",
            };
            format!("{} ({better} is better)", metric.name)
        })
        .collect();
    format!(
        "{}, or a metric a workload reports: {}",
        crate::report::comparison::Metric::run_metrics_help(),
        declared.join(", ")
    )
}
