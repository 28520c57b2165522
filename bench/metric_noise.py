#!/usr/bin/env python3
"""Which number is quietest for a decision: the paired noise of each per-run metric in an A/A
lab (two targets with the same binaries and settings, so every difference is noise).

Runs pgbench select-only and tpcb-like at 1 client, ROUNDS interleaved rounds of DURATION, and
prints per cell and metric the sd of the rounds' log ratios b / a (what a paired interval's
width grows with) and its ratio to tps's: below 1, the metric decides a change of the same size
in fewer rounds. Metrics: tps, p50, p99, client CPU µs per transaction (the driver's), and
server CPU µs per transaction (the postmaster and everything it forked, from the lab's server
probe).

    STAMPEDE=target/suite/stampede bench/metric_noise.py [--rounds 10] [--duration 4s]

Run it on a quiet machine, and again beside a load (--load N starts N busy loops on the
machine for the lab's length): a neighbour moves throughput more than the work per transaction.
"""
import argparse
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))

SPEC = """name = "metric-noise"
runs = {rounds}
duration = "{duration}"
warmup = "1s"
seed = 7

[[target]]
name = "a"
settings = {{ fsync = false }}

[[target]]
name = "b"
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [10]
clients = [1]
"""

METRICS = ["tps", "p50", "p99", "client_cpu", "server_cpu"]

QUERY = """
SELECT c.script, r.repetition, c.target, r.tps, r.p50_ms, r.p99_ms, r.client_cpu_us_per_txn,
       (SELECT sum(k.value) FROM run_counters k WHERE k.run_id = r.id AND k.source = 'server'
          AND k.name IN ('cpu_user_s', 'cpu_system_s')) * 1e6 / nullif(r.transactions, 0)
FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'completed'
"""


def log_ratio_sds(db):
    """{script: {metric: (rounds, sd of ln(b / a))}}."""
    per = {}
    for script, round_, target, *values in sqlite3.connect(db).execute(QUERY):
        per.setdefault(script, {}).setdefault(round_, {})[target] = values
    out = {}
    for script, rounds in sorted(per.items()):
        pairs = [(r["a"], r["b"]) for _, r in sorted(rounds.items()) if "a" in r and "b" in r]
        out[script] = {}
        for i, metric in enumerate(METRICS):
            logs = [math.log(b[i] / a[i]) for a, b in pairs if a[i] and b[i]]
            out[script][metric] = (len(logs), statistics.stdev(logs) if len(logs) > 1 else None)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--duration", default="4s")
    parser.add_argument("--load", type=int, default=0, help="busy loops beside the lab")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stampede-metric-noise-") as work:
        os.chmod(work, 0o755)
        spec = os.path.join(work, "spec.toml")
        with open(spec, "w") as f:
            f.write(SPEC.format(rounds=args.rounds, duration=args.duration))
        loads = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                 for _ in range(args.load)]
        try:
            run = subprocess.run([STAMPEDE, "lab", "run", spec], capture_output=True, text=True)
        finally:
            for load in loads:
                load.kill()
        if run.returncode != 0:
            sys.exit(f"lab run failed ({run.returncode}):\n{run.stderr}")
        sds = log_ratio_sds(os.path.join(work, "metric-noise.db"))
    print(f"A/A lab: {args.rounds} rounds x {args.duration}, 1 client, {args.load} busy loop(s)")
    print(f"{'cell':<14} {'metric':<11} {'rounds':>6} {'paired sd':>9} {'vs tps':>7}")
    for script, metrics in sds.items():
        tps_sd = metrics["tps"][1]
        for metric in METRICS:
            rounds, sd = metrics[metric]
            ratio = f"{sd / tps_sd:7.2f}" if sd is not None and tps_sd else "      -"
            shown = f"{sd:9.4f}" if sd is not None else "        -"
            print(f"{script:<14} {metric:<11} {rounds:>6} {shown} {ratio}")


if __name__ == "__main__":
    main()
