//! `lab run --shards N` (and `lab resume` of a sharded lab) on the user's side: the checks made
//! before anything is created, the progress per shard and overall, the final table as a local lab
//! prints it; and `lab shard-run`, a shard's pod.

use std::path::{Path, PathBuf};

use super::lab_results;
use super::lab_spec::load_spec;
use super::live_page::{LivePage, Shown, PAGE_PATIENCE};
use super::progress::Progress;
use super::{CommandResult, Failure};
use crate::app::cli::FleetArgs;
use crate::family::api::LabWorkload;
use crate::lab::executor::{Lab, Opening};
use crate::lab::plan::Plan;
use crate::lab::shards::{self, ShardEvent, ShardProgress, ShardRequest};
use crate::lab::spec::LabSpec;
use crate::lab::targets::SpecTargets;
use crate::pods::KubeArgs;
use stampede_base::duration::human;
use stampede_base::signals::watch_signals;
use stampede_store::Store;
use stampede_web::{Access, ListenAddress};

/// The Kubernetes options of a sharded `run` or `resume` (the command line's over the spec's),
/// or None for a lab on this machine. Options without a sharded lab to shape are refused.
pub fn sharded(
    spec: &LabSpec,
    fleet: &FleetArgs,
    resume: bool,
) -> Result<Option<KubeArgs>, Failure> {
    let mut given = fleet.kube.clone();
    given.results_secret = fleet.results_secret.clone();
    given.shared_nodes = fleet.shared_nodes;
    if given.pods.is_some() {
        return Err(Failure::input(
            "--pods: a lab's workload spreads its clients with `pods = N` in the spec; \
             --shards N shards the lab's cells over pods",
        ));
    }
    let option_given = given
        .first_given()
        .or(fleet.results_secret.as_ref().map(|_| "results-secret"))
        .or(fleet.shared_nodes.then_some("shared-nodes"));
    let is_sharded =
        match (resume, fleet.shards) {
            (false, shards) => shards.is_some(),
            (true, Some(_)) => return Err(Failure::input(
                "--shards: a resumed lab keeps the shard count it was started with; drop --shards",
            )),
            (true, None) => latest_is_sharded(spec)?,
        };
    // A shard's pods coordinate nothing and its servers are its own.
    let pointless = [
        ("coordinator-address", given.coordinator_address.is_some()),
        ("coordinator-port", given.coordinator_port.is_some()),
        ("password-secret", given.password_secret.is_some()),
    ];
    if let (Some((option, _)), true) = (pointless.iter().find(|(_, set)| *set), is_sharded) {
        return Err(Failure::input(format!(
            "--{option}: a sharded lab's pods run their own servers and coordinate nothing; \
             the results database's password comes from --results-secret"
        )));
    }
    match (is_sharded, option_given) {
        (true, _) => Ok(Some(given.over(&spec.kubernetes))),
        (false, Some(option)) if resume => Err(Failure::input(format!(
            "--{option}: lab \"{}\" did not run sharded (`lab run --shards N`)",
            spec.name
        ))),
        (false, Some(option)) => Err(Failure::input(format!(
            "--{option} needs --shards N (the Kubernetes options shape a sharded lab's pods)"
        ))),
        (false, None) => Ok(None),
    }
}

/// Whether the spec's latest invocation ran sharded (a results file that does not exist yet
/// is not created to find out).
fn latest_is_sharded(spec: &LabSpec) -> Result<bool, Failure> {
    if !spec.results.exists() || matches!(spec.results, stampede_store::Location::Sqlite(_)) {
        return Ok(false);
    }
    let mut store = Store::open(&spec.results)?;
    Ok(store
        .latest_invocation(&spec.name)?
        .is_some_and(|lab| lab.shards.is_some()))
}

/// Runs (or resumes) the lab on the shards' pods and prints what a local lab prints.
pub fn execute(
    path: &Path,
    spec: &LabSpec,
    workloads: Vec<Box<dyn LabWorkload>>,
    kube: KubeArgs,
    shards: Option<usize>,
    keep_going: bool,
    page: Option<(ListenAddress, Access)>,
) -> CommandResult {
    let sequential: Vec<bool> = workloads.iter().map(|w| w.sequential()).collect();
    let units = Plan::new(spec, 0, &sequential).units.len();
    shards::check(spec, units, shards.unwrap_or(1))?;
    if !kube.dry_run {
        crate::pods::launch::check_cluster(&kube)
            .map_err(|failure| Failure::input(format!("[kubernetes]: {}", failure.message())))?;
    }
    let request = ShardRequest {
        spec,
        spec_path: path,
        shards,
        kube,
        keep_going,
    };
    let stop = watch_signals();
    // `--serve`: the page reads the shared results once the invocation is in them.
    let mut live_page = None;
    let mut on_event = |event: ShardEvent<'_>| match (event, &page) {
        (ShardEvent::Opened(id), Some((address, access))) => {
            match LivePage::start(&spec.results, Shown::Id(id), *address, access.clone()) {
                Ok(started) => live_page = Some(started),
                Err(failure) => eprintln!("stampede: no live page: {}", failure.message()),
            }
        }
        (event, _) => show(event),
    };
    let launched = shards::launch(&request, &workloads, stop, &mut on_event);
    if let Some(page) = live_page {
        page.finish(PAGE_PATIENCE);
    }
    let Some(mut outcome) = launched? else {
        return Ok(());
    };
    let completed = outcome.store.completed_runs(outcome.lab_id)?;
    print!("{}", lab_results::table(spec, &outcome.plan, &completed));
    let resume = format!("`stampede lab resume {}`", path.display());
    if outcome.interrupted {
        return Err(Failure::interrupted(format!(
            "interrupted: the shards' Job was deleted; recorded runs are kept: continue with {resume}"
        )));
    }
    for (shard, reason) in &outcome.failed {
        eprintln!("stampede: shard {shard} failed: {reason}");
    }
    if !outcome.failed.is_empty() {
        return Err(Failure::run(format!(
            "{} shard(s) failed; every run they recorded is kept: {resume} re-creates only the \
             shards with runs to record",
            outcome.failed.len()
        )));
    }
    if !outcome.ended {
        return Err(Failure::run(format!(
            "the shards ended without recording every planned run; continue with {resume}"
        )));
    }
    Ok(())
}

fn show(event: ShardEvent<'_>) {
    match event {
        ShardEvent::Note(note) => eprintln!("stampede: {note}"),
        ShardEvent::Opened(_) => {}
        ShardEvent::Progress(progress) => eprintln!("{}", progress_line(progress)),
    }
}

/// "shards: 0 4/8 running · 1 3/8 running · 2 8/8 done — 15/24 runs (62%), ETA 80 s".
fn progress_line(progress: &ShardProgress) -> String {
    let shards: Vec<String> = progress
        .shards
        .iter()
        .enumerate()
        .map(|(shard, (done, planned))| {
            let state = if done >= planned {
                " done"
            } else if progress.running.contains(&shard) {
                " running"
            } else {
                ""
            };
            format!("{shard} {done}/{planned}{state}")
        })
        .collect();
    let done: usize = progress.shards.iter().map(|s| s.0).sum();
    let planned: usize = progress.shards.iter().map(|s| s.1).sum();
    let eta = progress
        .eta
        .map_or(String::new(), |eta| format!(", ETA {}", human(eta)));
    format!(
        "shards: {} — {done}/{planned} runs ({}%){eta}",
        shards.join(" · "),
        done * 100 / planned.max(1)
    )
}

/// A shard's pod: the lab's units that fall to its shard, on this machine, into the one results
/// database.
pub fn shard_run(
    spec_path: &Path,
    lab_id: i64,
    shards: usize,
    list: &[usize],
    results: &str,
    keep_going: bool,
) -> CommandResult {
    let (mut spec, workloads) = load_spec(spec_path)?;
    let shard = shards::shard_of_pod(lab_id, shards, list)?;
    let password = std::env::var(shards::RESULTS_PASSWORD_ENV).ok();
    spec.results = shards::results_with_password(results, password.as_deref());
    // The pod's working directory may be a volume several shards share.
    spec.server_root = PathBuf::from(stampede_kube::manifest::WORKDIR)
        .join(format!("{}-shard-{}.servers", spec.name, shard.index));
    let machine = stampede_store::Machine::this();
    eprintln!(
        "shard {} of {}: lab \"{}\" on {}",
        shard.index,
        shard.of,
        spec.name,
        machine.key()
    );
    let stop = watch_signals();
    let mut progress = Progress::on_stderr();
    let mut lab = Lab::open(
        &spec,
        workloads,
        &SpecTargets,
        Opening::Shard(shard),
        keep_going,
        stop,
        &mut |event| progress.show(event),
    )?;
    let outcome = lab
        .run(&mut |event| progress.show(event))
        .map_err(|e| lab_results::with_resume_hint(e, spec_path))?;
    if outcome.interrupted {
        return Err(Failure::interrupted(format!(
            "shard {} interrupted; its recorded runs are kept",
            shard.index
        )));
    }
    if !outcome.skipped.is_empty() {
        let targets: Vec<String> = outcome
            .skipped
            .iter()
            .map(|s| format!("\"{}\" ({})", s.target, s.reason))
            .collect();
        return Err(Failure::run(format!(
            "shard {}: target(s) could not be provisioned: {}",
            shard.index,
            targets.join("; ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_says_each_shard_and_the_whole() {
        let progress = ShardProgress {
            shards: vec![(4, 8), (3, 8), (8, 8)],
            running: [0].into_iter().collect(),
            eta: Some(std::time::Duration::from_secs(80)),
        };
        assert_eq!(
            progress_line(&progress),
            "shards: 0 4/8 running · 1 3/8 · 2 8/8 done — 15/24 runs (62%), ETA 80 s"
        );
    }
}
