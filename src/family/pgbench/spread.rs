//! `stampede pgbench … --pods N`: what pgbench states for the one spread path. Its clients
//! split over the pods (with `-j`, its threads too), script files are shipped in the Job's
//! ConfigMap, one random seed for all, `--json` framed back; the run itself is `run.rs`'s, on
//! this host or in a pod.

use std::collections::BTreeMap;

use super::args::PgbenchArgs;
use super::spec::RunSpec;
use crate::pods::launch::require_named_server;
use crate::pods::spread::{Split, Spread};
use stampede_base::error::{CommandResult, Failure};
use stampede_kube::manifest::FILES_DIR;

/// Launches the run as an Indexed Job; `spec` is the checked run (nothing is connected to).
pub fn launch(args: &PgbenchArgs, spec: &RunSpec) -> CommandResult {
    let pods = args.kube.pods.expect("launched only with --pods");
    // One seed for every pod: each draws its clients' streams from it, as one host would.
    let seed = spec
        .random_seed
        .unwrap_or_else(crate::family::common::measure::seed);
    Spread {
        command: &["pgbench"],
        kube: &args.kube,
        split: Split {
            count: spec.clients,
            what: "client(s)",
            option: "-c ",
        },
        checks: spreadable(args, spec, pods),
        seed: ("--random-seed", seed),
        json: args.json.clone(),
        ship: Some(&ship_script_files),
        // Each pod runs a thread at least.
        extra: match args.jobs {
            None => vec![format!("--jobs={pods}")],
            Some(_) => Vec::new(),
        },
        password_variable: "PGPASSWORD",
    }
    .launch()
}

/// What pgbench asks beyond the clients' split: a thread per pod when `-j` is given, a place
/// for `-l`'s files that outlives the pods, a server the pods can reach.
fn spreadable(args: &PgbenchArgs, spec: &RunSpec, pods: usize) -> CommandResult {
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
