#!/usr/bin/env python3
"""A run spread over Kubernetes pods against the same run from one process, side by side on one
server: `stampede pgbench -c 12 -j 6` from one process, and the same over `--pods 3` (3 pods x 4
clients, 2 threads each) on the suite's one-node Kubernetes (pods on the host's network). Rounds
alternate the two (ABBA). Per run: tps, server CPU per transaction (every postgres process,
bench/pgserver.py), client CPU per transaction; for spread runs also each pod's clock offset
and start skew and the coordinator's CPU per pod-second (from the run's --json).

With --local-shares (cgroup v1, as the suite's node): the one process runs in a cpu cgroup of
that many shares, as much CPU weight as the node gives all its pods together (`kubepods`, its
allocatable CPUs x 1024; "auto" reads it). On this 2-core machine the clients share the cores
with the server: a pod's client competes with the server's backends through the kubepods group
(2048 shares in all) while a host process's 6 threads weigh 1024 each, so without it the
comparison measures the kernel's weighting, not the spread run.

Usage: bench/pods_vs_one.py [--seconds 20] [--rounds 4] [--scale 10] [--script select-only]
                            [--one-pod] [--local-shares auto|N] [--pod-option=--requests=cpu=1]
Build first: cargo build --release. Needs the suite's Kubernetes (.ci/kube/build: once per
machine) and root (the cluster's kubelet and containerd). Starts its own PostgreSQL on
127.0.0.1:15710 and its cluster on 15940-15949; stops both.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import Server, server_cpu_s  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
KUBE = os.path.join(ROOT, ".ci", "kube")
IMAGE = "localhost/stampede:bench"
POSTMASTER_PID = None


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def cluster_up(state):
    cache = sh([os.path.join(KUBE, "build")]).stdout.strip()
    kubeconfig = sh([os.path.join(KUBE, "up"), state]).stdout.strip()
    archive = os.path.join(state, "stampede.tar")
    sh([os.path.join(KUBE, "image"), IMAGE, archive, STAMPEDE, "/usr/local/bin/stampede"],
       env={**os.environ, "STAMPEDE_KUBE_CACHE": cache})
    sh([os.path.join(cache, "deb/usr/bin/ctr"), "--address", os.path.join(state, "containerd.sock"),
        "-n", "k8s.io", "images", "import", archive])
    return kubeconfig


def postmaster(server):
    with open(os.path.join(server.data, "postmaster.pid")) as f:
        return int(f.readline())


LOCAL_CGROUP = "/sys/fs/cgroup/cpu/stampede-bench-local"


def local_cgroup(shares):
    """A cpu cgroup (v1) of `shares` for the one-process arm; None without --local-shares."""
    if shares is None:
        return None
    if shares == "auto":
        with open("/sys/fs/cgroup/cpu/kubepods/cpu.shares") as f:
            shares = f.read().strip()
    os.makedirs(LOCAL_CGROUP, exist_ok=True)
    with open(os.path.join(LOCAL_CGROUP, "cpu.shares"), "w") as f:
        f.write(str(shares))
    return int(shares)


def run_processes(server, db, args, processes, seconds, local_shares):
    """The run split over `processes` processes on this host, started at once (no Kubernetes,
    no coordination): what splitting alone costs. Their tps add; CPU per transaction is the
    sum over the sum."""
    outs = [tempfile.NamedTemporaryFile(suffix=".json", delete=False).name for _ in range(processes)]
    clients, threads = 12 // processes, 6 // processes
    before = server_cpu_s(postmaster(server))
    children = []
    for out in outs:
        cmd = [STAMPEDE, "pgbench", "-n", "-c", str(clients), "-j", str(threads), "-T", str(seconds),
               "--json", out] + args + server.conn(db)
        if local_shares is not None:
            cmd = ["sh", "-c", f'echo $$ > {LOCAL_CGROUP}/cgroup.procs && exec "$@"', "sh"] + cmd
        children.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for child in children:
        stdout, stderr = child.communicate()
        if child.returncode != 0:
            sys.exit(f"a process failed:\n{stdout}{stderr}")
    server_cpu = server_cpu_s(postmaster(server)) - before
    reports = []
    for out in outs:
        with open(out) as f:
            reports.append(json.load(f))
        os.unlink(out)
    transactions = sum(r["transactions"] for r in reports)
    client_cpu_us = sum(r["client_cpu"]["per_transaction_us"] * r["transactions"] for r in reports)
    return {
        "tps": sum(r["tps"] for r in reports),
        "server_us": server_cpu * 1e6 / transactions,
        "client_us": client_cpu_us / transactions,
    }


def run(server, db, args, pods, kubeconfig, seconds, port, pod_options, local_shares=None):
    """pods 0: one process on the host (in the local cgroup when there is one); else that many
    pods."""
    spread = pods > 0
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    cmd = [STAMPEDE, "pgbench", "-n", "-c", "12", "-j", "6", "-T", str(seconds), "--json", out] + args
    cmd += server.conn(db)
    if not spread and local_shares is not None:
        # The process joins the cgroup before it becomes stampede (its threads follow it).
        cmd = ["sh", "-c", f'echo $$ > {LOCAL_CGROUP}/cgroup.procs && exec "$@"', "sh"] + cmd
    if spread:
        cmd += ["--pods", str(pods), "--host-network", "--coordinator-address", "127.0.0.1",
                "--coordinator-port", str(port), "--image", IMAGE, "--image-pull-policy", "Never"]
        cmd += pod_options
    before = server_cpu_s(postmaster(server))
    child = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "KUBECONFIG": kubeconfig})
    server_cpu = server_cpu_s(postmaster(server)) - before
    if child.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{child.stdout}{child.stderr}")
    with open(out) as f:
        report = json.load(f)
    os.unlink(out)
    transactions = report["transactions"]
    row = {
        "tps": report["tps"],
        "server_us": server_cpu * 1e6 / transactions,
        "client_us": report["client_cpu"]["per_transaction_us"],
    }
    if spread:
        spread_report = report["spread"]
        pods = spread_report["pods"]
        row["offsets_ms"] = [p["clock_offset_ms"] for p in pods]
        skews = [p["start_skew_ms"] for p in pods]
        row["skew_ms"] = max(skews) - min(skews)
        pod_seconds = spread_report["window_s"] * len(pods)
        row["coordinator_ms_per_pod_s"] = spread_report["coordinator_cpu_s"] * 1e3 / pod_seconds
        row["tps_per_pod"] = [round(p["tps"]) for p in pods]
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--script", default="select-only", help="a pgbench builtin")
    parser.add_argument("--one-pod", action="store_true",
                        help="also run 1 pod x 12 clients: what the container alone changes")
    parser.add_argument("--three-processes", action="store_true",
                        help="also run 3 processes x 4 on this host: what splitting alone changes")
    parser.add_argument("--local-shares", default=None,
                        help="run the one process in a cpu cgroup of this many shares ('auto': kubepods')")
    parser.add_argument("--pod-option", action="append", default=[],
                        help="an option for the spread runs, e.g. --pod-option=--requests=cpu=600m")
    opts = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    state = tempfile.mkdtemp(prefix="stampede-kube-bench-")
    server = Server(15710, "/tmp/stampede-bench-pods", "-c shared_buffers=256MB")
    try:
        kubeconfig = cluster_up(state)
        local_shares = local_cgroup(opts.local_shares)
        if local_shares is not None:
            print(f"the one process runs in a cpu cgroup of {local_shares} shares", flush=True)
        server.init()
        server.start()
        server.pgbench_database("bench", opts.scale)
        args = ["-b", opts.script, "-M", "prepared"]
        arms = [0, 3] + ([1] if opts.one_pod else []) + (["P"] if opts.three_processes else [])
        rows = {arm: [] for arm in arms}
        names = {0: "1 process x 12", 1: "1 pod x 12", 3: "3 pods x 4", "P": "3 processes x 4"}
        for r in range(opts.rounds):
            order = arms if r % 2 == 0 else arms[::-1]
            for arm in order:
                if arm == "P":
                    row = run_processes(server, "bench", args, 3, opts.seconds, local_shares)
                else:
                    row = run(server, "bench", args, arm, kubeconfig, opts.seconds, 15711,
                              opts.pod_option, local_shares)
                rows[arm].append(row)
                name = names[arm]
                extra = ""
                if arm == 3:
                    extra = (f" | skew {row['skew_ms']:.3f} ms, offsets {row['offsets_ms']} ms,"
                             f" coordinator {row['coordinator_ms_per_pod_s']:.3f} ms/pod-s,"
                             f" tps per pod {row['tps_per_pod']}")
                print(f"round {r} {name:15} {row['tps']:10.0f} tps  server {row['server_us']:6.1f} us/txn"
                      f"  client {row['client_us']:6.1f} us/txn{extra}", flush=True)
        comparisons = [(3, 0, "3 pods / 1 process")]
        if opts.one_pod:
            comparisons += [(3, 1, "3 pods / 1 pod"), (1, 0, "1 pod / 1 process")]
        if opts.three_processes:
            comparisons += [("P", 0, "3 processes / 1"), (3, "P", "3 pods / 3 procs")]
        for a, b, title in comparisons:
            for key, label in [("tps", "tps"), ("server_us", "server CPU/txn"), ("client_us", "client CPU/txn")]:
                pairs = [x[key] / y[key] for x, y in zip(rows[a], rows[b])]
                medians = statistics.median(r[key] for r in rows[a]) / statistics.median(r[key] for r in rows[b])
                print(f"{title:19} {label:15} median of rounds {statistics.median(pairs):.3f}"
                      f" (range {min(pairs):.3f}-{max(pairs):.3f}); ratio of medians {medians:.3f}")
        spread_rows = rows[3]
        print(f"start skew between pods: median {statistics.median(r['skew_ms'] for r in spread_rows):.3f} ms,"
              f" max {max(r['skew_ms'] for r in spread_rows):.3f} ms")
        offsets = [abs(o) for r in spread_rows for o in r["offsets_ms"]]
        print(f"clock offsets: max |offset| {max(offsets):.3f} ms")
        print(f"coordinator CPU: median {statistics.median(r['coordinator_ms_per_pod_s'] for r in spread_rows):.3f}"
              " ms per pod-second")
    finally:
        server.remove()
        subprocess.run([os.path.join(KUBE, "down"), state], capture_output=True)
        if os.path.isdir(LOCAL_CGROUP):
            os.rmdir(LOCAL_CGROUP)


if __name__ == "__main__":
    main()
