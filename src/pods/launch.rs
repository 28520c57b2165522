//! The user's side of a spread run: the pods' command line, the Job's manifests, and the run
//! followed through the API server — progress and the coordinator's output on this terminal,
//! its exit code as this process's, and every object deleted however it ends.

use super::live_frames::{self, FRAMES_ENV};
use crate::live::endpoint::{MetricsArgs, RunFeed};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Args, Command};
use stampede_kube::frame::Frame;
use stampede_kube::launch::{Ending, Watch};
use stampede_kube::manifest::{coordinator_host, JobOptions, Manifests};
use stampede_kube::Cluster;

use super::options::KubeArgs;
use super::role::{COORDINATOR_ENV, PODS_ENV, RUN_ENV};
use super::terminal::JSON_ENV;
use stampede_base::error::{CommandResult, Failure};

/// Where pod 0 writes the run's `--json` document before framing it for the launcher.
const POD_JSON_PATH: &str = "/tmp/stampede-result.json";

/// libpq's variables that say where to connect, passed on to the pods (PGPASSWORD never is:
/// a password reaches the pods from a Secret, `--password-secret`).
const FORWARDED_ENV: [&str; 10] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGSSLMODE",
    "PGOPTIONS",
    "PGAPPNAME",
    "PGCONNECT_TIMEOUT",
    "PGTARGETSESSIONATTRS",
];

/// What a family asks of the launcher.
pub struct Launch<'a> {
    /// The command's words before its options ("pgbench", or "tpcc run"); also the Job's name.
    pub command: &'a [&'a str],
    pub kube: &'a KubeArgs,
    /// The pods' options: the user's, Kubernetes' removed (`without_kube_options`), files
    /// pointed at the ConfigMap, the random seed fixed.
    pub args: Vec<String>,
    /// Files the pods read (scripts): name → content, mounted under the ConfigMap's folder.
    pub files: BTreeMap<String, String>,
    /// `--json FILE` of the user's command: written here from the coordinator's document.
    pub json_path: Option<String>,
    /// The variable `--password-secret` sets in the pods: PGPASSWORD, or MYSQL_PWD for a
    /// MySQL or MariaDB server.
    pub password_variable: &'static str,
    /// Set by `run` when it serves `--metrics-addr`: pod 0 sends the frames.
    pub serves_metrics: bool,
}

impl Launch<'_> {
    /// Makes the Job, runs it and relays it; exits the process with the coordinator's code
    /// when that is not 0 (its own error lines were relayed already).
    pub fn run(mut self) -> CommandResult {
        refuse_passwords(&self.args)?;
        let metrics = take_metrics(&mut self.args);
        let labels = crate::live::command_labels(&self.command.join(" "));
        let served = metrics.start(labels)?;
        self.serves_metrics = served.is_some();
        // Every option is checked before the cluster is touched.
        let start_timeout = self.kube.start_timeout()?;
        let pods = self.kube.pods.expect("a spread run has --pods");
        let name = job_name(self.command);
        let cluster = connect(self.kube);
        let namespace = match (&self.kube.namespace, &cluster) {
            (Some(namespace), _) => namespace.clone(),
            (None, Ok(cluster)) => cluster.default_namespace().to_string(),
            (None, Err(_)) => "default".into(),
        };
        let options = self.job_options(&name, &namespace, pods, None)?;
        let manifests = Manifests::new(&options);
        if self.kube.dry_run {
            return print_dry_run(cluster, &manifests);
        }
        let cluster = cluster?;
        if std::env::var_os("PGPASSWORD").is_some() && self.kube.password_secret.is_none() {
            eprintln!(
                "stampede: warning: PGPASSWORD is not passed to the pods (it would be written \
                 into the Job); give the Secret that holds it with --password-secret"
            );
        }
        eprintln!(
            "stampede: running on Kubernetes: Job {name} in namespace {namespace}, {pods} pod(s) \
             of {}",
            options.image
        );
        let stop = stampede_base::signals::watch_signals();
        let feed = served.as_ref().map(|m| m.feed(None));
        let outcome = follow(
            &cluster,
            manifests,
            start_timeout,
            stop,
            true,
            feed.as_ref(),
        )?;
        if let Some(path) = &self.json_path {
            let mut text = outcome.json.join("\n");
            text.push('\n');
            crate::report::write_file(path, &text)?;
        }
        match outcome.ending {
            Ending::Interrupted => Err(Failure::interrupted(format!(
                "interrupted: Job {name} and its pods were deleted"
            ))),
            Ending::Exited(0) => Ok(()),
            Ending::Exited(code) => {
                let _ = std::io::stdout().flush();
                std::process::exit(code)
            }
        }
    }

    /// The Job of a run whose coordinator is the caller, at `coordinator` (host:port, as the
    /// pods reach it): made ready to run, nothing created yet. `password`: one the caller made
    /// for the pods, put in a Secret of the run's own (owned by its Job) and read from there.
    pub fn job(self, coordinator: &str, password: Option<String>) -> Result<Job, Failure> {
        refuse_passwords(&self.args)?;
        let start_timeout = self.kube.start_timeout()?;
        let pods = self.kube.pods.expect("a spread run has --pods");
        let name = job_name(self.command);
        let cluster = connect(self.kube)?;
        let namespace = match &self.kube.namespace {
            Some(namespace) => namespace.clone(),
            None => cluster.default_namespace().to_string(),
        };
        let mut options = self.job_options(&name, &namespace, pods, Some(coordinator))?;
        if let Some(password) = password {
            options.secret_data.insert("password".into(), password);
            options.secret_env = vec![stampede_kube::SecretEnv {
                variable: self.password_variable.into(),
                secret: name.clone(),
                key: "password".into(),
            }];
        }
        Ok(Job {
            cluster,
            manifests: Manifests::new(&options),
            start_timeout,
            name,
        })
    }

    fn job_options(
        &self,
        name: &str,
        namespace: &str,
        pods: usize,
        coordinator: Option<&str>,
    ) -> Result<JobOptions, Failure> {
        let kube = self.kube;
        let mut args: Vec<String> = self.command.iter().map(|w| w.to_string()).collect();
        args.extend(self.args.iter().cloned());
        let mut options = kube.job_options(name, namespace, pods, args)?;
        options.secret_env = kube
            .password_secret(self.password_variable)?
            .into_iter()
            .collect();
        options.coordinator_port = kube.coordinator_port();
        options.files = self.files.clone();
        let host = kube
            .coordinator_address
            .clone()
            .unwrap_or_else(|| coordinator_host(&options));
        options.env = FORWARDED_ENV
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        options.env.extend([
            (RUN_ENV.to_string(), name.to_string()),
            (PODS_ENV.to_string(), pods.to_string()),
            (
                COORDINATOR_ENV.to_string(),
                coordinator
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{host}:{}", options.coordinator_port)),
            ),
        ]);
        if self.json_path.is_some() {
            options.env.push((JSON_ENV.into(), POD_JSON_PATH.into()));
        }
        if self.serves_metrics {
            options.env.push((FRAMES_ENV.into(), "1".into()));
        }
        Ok(options)
    }
}

/// A Job ready to run (`Launch::job`).
pub struct Job {
    cluster: Cluster,
    manifests: Manifests,
    start_timeout: std::time::Duration,
    pub name: String,
}

impl Job {
    /// Creates the Job, follows it until it ends or `stop` is set, and deletes it; the pods'
    /// error lines go to this process's standard error.
    pub fn run(self, stop: Arc<AtomicBool>) -> Result<Ending, Failure> {
        let outcome = follow(
            &self.cluster,
            self.manifests,
            self.start_timeout,
            stop,
            false,
            None,
        )?;
        Ok(outcome.ending)
    }
}

/// Where pod 0 writes `--json` (the launcher passes `--json` with this path to the pods).
pub fn pod_json_path() -> &'static str {
    POD_JSON_PATH
}

/// The kubeconfig (or in-cluster config) and context the options name can be read: said
/// before anything else is done (the API server itself is reached when a Job is made).
pub fn check_cluster(kube: &KubeArgs) -> CommandResult {
    connect(kube).map(|_| ())
}

pub fn connect(kube: &KubeArgs) -> Result<Cluster, Failure> {
    Cluster::connect(
        kube.kubeconfig.as_deref().map(std::path::Path::new),
        kube.context.as_deref(),
    )
    .map_err(|e| Failure::input(e.0))
}

/// Prints the manifests after the API server's dry run (or says none could be asked).
pub fn print_dry_run(cluster: Result<Cluster, Failure>, manifests: &Manifests) -> CommandResult {
    match cluster {
        Ok(cluster) => {
            cluster
                .dry_run(manifests)
                .map_err(|e| Failure::input(e.0))?;
            eprintln!("stampede: the API server accepted these objects (dry run: nothing created)");
        }
        Err(failure) => eprintln!(
            "stampede: warning: not checked by an API server ({}); nothing created",
            failure.message()
        ),
    }
    let list =
        serde_json::to_string_pretty(&manifests.to_list()).expect("plain data serializes to JSON");
    println!("{list}");
    Ok(())
}

/// `relay`: the pods' progress and output on this terminal (a command's own run); else only
/// their error lines (a lab's run, whose lines are the lab's).
fn follow(
    cluster: &Cluster,
    manifests: Manifests,
    start_timeout: std::time::Duration,
    stop: Arc<AtomicBool>,
    relay: bool,
    feed: Option<&RunFeed>,
) -> Result<stampede_kube::LaunchOutcome, Failure> {
    let mut on_status = |status: &str| {
        if relay {
            eprintln!("stampede: {status}")
        }
    };
    let mut on_frame = |frame: Frame<'_>| match frame {
        Frame::Stdout(line) if relay => println!("{line}"),
        Frame::Stderr(line) | Frame::Raw(line) => eprintln!("{line}"),
        Frame::Metrics(json) => {
            if let Some(feed) = feed {
                live_frames::receive(json, feed)
            }
        }
        Frame::Stdout(_) | Frame::Json(_) | Frame::Exit(_) => {}
    };
    let watch = Watch {
        stop: stop.clone(),
        start_timeout,
        on_status: &mut on_status,
        on_frame: &mut on_frame,
    };
    let outcome = cluster.run(manifests, watch);
    if stop.load(Ordering::SeqCst) {
        return Ok(stampede_kube::LaunchOutcome {
            ending: Ending::Interrupted,
            json: Vec::new(),
        });
    }
    outcome.map_err(|e| Failure::run(e.0))
}

/// `stampede-<command>-<5 letters>`: unique enough for concurrent runs of one namespace.
pub fn job_name(command: &[&str]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let seed = now ^ u64::from(std::process::id()) << 20;
    let mut random = stampede_script::prng::PgPrng::seeded(seed);
    let suffix: String = (0..5)
        .map(|_| {
            let letters = b"abcdefghijklmnopqrstuvwxyz0123456789";
            letters[(random.next_u64() % letters.len() as u64) as usize] as char
        })
        .collect();
    format!("stampede-{}-{suffix}", command.join("-"))
}

/// A password on the command line would be written into the Job's manifest.
/// `--metrics-addr` and `--serve-token` of the user's words: served here, on the user's
/// machine, from pod 0's frames; the pods get neither (nothing reaches the pods' network).
fn take_metrics(args: &mut Vec<String>) -> MetricsArgs {
    let metrics = MetricsArgs {
        metrics_addr: option_value(args, "--metrics-addr"),
        token: crate::live::endpoint::TokenArgs {
            serve_token: option_value(args, "--serve-token")
                .or_else(|| std::env::var("STAMPEDE_SERVE_TOKEN").ok()),
        },
    };
    for option in ["--metrics-addr", "--serve-token"] {
        *args = replace_option(args, option, None);
    }
    metrics
}

/// The value of a long option given as `--option VALUE` or `--option=VALUE` (the last one).
fn option_value(args: &[String], option: &str) -> Option<String> {
    let inline = format!("{option}=");
    let mut value = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == option {
            value = words.next().cloned();
        } else if let Some(given) = word.strip_prefix(&inline) {
            value = Some(given.to_string());
        }
    }
    value
}

fn refuse_passwords(args: &[String]) -> Result<(), Failure> {
    let has_password = |arg: &str| {
        let lower = arg.to_ascii_lowercase();
        lower.split_whitespace().any(|w| w.starts_with("password="))
            || ((lower.starts_with("postgres://") || lower.starts_with("postgresql://"))
                && lower
                    .split_once("://")
                    .and_then(|(_, rest)| rest.split_once('@'))
                    .is_some_and(|(user, _)| user.contains(':')))
    };
    // `--pgsql-password=x`, `--mysql-password x`, `--password x` (the user's own option names).
    let password_option = |arg: &String| {
        arg.strip_prefix("--").is_some_and(|name| {
            let name = name.split_once('=').map_or(name, |(name, _)| name);
            name.replace('_', "-").ends_with("password")
        })
    };
    if args.iter().any(|a| has_password(a) || password_option(a)) {
        return Err(Failure::input(
            "a password on the command line would be written into the Job's manifest: keep it \
             in a Kubernetes Secret and give --password-secret SECRET[/KEY]",
        ));
    }
    Ok(())
}

/// A spread run's server must be named: the managed default server is the launcher's machine's
/// alone. `host` is the command's `-h`; `dbnames` its database arguments (a URI or key=value
/// string may name the host).
pub fn require_named_server(
    host: Option<&str>,
    dbnames: &[Option<&String>],
) -> Result<(), Failure> {
    let named = host.is_some()
        || std::env::var_os("PGHOST").is_some()
        || dbnames
            .iter()
            .flatten()
            .any(|d| d.contains("host=") || d.contains("://"));
    if named {
        return Ok(());
    }
    Err(Failure::input(
        "--pods needs a server the pods can reach: give -h HOST (or PGHOST, or a connection \
         string); the managed default server is this machine's alone",
    ))
}

/// The arguments with every `option VALUE` / `option=VALUE` removed and, when `value` is
/// given, `option=value` added (a long option: `--json`, `--seed`).
pub fn replace_option(args: &[String], option: &str, value: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args.iter();
    let inline = format!("{option}=");
    while let Some(word) = words.next() {
        if word == option {
            words.next();
        } else if !word.starts_with(&inline) {
            out.push(word.clone());
        }
    }
    if let Some(value) = value {
        out.push(format!("{option}={value}"));
    }
    out
}

/// The command line without the Kubernetes options (`--pods 3`, `--namespace=x`, `--dry-run`).
pub fn without_kube_options(args: &[String]) -> Vec<String> {
    partition_kube_options(args).1
}

/// The Kubernetes options of a command line that its own parser does not know (sysbench's
/// form), read as clap reads them; and the rest of the line.
pub fn take_kube_options(args: &[String]) -> Result<(KubeArgs, Vec<String>), Failure> {
    let (words, rest) = partition_kube_options(args);
    let command = KubeArgs::augment_args(Command::new("stampede").no_binary_name(true));
    let matches = command
        .try_get_matches_from(&words)
        .map_err(|e| Failure::input(e.kind().to_string()).with_note(&e.to_string()))?;
    let kube = <KubeArgs as clap::FromArgMatches>::from_arg_matches(&matches)
        .map_err(|e| Failure::input(e.to_string()))?;
    Ok((kube, rest))
}

/// (the Kubernetes options with their values, the other words), each in the order given.
fn partition_kube_options(args: &[String]) -> (Vec<String>, Vec<String>) {
    let command = KubeArgs::augment_args(Command::new("kube"));
    let takes_value = |long: &str| -> Option<bool> {
        command
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .map(|a| a.get_action().takes_values())
    };
    let (mut kube, mut kept) = (Vec::new(), Vec::new());
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let Some(long) = arg.strip_prefix("--") else {
            kept.push(arg.clone());
            continue;
        };
        let (name, inline_value) = match long.split_once('=') {
            Some((name, _)) => (name, true),
            None => (long, false),
        };
        match takes_value(name) {
            Some(true) if !inline_value => {
                kube.push(arg.clone());
                kube.extend(args.next().cloned());
            }
            Some(_) => kube.push(arg.clone()),
            None => kept.push(arg.clone()),
        }
    }
    (kube, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn kubernetes_options_are_removed_in_both_spellings() {
        let args = strings(&[
            "-S",
            "--pods",
            "3",
            "-c",
            "12",
            "--namespace=bench",
            "--host-network",
            "-j",
            "6",
            "--node-selector",
            "pool=a",
            "--dry-run",
            "--time=5",
        ]);
        assert_eq!(
            without_kube_options(&args),
            strings(&["-S", "-c", "12", "-j", "6", "--time=5"])
        );
    }

    #[test]
    fn kubernetes_options_are_taken_from_a_line_their_parser_does_not_know() {
        let args = strings(&["oltp.lua", "--pods=3", "--threads=6", "--dry-run", "run"]);
        let (kube, rest) = take_kube_options(&args).unwrap();
        assert_eq!(kube.pods, Some(3));
        assert!(kube.dry_run);
        assert_eq!(rest, strings(&["oltp.lua", "--threads=6", "run"]));
        let failure = take_kube_options(&strings(&["--pods=x"])).unwrap_err();
        assert!(
            failure.message().contains("invalid value"),
            "{}",
            failure.message()
        );
    }

    #[test]
    fn options_are_replaced_in_both_spellings() {
        let args = strings(&["-S", "--json", "out.json", "--random-seed=7", "-c", "4"]);
        let args = replace_option(&args, "--json", Some("/tmp/x.json"));
        let args = replace_option(&args, "--random-seed", Some("9"));
        assert_eq!(
            args,
            strings(&["-S", "-c", "4", "--json=/tmp/x.json", "--random-seed=9"])
        );
    }

    #[test]
    fn a_password_on_the_command_line_is_refused() {
        for bad in [
            "postgresql://app:secret@pg-rw/app",
            "host=pg-rw password=secret dbname=app",
        ] {
            assert!(refuse_passwords(&strings(&["-S", bad])).is_err(), "{bad}");
        }
        for bad in ["--pgsql-password=x", "--mysql_password=x", "--password"] {
            assert!(refuse_passwords(&strings(&[bad, "x"])).is_err(), "{bad}");
        }
        assert!(refuse_passwords(&strings(&["postgresql://app@pg-rw/app"])).is_ok());
    }

    #[test]
    fn job_names_are_dns_labels() {
        let name = job_name(&["tpcc", "run"]);
        assert!(name.starts_with("stampede-tpcc-run-"), "{name}");
        assert_eq!(name.len(), "stampede-tpcc-run-".len() + 5);
        assert!(name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    }
}
