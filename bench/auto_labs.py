#!/usr/bin/env python3
"""Real auto labs on this machine: does `runs = "auto"` decide a real difference in the right
direction, and leave identical targets undecided?

Each lab has three targets: "a", its identical "twin" (an A/A comparison: any "faster" or
"slower" is a false verdict) and "one-core" (the same server pinned to CPU 0, `cpus = "0"`: a
real difference, slower at 2 clients). pgbench select-only, scale 10, 2 clients, fsync off,
`runs = "auto"` with PRECISION and CAP, DURATION runs. The cell stops when both comparisons
reach the precision, or at the cap. Prints each lab's verdicts, ratios with their interval,
rounds and why the cell stopped, read from `stampede report --format json`, and the tally.

    bench/auto_labs.py [--labs 3] [--precision 5%] [--cap 15] [--duration 5s]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))

SPEC = """name = "auto-{index}"
runs = "auto"
precision = "{precision}"
max_runs = {cap}
duration = "{duration}"
warmup = "1s"
seed = {index}

[[target]]
name = "a"
postgres = "system"
settings = {{ fsync = false }}

[[target]]
name = "twin"
postgres = "system"
settings = {{ fsync = false }}

[[target]]
name = "one-core"
postgres = "system"
cpus = "0"
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
scale = [10]
clients = [2]
"""

# What each comparison must not say: the twin is identical to "a"; one core is slower.
WRONG = {"twin": {"faster", "slower"}, "one-core": {"faster"}}


def run_lab(work, index, args):
    spec = os.path.join(work, f"auto-{index}.toml")
    with open(spec, "w") as f:
        f.write(SPEC.format(index=index, precision=args.precision, cap=args.cap,
                            duration=args.duration))
    started = time.monotonic()
    run = subprocess.run([STAMPEDE, "lab", "run", spec], capture_output=True, text=True)
    minutes = (time.monotonic() - started) / 60
    if run.returncode != 0:
        sys.exit(f"lab {index} failed ({run.returncode}):\n{run.stderr}")
    report = subprocess.run([STAMPEDE, "report", os.path.join(work, f"auto-{index}.db"),
                             "--format", "json"], capture_output=True, text=True, check=True)
    comparisons = json.loads(report.stdout)["comparisons"]
    return minutes, {c["target"]: c["cells"][0] for c in comparisons}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--labs", type=int, default=3)
    parser.add_argument("--precision", default="5%")
    parser.add_argument("--cap", type=int, default=15)
    parser.add_argument("--duration", default="5s")
    args = parser.parse_args()
    tally = {target: {} for target in WRONG}
    wrong = 0
    print(f"{'lab':>3} {'target':<9} {'verdict':<15} {'ratio':>6} {'95% interval':>15} "
          f"{'±':>6} {'stopped':<10} {'rounds':>6} {'minutes':>7}")
    with tempfile.TemporaryDirectory(prefix="stampede-auto-labs-") as work:
        os.chmod(work, 0o755)
        for index in range(1, args.labs + 1):
            minutes, cells = run_lab(work, index, args)
            for target, cell in cells.items():
                verdict = cell["verdict"]
                tally[target][verdict] = tally[target].get(verdict, 0) + 1
                wrong += verdict in WRONG[target]
                interval = f"{cell['ci_low']:.3f}-{cell['ci_high']:.3f}"
                print(f"{index:>3} {target:<9} {verdict:<15} {cell['ratio']:>6.3f} {interval:>15} "
                      f"{cell['precision'] * 100:>5.1f}% {cell['stopped'] or '-':<10} "
                      f"{cell['rounds'] or cell['pairs']:>6} {minutes:>7.1f}")
    for target, verdicts in tally.items():
        print(f"{target} against a: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    print(f"wrong verdicts (twin faster/slower, one-core faster): {wrong} of {2 * args.labs}")


if __name__ == "__main__":
    main()
