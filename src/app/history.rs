//! `stampede history <results> [--lab NAME] [--metric M] [--html FILE]`: every lab spec's
//! invocations as series per cell, with their change points.

use std::path::Path;

use super::{CommandResult, Failure};
use crate::app::cli::HistoryArgs;
use crate::family;
use crate::report::comparison::Metric;
use crate::report::{history, history_view, write_file};
use stampede_store::{Invocation, Location, Store, StoredRun};

pub fn run(args: &HistoryArgs) -> CommandResult {
    let metric = Metric::parse(&args.metric, &family::workload_metrics())?;
    let (mut store, invocations) = open_invocations(&args.results)?;
    if let Some(name) = &args.lab {
        check_history(&invocations, name, &args.results)?;
    }
    let ids: Vec<i64> = invocations
        .iter()
        .filter(|i| args.lab.as_ref().is_none_or(|name| &i.history == name))
        .map(|i| i.id)
        .collect();
    let mut runs = store.runs_of_labs(&ids)?;
    if metric.needs_statements() {
        for id in &ids {
            store.attach_statements(*id, runs.iter_mut().map(|(_, run)| run))?;
        }
    }
    let claims = claims_per_history(&mut store, &invocations, &ids, &mut runs)?;
    let latest = *ids.last().expect("a history has invocations");
    let control = control_target(&mut store, latest, args.control.as_deref(), &runs)?;
    let metric = match &control {
        Some(control) => crate::report::control::attach(&mut runs, control, &metric),
        None => metric,
    };
    if let Some(sentence) = crate::report::control::sentence(&metric) {
        println!("{sentence}");
    }
    let histories = history::build(&invocations, &runs, &metric, args.lab.as_deref());
    print!("{}", history_view::to_text(&histories, &metric));
    print!("{claims}");
    if let Some(path) = &args.html {
        write_file(path, &history_view::to_html(&histories, &metric))?;
    }
    Ok(())
}

/// The results database and its invocations; one without labs is refused.
pub fn open_invocations(results: &str) -> Result<(Store, Vec<Invocation>), Failure> {
    open_invocations_at(&Location::parse(results, Path::new(".")))
}

/// `open_invocations` of a database already located.
pub fn open_invocations_at(location: &Location) -> Result<(Store, Vec<Invocation>), Failure> {
    let mut store = Store::open_existing(location)?;
    let invocations = store.invocations()?;
    if invocations.is_empty() {
        return Err(Failure::input(format!(
            "{location} holds no labs; run one with `stampede lab run`"
        )));
    }
    Ok((store, invocations))
}

/// Each selected history's claims (its latest invocation's spec) judged in every invocation,
/// as text; the runs' statements are loaded when a claim compares one.
fn claims_per_history(
    store: &mut Store,
    invocations: &[Invocation],
    ids: &[i64],
    runs: &mut [(i64, StoredRun)],
) -> Result<String, Failure> {
    let mut out = String::new();
    let mut names: Vec<&str> = Vec::new();
    for invocation in invocations.iter().filter(|i| ids.contains(&i.id)) {
        if !names.contains(&invocation.history.as_str()) {
            names.push(&invocation.history);
        }
    }
    for name in names {
        let members: Vec<&Invocation> = invocations
            .iter()
            .filter(|i| i.history == name && ids.contains(&i.id))
            .collect();
        let latest = members.last().expect("a history has invocations");
        let claims = crate::lab::claims::stored(&store.lab_spec(latest.id)?)
            .map_err(|why| Failure::input(format!("\"{name}\": its spec's claims: {why}")))?;
        if claims.is_empty() {
            continue;
        }
        if claims.iter().any(|claim| claim.metric.needs_statements()) {
            for member in &members {
                store.attach_statements(member.id, runs.iter_mut().map(|(_, run)| run))?;
            }
        }
        let per_invocation: Vec<(String, Vec<StoredRun>)> = members
            .iter()
            .map(|member| {
                let own = runs.iter().filter(|(lab, _)| *lab == member.id);
                (
                    member.name.clone(),
                    own.map(|(_, run)| run.clone()).collect(),
                )
            })
            .collect();
        out += &crate::report::claims::history_text(name, &claims, &per_invocation);
    }
    Ok(out)
}

/// The control target: `--control`'s (`none` for none), else the one the spec of invocation
/// `latest` names; it must be a target of the runs.
pub fn control_target(
    store: &mut Store,
    latest: i64,
    given: Option<&str>,
    runs: &[(i64, StoredRun)],
) -> Result<Option<String>, Failure> {
    let control = match given {
        Some("none") => return Ok(None),
        Some(name) => name.to_string(),
        None => match crate::lab::spec::stored_control(&store.lab_spec(latest)?) {
            Some(name) => name,
            None => return Ok(None),
        },
    };
    if !runs.iter().any(|(_, run)| run.target == control) {
        let mut targets: Vec<&str> = runs.iter().map(|(_, run)| run.target.as_str()).collect();
        targets.sort();
        targets.dedup();
        return Err(Failure::input(format!(
            "control target \"{control}\" has no runs here; the targets are {}",
            targets.join(", ")
        )));
    }
    Ok(Some(control))
}

/// `--lab NAME` must name a spec the results hold.
pub fn check_history(invocations: &[Invocation], name: &str, results: &str) -> CommandResult {
    if invocations.iter().any(|i| i.history == name) {
        return Ok(());
    }
    let mut names: Vec<&str> = invocations.iter().map(|i| i.history.as_str()).collect();
    names.dedup();
    Err(Failure::input(format!(
        "--lab {name}: {results} holds no lab of that name; it holds: {}",
        names.join(", ")
    )))
}

/// `--lab NAME` (which must be in the results) or the history of the latest invocation.
pub fn history_of(
    invocations: &[Invocation],
    lab: Option<&str>,
    results: &str,
) -> Result<String, Failure> {
    match lab {
        Some(name) => {
            check_history(invocations, name, results)?;
            Ok(name.to_string())
        }
        None => Ok(invocations
            .last()
            .expect("open_invocations refuses a store without invocations")
            .history
            .clone()),
    }
}

/// `latest` (or `previous` where the caller handles it), `key=value`, or a value any of an
/// invocation's tags or its lab name has; the latest that matches.
pub fn select<'a>(
    members: &[&'a Invocation],
    wanted: &str,
    option: &str,
    history: &str,
) -> Result<&'a Invocation, Failure> {
    if wanted == "latest" {
        return Ok(members.last().expect("a history has an invocation"));
    }
    let matches = |i: &Invocation| match wanted.split_once('=') {
        Some((key, value)) => i.tags.iter().any(|(k, v)| k == key && v == value),
        None => i.name == wanted || i.tags.iter().any(|(_, v)| v == wanted),
    };
    members
        .iter()
        .rev()
        .copied()
        .find(|i| matches(i))
        .ok_or_else(|| {
            let mut tags: Vec<String> = members
                .iter()
                .flat_map(|i| i.tags.iter().map(|(k, v)| format!("{k}={v}")))
                .collect();
            tags.dedup();
            let known = if tags.is_empty() {
                "its invocations have no tags (`lab run --tag KEY=VALUE`)".to_string()
            } else {
                format!("its tags: {}", tags.join(", "))
            };
            Failure::input(format!(
                "{option} {wanted}: no invocation of \"{history}\" has that tag or name; {known}"
            ))
        })
}
