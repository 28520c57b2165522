//! `stampede tpcc run … --pods N`: the virtual users spread over the pods of a Kubernetes
//! Indexed Job, one thread each, their ids (and so their home warehouses, client % W + 1) the
//! whole run's. NOPM stays exact across pods: at the rampup's end and at the measured run's
//! end every pod holds its users between transactions until all pods have arrived, and pod 0
//! reads the server's counters while none runs; without a rampup, pod 0 reads them before any
//! pod starts and after every pod has finished.

use super::args::RunArgs;
use super::random::{NurandConstants, TpccRandom};
use super::run::{self, Control, Counters, TpccReport};
use crate::driver::{self, DriverEvent};
use crate::family::common::connection::endpoint;
use crate::family::common::measure::check_aborted;
use crate::pods::launch::{
    pod_json_path, replace_option, require_named_server, without_kube_options, Launch,
};
use crate::pods::{PodRole, PodRun};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::Endpoint;

/// Launches the run as an Indexed Job once its options are checked.
pub fn launch(args: &RunArgs) -> CommandResult {
    let pods = args.kube.pods.expect("--pods");
    let settings = run::settings(args)?;
    crate::driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &settings.limit)
        .map_err(Failure::input)?;
    if settings.vu < pods {
        return Err(Failure::input(format!(
            "{} virtual user(s) cannot be spread over {pods} pods: give --vu {pods} or more",
            settings.vu
        )));
    }
    if let Endpoint::Mysql(_) = endpoint(&args.connection)? {
        return Err(Failure::input(
            "--pods spreads TPROC-C on PostgreSQL only; run MariaDB/MySQL's from one client",
        ));
    }
    require_named_server(
        args.connection.connection.host.as_deref(),
        &[args.connection.connection.dbname.as_ref()],
    )?;
    // The words after "stampede tpcc run", as the user gave them.
    let given: Vec<String> = std::env::args().skip(3).collect();
    let mut pod_args = without_kube_options(&given);
    let json = args.json.as_ref().map(|_| pod_json_path());
    pod_args = replace_option(&pod_args, "--json", json);
    // One seed for every pod: the same NURand constants, each user's own stream.
    pod_args = replace_option(&pod_args, "--seed", Some(&settings.seed.to_string()));
    Launch {
        command: &["tpcc", "run"],
        kube: &args.kube,
        args: pod_args,
        files: Default::default(),
        json_path: args.json.as_ref().map(|p| p.display().to_string()),
        password_variable: "PGPASSWORD",
    }
    .run()
}

/// One pod's virtual users; on pod 0 also the counters and the merged report.
pub fn run_in_pod(args: &RunArgs, role: PodRole) -> CommandResult {
    let settings = run::settings(args)?;
    let stall_timeout =
        crate::driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &settings.limit)
            .map_err(Failure::input)?;
    let endpoint = endpoint(&args.connection)?;
    let mut pod = PodRun::start(
        role,
        Box::new(|interval| {
            if (interval.index + 1) % 10 == 0 {
                println!(
                    "[ {}s ] {:.1} transactions/s",
                    interval.index + 1,
                    interval.stats.latency.count as f64
                );
            }
        }),
    )?;
    let first = pod.role.index == 0;
    let opened = Control::open(&endpoint, args.warehouses);
    // Without a rampup the window opens before any pod's users connect: pod 0 reads the
    // counters before it joins, and the others connect only once every pod has joined.
    let mut before: Option<Result<Counters, Failure>> = match &opened {
        Ok((control, _, _)) if first && settings.rampup.is_zero() => {
            Some(control.settled_counters())
        }
        _ => None,
    };
    let joined = pod.join();
    let (control, warehouses, load_c_last) = match (opened, joined) {
        (Ok(opened), Ok(())) => opened,
        (Err(failure), _) | (_, Err(failure)) => {
            pod.finish(Err(failure.clone()), 0, 0)?;
            return Err(failure);
        }
    };
    if first {
        run::print_header(&settings, warehouses);
    }
    let constants = NurandConstants::for_run(
        &mut TpccRandom::seeded(settings.seed).prng,
        load_c_last,
        settings.rules,
    );
    let read = || control.counters();
    let mut at_end = None;
    let mut plan = run::plan(&endpoint, warehouses, constants, &settings)?;
    // One thread per virtual user, the same on every pod, split as the users are.
    plan.threads = settings.vu;
    plan.share = Some(pod.share(settings.vu));
    plan.warmup = settings.rampup;
    plan.stop = Some(pod.stop_flag());
    plan.stall_timeout = stall_timeout;
    let here = plan.threads_here();
    let users_here = plan.clients_per_thread()[here.clone()].iter().sum();
    let result = driver::run(plan, &mut |event| match event {
        DriverEvent::WarmupEnded => {
            if let Some(counters) = read_together(&pod, "rampup-ended", first, &read) {
                before = Some(counters);
            }
        }
        DriverEvent::MeasuredEnded => {
            if let Some(counters) = read_together(&pod, "measured-ended", first, &read) {
                at_end = Some(counters);
            }
        }
        DriverEvent::Interval(interval) => pod.interval(interval),
        DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
        DriverEvent::ClientNotice(_) => {}
    });
    let Some(spread) = pod.finish(result, users_here, here.len())? else {
        return Ok(());
    };
    let after = match at_end {
        Some(counters) => counters?,
        None => control.settled_counters()?,
    };
    check_aborted(spread.merged.aborted_clients, "virtual user", "")?;
    let before = before.ok_or_else(|| Failure::run("the run was stopped within its rampup"))??;
    let mut report = TpccReport::new(&settings, &spread.merged, before, after);
    report.spread = Some(spread.summary);
    print!("{}", report.text());
    if let Some(path) = &args.json {
        crate::report::write_file(path, &report.json())?;
    }
    Ok(())
}

/// At a point every pod's driver holds its users between transactions: once all pods are
/// there, pod 0 reads the counters, and once it has, every pod goes on. The reading, on pod 0.
/// A barrier that fails (another pod failed) reads nothing: the coordinator's abort stops the
/// run and says why.
fn read_together(
    pod: &PodRun,
    phase: &str,
    first: bool,
    read: &dyn Fn() -> Result<Counters, Failure>,
) -> Option<Result<Counters, Failure>> {
    pod.barrier(phase).ok()?;
    let counters = first.then(read);
    pod.barrier(&format!("{phase}-read")).ok()?;
    counters
}
