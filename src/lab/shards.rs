//! A lab larger than one machine: its units (a cell on every target, all its rounds) sharded over
//! the pods of a Kubernetes Indexed Job, one pod per machine, each pod a whole lab machine
//! (`stampede lab shard-run`: managed servers in the pod, the shard's units in the plan's order)
//! writing into the one PostgreSQL results database. The launcher opens the invocation, makes
//! the Job, shows progress from the results database, and ends the lab when every planned run is
//! recorded; a shard whose pod died is re-created by `lab resume`, alone.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stampede_kube::fleet::{FleetEnding, FleetStatus, FleetWatch};
use stampede_kube::manifest::{Manifests, FILES_DIR, WORKDIR};
use stampede_kube::SecretEnv;

use super::executor::{cell_records, open_invocation, Shard};
use super::plan::Plan;
use super::spec::LabSpec;
use crate::family::api::LabWorkload;
use crate::pods::KubeArgs;
use crate::server::profile::Profile;
use stampede_base::error::Failure;
use stampede_store::{Location, Store};

/// The variable the shard pods read the results database's password from (a Secret's key).
pub const RESULTS_PASSWORD_ENV: &str = "STAMPEDE_RESULTS_PASSWORD";
/// The key of the run's own Secret that holds a password the results URL gave.
const RESULTS_PASSWORD_KEY: &str = "results-password";
/// How often the launcher reads the progress from the results database.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// What the user asked of a sharded lab.
pub struct ShardRequest<'a> {
    pub spec: &'a LabSpec,
    /// The spec's file: shipped to the pods with the files it names beside it.
    pub spec_path: &'a Path,
    /// `run --shards N`; None for `resume` (the invocation's own count).
    pub shards: Option<usize>,
    /// The spec's `[kubernetes]` with the command line's options over it.
    pub kube: KubeArgs,
    /// `--keep-going`, for each shard.
    pub keep_going: bool,
}

/// The launcher's progress, for the user's terminal.
pub enum ShardEvent<'a> {
    Note(&'a str),
    /// The invocation is in the results database (its id), before any shard is made.
    Opened(i64),
    Progress(&'a ShardProgress),
}

/// Runs recorded per shard, read from the results database.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardProgress {
    /// Per shard (all of the lab's): runs recorded, runs planned.
    pub shards: Vec<(usize, usize)>,
    /// The shards of this Job whose pod is running.
    pub running: BTreeSet<usize>,
    /// Time left: the slowest shard's, from its rate since the Job started.
    pub eta: Option<Duration>,
}

/// How a sharded lab ended.
pub struct ShardedOutcome {
    pub lab_id: i64,
    pub plan: Plan,
    pub interrupted: bool,
    /// Shards whose pod failed, with the reason.
    pub failed: BTreeMap<usize, String>,
    /// Every planned run is recorded: the lab has ended.
    pub ended: bool,
    pub store: Store,
}

/// Checks everything that can be checked before anything is made or written: the results
/// database, the shard count against the spec's cells, what the pods could not do.
pub fn check(spec: &LabSpec, units: usize, shards: usize) -> Result<(), Failure> {
    if let Some(target) = spec.targets.iter().find(|t| !t.server.is_managed()) {
        return Err(Failure::input(format!(
            "--shards: target \"{}\" is a server the lab reaches ({}), which every shard would load at once; \
             run the lab unsharded, or spread a workload's clients with `pods = N`",
            target.name,
            target.server.spec_text()
        )));
    }
    if let Location::Sqlite(path) = &spec.results {
        return Err(Failure::input(format!(
            "--shards: the results are a SQLite file ({}), which pods on other machines cannot \
             share; give the spec `results = \"postgresql://USER@HOST/DB\"` (a database every \
             shard can reach)",
            path.display()
        )));
    }
    if shards == 0 {
        return Err(Failure::input("--shards must be at least 1"));
    }
    if shards > units {
        return Err(Failure::input(format!(
            "--shards {shards}: the spec has {units} cell(s) (each run on every target together), \
             so at most {units} shard(s) have work; give --shards {units} or fewer"
        )));
    }
    if let Some(workload) = spec.workloads.iter().find(|w| w.pods.is_some()) {
        return Err(Failure::input(format!(
            "--shards: workload \"{}\" spreads its clients over pods (`pods = N`), which a shard \
             (itself a pod) does not launch; shard the lab or spread the workload, not both",
            workload.name
        )));
    }
    if let Some(target) = spec.targets.iter().find(|t| t.server.builds_from_source()) {
        return Err(Failure::input(format!(
            "--shards: target \"{}\" is built from source, which every shard would do again; build \
             it once (`stampede server build`) into the image or a volume and give its bin/ path",
            target.name
        )));
    }
    Ok(())
}

/// The files the pods read: the spec and the files it names, which must lie beside it.
pub fn files(spec: &LabSpec, spec_path: &Path) -> Result<BTreeMap<String, String>, Failure> {
    let dir = std::path::absolute(spec_path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut named: Vec<PathBuf> = spec
        .workloads
        .iter()
        .flat_map(|w| &w.scripts)
        .filter(|s| s.ends_with(".sql"))
        .map(PathBuf::from)
        .collect();
    named.extend(spec.targets.iter().filter_map(|t| match &t.profile {
        Profile::File(path) => Some(path.clone()),
        _ => None,
    }));
    let mut files = BTreeMap::from([(SPEC_FILE.to_string(), spec.text.clone())]);
    for path in named {
        let name = match path.parent() == Some(dir.as_path()) {
            true => path.file_name().and_then(|n| n.to_str()),
            false => None,
        }
        .ok_or_else(|| {
            Failure::input(format!(
                "--shards: {} is not in the spec's folder {}; the pods get the spec's folder's \
                 files only: put it beside the spec",
                path.display(),
                dir.display()
            ))
        })?;
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Failure::input(format!("--shards: could not read {}: {e}", path.display()))
        })?;
        files.insert(name.to_string(), text);
    }
    Ok(files)
}

/// The spec's name in the pods.
const SPEC_FILE: &str = "lab.toml";

/// The invocation a launcher writes into: a `run` opens the next one (its cells, shard count
/// and fleet recorded), a `resume` the spec's latest, which must be sharded.
pub fn open(
    spec: &LabSpec,
    workloads: &[Box<dyn LabWorkload>],
    shards: Option<usize>,
    fleet: &str,
) -> Result<(Store, i64, Plan, usize), Failure> {
    let mut store = Store::open(&spec.results)?;
    let resume = shards.is_none();
    let (lab_id, seed) = open_invocation(&mut store, spec, resume).map_err(Failure::into_input)?;
    let stored_shards = store
        .latest_invocation(&spec.name)?
        .and_then(|lab| lab.shards);
    let shards = match (shards, stored_shards) {
        (Some(n), _) => n,
        (None, Some(n)) => n,
        (None, None) => {
            return Err(Failure::input(format!(
                "lab \"{}\" did not run sharded; continue it with `stampede lab resume` without \
                 Kubernetes",
                spec.name
            )))
        }
    };
    let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
    let plan = Plan::new(spec, seed, &sequential);
    if !resume {
        store.save_cells(lab_id, &cell_records(spec, &plan, workloads))?;
        store.record_planned_rounds(lab_id, plan.rounds())?;
        store.describe_invocation(
            lab_id,
            &spec.name,
            &stampede_store::Machine::this(),
            &spec.tags,
        )?;
        store.record_shards(lab_id, shards, fleet)?;
    }
    Ok((store, lab_id, plan, shards))
}

/// Per shard: (runs recorded, runs planned).
pub fn recorded(
    store: &mut Store,
    lab_id: i64,
    plan: &Plan,
    shards: usize,
) -> Result<Vec<(usize, usize)>, Failure> {
    let finished: HashSet<(String, u32)> = store.finished_runs(lab_id)?;
    let mut counts = vec![(0, 0); shards];
    for run in &plan.runs {
        let shard = run.unit % shards;
        counts[shard].1 += 1;
        if finished.contains(&(plan.cells[run.cell].key.clone(), run.repetition)) {
            counts[shard].0 += 1;
        }
    }
    Ok(counts)
}

/// The fleet a lab's history names: the shard count and the machines' class.
pub fn fleet_name(shards: usize, kube: &KubeArgs) -> String {
    let class = match kube.node_selector.is_empty() {
        true => "any node".to_string(),
        false => kube.node_selector.join(","),
    };
    format!("fleet: {shards} shards on {class}")
}

/// Makes the Job of the shards that have runs to record, follows it with progress from the
/// results database, and ends the lab when every planned run is recorded.
pub fn launch(
    request: &ShardRequest<'_>,
    workloads: &[Box<dyn LabWorkload>],
    stop: Arc<AtomicBool>,
    on_event: &mut dyn FnMut(ShardEvent<'_>),
) -> Result<Option<ShardedOutcome>, Failure> {
    let spec = request.spec;
    let kube = &request.kube;
    let files = files(spec, request.spec_path)?;
    let start_timeout = kube.start_timeout()?;
    if kube.dry_run {
        let shards = request.shards.unwrap_or(1);
        let manifests = manifests(request, 0, shards, &(0..shards).collect::<Vec<_>>(), files)?;
        crate::pods::launch::print_dry_run(crate::pods::launch::connect(kube), &manifests)?;
        return Ok(None);
    }
    // Every option shapes the Job: checked before the invocation is written into the results.
    manifests(request, 0, request.shards.unwrap_or(1), &[0], files.clone())?;
    let cluster = crate::pods::launch::connect(kube)?;
    let fleet = fleet_name(request.shards.unwrap_or(0), kube);
    let (mut store, lab_id, plan, shards) = open(spec, workloads, request.shards, &fleet)?;
    on_event(ShardEvent::Opened(lab_id));
    let before = recorded(&mut store, lab_id, &plan, shards)?;
    let todo: Vec<usize> = (0..shards).filter(|&s| before[s].0 < before[s].1).collect();
    if request.shards.is_none() {
        let note = match todo.is_empty() {
            true => "resuming: every shard's runs are recorded".to_string(),
            false => format!(
                "resuming: shard(s) {} have runs to record; the others are done",
                list(&todo)
            ),
        };
        on_event(ShardEvent::Note(&note));
    }
    let mut failed = BTreeMap::new();
    let mut interrupted = false;
    if !todo.is_empty() {
        let manifests = manifests(request, lab_id, shards, &todo, files)?;
        let name = manifests.job.metadata.name.clone().unwrap_or_default();
        let note = format!(
            "running on Kubernetes: Job {name}, {} shard pod(s) of {shards}, results in {}",
            todo.len(),
            spec.results
        );
        on_event(ShardEvent::Note(&note));
        let started = Instant::now();
        let mut last_read: Option<Instant> = None;
        let mut last_shown: Option<ShardProgress> = None;
        let mut on_tick = |status: &FleetStatus| {
            if last_read.is_some_and(|at| at.elapsed() < PROGRESS_EVERY) {
                return;
            }
            last_read = Some(Instant::now());
            let Ok(now) = recorded(&mut store, lab_id, &plan, shards) else {
                return;
            };
            let progress = ShardProgress {
                running: status.running.iter().map(|i| todo[*i]).collect(),
                eta: eta(&before, &now, started.elapsed()),
                shards: now,
            };
            let changed = last_shown.as_ref().is_none_or(|last| {
                last.shards != progress.shards || last.running != progress.running
            });
            if changed {
                on_event(ShardEvent::Progress(&progress));
                last_shown = Some(progress);
            }
        };
        let watch = FleetWatch {
            stop,
            start_timeout,
            on_tick: &mut on_tick,
        };
        let outcome = cluster
            .run_fleet(manifests, watch)
            .map_err(|e| Failure::run(e.0))?;
        interrupted = outcome.ending == FleetEnding::Interrupted;
        failed = outcome
            .status
            .failed
            .into_iter()
            .map(|(index, reason)| (todo[index], reason))
            .collect();
    }
    let now = recorded(&mut store, lab_id, &plan, shards)?;
    let ended = !interrupted && now.iter().all(|(done, planned)| done >= planned);
    if ended {
        store.end_lab(lab_id)?;
    }
    Ok(Some(ShardedOutcome {
        lab_id,
        plan,
        interrupted,
        failed,
        ended,
        store,
    }))
}

/// The slowest shard's time left at its own rate since the Job started.
fn eta(before: &[(usize, usize)], now: &[(usize, usize)], elapsed: Duration) -> Option<Duration> {
    let mut longest = Duration::ZERO;
    for ((done_before, _), (done, planned)) in before.iter().zip(now) {
        let left = planned.saturating_sub(*done);
        if left == 0 {
            continue;
        }
        let measured = done.saturating_sub(*done_before);
        if measured == 0 {
            return None;
        }
        longest = longest.max(elapsed / measured as u32 * left as u32);
    }
    Some(longest)
}

fn list(shards: &[usize]) -> String {
    shards
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The Job: one pod per shard in `todo` (pod i runs shard `todo[i]`), one per node unless the
/// user shares nodes, each with the node's name, the results' password by reference, and the
/// spec with its files.
fn manifests(
    request: &ShardRequest<'_>,
    lab_id: i64,
    shards: usize,
    todo: &[usize],
    files: BTreeMap<String, String>,
) -> Result<Manifests, Failure> {
    let kube = &request.kube;
    let spec = request.spec;
    let name = crate::pods::launch::job_name(&["lab"]);
    let cluster_namespace = || {
        crate::pods::launch::connect(kube)
            .map(|c| c.default_namespace().to_string())
            .unwrap_or_else(|_| "default".into())
    };
    let namespace = kube.namespace.clone().unwrap_or_else(cluster_namespace);
    // A shard is a machine: one per node unless the user shares nodes.
    let mut shaped = kube.clone();
    shaped.one_pod_per_node |= !kube.shared_nodes;
    let mut args: Vec<String> = vec!["lab".into(), "shard-run".into()];
    args.extend(["--lab-id".into(), lab_id.to_string()]);
    args.extend(["--shards".into(), shards.to_string()]);
    args.extend(["--shard-list".into(), list(todo).replace(' ', "")]);
    args.extend(["--results".into(), spec.results.to_string()]);
    if request.keep_going {
        args.push("--keep-going".into());
    }
    args.push(format!("{FILES_DIR}/{SPEC_FILE}"));
    let mut options = shaped.job_options(&name, &namespace, todo.len(), args)?;
    options.env = vec![
        ("HOME".into(), WORKDIR.into()),
        ("XDG_CACHE_HOME".into(), format!("{WORKDIR}/.cache")),
    ];
    options.files = files;
    options.independent_pods = true;
    options.field_env = vec![(
        stampede_base::sys::NODE_NAME_ENV.to_string(),
        "spec.nodeName".to_string(),
    )];
    match (
        kube.results_secret(RESULTS_PASSWORD_ENV)?,
        spec.results.password(),
    ) {
        (Some(given), _) => options.secret_env.push(given),
        (None, Some(password)) => {
            options
                .secret_data
                .insert(RESULTS_PASSWORD_KEY.into(), password.to_string());
            options.secret_env.push(SecretEnv {
                variable: RESULTS_PASSWORD_ENV.into(),
                secret: name,
                key: RESULTS_PASSWORD_KEY.into(),
            });
        }
        (None, None) => {}
    }
    Ok(Manifests::new(&options))
}

/// A shard pod's side: which shard this pod runs (its completion index into `--shard-list`).
pub fn shard_of_pod(lab_id: i64, shards: usize, list: &[usize]) -> Result<Shard, Failure> {
    let index: usize = std::env::var("JOB_COMPLETION_INDEX")
        .ok()
        .and_then(|i| i.parse().ok())
        .ok_or_else(|| {
            Failure::input("lab shard-run runs in a shard's pod (JOB_COMPLETION_INDEX)")
        })?;
    let shard = *list.get(index).ok_or_else(|| {
        Failure::input(format!("completion index {index} is not in --shard-list"))
    })?;
    Ok(Shard {
        lab_id,
        index: shard,
        of: shards,
    })
}

/// The results URL with the password the pod was given by reference (`RESULTS_PASSWORD_ENV`),
/// as a `password` parameter libpq's URI reading takes.
pub fn results_with_password(results: &str, password: Option<&str>) -> Location {
    let base = Path::new("/");
    let Some(password) = password.filter(|p| !p.is_empty()) else {
        return Location::parse(results, base);
    };
    let separator = if results.contains('?') { '&' } else { '?' };
    let encoded: String = password
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    Location::parse(&format!("{results}{separator}password={encoded}"), base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_is_the_slowest_shards() {
        let before = [(0, 4), (2, 4)];
        let now = [(2, 4), (3, 4)];
        // Shard 0: 2 runs in 60 s, 2 left → 60 s; shard 1: 1 run in 60 s, 1 left → 60 s.
        assert_eq!(
            eta(&before, &now, Duration::from_secs(60)),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            eta(&before, &[(0, 4), (3, 4)], Duration::from_secs(60)),
            None
        );
        assert_eq!(
            eta(&before, &[(4, 4), (4, 4)], Duration::from_secs(60)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn the_pods_password_joins_the_url_encoded_and_is_never_shown() {
        let url = "postgresql://lab@db:5432/results";
        let with = results_with_password(url, Some("p@ss w/rd"));
        assert_eq!(
            with,
            Location::Postgres(format!("{url}?password=p%40ss%20w%2Frd"))
        );
        let with = results_with_password("postgresql://lab@db/r?sslmode=require", Some("x"));
        assert_eq!(
            with,
            Location::Postgres("postgresql://lab@db/r?sslmode=require&password=x".into())
        );
        assert_eq!(
            results_with_password(url, None),
            Location::Postgres(url.into())
        );
    }
}
