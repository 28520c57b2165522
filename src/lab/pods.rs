//! A lab run whose clients come from the pods of a Kubernetes Indexed Job (a workload's
//! `pods = N`). The lab is the coordinator: it listens where the pods reach it (they reach its
//! servers already), each pod runs the workload's run with its share of the threads
//! (`stampede lab pod-run`), and the lab opens its measuring window (server counters,
//! statements, probes) while every pod is held between the warmup and the measured run. The
//! run's seconds are the pods' seconds merged (their histograms added), so the lab's numbers
//! are those of the union, as for a local run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stampede_kube::launch::Ending;
use stampede_kube::manifest::FILES_DIR;
use stampede_spread::coordinator::CoordinatorOptions;
use stampede_spread::{Coordinator, CoordinatorEvent};

use super::spec::WorkloadSpec;
use crate::driver::{IntervalReport, Protocol};
use crate::family::api::{Measurement, RunObserver, RunRequest};
use crate::family::common::measure::Window;
use crate::lab::targets::PodLoad;
use crate::pods::launch::Launch;
use crate::pods::role::{merged_interval, pods_table};
use crate::pods::{KubeArgs, PodRole, PodRun, PodShare};
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::{ConnFlags, Endpoint, MysqlSpec};
use stampede_store::PodRow;

/// The barrier between the warmup and the measured run, where the lab opens its window.
const WINDOW: &str = "window";
/// How long the lab waits for the pods to join (scheduling, image pulls).
const JOIN_TIMEOUT: Duration = Duration::from_secs(600);
/// The request's file in the pods.
const REQUEST_FILE: &str = "request.json";

/// What one pod runs: the workload as the spec gives it and the run as the lab asks for it.
#[derive(Serialize, Deserialize)]
struct PodRequest {
    workload: String,
    options: serde_json::Value,
    variant: String,
    scale: i64,
    clients: usize,
    threads: usize,
    protocol: String,
    warmup_s: f64,
    duration_s: f64,
    stall_timeout_s: Option<f64>,
    server: PodServer,
}

/// Where the pods connect (a password comes from `password_secret`).
#[derive(Serialize, Deserialize)]
struct PodServer {
    mariadb: bool,
    host: String,
    port: u16,
    user: String,
    database: String,
}

/// What each pod sends at the end besides its share's row.
#[derive(Serialize, Deserialize)]
struct PodPart {
    /// The whole run's clients (zero for the other pods').
    client_transactions: Vec<u64>,
}

/// Where a run's pods connect and how they get the role's password.
#[derive(Debug)]
pub struct PodAccess {
    pub kube: KubeArgs,
    /// The lab may give the role a password of the run's own (a server it started, whose
    /// password nobody kept); never on a server it reaches by URL or a Cluster's.
    pub own_password: bool,
}

/// The server a run's pods load, as the executor knows it.
pub enum PodTarget<'a> {
    /// A server the lab started: the pods reach it at `[kubernetes] server_address`.
    Managed,
    /// A server that says where its load comes from (a Cluster: its `-rw` Service, its
    /// superuser's Secret, apart from its instances unless the spec gives the pods' affinity).
    Load(&'a PodLoad),
    /// A server reached by URL: the pods connect where the URL does, with the password in
    /// `[kubernetes] password_secret`.
    Url(&'a Endpoint),
}

/// The `[kubernetes]` options of a run loaded from pods; the pods reach the lab where they
/// reached it before.
pub fn kube_for(kube: &KubeArgs, target: PodTarget<'_>) -> Result<PodAccess, Failure> {
    let mut kube = kube.clone();
    match target {
        PodTarget::Managed => {
            // The spec's Secret is a URL's password, not this server's.
            kube.password_secret = None;
            return Ok(PodAccess {
                kube,
                own_password: true,
            });
        }
        PodTarget::Load(load) => {
            kube.coordinator_address = Some(coordinator_address(&kube));
            kube.server_address = Some(load.host.clone());
            kube.password_secret = Some(load.password_secret.clone());
            if kube.affinity.is_none() {
                kube.affinity = Some(apart_from(&load.apart_from));
            }
        }
        PodTarget::Url(conn) => {
            // `server_address` is where the lab's own servers answer (this machine), which is
            // where the pods reach the lab when nothing else says.
            kube.coordinator_address = Some(coordinator_address(&kube));
            kube.server_address = Some(url_host(conn)?);
            check_url_password(&kube, conn)?;
        }
    }
    Ok(PodAccess {
        kube,
        own_password: false,
    })
}

/// A preferred pod anti-affinity to the pods labelled (key, value), per node.
fn apart_from((key, value): &(String, String)) -> String {
    serde_json::json!({"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {key: value}},
                "topologyKey": "kubernetes.io/hostname"
            }
        }]
    }})
    .to_string()
}

/// Where a URL connects, for the pods: its numeric address when it gives one, else its host.
fn url_host(conn: &Endpoint) -> Result<String, Failure> {
    let Endpoint::Postgres(conn) = conn else {
        return Err(Failure::input(
            "pods = N runs against PostgreSQL servers (a MariaDB server's clients run here)",
        ));
    };
    if let Some(address) = conn.hostaddr {
        return Ok(address.to_string());
    }
    if conn.host.starts_with('/') || conn.host.starts_with('@') {
        return Err(Failure::input(format!(
            "pods = N: the URL reaches its server by the unix socket in {}, which pods cannot; give the address pods reach it at as [kubernetes] server_address",
            conn.host
        )));
    }
    Ok(conn.host.clone())
}

/// A role with a password gets it from a Secret the user made: the lab never writes a
/// user's password into a Secret of its own, nor changes the role's.
fn check_url_password(kube: &KubeArgs, conn: &Endpoint) -> Result<(), Failure> {
    let Endpoint::Postgres(conn) = conn else {
        return Ok(());
    };
    if conn.password.is_some() && kube.password_secret.is_none() {
        return Err(Failure::input(format!(
            "pods = N: role \"{}\" logs in with a password, which the pods read from a Secret: give [kubernetes] password_secret = \"SECRET/KEY\" (the lab does not write your password into one, nor change the role's)",
            conn.user
        )));
    }
    Ok(())
}

/// Where the pods reach the lab: the spec's coordinator address, else the lab's servers'
/// address, else this machine's loopback (pods on its network).
fn coordinator_address(kube: &KubeArgs) -> String {
    kube.coordinator_address
        .clone()
        .or_else(|| kube.server_address.clone())
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// Measures one run from `pods` pods; `observer` is the lab's.
pub fn measure(
    access: &PodAccess,
    workload: &WorkloadSpec,
    pods: usize,
    variant: &str,
    request: &RunRequest<'_>,
    observer: &mut dyn RunObserver,
) -> Result<Measurement, Failure> {
    let (pod_request, files) = pod_request(&access.kube, workload, variant, request)?;
    let mut kube = access.kube.clone();
    kube.pods = Some(pods);
    let port = kube.coordinator_port();
    let address = coordinator_address(&kube);
    // A server whose role's password is in a Secret is reached with it; the lab's own servers
    // get a password of the run's; a role without one (trust, certificates) goes without.
    let password = match kube.password_secret {
        Some(_) => None,
        None if access.own_password => Some(pods_password(request.conn)?),
        None => None,
    };
    let mut files = files;
    files.insert(REQUEST_FILE.into(), pod_request);
    let job = Launch {
        command: &["lab", "pod-run"],
        kube: &kube,
        args: vec![format!("{FILES_DIR}/{REQUEST_FILE}")],
        files,
        json_path: None,
        password_variable: if workload_on_mysql(request.conn) {
            "MYSQL_PWD"
        } else {
            "PGPASSWORD"
        },
        serves_metrics: false,
    }
    .job(&format!("{address}:{port}"), password)?;
    let cancel = Arc::new(AtomicBool::new(false));
    // On loopback (pods on this machine's network) the lab listens there alone.
    let loopback = address
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback());
    let listen = if loopback {
        address.as_str()
    } else {
        "0.0.0.0"
    };
    let coordinator = Coordinator::bind(
        (listen, port),
        CoordinatorOptions {
            run: job.name.clone(),
            pods,
            join_timeout: JOIN_TIMEOUT,
            start_margin: Duration::from_millis(200),
            cancel: Some(cancel.clone()),
        },
    )
    .map_err(|e| Failure::run(format!("could not listen for the pods on port {port}: {e}")))?;
    let duration_s = request.duration.as_secs_f64().ceil().max(1.0) as u64;
    let mut window = Window::new(duration_s);
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        let follower = {
            let (stop, cancel) = (stop.clone(), cancel.clone());
            let lab_stop = request.stop.clone();
            scope.spawn(move || {
                // The lab's own signal stops the pods too.
                let watcher = scope.spawn({
                    let stop = stop.clone();
                    move || {
                        while !stop.load(Ordering::SeqCst) {
                            if lab_stop.load(Ordering::SeqCst) {
                                stop.store(true, Ordering::SeqCst);
                            }
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                });
                let ending = job.run(stop.clone());
                cancel.store(true, Ordering::SeqCst);
                stop.store(true, Ordering::SeqCst);
                let _ = watcher.join();
                ending
            })
        };
        let outcomes = coordinator.run(&mut |event| match event {
            CoordinatorEvent::Passing { phase } if phase == WINDOW => observer.open_window(),
            CoordinatorEvent::Interval { index, reports } => {
                window.add(&merged_interval(index, reports), observer)
            }
            _ => {}
        });
        if outcomes.is_err() {
            stop.store(true, Ordering::SeqCst);
        }
        let ending = follower.join().expect("the Job's follower");
        let outcomes = match (outcomes, ending) {
            (Ok(outcomes), _) => outcomes,
            // Kubernetes' account (a pod that could not start, or failed) comes first.
            (Err(_), Err(failure)) => return Err(failure),
            (Err(error), Ok(Ending::Interrupted | Ending::Exited(_))) => {
                return Err(Failure::run(error.0))
            }
        };
        let (parts, summary) = pods_table::<PodPart>(outcomes)?;
        let client_cpu_s: f64 = summary.pods.iter().map(|p| p.client_cpu_s).sum();
        let clients = parts.iter().map(|p| p.client_transactions.len()).max();
        let mut transactions = vec![0; clients.unwrap_or(0)];
        for part in &parts {
            for (sum, count) in transactions.iter_mut().zip(&part.client_transactions) {
                *sum += count;
            }
        }
        let mut measurement =
            window.measurement(Duration::from_secs_f64(client_cpu_s), &transactions);
        measurement.pods = summary
            .pods
            .iter()
            .map(|p| PodRow {
                pod: p.pod as u64,
                clients: p.clients as u64,
                threads: p.threads as u64,
                transactions: p.transactions,
                client_cpu_s: p.client_cpu_s,
                cpu_busy: p.cpu_busy,
                cores: p.cores as u64,
                clock_offset_ms: p.clock_offset_ms,
                start_skew_ms: p.start_skew_ms,
            })
            .collect();
        Ok(measurement)
    })
}

/// A fresh password for the pods' connections over TCP: the lab's servers were made with one
/// nobody kept (the lab itself uses the local socket), so each spread run sets its own, which
/// reaches the pods through the run's Secret only.
fn pods_password(conn: &Endpoint) -> Result<String, Failure> {
    let Endpoint::Postgres(conn) = conn else {
        return Err(Failure::input(
            "pods = N runs against the lab's PostgreSQL targets (a MariaDB target's clients run here)",
        ));
    };
    let password = crate::server::postgres::provision::random_password()?;
    // The password is hex; the role's name is quoted as an identifier.
    let statement = format!(
        "ALTER ROLE \"{}\" PASSWORD '{password}'",
        conn.user.replace('"', "\"\"")
    );
    stampede_conn::control_runtime().block_on(async {
        let client = stampede_control::postgres::connect_quietly(conn).await?;
        client
            .batch_execute(&statement)
            .await
            .map_err(|e| Failure::run(format!("could not set the pods' password: {e}")))
    })?;
    Ok(password)
}

fn workload_on_mysql(conn: &Endpoint) -> bool {
    matches!(conn, Endpoint::Mysql(_))
}

/// The pods' request and the files it names (a script variant is shipped under its name).
fn pod_request(
    kube: &KubeArgs,
    workload: &WorkloadSpec,
    variant: &str,
    request: &RunRequest<'_>,
) -> Result<(String, BTreeMap<String, String>), Failure> {
    let mut files = BTreeMap::new();
    let path = std::path::Path::new(variant);
    let variant = match std::fs::read_to_string(path) {
        Ok(text) if path.is_file() => {
            let name = format!(
                "variant-{}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            files.insert(name.clone(), text);
            format!("{FILES_DIR}/{name}")
        }
        _ => variant.to_string(),
    };
    let host = kube
        .server_address
        .clone()
        .unwrap_or_else(|| "127.0.0.1".into());
    let server = match request.conn {
        Endpoint::Postgres(conn) => PodServer {
            mariadb: false,
            host,
            port: conn.port,
            user: conn.user.clone(),
            database: conn.dbname.clone(),
        },
        Endpoint::Mysql(spec) => PodServer {
            mariadb: true,
            host,
            port: spec.port,
            user: spec.user.clone(),
            database: spec.database.clone(),
        },
    };
    let pod_request = PodRequest {
        workload: workload.name.clone(),
        options: serde_json::to_value(&workload.options).expect("plain data serializes to JSON"),
        variant,
        scale: request.scale,
        clients: request.clients,
        threads: request.threads,
        protocol: request.protocol.name().to_string(),
        warmup_s: request.warmup.as_secs_f64(),
        duration_s: request.duration.as_secs_f64(),
        stall_timeout_s: request.stall_timeout.map(|d| d.as_secs_f64()),
        server,
    };
    Ok((
        serde_json::to_string_pretty(&pod_request).expect("plain data serializes to JSON"),
        files,
    ))
}

/// `stampede lab pod-run FILE`: one pod's part of a lab run (the Job's pods run it).
pub fn run_pod(path: &std::path::Path) -> CommandResult {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("could not read {}: {e}", path.display())))?;
    let request: PodRequest = serde_json::from_str(&text)
        .map_err(|e| Failure::input(format!("{} is not a pod's request: {e}", path.display())))?;
    let role = PodRole::from_env()?.ok_or_else(|| {
        Failure::input("`lab pod-run` runs in a pod of a lab's Job (its environment says which)")
    })?;
    let kind = crate::family::lab_workload(&request.workload)
        .ok_or_else(|| Failure::input(format!("unknown workload \"{}\"", request.workload)))?;
    let options: toml::Table = serde_json::from_value(request.options.clone())
        .map_err(|e| Failure::input(format!("the workload's options: {e}")))?;
    let workload = (kind.create)(&options).map_err(|e| Failure::input(e.to_string()))?;
    let endpoint = endpoint(&request.server)?;
    let mut pod = PodRun::worker(role);
    pod.join()?;
    let run = RunRequest {
        conn: &endpoint,
        scale: request.scale,
        clients: request.clients,
        threads: request.threads,
        protocol: Protocol::from_name(&request.protocol)
            .ok_or_else(|| Failure::input(format!("unknown protocol \"{}\"", request.protocol)))?,
        warmup: Duration::from_secs_f64(request.warmup_s),
        duration: Duration::from_secs_f64(request.duration_s),
        client_cpus: None,
        stop: pod.stop_flag(),
        stall_timeout: request.stall_timeout_s.map(Duration::from_secs_f64),
        share: Some(pod.share_maker()),
    };
    let mut observer = PodObserver {
        pod: &pod,
        client_cpu: Duration::ZERO,
        client_transactions: Vec::new(),
        window_transactions: 0,
    };
    let measured = workload.run(&request.variant, &run, &mut observer);
    let (client_cpu, client_transactions) = (observer.client_cpu, observer.client_transactions);
    let window_transactions = observer.window_transactions;
    let (clients, threads) = pod.shared_size(request.clients);
    let share = measured.map(|measurement| PodShare {
        transactions: window_transactions,
        part: PodPart {
            client_transactions,
        },
        clients,
        threads,
        client_cpu_s: client_cpu.as_secs_f64(),
        window_s: measurement.metrics.duration_s,
        cores: 0,
    });
    pod.finish_share(share).map(|_| ())
}

fn endpoint(server: &PodServer) -> Result<Endpoint, Failure> {
    if server.mariadb {
        return Ok(Endpoint::Mysql(MysqlSpec {
            socket: None,
            host: server.host.clone(),
            port: server.port,
            user: server.user.clone(),
            password: std::env::var("MYSQL_PWD").ok().filter(|p| !p.is_empty()),
            database: server.database.clone(),
        }));
    }
    crate::server::resolve_target(&ConnFlags {
        host: Some(server.host.clone()),
        port: Some(server.port.to_string()),
        user: Some(server.user.clone()),
        dbname: Some(server.database.clone()),
    })
    .map(Endpoint::Postgres)
}

/// A pod's observer: its window opens when every pod (and the lab) is there; its seconds and
/// its clients' counts go to the lab.
struct PodObserver<'a> {
    pod: &'a PodRun,
    client_cpu: Duration,
    client_transactions: Vec<u64>,
    /// The transactions of the seconds sent: this pod's part of the lab's window.
    window_transactions: u64,
}

impl RunObserver for PodObserver<'_> {
    fn open_window(&mut self) {
        // A barrier that fails (another pod failed) sets the stop flag the run ends on.
        let _ = self.pod.barrier(WINDOW);
    }

    fn second(&mut self, _index: u64, _tps: f64) {}

    fn interval(&mut self, interval: &IntervalReport) {
        self.window_transactions += interval.stats.latency.count;
        self.pod.interval(interval);
    }

    fn measured(&mut self, client_cpu: Duration, client_transactions: &[u64]) {
        self.client_cpu = client_cpu;
        self.client_transactions = client_transactions.to_vec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> PodLoad {
        PodLoad {
            pods: 2,
            host: "lab-a-rw".into(),
            password_secret: "lab-a-superuser/password".into(),
            apart_from: ("cnpg.io/cluster".into(), "lab-a".into()),
        }
    }

    #[test]
    fn a_cluster_s_pods_reach_its_service_with_its_secret_apart_from_its_instances() {
        let kube = KubeArgs {
            namespace: Some("bench".into()),
            ..KubeArgs::default()
        };
        let access = kube_for(&kube, PodTarget::Load(&load())).unwrap();
        assert!(!access.own_password);
        let placed = access.kube;
        assert_eq!(placed.server_address.as_deref(), Some("lab-a-rw"));
        assert_eq!(
            placed.password_secret.as_deref(),
            Some("lab-a-superuser/password")
        );
        // The pods reach the lab where they would have: loopback, with nothing said.
        assert_eq!(placed.coordinator_address.as_deref(), Some("127.0.0.1"));
        let affinity: serde_json::Value =
            serde_json::from_str(placed.affinity.as_deref().unwrap()).unwrap();
        let term =
            &affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
        assert_eq!(
            term["podAffinityTerm"]["labelSelector"]["matchLabels"]["cnpg.io/cluster"],
            "lab-a"
        );
        assert_eq!(
            term["podAffinityTerm"]["topologyKey"],
            "kubernetes.io/hostname"
        );
    }

    #[test]
    fn the_spec_s_own_placement_and_coordinator_win() {
        let kube = KubeArgs {
            affinity: Some("{}".into()),
            coordinator_address: Some("10.1.2.3".into()),
            ..KubeArgs::default()
        };
        let placed = kube_for(&kube, PodTarget::Load(&load())).unwrap().kube;
        assert_eq!(placed.affinity.as_deref(), Some("{}"));
        assert_eq!(placed.coordinator_address.as_deref(), Some("10.1.2.3"));
        // For a server the lab started, the options are the spec's.
        let as_given = kube_for(&kube, PodTarget::Managed).unwrap();
        assert!(as_given.own_password);
        assert_eq!(as_given.kube.server_address, None);
        assert_eq!(as_given.kube.password_secret, None);
    }

    fn url(conninfo: &str) -> Endpoint {
        Endpoint::Postgres(stampede_conn::ConnSpec::from_conninfo(conninfo).unwrap())
    }

    #[test]
    fn a_url_s_pods_connect_where_it_does_with_the_password_from_a_secret() {
        let kube = KubeArgs::default();
        // No password: the pods go without one, the role untouched.
        let access = kube_for(&kube, PodTarget::Url(&url("host=db.bench.svc user=app"))).unwrap();
        assert!(!access.own_password);
        assert_eq!(access.kube.server_address.as_deref(), Some("db.bench.svc"));
        assert_eq!(
            access.kube.coordinator_address.as_deref(),
            Some("127.0.0.1")
        );
        let numeric = url("host=db hostaddr=10.244.0.7 user=app");
        let access = kube_for(&kube, PodTarget::Url(&numeric)).unwrap();
        assert_eq!(access.kube.server_address.as_deref(), Some("10.244.0.7"));
        // A password must come from the user's Secret.
        let with_password = url("host=db user=app password=secret-value");
        let refused = kube_for(&kube, PodTarget::Url(&with_password)).unwrap_err();
        assert!(
            refused.message().starts_with("pods = N: role \"app\" logs in with a password, which the pods read from a Secret: give [kubernetes] password_secret"),
            "{}",
            refused.message()
        );
        assert!(!refused.message().contains("secret-value"));
        // The lab's own servers' address is where the pods reach the lab, not the URL's.
        let given = KubeArgs {
            password_secret: Some("app-db/password".into()),
            server_address: Some("10.0.0.5".into()),
            ..KubeArgs::default()
        };
        let access = kube_for(&given, PodTarget::Url(&with_password)).unwrap();
        assert_eq!(access.kube.server_address.as_deref(), Some("db"));
        assert_eq!(access.kube.coordinator_address.as_deref(), Some("10.0.0.5"));
        let socket = kube_for(
            &kube,
            PodTarget::Url(&url("host=/var/run/postgresql user=app")),
        );
        assert!(socket.unwrap_err().message().contains("unix socket"));
    }
}
