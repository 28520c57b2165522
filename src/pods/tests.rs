//! The one spread path with a family made for the test: it states its split and runs its one
//! pipeline with a `Place`, and gets `--pods` from that alone — the pods' command line made
//! from the user's words, and two pods (threads here, a coordinator on loopback) running the
//! pipeline against a scripted server, the leader reporting the merged run.

use std::net::TcpListener;

use super::place::{Place, Ran};
use super::role::PodRole;
use super::spread::{Split, Spread};
use super::KubeArgs;
use crate::driver::{Protocol, RunLimit, RunPlan, WeightedScript};
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_script::{parse_script, VarTable};
use stampede_wire::scripted::ScriptedServer;

const STATEMENT: &str = "SELECT 1;";
const PER_CLIENT: u64 = 5;

/// The fixture family's statement of its split: clients, given with `--clients`.
fn fixture_spread(kube: &KubeArgs, clients: usize) -> Spread<'_> {
    Spread {
        command: &["fixture", "run"],
        kube,
        split: Split {
            count: clients,
            what: "client(s)",
            option: "--clients ",
        },
        checks: Ok(()),
        seed: ("--seed", 42),
        json: Some("mine.json".into()),
        ship: None,
        extra: Vec::new(),
        password_variable: "PGPASSWORD",
    }
}

/// The fixture family's one pipeline: its plan (a thread per client, each running
/// `PER_CLIENT` transactions), run where its place is.
fn fixture_pipeline(
    mut place: Place,
    server: &ScriptedServer,
    clients: usize,
) -> Result<Option<Ran>, Failure> {
    place.join(Ok(()), |_| {})?;
    let mut variables = VarTable::default();
    let script = parse_script("fixture", "fixture", STATEMENT, &mut variables).expect("a script");
    let mut plan = RunPlan::for_workload(
        &Endpoint::Postgres(server.spec()),
        clients,
        RunLimit::TransactionsPerClient(PER_CLIENT),
        Protocol::Simple,
        vec![WeightedScript { script, weight: 1 }],
        variables,
        7,
    );
    plan.threads = clients;
    place.run(plan, &mut |_| {})
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn a_family_gets_the_pods_command_line_from_its_split_alone() {
    let kube = KubeArgs {
        pods: Some(2),
        ..KubeArgs::default()
    };
    let given = strings(&[
        "--clients",
        "4",
        "--pods",
        "2",
        "--namespace",
        "lab",
        "--json",
        "mine.json",
        "--seed=7",
    ]);
    let (words, files) = fixture_spread(&kube, 4)
        .pod_line(&given)
        .expect("a pod line");
    assert_eq!(
        words,
        strings(&[
            "--clients",
            "4",
            "--json=/tmp/stampede-result.json",
            "--seed=42"
        ])
    );
    assert!(files.is_empty());
    let refused = fixture_spread(&kube, 1).pod_line(&given).unwrap_err();
    assert_eq!(
        refused.message(),
        "1 client(s) cannot be spread over 2 pods: give --clients 2 or more"
    );
}

#[test]
fn a_family_runs_its_one_pipeline_as_pods_and_the_leader_gets_the_merged_run() {
    let server = ScriptedServer::start(|_| None);
    let clients = 4;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let role = |index| PodRole {
        run: "fixture".into(),
        index,
        pods: 2,
        coordinator: format!("127.0.0.1:{port}"),
    };
    let (leader, other) = std::thread::scope(|scope| {
        let pods: Vec<_> = (0..2)
            .map(|index| {
                let (role, server) = (role(index), &server);
                scope.spawn(move || {
                    let place = Place::pod(role, Box::new(|_| {}))?;
                    fixture_pipeline(place, server, clients)
                })
            })
            .collect();
        let mut ran = pods.into_iter().map(|pod| pod.join().expect("a pod"));
        (ran.next().unwrap(), ran.next().unwrap())
    });
    let leader = leader.expect("pod 0's run").expect("pod 0 leads");
    assert!(other.expect("pod 1's run").is_none());
    let total = clients as u64 * PER_CLIENT;
    assert_eq!(leader.result.total.latency.count, total);
    assert_eq!(server.calls_of(STATEMENT) as u64, total);
    let spread = leader.spread.expect("a spread run's pods");
    let shares: Vec<(usize, u64)> = spread
        .pods
        .iter()
        .map(|pod| (pod.clients, pod.transactions))
        .collect();
    assert_eq!(shares, [(2, 10), (2, 10)]);
    // The same pipeline on this host alone: the whole run, no pods.
    let here = fixture_pipeline(Place::here(Box::new(|_| {})), &server, clients)
        .expect("a run")
        .expect("this host leads");
    assert_eq!(here.result.total.latency.count, total);
    assert!(here.spread.is_none());
}
