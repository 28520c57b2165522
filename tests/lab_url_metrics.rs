//! A url target's server CPU and disks read from Prometheus (node_exporter on this machine),
//! beside a managed target on the same binaries whose CPU comes from /proc.
//! suite: alone (the server's CPU is the node's less stampede's: another program's load on
//! the machine would count as the server's)

mod common;

use std::path::Path;

use common::cluster::OwnCluster;
use common::prometheus::Platform;
use common::{file_holds, lab_spec, sqlite, stampede_command, stderr, stdout, LabDir};
use stampede::server::postgres::binaries::Binaries;

fn path(spec: &Path) -> &str {
    spec.to_str().unwrap()
}

/// Bytes written to this machine's disks so far, as /proc/diskstats counts them (whole
/// disks: node_exporter leaves out partitions, loop, RAM and floppy devices too).
fn disk_bytes_written() -> u64 {
    std::fs::read_to_string("/proc/diskstats")
        .unwrap()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = *fields.get(2)?;
            let skipped = ["loop", "ram", "zram", "fd"]
                .iter()
                .any(|p| name.starts_with(p));
            let partition = name.ends_with(|c: char| c.is_ascii_digit())
                && (["sd", "vd", "hd", "xvd"]
                    .iter()
                    .any(|p| name.starts_with(p))
                    || (name.starts_with("nvme") && name.contains('p')));
            (!skipped && !partition).then(|| fields.get(9)?.parse::<u64>().ok())?
        })
        .sum::<u64>()
        * 512
}

/// Waits (at most a minute) until this machine's CPUs are all but idle: a server the tests
/// left busy (MariaDB purging after a write test) would count as the url server's CPU.
fn wait_for_a_quiet_machine() {
    let busy_and_total = || -> (f64, f64) {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let times: Vec<f64> = stat
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect();
        // idle and iowait are the 4th and 5th.
        let total: f64 = times.iter().sum();
        (total - times[3] - times[4], total)
    };
    let started = std::time::Instant::now();
    loop {
        let (busy, total) = busy_and_total();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let (busy_after, total_after) = busy_and_total();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let busy_cores = (busy_after - busy) / (total_after - total) * cores;
        if busy_cores < 0.05 || started.elapsed().as_secs() > 60 {
            return;
        }
    }
}

/// A url target whose server CPU comes from Prometheus (node_exporter's CPU time of this node,
/// less stampede's own) beside a managed target on the same binaries and settings, whose
/// server CPU is its processes' from /proc: per transaction, the two agree within 10%.
#[test]
fn server_cpu_read_from_prometheus_agrees_with_proc_on_the_same_binaries() {
    wait_for_a_quiet_machine();
    let platform = Platform::start();
    let settings = [
        ("shared_buffers", "128MB"),
        ("fsync", "off"),
        ("max_wal_size", "1GB"),
    ];
    let binaries = Binaries::find_best().expect("PostgreSQL binaries");
    let bin_dir = binaries.bin_dir.display().to_string();
    // The managed target's servers track statements too.
    let mut url_settings: Vec<(&str, String)> =
        settings.iter().map(|(k, v)| (*k, v.to_string())).collect();
    url_settings.push(("shared_preload_libraries", "pg_stat_statements".into()));
    let url_server = OwnCluster::start("url-metrics", binaries, &url_settings);
    let dir = LabDir::new("url-metrics");
    let spec_for = |instance: &str| {
        format!(
            "name = \"metrics\"\nruns = 5\nduration = \"4s\"\nwarmup = \"1s\"\nseed = 5\n\
             [[target]]\nname = \"managed\"\npostgres = \"{bin_dir}\"\nsettings = {{ {} }}\n\
             [[target]]\nname = \"url\"\nurl = \"{}\"\n\
             metrics = {{ prometheus = \"{}\", instance = \"{instance}\" }}\n\
             [[workload]]\nname = \"pgbench\"\nscripts = [\"select-only\"]\nscale = [1]\nclients = [2]\n\
             [[claim]]\nsays = \"the same binaries cost the server the same\"\nbase = \"managed\"\ntarget = \"url\"\n\
             workload = \"pgbench\"\nmetric = \"server_cpu\"\nexpect = \"within 20%\"\n",
            settings
                .iter()
                .map(|(k, v)| format!("{k} = \"{v}\""))
                .collect::<Vec<_>>()
                .join(", "),
            url_server.socket_conninfo(),
            platform.base
        )
    };
    let wrong = lab_spec(&dir, &spec_for("nowhere:9100"));
    let output = stampede_command(&["lab", "plan", path(&wrong)])
        .output()
        .unwrap();
    common::assert_refused(
        &output,
        &format!(
            "target \"url\": Prometheus at {} has no node_cpu_seconds_total for instance \"nowhere:9100\"; the instances it has: \"{}\"",
            platform.base, platform.instance
        ),
        "wrong instance",
    );
    let spec = lab_spec(&dir, &spec_for(&platform.instance));
    let plan = stampede_command(&["lab", "plan", path(&spec)])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let said = stderr(&plan);
    assert!(
        said.contains(&format!("server CPU and disks: node \"{}\" (", host.trim()))
            && said.contains(&format!(
                "through Prometheus at {}; stampede runs on that node: its own CPU is taken out",
                platform.base
            )),
        "{said}"
    );
    let written_before = disk_bytes_written();
    let output = stampede_command(&["lab", "run", path(&spec)])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let written_during_lab = disk_bytes_written() - written_before;
    let db = dir.join("metrics.db");
    // Each completed run's CPU µs per transaction from `source`, by round.
    let per_txn = |target: &str, source: &str| -> Vec<f64> {
        sqlite(
            &db,
            &format!(
                "SELECT (SELECT sum(k.value) FROM run_counters k WHERE k.run_id = r.id AND k.source = '{source}' \
                 AND k.name IN ('cpu_user_s', 'cpu_system_s')) * 1e6 / r.transactions \
                 FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = '{target}' AND r.status = 'completed' \
                 ORDER BY r.repetition"
            ),
        )
        .iter()
        .map(|row| row[0].parse().unwrap_or(f64::NAN))
        .collect()
    };
    // A server's CPU per transaction moves ±10% from run to run here (both sources alike), the
    // two targets' runs of one round side by side much less: the rounds' ratios are compared,
    // as the lab's own claim compares them (their geometric mean), over five rounds.
    let (managed, url) = (per_txn("managed", "server"), per_txn("url", "server"));
    assert_eq!((managed.len(), url.len()), (5, 5), "{managed:?} {url:?}");
    let ratio = (url
        .iter()
        .zip(&managed)
        .map(|(u, m)| (u / m).ln())
        .sum::<f64>()
        / 5.0)
        .exp();
    assert!(
        (0.9..=1.1).contains(&ratio),
        "server CPU µs per transaction by round: url (Prometheus) {url:.2?}, managed (/proc) {managed:.2?}, \
         geometric mean of the rounds' ratios {ratio:.3}"
    );
    // The server's machine as node_exporter describes it, against this machine's own files.
    let cpus = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        sqlite(&db, "SELECT server_machine FROM targets WHERE name = 'url'"),
        [[format!(
            "node \"{}\": {cpus} CPUs, {} MiB, kernel {} (node_exporter {})",
            host.trim(),
            mem_kib >> 10,
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap()
                .trim(),
            platform.instance
        )]]
    );
    // The node's CPU held the driver's too: taken out, it is what the server used.
    let (node, driver) = (per_txn("url", "node"), per_txn("url", "driver"));
    for ((node, driver), server) in node.iter().zip(&driver).zip(&url) {
        assert!(
            node > server && (node - driver - server).abs() < 0.05 * node,
            "node {node}, driver {driver}, server {server}"
        );
    }
    // Every CPU's time over each window, by the wall clock: all modes together are the node's
    // CPUs times the window, which holds the measured seconds and lies inside the run.
    for row in sqlite(
        &db,
        "SELECT (SELECT sum(k.value) FROM run_counters k WHERE k.run_id = r.id AND k.source = 'node' \
         AND k.name LIKE 'cpu_%'), r.ended_unix_s - r.started_unix_s \
         FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.target = 'url'",
    ) {
        let (cpu_s, run_s) = (common::number(&row[0]), common::number(&row[1]));
        assert!(
            cpu_s >= 4.0 * cpus as f64 && cpu_s <= run_s * cpus as f64,
            "{cpu_s} CPU-seconds over {cpus} CPUs in a run of {run_s} s"
        );
    }
    // The disks' bytes over the windows: within what /proc/diskstats says the disks wrote
    // during the whole lab.
    let windows_written: f64 = sqlite(
        &db,
        "SELECT coalesce(sum(value), 0) FROM run_counters WHERE source = 'node' AND name = 'disk_written_bytes'",
    )[0][0]
        .parse()
        .unwrap();
    assert!(
        (0.0..=written_during_lab as f64).contains(&windows_written),
        "{windows_written} bytes in the windows, {written_during_lab} during the lab"
    );
    // The report reads the url target's server CPU as it reads the managed one's.
    let compare = stampede_command(&[
        "compare",
        db.to_str().unwrap(),
        "managed",
        "url",
        "--metric",
        "server_cpu",
    ])
    .output()
    .unwrap();
    assert!(compare.status.success(), "{}", stderr(&compare));
    eprintln!("{}", stdout(&compare));
    assert!(!file_holds(&db, common::PASSWORD));
}
