#!/usr/bin/env python3
"""The noise model of this machine, as crates/stats/src/stopping.rs simulates it.

Runs an A/A lab (two targets with the same binaries and settings, fsync off so that the disk's
flush latency is not the whole story, so every difference between them is noise) with pgbench select-only and tpcb-like, ROUNDS interleaved rounds of DURATION
each, and fits: run_sd (a run's own noise: the within-round log ratio's sd / sqrt 2), drift_sd
(what the runs of one round share: the round means' variance less the runs' part), the excess
kurtosis of the within-round log ratios, and the stalls (ratios beyond 4 MADs of the median).

    bench/noise_model.py [--rounds 10] [--duration 5s] [--clients 1]

Run it on a quiet machine: a compile beside it shows up as drift and stalls.
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

SPEC = """name = "noise-aa"
runs = {rounds}
duration = "{duration}"
warmup = "1s"
seed = 42

[[target]]
name = "a"
postgres = "system"
settings = {{ fsync = false }}

[[target]]
name = "b"
postgres = "system"
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [10]
clients = [{clients}]
"""


def rounds_of(db):
    """{(script, clients): [(tps_a, tps_b), ...]} in round order."""
    rows = sqlite3.connect(db).execute(
        """SELECT c.script, c.clients, r.repetition, c.target, r.tps
           FROM runs r JOIN cells c ON c.id = r.cell_id
           WHERE r.status = 'completed' ORDER BY r.repetition""").fetchall()
    values = {}
    for script, clients, repetition, target, tps in rows:
        values.setdefault((script, clients), {}).setdefault(repetition, {})[target] = tps
    return {cell: [(r["a"], r["b"]) for _, r in sorted(per.items()) if "a" in r and "b" in r]
            for cell, per in values.items()}


def fit(pairs):
    d = [math.log(b / a) for a, b in pairs]
    m = [(math.log(a) + math.log(b)) / 2 for a, b in pairs]
    run_var = statistics.variance(d) / 2
    drift_var = max(statistics.variance(m) - run_var / 2, 0.0)
    median = statistics.median(d)
    mad = statistics.median(abs(x - median) for x in d) * 1.4826
    stalls = sum(1 for x in d if mad > 0 and abs(x - median) > 4 * mad)
    mean = statistics.fmean(d)
    sd = statistics.stdev(d)
    kurtosis = statistics.fmean(((x - mean) / sd) ** 4 for x in d) - 3 if sd > 0 else 0.0
    return {
        "rounds": len(pairs),
        "run_sd": math.sqrt(run_var),
        "drift_sd": math.sqrt(drift_var),
        "log_ratio_sd": sd,
        "excess_kurtosis": kurtosis,
        "stalls": stalls,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--keep", help="copy the results database here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stampede-noise-") as work:
        os.chmod(work, 0o755)
        spec = os.path.join(work, "noise.toml")
        with open(spec, "w") as f:
            f.write(SPEC.format(rounds=args.rounds, duration=args.duration, clients=args.clients))
        run = subprocess.run([STAMPEDE, "lab", "run", spec], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"lab run failed ({run.returncode}):\n{run.stderr}")
        db = os.path.join(work, "noise-aa.db")
        if args.keep:
            subprocess.run(["cp", db, args.keep], check=True)
        print(f"A/A lab: {args.rounds} rounds x {args.duration}, {args.clients} client(s)")
        print(f"{'cell':<24} {'rounds':>6} {'run_sd':>7} {'drift_sd':>8} {'ratio_sd':>8} "
              f"{'kurtosis':>8} {'stalls':>6}")
        for (script, clients), pairs in sorted(rounds_of(db).items()):
            f = fit(pairs)
            print(f"{script + ' @' + str(clients):<24} {f['rounds']:>6} {f['run_sd']:>7.4f} "
                  f"{f['drift_sd']:>8.4f} {f['log_ratio_sd']:>8.4f} "
                  f"{f['excess_kurtosis']:>8.2f} {f['stalls']:>6}")


if __name__ == "__main__":
    main()
