#!/usr/bin/env python3
"""What a decision costs on this machine: an auto lab against the fixed design a user would pick.

Deciding a difference of d needs the ratio's 95% interval narrower than ±d. On two identical
targets (pgbench select-only, fsync off, 1 client) this measures, side by side in one sitting:

  - the fixed design: FIXED_RUNS runs x FIXED_DURATION per side (default 5 x 60 s), the
    precision its paired interval reaches and the minutes it spends;
  - auto labs (runs = "auto") asked for +-5% and +-2% with AUTO_DURATION runs (default 5 s:
    on this machine a run's own noise does not shrink with its length, see noise_model.py),
    capped at CAP rounds: the rounds, the precision reached and the minutes.

Prints each design's minutes and precision and the goal's ratio: the auto lab's minutes to
+-2% over the fixed design's minutes to its precision.

    bench/decision_cost.py [--fixed-runs 5] [--fixed-duration 60s] [--auto-duration 5s] [--cap 60]
"""
import argparse
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))

SPEC = """name = "{name}"
{runs}
duration = "{duration}"
warmup = "1s"
seed = 7

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
scripts = ["select-only"]
scale = [10]
clients = [1]
"""

# scipy.stats.t.ppf(0.975, df) for df 1..30; beyond, the normal's 1.96 plus the usual term.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def run_lab(work, name, runs_line, duration):
    spec = os.path.join(work, name + ".toml")
    with open(spec, "w") as f:
        f.write(SPEC.format(name=name, runs=runs_line, duration=duration))
    started = time.monotonic()
    run = subprocess.run([STAMPEDE, "lab", "run", spec], capture_output=True, text=True)
    minutes = (time.monotonic() - started) / 60
    if run.returncode != 0:
        sys.exit(f"{name}: lab run failed ({run.returncode}):\n{run.stderr}")
    db = os.path.join(work, name + ".db")
    rows = sqlite3.connect(db).execute(
        """SELECT r.repetition, c.target, r.tps FROM runs r JOIN cells c ON c.id = r.cell_id
           WHERE r.status = 'completed'""").fetchall()
    by_round = {}
    for repetition, target, tps in rows:
        by_round.setdefault(repetition, {})[target] = tps
    logs = [math.log(r["b"] / r["a"]) for r in by_round.values() if "a" in r and "b" in r]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half_width = t975(n - 1) * sd / math.sqrt(n)
    precision = math.exp(half_width) - 1
    # Identical targets: an interval that excludes 1 is a false verdict.
    verdict = "faster/slower (false)" if abs(mean) > half_width else "not decided (right)"
    return {"rounds": n, "precision": precision, "minutes": minutes, "sd": sd,
            "verdict": verdict}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixed-runs", type=int, default=5)
    parser.add_argument("--fixed-duration", default="60s")
    parser.add_argument("--auto-duration", default="5s")
    parser.add_argument("--cap", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stampede-decision-") as work:
        os.chmod(work, 0o755)
        designs = [
            (f"fixed {args.fixed_runs} x {args.fixed_duration}", "fixed",
             f"runs = {args.fixed_runs}", args.fixed_duration),
            (f"auto +-5% ({args.auto_duration} runs)", "auto5",
             f'runs = "auto"\nprecision = "5%"\nmax_runs = {args.cap}', args.auto_duration),
            (f"auto +-2% ({args.auto_duration} runs)", "auto2",
             f'runs = "auto"\nprecision = "2%"\nmax_runs = {args.cap}', args.auto_duration),
        ]
        results = {}
        print(f"{'design':<28} {'rounds':>6} {'paired sd':>9} {'precision':>9} {'minutes':>8}  verdict")
        for label, name, runs_line, duration in designs:
            r = run_lab(work, name, runs_line, duration)
            results[name] = r
            print(f"{label:<28} {r['rounds']:>6} {r['sd']:>9.4f} {r['precision'] * 100:>8.1f}% "
                  f"{r['minutes']:>8.1f}  {r['verdict']}")
        fixed, auto2 = results["fixed"], results["auto2"]
        print(f"goal: auto to +-2% in less time than the fixed design to its precision: "
              f"{auto2['minutes'] / fixed['minutes']:.2f}x the time "
              f"(auto reached +-{auto2['precision'] * 100:.1f}%, fixed +-{fixed['precision'] * 100:.1f}%)")


if __name__ == "__main__":
    main()
