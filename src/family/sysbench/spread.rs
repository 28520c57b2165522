//! `stampede sysbench … --pods N`: a run's threads spread over the pods of a Kubernetes
//! Indexed Job, a built-in test's or a Lua script's. The launcher side rewrites the command
//! line for the pods (a script shipped in a ConfigMap, one random seed for all, `--json`
//! framed back); the pod side of a built-in test is here, a script's in `lua/spread.rs`. Each
//! thread keeps its number over the whole run (`sysbench.tid`, its random stream), `--events`
//! and `--rate` are shared in proportion to each pod's threads, and pod 0 prints sysbench's
//! report of the merged run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::catalog::GeneratedTest;
use super::report::IntervalLine;
use super::subcommands::SysbenchArgs;
use crate::driver::{self, DriverEvent, RunLimit, RunPlan, Share};
use crate::pods::launch::{pod_json_path, replace_option, without_kube_options, Launch};
use crate::pods::role::share_of;
use crate::pods::{KubeArgs, PodRole, PodRun, SpreadResult};
use stampede_base::error::{CommandResult, Failure};

/// `--pods` spreads a run; the other commands run from here.
pub fn refused_with_pods(command: &str) -> Failure {
    Failure::input(format!(
        "--pods spreads a run's load over pods; {command} from here, without --pods"
    ))
}
use stampede_kube::manifest::FILES_DIR;

/// What the pods' command line is made from.
pub struct PodLine<'a> {
    pub kube: &'a KubeArgs,
    /// The words after `stampede sysbench`, as the user gave them.
    pub given: Vec<String>,
    pub threads: usize,
    pub seed: u64,
    pub json: Option<String>,
    /// A script file to ship: (the word naming it, its path).
    pub script: Option<(String, std::path::PathBuf)>,
    pub db_driver: String,
}

impl PodLine<'_> {
    /// Checks what can be checked here and runs the Job.
    pub fn launch(self) -> CommandResult {
        let pods = self.kube.pods.expect("--pods");
        if self.threads < pods {
            return Err(Failure::input(format!(
                "{} thread(s) cannot be spread over {pods} pods: give --threads={pods} or more",
                self.threads
            )));
        }
        let mut args = without_kube_options(&self.given);
        let mut files = BTreeMap::new();
        if let Some((word, path)) = &self.script {
            let (name, content) = script_file(path)?;
            let shipped = format!("{FILES_DIR}/{name}");
            args = args
                .into_iter()
                .map(|w| if w == *word { shipped.clone() } else { w })
                .collect();
            files.insert(name, content);
        }
        args = replace_option(&args, "--json", self.json.as_ref().map(|_| pod_json_path()));
        // One seed for every pod: each thread draws its stream from it and its number.
        args = replace_option(&args, "--rand-seed", Some(&self.seed.to_string()));
        Launch {
            command: &["sysbench"],
            kube: self.kube,
            args,
            files,
            json_path: self.json.clone(),
            password_variable: if self.db_driver == "mysql" {
                "MYSQL_PWD"
            } else {
                "PGPASSWORD"
            },
        }
        .run()
    }
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
        given: std::env::args().skip(2).collect(),
        threads: threads as usize,
        seed,
        json: args.json.as_ref().map(|p| p.display().to_string()),
        script: None,
        db_driver: args.db_driver.clone(),
    }
    .launch()
}

/// One pod's threads of a built-in test (pod 0 has printed the run's mode); on pod 0 the
/// merged run, for the report.
pub fn run_in_pod(
    args: &SysbenchArgs,
    test: &GeneratedTest,
    mut plan: RunPlan,
    role: PodRole,
) -> Result<Option<SpreadResult>, Failure> {
    let threads = plan.threads as u32;
    let first = role.index == 0;
    let mut intervals = IntervalLine::new(
        args.report_interval,
        plan.limit.time_bound().map(|d| d.as_secs()),
        threads,
        test.queries,
        args.percentile,
    );
    let mut pod = PodRun::start(
        role,
        Box::new(move |interval| {
            if let Some(line) = intervals.add(interval) {
                println!("{line}");
            }
        }),
    )?;
    if let Err(failure) = pod.join() {
        pod.finish(Err(failure.clone()), 0, 0)?;
        return Err(failure);
    }
    let share = pod.share(plan.threads);
    let here = share.threads.clone();
    if let RunLimit::Events { total, within } = plan.limit {
        plan.limit = RunLimit::Events {
            total: share_of(total, plan.threads, &here),
            within,
        };
    }
    plan.stop = Some(pod.stop_flag());
    if first && args.warmup_time > 0 {
        println!("Warming up for {} second(s)...", args.warmup_time);
    }
    let warmed = warm_up(args, &plan, &here);
    plan.share = Some(share);
    if first {
        println!("Initializing worker threads...\n");
        println!("Threads started!\n");
    }
    let result = warmed.and_then(|()| {
        driver::run(plan, &mut |event| match event {
            DriverEvent::Interval(interval) => pod.interval(interval),
            DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
            DriverEvent::ClientNotice(message) => eprintln!("stampede: {message}"),
            DriverEvent::WarmupEnded | DriverEvent::MeasuredEnded => {}
        })
    });
    pod.finish(result, here.len(), here.len())
}

/// `--warmup-time`: this pod's threads run the test before the measured run (each pod on its
/// own; the measured run then starts together).
fn warm_up(args: &SysbenchArgs, plan: &RunPlan, here: &std::ops::Range<usize>) -> CommandResult {
    if args.warmup_time == 0 {
        return Ok(());
    }
    let mut warmup = plan.clone();
    warmup.limit = RunLimit::Duration(Duration::from_secs(args.warmup_time));
    warmup.share = Some(Share {
        threads: here.clone(),
        start_gate: Arc::new(|| Ok(())),
    });
    driver::run(warmup, &mut |_| {}).map(|_| ())
}
