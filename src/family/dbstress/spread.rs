//! `stampede dbstress run … --pods N`: the sessions spread over the pods of a Kubernetes
//! Indexed Job, a thread each as on one host, their numbers (and so `--anti-dead`'s object
//! slices) the whole run's, one seed for all; pod 0 reports the merged run, per statement too.

use super::args::RunArgs;
use crate::driver::{self, DriverEvent, RunPlan};
use crate::pods::launch::{
    pod_json_path, replace_option, require_named_server, without_kube_options, Launch,
};
use crate::pods::{PodRole, PodRun, SpreadResult};
use stampede_base::error::{CommandResult, Failure};

/// Launches the run as an Indexed Job once its options are checked.
pub fn launch(args: &RunArgs, sessions: u32, seed: u64) -> CommandResult {
    let pods = args.kube.pods.expect("--pods");
    let sessions = sessions as usize;
    if sessions < pods {
        return Err(Failure::input(format!(
            "{sessions} session(s) cannot be spread over {pods} pods: give --sessions {pods} or more"
        )));
    }
    let connection = &args.connection;
    let mariadb = matches!(connection.engine.as_str(), "mariadb" | "mysql");
    if mariadb {
        let host = connection.connection.host.as_deref();
        if host.is_none_or(|h| h == "localhost") || connection.socket.is_some() {
            return Err(Failure::input(
                "--pods needs a server the pods can reach: give -h HOST (not localhost, which \
                 is this machine's socket)",
            ));
        }
    } else {
        require_named_server(
            connection.connection.host.as_deref(),
            &[connection.connection.dbname.as_ref()],
        )?;
    }
    // The words after "stampede dbstress run", as the user gave them.
    let given: Vec<String> = std::env::args().skip(3).collect();
    let mut pod_args = without_kube_options(&given);
    let json = args.json.as_ref().map(|_| pod_json_path());
    pod_args = replace_option(&pod_args, "--json", json);
    pod_args = replace_option(&pod_args, "--seed", Some(&seed.to_string()));
    Launch {
        command: &["dbstress", "run"],
        kube: &args.kube,
        args: pod_args,
        files: Default::default(),
        json_path: args.json.as_ref().map(|p| p.display().to_string()),
        password_variable: if mariadb { "MYSQL_PWD" } else { "PGPASSWORD" },
    }
    .run()
}

/// One pod's sessions (pod 0 prints `heading` once every pod is there); on pod 0 the merged
/// run, for the report.
pub fn run_in_pod(
    heading: &str,
    mut plan: RunPlan,
    role: PodRole,
) -> Result<Option<SpreadResult>, Failure> {
    let mut pod = PodRun::start(role, Box::new(|_| {}))?;
    if pod.role.index == 0 {
        println!("{heading}");
    }
    if let Err(failure) = pod.join() {
        pod.finish(Err(failure.clone()), 0, 0)?;
        return Err(failure);
    }
    plan.share = Some(pod.share(plan.threads));
    plan.stop = Some(pod.stop_flag());
    let here = plan.threads_here();
    let sessions_here = plan.clients_per_thread()[here.clone()].iter().sum();
    let result = driver::run(plan, &mut |event| match event {
        DriverEvent::Interval(interval) => pod.interval(interval),
        DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
        _ => {}
    });
    pod.finish(result, sessions_here, here.len())
}
