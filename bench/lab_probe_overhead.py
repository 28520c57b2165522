#!/usr/bin/env python3
"""What the lab's probes cost: the same lab cell measured with probes on and off; prints ratios.

Each round runs two one-run labs on one managed cluster (the system's PostgreSQL, the same
results file, so the cluster and its dataset are made once): `probes = true` and
`probes = false`, in ABBA order across rounds so drift hits both alike. Cells: select-only (the
highest transaction rate, where a probe's share is largest) and tpcb-like, c=8, prepared.

Prints per script: mean tps with and without probes and their ratio (goal >= 0.98), and the
lab's mean overhead per run (time beyond warmup and measuring: restore, checkpoint, probes)
with and without probes. On a noisy host the tps ratio swings by more than the probes could
cost, so it also prints what the probes consumed inside the measured window, which does not
swing: the sampler thread's and its server backend's CPU seconds (stored per run as source
`probe`) as a share of the window's CPU capacity (duration x cores) - on a CPU-bound run, the
throughput the probes can take away at most.

Usage: bench/lab_probe_overhead.py [--seconds 10] [--rounds 4] [--scale 10] [--clients 8]
Build first: cargo build --release.
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
WORK = "/tmp/stampede-bench-probes"

SPEC = """name = "{name}"
runs = 1
duration = "{seconds}s"
warmup = "2s"
results = "bench.db"
probes = {probes}
seed = 1

[[target]]
name = "pg"
settings = {{ shared_buffers = "256MB", fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [{scale}]
clients = [{clients}]
"""


def run_lab(name, probes, args):
    path = os.path.join(WORK, f"{name}.toml")
    with open(path, "w") as spec:
        spec.write(SPEC.format(name=name, seconds=args.seconds, probes="true" if probes else "false",
                               scale=args.scale, clients=args.clients))
    result = subprocess.run([STAMPEDE, "lab", "run", path], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"lab {name} failed:\n{result.stderr}")
    db = sqlite3.connect(os.path.join(WORK, "bench.db"))
    rows = db.execute(
        """SELECT c.script, r.tps, r.overhead_s FROM runs r JOIN cells c ON c.id = r.cell_id
           JOIN labs l ON l.id = c.lab_id WHERE l.name = ? AND r.status = 'completed'""",
        (name,)).fetchall()
    cost = db.execute(
        """SELECT c.script, sum(k.value) / max(r.duration_s) FROM runs r JOIN cells c ON c.id = r.cell_id
           JOIN labs l ON l.id = c.lab_id JOIN run_counters k ON k.run_id = r.id AND k.source = 'probe'
           WHERE l.name = ? GROUP BY r.id, c.script""", (name,)).fetchall()
    db.close()
    share = {script: cpu_per_second / os.cpu_count() for script, cpu_per_second in cost}
    return {script: (tps, overhead, share.get(script)) for script, tps, overhead in rows}


def stop_cluster():
    data = os.path.join(WORK, "bench.db.servers", "pg", "data")
    if os.path.exists(os.path.join(data, "postmaster.pid")):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        pg_ctl = os.path.join(out.stdout.strip(), "pg_ctl")
        cmd = [pg_ctl, "-D", data, "-m", "fast", "stop"]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, capture_output=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chmod(WORK, 0o755)
    samples = {True: [], False: []}
    try:
        # The first lab makes the cluster and loads the data; it is not measured.
        run_lab("setup", False, args)
        for round_index in range(args.rounds):
            order = [True, False] if round_index % 2 == 0 else [False, True]
            for probes in order:
                name = f"r{round_index}-{'on' if probes else 'off'}"
                samples[probes].append(run_lab(name, probes, args))
                print(f"round {round_index} probes {'on ' if probes else 'off'}: " + ", ".join(
                    f"{script} {tps:.0f} tps" for script, (tps, _, _) in sorted(samples[probes][-1].items())),
                    flush=True)
    finally:
        stop_cluster()
    for script in ["select-only", "tpcb-like"]:
        mean = lambda probes, i: sum(s[script][i] for s in samples[probes]) / len(samples[probes])
        on_tps, off_tps = mean(True, 0), mean(False, 0)
        # Each round's two runs are neighbours in time: their ratio cancels slow drift.
        pair_ratios = sorted(on[script][0] / off[script][0] for on, off in zip(samples[True], samples[False]))
        middle = len(pair_ratios) // 2
        median = (pair_ratios[middle] if len(pair_ratios) % 2
                  else (pair_ratios[middle - 1] + pair_ratios[middle]) / 2)
        print(f"{script:12} c={args.clients}  probes on {on_tps:9.0f} tps | off {off_tps:9.0f} tps | "
              f"tps ratio {on_tps / off_tps:.3f} (median of rounds {median:.3f}, "
              f"range {pair_ratios[0]:.3f}-{pair_ratios[-1]:.3f}) | overhead per run "
              f"on {mean(True, 1):.2f} s, off {mean(False, 1):.2f} s")
        shares = [s[script][2] for s in samples[True] if s[script][2] is not None]
        if shares:
            print(f"{'':12}      probes' own CPU in the window: {100 * sum(shares) / len(shares):.3f}% of "
                  f"{os.cpu_count()} cores (max {100 * max(shares):.3f}%)")
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
