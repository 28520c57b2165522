#!/usr/bin/env python3
"""A lab sharded over a fleet against the same lab on one shard, side by side: the wall time of
`stampede lab run SPEC --shards 1` and `--shards 3` for one spec of 6 cells on 2 targets
(pgbench select-only at 1..6 clients, PostgreSQL 15 from the lab image, 2 rounds, --seconds
per run), on the suite's one-node Kubernetes. Rounds alternate the two (ABBA); each invocation
writes into a fresh results database on a PostgreSQL of its own (127.0.0.1:15712).

On this machine the three shards share its 2 cores (and one node: --shared-nodes): the ratio
says what the fleet's bookkeeping costs and how much of a lab's time is not measuring
(provisioning, loading, restores, checkpoints) and overlaps; on a fleet each shard has a
machine of its own, and the wall time falls with the shards while each run's numbers are its
machine's alone. Also printed: the rows the machine identity adds per run (none: a column
per run, a `machines` row per machine).

Usage: bench/lab_shards.py [--seconds 5] [--rounds 2]
Build first: cargo build --release. Needs the suite's Kubernetes (.ci/kube/build: once per
machine) and root (the cluster's kubelet and containerd). Stops everything it started.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
KUBE = os.path.join(ROOT, ".ci", "kube")
IMAGE = "localhost/stampede-lab:bench"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def cluster_up(state):
    """The suite's cluster with a lab image: stampede, PostgreSQL 15, a shell, a passwd entry."""
    cache = sh([os.path.join(KUBE, "build")]).stdout.strip()
    kubeconfig = sh([os.path.join(KUBE, "up"), state]).stdout.strip()
    passwd, group = os.path.join(state, "passwd"), os.path.join(state, "group")
    with open(passwd, "w") as f:
        f.write("stampede:x:65532:65532:stampede:/work:/usr/sbin/nologin\n")
    with open(group, "w") as f:
        f.write("stampede:x:65532:\n")
    archive = os.path.join(state, "lab.tar")
    files = [STAMPEDE, "/usr/local/bin/stampede"]
    for folder in ["/usr/lib/postgresql/15", "/usr/share/postgresql/15", "/usr/share/zoneinfo"]:
        files += [folder, folder]
    files += ["/bin/sh", "/bin/sh", passwd, "/etc/passwd", group, "/etc/group"]
    sh([os.path.join(KUBE, "image"), IMAGE, archive] + files,
       env={**os.environ, "STAMPEDE_KUBE_CACHE": cache})
    sh([os.path.join(cache, "deb/usr/bin/ctr"), "--address", os.path.join(state, "containerd.sock"),
        "-n", "k8s.io", "images", "import", archive])
    return kubeconfig


def spec_text(name, results, seconds):
    return f"""name = "{name}"
runs = 2
duration = "{seconds}s"
warmup = "1s"
seed = 7
results = "{results}"

[kubernetes]
image = "{IMAGE}"
image_pull_policy = "Never"
host_network = true
shared_nodes = true

[[target]]
name = "a"
postgres = "/usr/lib/postgresql/15/bin"
settings = {{ fsync = false }}

[[target]]
name = "b"
postgres = "/usr/lib/postgresql/15/bin"
settings = {{ fsync = false, synchronous_commit = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1, 2, 3, 4, 5, 6]
"""


def lab_run(server, kubeconfig, work, shards, index, seconds):
    db = f"shards_{shards}_{index}"
    server.psql("postgres", f"CREATE DATABASE {db}")
    spec = os.path.join(work, f"{db}.toml")
    with open(spec, "w") as f:
        f.write(spec_text(db.replace("_", "-"), f"postgresql://postgres@127.0.0.1:{server.port}/{db}",
                          seconds))
    started = time.monotonic()
    sh([STAMPEDE, "lab", "run", spec, "--shards", str(shards)], env={**os.environ, "KUBECONFIG": kubeconfig})
    wall = time.monotonic() - started
    query = ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", server.port, "-U", "postgres", "-d", db, "-c"]
    runs = int(sh(query + ["SELECT count(*) FROM runs WHERE status = 'completed'"]).stdout)
    machines = int(sh(query + ["SELECT count(*) FROM machines"]).stdout)
    return wall, runs, machines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    state = tempfile.mkdtemp(prefix="stampede-kube-bench-")
    work = tempfile.mkdtemp(prefix="stampede-shards-bench-")
    server = Server(15712, "/tmp/stampede-bench-shards")
    try:
        kubeconfig = cluster_up(state)
        server.init()
        server.start()
        walls = {1: [], 3: []}
        for r in range(opts.rounds):
            for shards in ([1, 3] if r % 2 == 0 else [3, 1]):
                wall, runs, machines = lab_run(server, kubeconfig, work, shards, r, opts.seconds)
                walls[shards].append(wall)
                print(f"round {r} --shards {shards}: {wall:6.1f} s wall, {runs} runs recorded,"
                      f" {machines} machines row(s)", flush=True)
        ratios = [a / b for a, b in zip(walls[3], walls[1])]
        measuring = 24 * (opts.seconds + 1)
        print(f"3 shards / 1 shard wall time: median of rounds {statistics.median(ratios):.3f}"
              f" (range {min(ratios):.3f}-{max(ratios):.3f}); medians {statistics.median(walls[3]):.1f} s"
              f" / {statistics.median(walls[1]):.1f} s; measuring alone {measuring} s per lab")
        print("rows the machine identity adds per run: 0 (runs.machine_id and runs.shard columns;"
              " one machines row per distinct machine)")
    finally:
        server.remove()
        subprocess.run([os.path.join(KUBE, "down"), state], capture_output=True)


if __name__ == "__main__":
    main()
