//! `stampede pgbench … --pods N`: the run's clients spread over the pods of a Kubernetes
//! Indexed Job. The launcher side rewrites pgbench's command line for the pods (script files
//! shipped in a ConfigMap, one random seed for all, `--json` framed back); the pod side runs its
//! share of the threads and, on pod 0, reports the merged run in pgbench's format.

use std::collections::BTreeMap;

use super::args::PgbenchArgs;
use super::assemble::{build_report, DriverRun};
use super::plan;
use super::progress::ProgressPrinter;
use super::setup;
use super::spec::RunSpec;
use crate::driver::{self, DriverEvent};
use crate::pods::launch::{
    pod_json_path, replace_option, require_named_server, without_kube_options, Launch,
};
use crate::pods::{PodRole, PodRun};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::ConnSpec;
use stampede_kube::manifest::FILES_DIR;

/// Launches the run as an Indexed Job; `spec` is the checked run (nothing is connected to).
pub fn launch(args: &PgbenchArgs, spec: &RunSpec) -> CommandResult {
    let pods = args.kube.pods.expect("--pods");
    check_spreadable(args, spec, pods)?;
    // The words after "stampede pgbench", as the user gave them.
    let given: Vec<String> = std::env::args().skip(2).collect();
    let (mut pod_args, files) = ship_script_files(&without_kube_options(&given))?;
    pod_args = replace_option(
        &pod_args,
        "--json",
        args.json.as_ref().map(|_| pod_json_path()),
    );
    // One seed for every pod: each draws its clients' streams from it, as one host would.
    let seed = spec
        .random_seed
        .unwrap_or_else(crate::family::common::measure::seed);
    pod_args = replace_option(&pod_args, "--random-seed", Some(&seed.to_string()));
    if args.jobs.is_none() {
        pod_args.push(format!("--jobs={pods}"));
    }
    Launch {
        command: &["pgbench"],
        kube: &args.kube,
        args: pod_args,
        files,
        json_path: args.json.clone(),
        password_variable: "PGPASSWORD",
    }
    .run()
}

fn check_spreadable(args: &PgbenchArgs, spec: &RunSpec, pods: usize) -> Result<(), Failure> {
    if spec.clients < pods {
        return Err(Failure::input(format!(
            "{} client(s) cannot be spread over {pods} pods: give -c {pods} or more",
            spec.clients
        )));
    }
    if args.jobs.is_some() && spec.threads.min(spec.clients) < pods {
        return Err(Failure::input(format!(
            "{} thread(s) cannot be spread over {pods} pods: each pod runs at least one (-j {pods} \
             or more)",
            spec.threads
        )));
    }
    if spec.log.is_some() && args.kube.pod_workdir.is_none() {
        return Err(Failure::input(
            "-l writes each pod's log files inside the pod: give --pod-workdir pvc:CLAIM (or \
             hostPath:/DIR) so that they outlive it",
        ));
    }
    require_named_server(
        args.host.as_deref(),
        &[args.dbname.as_ref(), args.positional_dbname.as_ref()],
    )
}

/// `-f FILE[@W]` pointed at the ConfigMap's copy of each file; the files' contents by name.
fn ship_script_files(args: &[String]) -> Result<(Vec<String>, BTreeMap<String, String>), Failure> {
    let mut files = BTreeMap::new();
    let mut out = Vec::new();
    let mut ship = |value: &str| -> Result<String, Failure> {
        let (path, weight) = match value.rsplit_once('@') {
            Some((path, weight)) if weight.chars().all(|c| c.is_ascii_digit()) => {
                (path, format!("@{weight}"))
            }
            _ => (value, String::new()),
        };
        let content = std::fs::read_to_string(path)
            .map_err(|e| Failure::input(format!("could not read script file \"{path}\": {e}")))?;
        let name = format!("script-{}.sql", files.len());
        files.insert(name.clone(), content);
        Ok(format!("{FILES_DIR}/{name}{weight}"))
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "-f" || word == "--file" {
            out.push(word.clone());
            if let Some(value) = words.next() {
                out.push(ship(value)?);
            }
        } else if let Some(value) = word.strip_prefix("--file=") {
            out.push(format!("--file={}", ship(value)?));
        } else if let Some(value) = word.strip_prefix("-f").filter(|v| !v.is_empty()) {
            out.push(format!("-f{}", ship(value)?));
        } else {
            out.push(word.clone());
        }
    }
    Ok((out, files))
}

/// One pod's part of the run; on pod 0 also the merged report.
pub fn run_in_pod(spec: &RunSpec, target: &ConnSpec, role: PodRole) -> CommandResult {
    let parsed = plan::parse_scripts(spec)?;
    let runtime = control_runtime();
    let mut pod_scale = 1;
    let mut progress = ProgressPrinter::new(spec);
    let mut pod = PodRun::start(
        role,
        Box::new(move |interval| progress.observe(&DriverEvent::Interval(interval))),
    )?;
    // Pod 0 prepares the server (vacuum); the others read what their scripts need and close
    // their session; once every pod has joined, pod 0 takes the counters' first reading.
    let setup = if pod.role.index == 0 {
        runtime.block_on(setup::prepare(spec, target)).map(Some)
    } else {
        let share = runtime.block_on(setup::prepare_share(spec, target));
        share.map(|setup| {
            pod_scale = setup.scale;
            None
        })
    };
    let setup = match setup {
        Ok(Some(mut setup)) => pod.wait_for_others().map(|()| {
            runtime.block_on(setup.restart_window(target));
            pod_scale = setup.scale;
            Some(setup)
        }),
        other => other,
    };
    let joined = pod.join();
    let setup = match (setup, joined) {
        (Ok(setup), Ok(())) => setup,
        (Err(failure), _) | (_, Err(failure)) => {
            pod.finish(Err(failure.clone()), 0, 0)?;
            return Err(failure);
        }
    };
    let mut plan = plan::run_plan(spec, target, parsed, pod_scale);
    plan.share = Some(pod.share(plan.clients_per_thread().len()));
    plan.stop = Some(pod.stop_flag());
    let here = plan.threads_here();
    let clients_here = plan.clients_per_thread()[here.clone()].iter().sum();
    let (scripts, random_seed) = (plan.scripts.clone(), plan.random_seed);
    let result = driver::run(plan, &mut |event| match event {
        DriverEvent::Interval(interval) => pod.interval(interval),
        DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
        DriverEvent::ClientNotice(message) => eprintln!("stampede: {message}"),
        DriverEvent::WarmupEnded | DriverEvent::MeasuredEnded => {}
    });
    let (Some(spread), Some(setup)) = (pod.finish(result, clients_here, here.len())?, setup) else {
        return Ok(());
    };
    let run = DriverRun {
        scripts,
        random_seed,
        result: spread.merged,
    };
    let server = runtime.block_on(setup.observe_after(spec, target, &run.result));
    let mut report = build_report(spec, target, &setup, &run, server);
    report.spread = Some(spread.summary);
    super::run::print_report(spec, &report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn script_files_go_to_the_config_map_with_their_weights() {
        let dir = std::env::temp_dir().join(format!("stampede-ship-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("a.sql");
        std::fs::write(&script, "SELECT 1;\n").unwrap();
        let path = script.display().to_string();
        let (args, files) = ship_script_files(&strings(&[
            "-f",
            &format!("{path}@3"),
            &format!("--file={path}"),
            "-c",
            "2",
        ]))
        .unwrap();
        assert_eq!(
            args,
            strings(&[
                "-f",
                &format!("{FILES_DIR}/script-0.sql@3"),
                &format!("--file={FILES_DIR}/script-1.sql"),
                "-c",
                "2"
            ])
        );
        assert_eq!(files["script-0.sql"], "SELECT 1;\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
