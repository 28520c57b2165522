//! `stampede sysbench … --pods N`: what sysbench states for the one spread path, a built-in
//! test's or a Lua script's: its threads split over the pods, a script shipped in the Job's
//! ConfigMap, one random seed for all, `--json` framed back. A built-in test's run is
//! `command.rs`'s on this host or in a pod (`--events` and `--rate` shared in proportion to
//! each pod's threads); a script's pod side is `lua/spread.rs`. Each thread keeps its number
//! over the whole run (`sysbench.tid`, its random stream), and pod 0 prints sysbench's report
//! of the merged run.

use std::collections::BTreeMap;

use super::subcommands::SysbenchArgs;
use crate::pods::spread::{Split, Spread};
use crate::pods::KubeArgs;
use stampede_base::error::{CommandResult, Failure};

/// `--pods` spreads a run; the other commands run from here.
pub fn refused_with_pods(command: &str) -> Failure {
    Failure::input(format!(
        "--pods spreads a run's load over pods; {command} from here, without --pods"
    ))
}
use stampede_kube::manifest::FILES_DIR;

/// What sysbench states for the one spread path, for a built-in test and a Lua script alike.
pub struct PodLine<'a> {
    pub kube: &'a KubeArgs,
    pub threads: usize,
    pub seed: u64,
    pub json: Option<String>,
    /// A script file to ship: (the word naming it, its path).
    pub script: Option<(String, std::path::PathBuf)>,
    pub db_driver: String,
}

impl PodLine<'_> {
    /// Its threads split over the pods, the script shipped in the Job's ConfigMap, one random
    /// seed for all (each thread draws its stream from it and its number).
    pub fn launch(self) -> CommandResult {
        let ship = |args: &[String]| ship_script(args, self.script.as_ref());
        Spread {
            command: &["sysbench"],
            kube: self.kube,
            split: Split {
                count: self.threads,
                what: "thread(s)",
                option: "--threads=",
            },
            checks: Ok(()),
            seed: ("--rand-seed", self.seed),
            json: self.json.clone(),
            ship: Some(&ship),
            extra: Vec::new(),
            password_variable: if self.db_driver == "mysql" {
                "MYSQL_PWD"
            } else {
                "PGPASSWORD"
            },
        }
        .launch()
    }
}

/// The word naming the script pointed at the ConfigMap's copy; the script by name.
fn ship_script(
    args: &[String],
    script: Option<&(String, std::path::PathBuf)>,
) -> Result<(Vec<String>, BTreeMap<String, String>), Failure> {
    let mut files = BTreeMap::new();
    let Some((word, path)) = script else {
        return Ok((args.to_vec(), files));
    };
    let (name, content) = script_file(path)?;
    let shipped = format!("{FILES_DIR}/{name}");
    let args = args
        .iter()
        .map(|w| {
            if w == word {
                shipped.clone()
            } else {
                w.clone()
            }
        })
        .collect();
    files.insert(name, content);
    Ok((args, files))
}

/// A script's name in the ConfigMap (its file name, as `sysbench.script_name` is) and text.
fn script_file(path: &std::path::Path) -> Result<(String, String), Failure> {
    let content = std::fs::read_to_string(path).map_err(|e| {
        Failure::input(format!(
            "could not read script file \"{}\": {e}",
            path.display()
        ))
    })?;
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if name.is_empty() {
        "script.lua".into()
    } else {
        name
    };
    Ok((name, content))
}

/// A spread run's server must be named and reachable over TCP: the managed default server
/// and a Unix socket are this machine's alone.
pub fn require_named_server(db_driver: &str, host_given: bool, socket: bool) -> CommandResult {
    if db_driver == "mysql" {
        if !host_given || socket {
            return Err(Failure::input(
                "--pods needs a server the pods can reach: give --mysql-host=HOST (not localhost, \
                 which is this machine's socket)",
            ));
        }
    } else if !host_given {
        return Err(Failure::input(
            "--pods needs a server the pods can reach: give --pgsql-host=HOST (or PGHOST); the \
             managed default server is this machine's alone",
        ));
    }
    Ok(())
}

/// The launcher's side of a built-in test's run; `seed`: the run's (`--rand-seed`, or drawn).
pub fn launch(args: &SysbenchArgs, threads: u32, seed: u64) -> CommandResult {
    if args.suite.is_some() {
        return Err(Failure::input(
            "--pods spreads one test's run; run a suite's tests one at a time",
        ));
    }
    require_named_server(
        &args.db_driver,
        match args.db_driver.as_str() {
            "mysql" => args.mysql_host != "localhost",
            _ => args.pgsql_host.is_some() || std::env::var_os("PGHOST").is_some(),
        },
        args.mysql_socket.is_some(),
    )?;
    PodLine {
        kube: &args.kube,
        threads: threads as usize,
        seed,
        json: args.json.as_ref().map(|p| p.display().to_string()),
        script: None,
        db_driver: args.db_driver.clone(),
    }
    .launch()
}
