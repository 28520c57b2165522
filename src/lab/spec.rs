//! The lab spec: a TOML file naming targets (servers and their configuration), workloads, and
//! how long and how often to measure. Every error names the file, line and key, and is found
//! before anything starts.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

pub use super::spec_text::{syntax_error, SpecError};
use super::spec_text::{ScaleFile, Source};
use super::targets::table::TargetEntries;
pub use super::targets::TargetSpec;
use super::targets::{TargetSource, TargetTable, KINDS};
use crate::driver::plan::default_stall_timeout;
use crate::driver::Protocol;
use crate::driver::RunLimit;
use crate::family::{self, api::LabWorkloadKind};
pub use crate::server::postgres::provision::BinarySource;
pub use crate::server::profile::Profile;
use stampede_base::duration::parse_duration;
pub use stampede_conn::Engine;
pub use stampede_store::Location;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: Spanned<String>,
    runs: Option<Spanned<toml::Value>>,
    precision: Option<Spanned<String>>,
    max_runs: Option<Spanned<i64>>,
    budget: Option<Spanned<String>>,
    /// What an auto lab decides on: tps, p99 or server_cpu.
    decide_on: Option<Spanned<String>>,
    duration: Spanned<String>,
    warmup: Option<Spanned<String>>,
    stall_timeout: Option<Spanned<String>>,
    results: Option<String>,
    seed: Option<u64>,
    probes: Option<bool>,
    #[serde(rename = "target", default)]
    targets: Vec<TargetFile>,
    #[serde(rename = "workload", default)]
    workloads: Vec<WorkloadFile>,
    /// Where workloads with `pods = N` run their clients.
    kubernetes: Option<Spanned<toml::Value>>,
    #[serde(rename = "claim", default)]
    claims: Vec<super::claims::ClaimFile>,
    /// A target every invocation runs unchanged: history and gate compare the others over it.
    control: Option<Spanned<String>>,
}

/// A `[[target]]`'s keys every kind has; the kind's own are read by the kind (`TargetKeys`).
#[derive(Debug, Deserialize)]
struct TargetFile {
    name: Spanned<String>,
    profile: Option<Spanned<String>>,
    #[serde(default)]
    settings: BTreeMap<String, toml::Value>,
    cpus: Option<Spanned<String>>,
    #[serde(default)]
    dataset_sql: Vec<String>,
}

/// Every key of each `[[target]]` with its place: the spec read a second time, for the kinds.
#[derive(Debug, Deserialize)]
struct TargetKeys {
    #[serde(rename = "target", default)]
    targets: Vec<TargetEntries>,
}

/// The keys of a `[[target]]` every kind takes.
const COMMON_TARGET_KEYS: [&str; 5] = ["name", "profile", "settings", "cpus", "dataset_sql"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: Spanned<String>,
    #[serde(default)]
    scripts: Vec<Spanned<String>>,
    scale: Option<Spanned<Vec<ScaleFile>>>,
    clients: Spanned<Vec<i64>>,
    threads: Option<Spanned<i64>>,
    protocol: Option<Spanned<String>>,
    client_cpus: Option<Spanned<String>>,
    /// Run the clients from this many pods of a Kubernetes Indexed Job (`[kubernetes]`).
    pods: Option<Spanned<i64>>,
    /// The workload's own options (sysbench: tables, rand_type, ...).
    options: Option<Spanned<BTreeMap<Spanned<String>, toml::Value>>>,
}

/// A data size: a fixed pgbench-style scale, or a class relative to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scale {
    Fixed(i64),
    /// Fits in shared_buffers.
    Buffers,
    /// Fits in RAM but not in shared_buffers.
    Ram,
    /// Exceeds RAM.
    Disk,
}

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scale::Fixed(n) => write!(f, "{n}"),
            Scale::Buffers => f.write_str("buffers"),
            Scale::Ram => f.write_str("ram"),
            Scale::Disk => f.write_str("disk"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    pub name: String,
    /// The workload's variants (for pgbench: builtin names or script files).
    pub scripts: Vec<String>,
    pub scales: Vec<Scale>,
    pub clients: Vec<usize>,
    /// Driver threads; default: as many as cores, at most the clients.
    pub threads: Option<usize>,
    /// The spec's protocol, one the workload accepts; None: the workload's default.
    pub protocol: Option<Protocol>,
    pub client_cpus: Option<Vec<usize>>,
    /// The workload's own options, as its family's `create` reads them (checked when the spec
    /// is read).
    pub options: toml::Table,
    /// `@protocol`, when the spec measures this workload under two protocols (two
    /// `[[workload]]`s of one name): its cells' scripts carry it, so both are kept apart.
    pub script_suffix: Option<String>,
    /// `pods = N`: each run's clients come from N pods of a Kubernetes Indexed Job.
    pub pods: Option<usize>,
}

impl WorkloadSpec {
    /// The script as cells, results and reports name it.
    pub fn script_label(&self, script: &str) -> String {
        format!("{script}{}", self.script_suffix.as_deref().unwrap_or(""))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    pub name: String,
    /// Rounds planned: the fixed count, or for `runs = "auto"` the cap (`max_runs`).
    pub runs: u32,
    /// `runs = "auto"`: when a cell stops before the cap.
    pub auto: Option<AutoRuns>,
    pub duration: Duration,
    pub warmup: Duration,
    /// The driver's watchdog: a run whose client waits this long for the server is ended and
    /// recorded as failed; None (`stall_timeout = "0"`) waits forever.
    pub stall_timeout: Option<Duration>,
    pub results: Location,
    /// Where the lab's clusters live: `<results>.servers/` beside a SQLite file, else
    /// `<name>.servers/` beside the spec.
    pub server_root: PathBuf,
    /// Seed of the shuffled cell order; recorded so the order can be reproduced.
    pub seed: Option<u64>,
    /// Server, OS and wait-event probes around each measured window (default on).
    pub probes: bool,
    pub targets: Vec<TargetSpec>,
    pub workloads: Vec<WorkloadSpec>,
    /// The file's text, stored with the results (a results URL's password masked).
    pub text: String,
    /// `lab run --tag key=value`: names this invocation in the spec's history.
    pub tags: Vec<(String, String)>,
    /// `[kubernetes]`: where the workloads with `pods = N` run their clients.
    pub kubernetes: crate::pods::KubeArgs,
    /// `[[claim]]`: what the study expects, checked against the results.
    pub claims: Vec<super::claims::SpecClaim>,
    /// `control = "target"`: history and gate compare the other targets over it.
    pub control: Option<String>,
}

/// `runs = "auto"`: every undecided cell runs once more per round, and stops when the ratio of
/// each target to the first is known to `precision`, at `runs` rounds, or when the lab has
/// measured for `budget`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoRuns {
    /// Relative half-width of the 95% interval (0.03 for ±3%).
    pub precision: f64,
    pub budget: Option<Duration>,
    /// `decide_on`: the number each round's judgement reads (tps by default).
    pub metric: super::round_metric::RoundMetric,
}

pub const DEFAULT_RUNS: u32 = 3;
pub const DEFAULT_PRECISION: f64 = 0.03;
pub const DEFAULT_MAX_RUNS: u32 = 15;

pub fn load(path: &Path) -> Result<LabSpec, SpecError> {
    load_as(path, Scripts::Checked)
}

/// As `load`, its scripts checked or not (`lab clean` needs the spec's names and folders, not
/// scripts that may be gone).
pub fn load_as(path: &Path, scripts: Scripts) -> Result<LabSpec, SpecError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SpecError(format!("could not read {}: {e}", path.display())))?;
    parse_as(path, &text, scripts)
}

/// The spec with one workload implementation per `[[workload]]`, its options checked; a
/// workload without `scripts` gets its default variants.
pub fn with_workloads(
    mut spec: LabSpec,
) -> Result<(LabSpec, Vec<Box<dyn crate::family::api::LabWorkload>>), stampede_base::error::Failure>
{
    let workloads = spec
        .workloads
        .iter()
        .map(|w| {
            let kind = family::lab_workload(&w.name).expect("the spec admits only known workloads");
            (kind.create)(&w.options).map_err(|e| stampede_base::error::Failure::input(e.message))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (workload, implementation) in spec.workloads.iter_mut().zip(&workloads) {
        if workload.scripts.is_empty() {
            workload.scripts = implementation.default_variants();
        }
    }
    let cells: Vec<super::claims::WorkloadCells> = spec
        .workloads
        .iter()
        .zip(&workloads)
        .map(|(w, implementation)| super::claims::WorkloadCells {
            name: w.name.clone(),
            scripts: w
                .scripts
                .iter()
                .map(|variant| (w.script_label(variant), implementation.group(variant)))
                .collect(),
            scales: w.scales.iter().map(Scale::to_string).collect(),
            clients: w.clients.clone(),
        })
        .collect();
    super::claims::check_cells(&mut spec.claims, &cells)
        .map_err(|e| stampede_base::error::Failure::input(e.0))?;
    Ok((spec, workloads))
}

/// Whether a spec's scripts are checked by their workloads as it is read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scripts {
    /// As `lab plan` and `lab run` read a spec: each must be one its workload has.
    Checked,
    /// Taken as named: the executor's unit tests, whose fake workload has its own.
    Unchecked,
}

pub fn parse(path: &Path, text: &str) -> Result<LabSpec, SpecError> {
    parse_as(path, text, Scripts::Checked)
}

pub fn parse_as(path: &Path, text: &str, scripts: Scripts) -> Result<LabSpec, SpecError> {
    let source = Source::new(path, text);
    let file: SpecFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        source.error(offset, e.message().trim())
    })?;
    let (runs, auto) = run_count(&source, &file)?;
    let duration = parse_duration(file.duration.get_ref())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            source.at(
                &file.duration,
                format!(
                    "duration: \"{}\" is not a duration (e.g. \"60s\", \"5m\", \"1h\")",
                    file.duration.get_ref()
                ),
            )
        })?;
    let warmup = match &file.warmup {
        Some(w) => parse_duration(w.get_ref()).ok_or_else(|| {
            source.at(
                w,
                format!(
                    "warmup: \"{}\" is not a duration (e.g. \"10s\")",
                    w.get_ref()
                ),
            )
        })?,
        None => Duration::ZERO,
    };
    let stall_timeout = match &file.stall_timeout {
        Some(given) => match parse_duration(given.get_ref()) {
            Some(zero) if zero.is_zero() => None,
            Some(timeout) => Some(timeout),
            None => {
                return Err(source.at(
                    given,
                    format!(
                    "stall_timeout: \"{}\" is not a duration (e.g. \"2m\"; \"0\" waits forever)",
                    given.get_ref()
                ),
                ))
            }
        },
        None => Some(default_stall_timeout(&RunLimit::Duration(duration))),
    };
    let name = file.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(source.at(&file.name, "name: must not be empty"));
    }
    // Files the spec names are relative to it; absolute, because servers run elsewhere.
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let base = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
    let base = base.as_path();
    let results = Location::parse(
        file.results.as_deref().unwrap_or(&format!("{name}.db")),
        base,
    );
    let server_root = match &results {
        Location::Sqlite(path) => PathBuf::from(format!("{}.servers", path.display())),
        Location::Postgres(_) => base.join(format!("{name}.servers")),
    };
    let text = match results.password() {
        Some(password) => text.replace(password, "********"),
        None => text.to_string(),
    };
    let kubernetes = kubernetes(&source, &file)?;
    let targets = targets(&source, &file, base, (&name, &kubernetes))?;
    let text = targets
        .iter()
        .filter_map(|t| t.server.secret())
        .fold(text, |text, secret| text.replace(&secret, "********"));
    let workloads = workloads(&source, &file, base, scripts)?;
    let claims = super::claims::parse(
        &source,
        &file.claims,
        &targets.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        &workloads
            .iter()
            .map(|w| w.name.as_str())
            .collect::<Vec<_>>(),
        &without_server_cpu(&targets),
    )?;
    check_decided_metric(&source, &file, auto.as_ref(), &targets)?;
    let control = control(&source, &file, &targets)?;
    check_spread_engines(&source, &file, &targets)?;
    check_password_secret(&source, &file, &kubernetes, &targets)?;
    check_engines(&source, &file, &targets, &workloads)?;
    Ok(LabSpec {
        name,
        runs,
        auto,
        duration,
        warmup,
        stall_timeout,
        results,
        server_root,
        seed: file.seed,
        probes: file.probes.unwrap_or(true),
        targets,
        workloads,
        text,
        tags: Vec::new(),
        kubernetes,
        claims,
        control,
    })
}

/// `control`: one of the targets, and not the only one.
fn control(
    source: &Source<'_>,
    file: &SpecFile,
    targets: &[TargetSpec],
) -> Result<Option<String>, SpecError> {
    let Some(control) = &file.control else {
        return Ok(None);
    };
    let name = control.get_ref();
    if !targets.iter().any(|t| &t.name == name) {
        let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        return Err(source.at(
            control,
            format!(
                "control: unknown target \"{name}\"; the spec's targets are {}",
                names.join(", ")
            ),
        ));
    }
    if targets.len() < 2 {
        return Err(source.at(
            control,
            "control: a control needs another target to compare over it",
        ));
    }
    Ok(Some(name.clone()))
}

/// The `control` of a spec as the results store it (None without one, or for a text that is
/// not a spec).
pub fn stored_control(text: &str) -> Option<String> {
    let table: toml::Table = text.parse().ok()?;
    table.get("control")?.as_str().map(str::to_string)
}

/// The `warmup` of a spec as the results store it (zero without one, None for a text that is
/// not a spec or a warmup that is not a duration).
pub fn stored_warmup(text: &str) -> Option<Duration> {
    let table: toml::Table = text.parse().ok()?;
    match table.get("warmup") {
        Some(warmup) => parse_duration(warmup.as_str()?),
        None => Some(Duration::ZERO),
    }
}

/// The targets whose server CPU no run can measure.
fn without_server_cpu(targets: &[TargetSpec]) -> Vec<&str> {
    targets
        .iter()
        .filter(|t| !t.server.measures_server_cpu())
        .map(|t| t.name.as_str())
        .collect()
}

/// `decide_on = "server_cpu"` needs every target's server CPU.
fn check_decided_metric(
    source: &Source<'_>,
    file: &SpecFile,
    auto: Option<&AutoRuns>,
    targets: &[TargetSpec],
) -> Result<(), SpecError> {
    let (Some(auto), Some(decide_on)) = (auto, &file.decide_on) else {
        return Ok(());
    };
    match without_server_cpu(targets).first() {
        Some(name) if auto.metric == super::round_metric::RoundMetric::ServerCpu => Err(source.at(
            decide_on,
            format!(
                "decide_on = \"server_cpu\": target \"{name}\" has no source of server CPU (its server is not on this machine; name one: metrics = {{ prometheus = \"http://…\", instance = \"…\" }})"
            ),
        )),
        _ => Ok(()),
    }
}

/// `pods = N` runs against PostgreSQL targets: the lab gives the pods a password of its own
/// making for its servers, which it does for PostgreSQL (a server reached by URL: the pods
/// connect where the URL does, with the password from `[kubernetes] password_secret`).
fn check_spread_engines(
    source: &Source<'_>,
    file: &SpecFile,
    targets: &[TargetSpec],
) -> Result<(), SpecError> {
    let mariadb = targets.iter().find(|t| t.server.engine() == Engine::Mysql);
    let spread = file.workloads.iter().find_map(|w| w.pods.as_ref());
    match (mariadb, spread) {
        (Some(target), Some(pods)) => Err(source.at(
            pods,
            format!(
                "pods: spread runs go to PostgreSQL targets; target \"{}\" is MariaDB (its \
                 clients run on this machine: leave pods out, or make a lab of its own)",
                target.name
            ),
        )),
        _ => Ok(()),
    }
}

/// `[kubernetes]`: the options `--pods` runs take, by their names with `_`, checked here.
fn kubernetes(source: &Source<'_>, file: &SpecFile) -> Result<crate::pods::KubeArgs, SpecError> {
    let Some(section) = &file.kubernetes else {
        return Ok(Default::default());
    };
    let kube: crate::pods::KubeArgs =
        section
            .get_ref()
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| {
                source.at(section, format!("kubernetes: {}", e.message().trim()))
            })?;
    let checks = [
        kube.start_timeout().map(|_| ()),
        kube.image_pull_policy().map(|_| ()),
        kube.node_selector().map(|_| ()),
        kube.tolerations().map(|_| ()),
        kube.requests().map(|_| ()),
        kube.limits().map(|_| ()),
        kube.labels().map(|_| ()),
        kube.workdir().map(|_| ()),
        kube.password_secret("PGPASSWORD").map(|_| ()),
    ];
    for check in checks {
        check.map_err(|f| source.at(section, format!("kubernetes: {}", f.message())))?;
    }
    Ok(kube)
}

/// `[kubernetes] password_secret` is the password of a server the lab reaches by URL: for its
/// own servers the lab gives the pods one itself (in a Secret of each run's own), and a
/// Cluster's pods read its superuser's Secret.
fn check_password_secret(
    source: &Source<'_>,
    file: &SpecFile,
    kube: &crate::pods::KubeArgs,
    targets: &[TargetSpec],
) -> Result<(), SpecError> {
    let (Some(section), Some(_)) = (&file.kubernetes, &kube.password_secret) else {
        return Ok(());
    };
    if targets.iter().any(|t| t.server.pods_use_password_secret()) {
        return Ok(());
    }
    Err(source.at(
        section,
        "kubernetes: password_secret: the password of a server the lab reaches by URL (none here); \
         the lab gives the pods a password for its own servers itself (in a Secret of each run's own)",
    ))
}

/// `runs`: a count, or "auto" with its precision, cap and budget; those three only with "auto".
fn run_count(source: &Source<'_>, file: &SpecFile) -> Result<(u32, Option<AutoRuns>), SpecError> {
    let auto = match &file.runs {
        None => false,
        Some(runs) => match runs.get_ref() {
            toml::Value::Integer(n) if *n < 1 => {
                return Err(source.at(runs, "runs: must be at least 1"))
            }
            toml::Value::Integer(n) if *n > i64::from(u32::MAX) => {
                return Err(source.at(runs, "runs: too many"))
            }
            toml::Value::Integer(_) => false,
            toml::Value::String(text) if text == "auto" => true,
            other => {
                return Err(source.at(
                    runs,
                    format!("runs: {other} is neither a number of runs nor \"auto\""),
                ))
            }
        },
    };
    if !auto {
        let only_auto = [
            file.precision
                .as_ref()
                .map(|p| (p.span().start, "precision")),
            file.max_runs.as_ref().map(|m| (m.span().start, "max_runs")),
            file.budget.as_ref().map(|b| (b.span().start, "budget")),
            file.decide_on
                .as_ref()
                .map(|d| (d.span().start, "decide_on")),
        ];
        if let Some((offset, key)) = only_auto.into_iter().flatten().min() {
            return Err(source.error(
                offset,
                format!(
                    "{key}: only with runs = \"auto\" (a fixed count runs every cell that often)"
                ),
            ));
        }
        let runs = match file.runs.as_ref().map(Spanned::get_ref) {
            Some(toml::Value::Integer(n)) => *n as u32,
            _ => DEFAULT_RUNS,
        };
        return Ok((runs, None));
    }
    let precision = match &file.precision {
        None => DEFAULT_PRECISION,
        Some(p) => stampede_stats::claim::parse_percent(p.get_ref())
            .filter(|fraction| *fraction > 0.0 && *fraction < 1.0)
            .ok_or_else(|| {
                source.at(
                    p,
                    format!(
                        "precision: \"{}\" is not a percentage above 0% and below 100% (e.g. \"3%\")",
                        p.get_ref()
                    ),
                )
            })?,
    };
    let minimum = stampede_stats::stopping::MIN_ROUNDS as i64;
    let max_runs = match &file.max_runs {
        None => DEFAULT_MAX_RUNS,
        Some(m) if *m.get_ref() < minimum || *m.get_ref() > 10_000 => {
            return Err(source.at(
                m,
                format!("max_runs: must be from {minimum} (the rounds an auto lab takes before it trusts an interval) to 10000"),
            ))
        }
        Some(m) => *m.get_ref() as u32,
    };
    let budget = match &file.budget {
        None => None,
        Some(b) => Some(
            parse_duration(b.get_ref())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    source.at(
                        b,
                        format!(
                            "budget: \"{}\" is not a duration (e.g. \"2h\", \"90m\")",
                            b.get_ref()
                        ),
                    )
                })?,
        ),
    };
    let metric = match &file.decide_on {
        None => super::round_metric::RoundMetric::Tps,
        Some(name) => super::round_metric::RoundMetric::parse(name.get_ref())
            .map_err(|why| source.at(name, format!("decide_on: {why}")))?,
    };
    Ok((
        max_runs,
        Some(AutoRuns {
            precision,
            budget,
            metric,
        }),
    ))
}

/// The lab's name and `[kubernetes]` section, which a target's kind may read (a Cluster's name
/// and namespace).
type LabContext<'a> = (&'a str, &'a crate::pods::KubeArgs);

fn targets(
    source: &Source<'_>,
    file: &SpecFile,
    base: &Path,
    lab: LabContext<'_>,
) -> Result<Vec<TargetSpec>, SpecError> {
    if file.targets.is_empty() {
        return Err(source.error(0, "no [[target]]: a lab needs at least one server"));
    }
    let keys: TargetKeys = toml::from_str(source.text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        source.error(offset, e.message().trim())
    })?;
    let mut seen = Vec::new();
    let mut targets = Vec::new();
    let mut earlier: Vec<(&str, &TargetEntries)> = Vec::new();
    for (target, entries) in file.targets.iter().zip(&keys.targets) {
        let name = target.name.get_ref().clone();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(source.at(
                &target.name,
                format!("target name \"{name}\": use letters, digits, '-', '_' or '.'"),
            ));
        }
        if seen.contains(&name) {
            return Err(source.at(&target.name, format!("duplicate target name \"{name}\"")));
        }
        seen.push(name.clone());
        targets.push(TargetSpec {
            server: target_source(source, base, (&name, entries), &earlier, lab)?,
            name,
            profile: profile(source, target.profile.as_ref(), base)?,
            settings: settings(source, target)?,
            cpus: cpu_list(source, target.cpus.as_ref(), "cpus")?,
            dataset_sql: target.dataset_sql.clone(),
        });
        earlier.push((target.name.get_ref(), entries));
    }
    Ok(targets)
}

/// The target's server, parsed by the one kind its table names (PostgreSQL from the system
/// when it names none); a key neither common nor the kind's is refused.
fn target_source(
    source: &Source<'_>,
    base: &Path,
    (name, entries): (&str, &TargetEntries),
    earlier: &[(&str, &TargetEntries)],
    (lab, kubernetes): LabContext<'_>,
) -> Result<Arc<dyn TargetSource>, SpecError> {
    // In the order the table gives them, so that an error points at the second.
    let mut named: Vec<_> = entries
        .iter()
        .filter_map(|(key, value)| {
            KINDS
                .iter()
                .find(|kind| kind.key() == key.get_ref())
                .map(|kind| (*kind, value))
        })
        .collect();
    named.sort_by_key(|(_, value)| value.span().start);
    let kind_keys = || {
        KINDS
            .iter()
            .map(|kind| kind.key())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let [(_, _), (_, second), ..] = named.as_slice() {
        let given: Vec<_> = named.iter().map(|(kind, _)| kind.key()).collect();
        return Err(source.at(
            second,
            format!(
                "target \"{name}\": give one of {}, not {}",
                kind_keys(),
                given.join(" and ")
            ),
        ));
    }
    let (kind, value) = match named.first() {
        Some((kind, value)) => (*kind, Some(*value)),
        None => (KINDS[0], None),
    };
    for key in entries.keys() {
        let key_text = key.get_ref().as_str();
        if !COMMON_TARGET_KEYS.contains(&key_text)
            && kind.key() != key_text
            && !kind.own_keys().contains(&key_text)
        {
            let own = match kind.own_keys() {
                [] => String::new(),
                keys => format!("; with {} also {}", kind.key(), keys.join(", ")),
            };
            return Err(source.at(
                key,
                format!(
                    "target \"{name}\": unknown key `{key_text}`; a target takes {} and one of {}{own}",
                    COMMON_TARGET_KEYS.join(", "),
                    kind_keys()
                ),
            ));
        }
    }
    let name_span = entries
        .iter()
        .find(|(key, _)| key.get_ref() == "name")
        .map(|(_, value)| value)
        .expect("a target's name was read");
    let earlier: Vec<(&str, &Spanned<toml::Value>)> = earlier
        .iter()
        .filter_map(|(name, entries)| {
            entries
                .iter()
                .find(|(key, _)| key.get_ref() == kind.key())
                .map(|(_, value)| (*name, value))
        })
        .collect();
    kind.parse(&TargetTable {
        source,
        base,
        lab,
        kubernetes,
        name,
        earlier: &earlier,
        value,
        name_span,
        entries,
    })
}

fn profile(
    source: &Source<'_>,
    value: Option<&Spanned<String>>,
    base: &Path,
) -> Result<Profile, SpecError> {
    match value.map(|v| (v, v.get_ref().as_str())) {
        None | Some((_, "untuned")) => Ok(Profile::Untuned),
        Some((_, "tuned")) => Ok(Profile::Tuned),
        Some((spanned, path)) => {
            let file = base.join(path);
            if file.is_file() {
                Ok(Profile::File(file))
            } else {
                Err(source.at(
                    spanned,
                    format!(
                        "profile: \"{path}\" is neither \"untuned\", \"tuned\" nor a readable file"
                    ),
                ))
            }
        }
    }
}

/// A setting's or option's value as PostgreSQL and sysbench read it (booleans as on/off); None
/// for arrays and tables.
fn value_text(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

fn settings(source: &Source<'_>, target: &TargetFile) -> Result<Vec<(String, String)>, SpecError> {
    target
        .settings
        .iter()
        .map(|(name, value)| {
            let text = value_text(value).ok_or_else(|| {
                source.at(
                    &target.name,
                    format!("settings.{name}: use a string, number or boolean"),
                )
            })?;
            Ok((name.clone(), text))
        })
        .collect()
}

/// "0-3,6" → [0, 1, 2, 3, 6].
fn cpu_list(
    source: &Source<'_>,
    value: Option<&Spanned<String>>,
    key: &str,
) -> Result<Option<Vec<usize>>, SpecError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = || {
        source.at(
            value,
            format!(
                "{key}: \"{}\" is not a CPU list like \"0-3,6\"",
                value.get_ref()
            ),
        )
    };
    let mut cpus = Vec::new();
    for part in value.get_ref().split(',') {
        let part = part.trim();
        let (low, high) = part.split_once('-').unwrap_or((part, part));
        let low: usize = low.trim().parse().map_err(|_| bad())?;
        let high: usize = high.trim().parse().map_err(|_| bad())?;
        if low > high {
            return Err(bad());
        }
        cpus.extend(low..=high);
    }
    Ok(Some(cpus))
}

fn workloads(
    source: &Source<'_>,
    file: &SpecFile,
    base: &Path,
    scripts: Scripts,
) -> Result<Vec<WorkloadSpec>, SpecError> {
    if file.workloads.is_empty() {
        return Err(source.error(0, "no [[workload]]: a lab needs at least one workload"));
    }
    let mut specs = file
        .workloads
        .iter()
        .map(|w| workload(source, w, base, scripts))
        .collect::<Result<Vec<_>, _>>()?;
    mark_protocols(&mut specs);
    check_cells_unique(source, file, &specs)?;
    Ok(specs)
}

/// Gives the scripts of a workload measured under more than one protocol their protocol's
/// name, so that study 003's plain and prepared columns fit in one lab.
fn mark_protocols(specs: &mut [WorkloadSpec]) {
    let effective = |spec: &WorkloadSpec| {
        spec.protocol
            .or_else(|| family::lab_workload(&spec.name).map(|kind| kind.default_protocol))
    };
    let protocols: Vec<Option<Protocol>> = specs.iter().map(effective).collect();
    for index in 0..specs.len() {
        let mixed = specs.iter().zip(&protocols).any(|(other, protocol)| {
            other.name == specs[index].name && *protocol != protocols[index]
        });
        if let (true, Some(protocol)) = (mixed, protocols[index]) {
            specs[index].script_suffix = Some(format!("@{}", protocol.name()));
        }
    }
}

/// Refuses a cell (workload, script, scale, clients) listed twice, within one `[[workload]]` or
/// across two of the same workload: the store keeps one result set per cell and repetition.
fn check_cells_unique(
    source: &Source<'_>,
    file: &SpecFile,
    specs: &[WorkloadSpec],
) -> Result<(), SpecError> {
    // An empty `scripts` means the workload's defaults, which a second empty list repeats.
    const DEFAULTS: &str = "";
    let mut seen: HashMap<(String, String, String, usize), usize> = HashMap::new();
    for (index, (spec, w)) in specs.iter().zip(&file.workloads).enumerate() {
        let scripts: Vec<&str> = if spec.scripts.is_empty() {
            vec![DEFAULTS]
        } else {
            spec.scripts.iter().map(String::as_str).collect()
        };
        for script in scripts {
            for scale in &spec.scales {
                for clients in &spec.clients {
                    let cell = (
                        spec.name.clone(),
                        spec.script_label(script),
                        scale.to_string(),
                        *clients,
                    );
                    let Some(first) = seen.insert(cell, index) else {
                        continue;
                    };
                    let script = match script {
                        DEFAULTS => "its default scripts".to_string(),
                        named => format!("script \"{named}\""),
                    };
                    let place = if first == index {
                        "twice in this [[workload]]".to_string()
                    } else {
                        let line = source.line_of(file.workloads[first].name.span().start);
                        format!("already in the [[workload]] at line {line}")
                    };
                    return Err(source.at(
                        &w.name,
                        format!(
                            "workload \"{}\": {script}, scale {scale}, {clients} clients is {place}; a cell is measured once per repetition (raise `runs` for more)",
                            spec.name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A workload's `options = { ... }`, checked by the family it names: an error points at the
/// option it is about, or at the table.
/// The workload's `options = { … }`, its files resolved from the spec's folder, and the
/// workload its family makes of them (which refuses unknown or bad options at their key).
fn workload_options(
    source: &Source<'_>,
    w: &WorkloadFile,
    kind: &LabWorkloadKind,
    base: &Path,
) -> Result<(toml::Table, Box<dyn family::api::LabWorkload>), SpecError> {
    let empty = BTreeMap::new();
    let given = w
        .options
        .as_ref()
        .map_or(&empty, |spanned| spanned.get_ref());
    let options: toml::Table = given
        .iter()
        .map(|(name, value)| {
            let value = match value {
                toml::Value::String(path)
                    if kind.files.options.contains(&name.get_ref().as_str()) =>
                {
                    toml::Value::String(in_spec_folder(base, path))
                }
                other => other.clone(),
            };
            (name.get_ref().clone(), value)
        })
        .collect();
    match (kind.create)(&options) {
        Ok(workload) => Ok((options, workload)),
        Err(error) => {
            let key = error
                .key
                .as_deref()
                .and_then(|key| given.keys().find(|k| k.get_ref() == key));
            Err(match (key, &w.options) {
                (Some(key), _) => source.at(key, error),
                (None, Some(spanned)) => source.at(spanned, error),
                (None, None) => source.at(&w.name, error),
            })
        }
    }
}

/// A file the spec names, from the spec's folder (an absolute path as it is).
fn in_spec_folder(base: &Path, path: &str) -> String {
    base.join(path).display().to_string()
}

fn workload(
    source: &Source<'_>,
    w: &WorkloadFile,
    base: &Path,
    check: Scripts,
) -> Result<WorkloadSpec, SpecError> {
    let name = w.name.get_ref().clone();
    let Some(kind) = family::lab_workload(&name) else {
        let known: Vec<String> = family::lab_workloads()
            .map(|kind| format!("\"{}\"", kind.name))
            .collect();
        return Err(source.at(
            &w.name,
            format!(
                "workload \"{name}\": known workloads are {}",
                known.join(", ")
            ),
        ));
    };
    let clients = w.clients.get_ref();
    if clients.is_empty() || clients.iter().any(|c| *c < 1) {
        return Err(source.at(&w.clients, "clients: every client count must be at least 1"));
    }
    if kind.clients_are_its_own && clients.as_slice() != [1] {
        return Err(source.at(
            &w.clients,
            format!("clients: workload \"{name}\" brings its own clients (the captured sessions): give clients = [1]"),
        ));
    }
    let scales = match &w.scale {
        None => vec![Scale::Fixed(1)],
        Some(list) => list
            .get_ref()
            .iter()
            .map(|s| match s {
                ScaleFile::Number(n) if *n >= 1 => Ok(Scale::Fixed(*n)),
                ScaleFile::Class(c) if c == "buffers" => Ok(Scale::Buffers),
                ScaleFile::Class(c) if c == "ram" => Ok(Scale::Ram),
                ScaleFile::Class(c) if c == "disk" => Ok(Scale::Disk),
                _ => Err(source.at(
                    list,
                    "scale: use numbers of at least 1 or \"buffers\", \"ram\", \"disk\"",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if !kind.scale_classes && scales.iter().any(|s| !matches!(s, Scale::Fixed(_))) {
        return Err(source.at(
            w.scale.as_ref().expect("a class came from the spec"),
            format!("scale: workload \"{name}\" takes numbers only: its load is not the data its scale measures"),
        ));
    }
    let threads = match &w.threads {
        Some(t) if *t.get_ref() < 1 => return Err(source.at(t, "threads: must be at least 1")),
        Some(t) => Some(*t.get_ref() as usize),
        None => None,
    };
    let protocol = protocol(source, w.protocol.as_ref(), kind)?;
    let pods = spread_pods(source, w, kind)?;
    let (options, workload) = workload_options(source, w, kind, base)?;
    // Without `scripts`, the workload's default variants are filled in by whoever builds it.
    // Each is checked here, as a run would check it: `lab plan` refuses what `lab run` would.
    let mut scripts = Vec::new();
    for script in &w.scripts {
        let named = script.get_ref();
        let resolved = if kind.files.script_is_file(named) {
            in_spec_folder(base, named)
        } else {
            named.clone()
        };
        if check == Scripts::Checked {
            workload
                .check_variant(&resolved)
                .map_err(|e| source.at(script, e.message()))?;
        }
        scripts.push(resolved);
    }
    Ok(WorkloadSpec {
        name,
        scripts,
        scales,
        clients: clients.iter().map(|c| *c as usize).collect(),
        threads,
        protocol,
        client_cpus: cpu_list(source, w.client_cpus.as_ref(), "client_cpus")?,
        options,
        script_suffix: None,
        pods,
    })
}

/// `pods = N`: at least one, no more than the fewest clients (or threads) the workload runs,
/// and a workload whose numbers all come from its clients.
fn spread_pods(
    source: &Source<'_>,
    w: &WorkloadFile,
    kind: &family::api::LabWorkloadKind,
) -> Result<Option<usize>, SpecError> {
    let Some(given) = &w.pods else {
        return Ok(None);
    };
    let pods = *given.get_ref();
    let fewest = w.clients.get_ref().iter().copied().min().unwrap_or(1);
    let threads = w.threads.as_ref().map_or(i64::MAX, |t| *t.get_ref());
    let refusal = if pods < 1 {
        Some("pods: must be at least 1".to_string())
    } else if pods > fewest.min(threads) {
        Some(format!(
            "pods: {pods} pods need at least {pods} clients and threads in every cell"
        ))
    } else if kind.metrics.iter().any(|metric| metric.from_server) {
        Some(format!(
            "pods: workload \"{}\" reads its own numbers from the server over the window; \
             spread one run with `stampede {} run --pods N` instead",
            kind.name, kind.name
        ))
    } else if w.client_cpus.is_some() {
        Some("pods: client_cpus pins this machine's CPUs; the pods' are Kubernetes' (requests, limits)".into())
    } else {
        None
    };
    match refusal {
        Some(message) => Err(source.at(given, message)),
        None => Ok(Some(pods as usize)),
    }
}

/// The spec's protocol, if the workload honours it.
fn protocol(
    source: &Source<'_>,
    value: Option<&Spanned<String>>,
    kind: &LabWorkloadKind,
) -> Result<Option<Protocol>, SpecError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Some(protocol) = Protocol::from_name(value.get_ref()) else {
        return Err(source.at(
            value,
            "protocol: use \"simple\", \"extended\" or \"prepared\"",
        ));
    };
    if !kind.protocols.contains(&protocol) {
        let accepted: Vec<String> = kind
            .protocols
            .iter()
            .map(|p| format!("\"{}\"", p.name()))
            .collect();
        return Err(source.at(
            value,
            format!(
                "protocol: workload \"{}\" runs only with {}, not \"{}\"; set that or leave protocol out",
                kind.name,
                accepted.join(" or "),
                protocol.name()
            ),
        ));
    }
    Ok(Some(protocol))
}

/// Refuses a workload on a target whose engine it cannot run on, and PostgreSQL's extended
/// protocol on MariaDB/MySQL: every workload runs on every target.
fn check_engines(
    source: &Source<'_>,
    file: &SpecFile,
    targets: &[TargetSpec],
    workloads: &[WorkloadSpec],
) -> Result<(), SpecError> {
    for (spec, w) in workloads.iter().zip(&file.workloads) {
        let Some(kind) = family::lab_workload(&spec.name) else {
            continue;
        };
        for target in targets {
            let engine = target.server.engine();
            if !kind.engines.contains(&engine) {
                let runs_on: Vec<&str> = kind.engines.iter().map(|e| e.name()).collect();
                return Err(source.at(
                    &w.name,
                    format!(
                        "workload \"{}\" runs on {} only, and target \"{}\" is {}: every workload runs on every target, so put them in labs of their own",
                        spec.name,
                        runs_on.join(" and "),
                        target.name,
                        engine.name()
                    ),
                ));
            }
            let protocol = spec.protocol.unwrap_or(kind.default_protocol);
            if let Ok(workload) = (kind.create)(&spec.options) {
                let variants = if spec.scripts.is_empty() {
                    workload.default_variants()
                } else {
                    spec.scripts.clone()
                };
                for variant in &variants {
                    workload
                        .check_engine(engine, variant, protocol)
                        .map_err(|reason| {
                            source.at(
                                &w.name,
                                format!(
                                    "workload \"{}\" on target \"{}\" ({}): {reason}",
                                    spec.name,
                                    target.name,
                                    engine.name()
                                ),
                            )
                        })?;
                }
            }
            if engine == Engine::Mysql && spec.protocol == Some(Protocol::Extended) {
                let at = w.protocol.as_ref().expect("a protocol was given");
                return Err(source.at(
                    at,
                    format!(
                        "protocol: \"extended\" is PostgreSQL's extended query protocol; target \"{}\" is {}: use \"simple\" or \"prepared\"",
                        target.name,
                        engine.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::targets::postgres::ManagedPostgres;

    const GOOD: &str = r#"
name = "t"
runs = 2
duration = "3s"
warmup = "1s"

[[target]]
name = "a"
profile = "tuned"
settings = { shared_buffers = "128MB", fsync = false }
cpus = "0-1"

[[target]]
name = "b"
postgres = "16"

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [1, "buffers"]
clients = [1, 4]
"#;

    fn error(text: &str) -> String {
        parse(Path::new("lab.toml"), text).unwrap_err().0
    }

    #[test]
    fn a_good_spec_parses() {
        let spec = parse(Path::new("dir/lab.toml"), GOOD).unwrap();
        assert_eq!(spec.runs, 2);
        assert_eq!(spec.duration, Duration::from_secs(3));
        let Location::Sqlite(results) = &spec.results else {
            panic!("{:?}", spec.results)
        };
        assert!(results.is_absolute());
        assert!(results.ends_with("dir/t.db"));
        assert_eq!(spec.targets[0].profile, Profile::Tuned);
        assert_eq!(spec.targets[0].cpus, Some(vec![0, 1]));
        assert!(spec.targets[0]
            .settings
            .contains(&("fsync".into(), "off".into())));
        assert_eq!(
            format!("{:?}", spec.targets[1].server),
            format!("{:?}", ManagedPostgres(BinarySource::Version("16".into())))
        );
        assert_eq!(
            spec.workloads[0].scales,
            vec![Scale::Fixed(1), Scale::Buffers]
        );
    }

    #[test]
    fn auto_runs_take_precision_cap_and_budget() {
        let spec = parse(
            Path::new("lab.toml"),
            &GOOD.replace("runs = 2", "runs = \"auto\""),
        )
        .unwrap();
        assert_eq!(spec.runs, DEFAULT_MAX_RUNS);
        assert_eq!(
            spec.auto,
            Some(AutoRuns {
                precision: DEFAULT_PRECISION,
                budget: None,
                metric: super::super::round_metric::RoundMetric::Tps,
            })
        );
        let text = GOOD.replace(
            "runs = 2",
            "runs = \"auto\"\nprecision = \"2.5%\"\nmax_runs = 20\nbudget = \"2h\"\ndecide_on = \"server_cpu\"",
        );
        let spec = parse(Path::new("lab.toml"), &text).unwrap();
        assert_eq!(spec.runs, 20);
        assert_eq!(
            spec.auto,
            Some(AutoRuns {
                precision: 0.025,
                budget: Some(Duration::from_secs(7200)),
                metric: super::super::round_metric::RoundMetric::ServerCpu,
            })
        );
        assert_eq!(spec_of_fixed().auto, None);
    }

    fn spec_of_fixed() -> LabSpec {
        parse(Path::new("lab.toml"), GOOD).unwrap()
    }

    #[test]
    fn the_stall_timeout_defaults_to_a_minute_or_the_run_and_zero_turns_it_off() {
        assert_eq!(spec_of_fixed().stall_timeout, Some(Duration::from_secs(60)));
        let long = GOOD.replace("duration = \"3s\"", "duration = \"5m\"");
        let spec = parse(Path::new("lab.toml"), &long).unwrap();
        assert_eq!(spec.stall_timeout, Some(Duration::from_secs(300)));
        let given =
            |value: &str| GOOD.replace("runs = 2", &format!("runs = 2\nstall_timeout = {value}"));
        let spec = parse(Path::new("lab.toml"), &given("\"90s\"")).unwrap();
        assert_eq!(spec.stall_timeout, Some(Duration::from_secs(90)));
        let spec = parse(Path::new("lab.toml"), &given("\"0\"")).unwrap();
        assert_eq!(spec.stall_timeout, None);
        assert_eq!(
            error(&given("\"soon\"")),
            "lab.toml:4:17: stall_timeout: \"soon\" is not a duration (e.g. \"2m\"; \"0\" waits forever)"
        );
    }

    #[test]
    fn bad_auto_runs_are_refused_with_their_key() {
        let auto = |extra: &str| GOOD.replace("runs = 2", &format!("runs = \"auto\"\n{extra}"));
        assert_eq!(
            error(&GOOD.replace("runs = 2", "runs = \"sometimes\"")),
            "lab.toml:3:8: runs: \"sometimes\" is neither a number of runs nor \"auto\""
        );
        assert_eq!(
            error(&auto("precision = \"0%\"")),
            "lab.toml:4:13: precision: \"0%\" is not a percentage above 0% and below 100% (e.g. \"3%\")"
        );
        assert_eq!(
            error(&auto("precision = \"-2%\"")),
            "lab.toml:4:13: precision: \"-2%\" is not a percentage above 0% and below 100% (e.g. \"3%\")"
        );
        assert_eq!(
            error(&auto("max_runs = 1")),
            "lab.toml:4:12: max_runs: must be from 5 (the rounds an auto lab takes before it trusts an interval) to 10000"
        );
        assert_eq!(
            error(&auto("budget = \"soon\"")),
            "lab.toml:4:10: budget: \"soon\" is not a duration (e.g. \"2h\", \"90m\")"
        );
        assert_eq!(
            error(&GOOD.replace("runs = 2", "runs = 2\nbudget = \"2h\"")),
            "lab.toml:4:10: budget: only with runs = \"auto\" (a fixed count runs every cell that often)"
        );
        assert_eq!(
            error(&GOOD.replace("runs = 2", "precision = \"2%\"")),
            "lab.toml:3:13: precision: only with runs = \"auto\" (a fixed count runs every cell that often)"
        );
    }

    #[test]
    fn errors_name_line_and_key() {
        assert_eq!(
            error(&GOOD.replace("runs = 2", "runs = 2\nrnus = 3")),
            "lab.toml:4:1: unknown field `rnus`, expected one of `name`, `runs`, `precision`, `max_runs`, `budget`, `decide_on`, `duration`, `warmup`, `stall_timeout`, `results`, `seed`, `probes`, `target`, `workload`, `kubernetes`, `claim`, `control`"
        );
        assert_eq!(
            error(&GOOD.replace("\"3s\"", "\"3 parsecs\"")),
            "lab.toml:4:12: duration: \"3 parsecs\" is not a duration (e.g. \"60s\", \"5m\", \"1h\")"
        );
        assert_eq!(
            error(&GOOD.replace("name = \"b\"", "name = \"a\"")),
            "lab.toml:14:8: duplicate target name \"a\""
        );
        assert_eq!(
            error(&GOOD.replace("clients = [1, 4]", "clients = [0, 4]")),
            "lab.toml:21:11: clients: every client count must be at least 1"
        );
        assert_eq!(
            error(&GOOD.replace("\"16\"", "\"9.5\"")),
            "lab.toml:15:12: postgres: unknown version \"9.5\"; use a major (\"16\", \"19\"), an exact version (\"16.4.0\", \"19rc1\"), \"master\", \"system\", a bin/ path, { source = … } or { git = …, ref = … } to build"
        );
        assert_eq!(
            error(&GOOD.replace("runs = 2", "runs = 2\ncontrol = \"c\"")),
            "lab.toml:4:11: control: unknown target \"c\"; the spec's targets are a, b"
        );
        let controlled = GOOD.replace("runs = 2", "runs = 2\ncontrol = \"b\"");
        let spec = parse(Path::new("lab.toml"), &controlled).unwrap();
        assert_eq!(spec.control.as_deref(), Some("b"));
        assert_eq!(stored_control(&controlled).as_deref(), Some("b"));
        assert_eq!(stored_control("not a spec"), None);
    }

    #[test]
    fn pods_and_the_kubernetes_section_are_checked_at_their_keys() {
        let spread = GOOD.replace("clients = [1, 4]", "clients = [2, 4]\npods = 2")
            + "\n[kubernetes]\nnamespace = \"bench\"\nhost_network = true\n";
        let spec = parse(Path::new("lab.toml"), &spread).unwrap();
        assert_eq!(spec.workloads[0].pods, Some(2));
        assert_eq!(spec.kubernetes.namespace.as_deref(), Some("bench"));
        assert!(spec.kubernetes.host_network);
        assert_eq!(
            error(&spread.replace("pods = 2", "pods = 3")),
            "lab.toml:22:8: pods: 3 pods need at least 3 clients and threads in every cell"
        );
        assert_eq!(
            error(&(spread.clone() + "colour = \"blue\"\n")),
            "lab.toml:24:1: kubernetes: unknown field `colour`, expected one of `image`, \
             `image_pull_policy`, `namespace`, `kubeconfig`, `context`, `node_selector`, \
             `one_pod_per_node`, `affinity`, `tolerations`, `requests`, `limits`, \
             `service_account`, `labels`, `host_network`, `password_secret`, `pod_workdir`, \
             `coordinator_address`, `coordinator_port`, `pod_start_timeout`, `server_address`, \
             `results_secret`, `shared_nodes`"
        );
        assert_eq!(
            error(&(spread.clone() + "password_secret = \"pg\"\n")),
            "lab.toml:24:1: kubernetes: password_secret: the password of a server the lab \
             reaches by URL (none here); the lab gives the pods a password for its own servers \
             itself (in a Secret of each run's own)"
        );
        let tpcc = "\n[[workload]]\nname = \"tpcc\"\nclients = [2]\npods = 2\n";
        assert_eq!(
            error(&format!("{GOOD}{tpcc}")),
            "lab.toml:26:8: pods: workload \"tpcc\" reads its own numbers from the server over \
             the window; spread one run with `stampede tpcc run --pods N` instead"
        );
    }

    #[test]
    fn a_url_target_is_read_by_its_kind_and_refused_where_it_cannot_go() {
        let spec = |target: &str, workload: &str| {
            format!(
                "name = \"u\"\nduration = \"1s\"\n[[target]]\nname = \"a\"\n{target}\n[[workload]]\nname = \"pgbench\"\nclients = [2]\n{workload}"
            )
        };
        let path = Path::new("/x/lab.toml");
        let read = parse(
            path,
            &spec("url = \"postgresql://u:secret@db.example:5432/app\"", ""),
        )
        .unwrap();
        assert_eq!(
            read.targets[0].server.spec_text(),
            "postgresql://u:********@db.example:5432/app"
        );
        assert!(!read.targets[0].server.is_managed());
        assert!(!read.text.contains("secret") && read.text.contains("u:********@db.example"));
        let error =
            |target: &str, workload: &str| parse(path, &spec(target, workload)).unwrap_err().0;
        // Its runs may come from pods, which connect where the URL does.
        assert!(parse(path, &spec("url = \"postgresql://db\"", "pods = 2")).is_ok());
        assert_eq!(
            error("url = \"mysql://db\"", "pods = 2"),
            "/x/lab.toml:9:8: pods: spread runs go to PostgreSQL targets; target \"a\" is MariaDB (its clients run on this machine: leave pods out, or make a lab of its own)"
        );
        assert_eq!(
            error("url = \"postgresql://db\"\npostgres = \"16\"", ""),
            "/x/lab.toml:6:12: target \"a\": give one of postgres, mariadb, url, cloudnativepg, not url and postgres"
        );
        assert_eq!(
            error("url = \"postgresql://db\"\nmetrix = 1", ""),
            "/x/lab.toml:6:1: target \"a\": unknown key `metrix`; a target takes name, profile, settings, cpus, dataset_sql and one of postgres, mariadb, url, cloudnativepg; with url also metrics"
        );
    }

    #[test]
    fn a_url_targets_metrics_source_is_read_and_its_mistakes_refused() {
        let spec = |metrics: &str| {
            format!(
                "name = \"u\"\nduration = \"1s\"\n[[target]]\nname = \"a\"\nurl = \"postgresql://db\"\n{metrics}\n[[workload]]\nname = \"pgbench\"\nclients = [2]\n"
            )
        };
        let path = Path::new("/x/lab.toml");
        let read = parse(path, &spec("")).unwrap();
        assert!(!read.targets[0].server.measures_server_cpu());
        let read = parse(
            path,
            &spec("metrics = { prometheus = \"http://prom:9090/\", instance = \"db:9100\" }"),
        )
        .unwrap();
        assert!(read.targets[0].server.measures_server_cpu());
        let error = |metrics: &str| parse(path, &spec(metrics)).unwrap_err().0;
        let form = "metrics: give { prometheus = \"http://host:9090\", instance = \"node_exporter's instance label\" }";
        assert_eq!(
            error("metrics = \"http://prom:9090\""),
            format!("/x/lab.toml:6:11: {form}")
        );
        assert_eq!(
            error("metrics = { prometheus = \"http://prom:9090\" }"),
            format!("/x/lab.toml:6:11: {form}")
        );
        assert_eq!(
            error("metrics = { prometheus = \"prom:9090\", instance = \"db:9100\" }"),
            "/x/lab.toml:6:11: metrics.prometheus \"prom:9090\": give Prometheus's http:// or https:// address"
        );
        assert_eq!(
            error("metrics = { prometheus = \"http://u:pw@prom:9090\", instance = \"db:9100\" }"),
            "/x/lab.toml:6:11: metrics.prometheus: credentials in the address would be stored with the spec; stampede reads Prometheus's query API without them"
        );
        assert_eq!(
            error("metrics = { prometheus = \"http://prom:9090\", instance = \"db:9100\", job = \"node\" }"),
            "/x/lab.toml:6:11: metrics: unknown key `job`; it takes prometheus and instance"
        );
    }

    #[test]
    fn a_cell_listed_twice_is_refused_at_the_second_listing() {
        let second = "\n[[workload]]\nname = \"pgbench\"\nscripts = [\"tpcb-like\"]\nscale = [1]\nclients = [4, 8]\n";
        assert_eq!(
            error(&format!("{GOOD}{second}")),
            "lab.toml:24:8: workload \"pgbench\": script \"tpcb-like\", scale 1, 4 clients is already in the [[workload]] at line 18; a cell is measured once per repetition (raise `runs` for more)"
        );
        assert_eq!(
            error(&GOOD.replace("clients = [1, 4]", "clients = [1, 4, 1]")),
            "lab.toml:18:8: workload \"pgbench\": script \"select-only\", scale 1, 1 clients is twice in this [[workload]]; a cell is measured once per repetition (raise `runs` for more)"
        );
        let defaults = "\n[[workload]]\nname = \"tpcc\"\nclients = [1]\n";
        assert_eq!(
            error(&format!("{GOOD}{defaults}{defaults}")),
            "lab.toml:28:8: workload \"tpcc\": its default scripts, scale 1, 1 clients is already in the [[workload]] at line 24; a cell is measured once per repetition (raise `runs` for more)"
        );
        // The same workload at other client counts, or another workload, is no repetition.
        let other_clients = second.replace("[4, 8]", "[8, 16]");
        assert!(parse(Path::new("lab.toml"), &format!("{GOOD}{other_clients}")).is_ok());
    }

    #[test]
    fn a_build_from_source_is_checked_at_its_key() {
        let dir = std::env::temp_dir().join(format!("stampede-spec-build-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pg.tar.bz2"), "").unwrap();
        let with =
            |postgres: &str| GOOD.replace("postgres = \"16\"", &format!("postgres = {postgres}"));
        let spec = parse(
            &dir.join("lab.toml"),
            &with(
                "{ source = \"pg.tar.bz2\", cflags = \"-O2\", configure = [\"--enable-debug\"] }",
            ),
        )
        .unwrap();
        assert_eq!(
            format!("{:?}", spec.targets[1].server),
            format!(
                "{:?}",
                ManagedPostgres(BinarySource::Build(
                    crate::server::postgres::build::BuildRequest {
                        source: dir.join("pg.tar.bz2"),
                        cflags: Some("-O2".into()),
                        configure: vec!["--enable-debug".into()],
                        patches: vec![],
                        origin: None,
                    }
                ))
            )
        );
        let error = |text: &str| parse(&dir.join("lab.toml"), &with(text)).unwrap_err().0;
        assert!(error("{ source = \"pg.tar.bz2\", cflag = \"-O2\" }")
            .ends_with("lab.toml:15:12: postgres: unknown field `cflag`, expected one of `source`, `git`, `ref`, `debian`, `cflags`, `configure`, `patches`"));
        assert!(error("{ git = \"https://example.org/pg.git\", source = \"pg.tar.bz2\" }")
            .ends_with("lab.toml:15:12: postgres: give source (a tarball or directory) or git (a repository and ref), not both"));
        assert!(error("{ ref = \"master\" }")
            .ends_with("lab.toml:15:12: postgres: ref needs git = \"<repository>\""));
        assert!(error("{ debian = \"19\", cflags = \"-O2\" }")
            .ends_with("lab.toml:15:12: postgres: debian = \"…\" takes Debian's build as it is: no source, git, cflags, configure or patches beside it"));
        assert!(error("{ debian = \"nineteen\" }").ends_with(
            "lab.toml:15:12: postgres: debian = \"nineteen\" is not a major or release (\"18\", \"19rc1\")"
        ));
        assert!(
            error("{ source = \"pg.tar.bz2\", patches = [\"none.patch\"] }")
                .contains("postgres: patch \""),
            "{}",
            error("{ source = \"pg.tar.bz2\", patches = [\"none.patch\"] }")
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn workload_options_are_checked_by_their_family_at_their_key() {
        let with = |workload: &str, options: &str| {
            GOOD.replace("name = \"pgbench\"", &format!("name = \"{workload}\""))
                .replace("scripts = [\"select-only\", \"tpcb-like\"]\n", "")
                + &format!("options = {{ {options} }}\n")
        };
        assert_eq!(
            error(&with("dbstress", "rw_ratio = 2, anti_dead = \"maybe\"")),
            "lab.toml:21:27: workload \"dbstress\": options: anti_dead: \"maybe\" is not on or off"
        );
        assert_eq!(
            error(&with("sysbench", "tables = 2, threads = 8")),
            "lab.toml:21:25: workload \"sysbench\": options: unknown option \"threads\"; the options are: postwrite_settle, tables, range_size, point_selects, simple_ranges, sum_ranges, order_ranges, distinct_ranges, index_updates, non_index_updates, delete_inserts, range_selects, auto_inc, skip_trx, secondary, create_secondary, random_points, number_of_ranges, delta, hot_points, covered, on_id, rand_type, rand_spec_iter, rand_spec_pct, rand_spec_res, rand_pareto_h, rand_zipfian_exp"
        );
        assert_eq!(
            error(&with("sysbench", "range_size = \"wide\"")),
            "lab.toml:21:13: workload \"sysbench\": options: range_size: invalid type: string \"wide\", expected i64"
        );
        assert_eq!(
            error(&with("tpcc", "mix = \"hammerdb\", warehouses = 4")),
            "lab.toml:21:31: workload \"tpcc\": options: unknown option \"warehouses\"; the options are: mix, rules, home_warehouses, all_warehouses"
        );
        assert_eq!(
            error(&with("pgbench", "fillfactor = 90")),
            "lab.toml:21:13: workload \"pgbench\": options: unknown option \"fillfactor\"; this workload takes none"
        );
        let spec = parse(
            Path::new("lab.toml"),
            &with("sysbench", "tables = 4, skip_trx = \"on\""),
        )
        .unwrap();
        assert_eq!(spec.workloads[0].options["tables"].as_integer(), Some(4));
    }
}
