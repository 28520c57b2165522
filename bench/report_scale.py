#!/usr/bin/env python3
"""How long `stampede report` takes over a results database of 1,000 runs (goal: under 5 s).

A small real lab (the system's PostgreSQL, two targets that differ in shared_buffers, select-only
and tpcb-like at 1 and 2 clients, 2 runs each: 16 runs with every probe's rows) is grown to
--runs runs by copying its runs into new cells (more client counts) with every row that belongs
to a run (per-second series, counters, statements, counter series, wait events), throughput
scaled by a random factor so that verdicts vary. Then each format is rendered --rounds times;
prints the best and median wall time per format and the ratio of the HTML's median to 5 s.

Usage: bench/report_scale.py [--runs 1000] [--rounds 3] [--keep]
Build first: cargo build --release.
"""
import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
WORK = "/tmp/stampede-bench-report"
GOAL_S = 5.0

SPEC = """name = "report-scale"
runs = 2
duration = "3s"
warmup = "1s"
results = "seed.db"
seed = 1

[[target]]
name = "base"
settings = { shared_buffers = "128MB", fsync = false }

[[target]]
name = "bigger-buffers"
settings = { shared_buffers = "256MB", fsync = false }

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [1]
clients = [1, 2]
"""

# Tables whose rows belong to one run (column run_id).
RUN_TABLES = ["run_series", "run_counters", "run_statements", "run_counter_series", "run_wait_events"]


def seed_lab():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chmod(WORK, 0o755)  # the clusters run as the server user
    with open(os.path.join(WORK, "lab.toml"), "w") as spec:
        spec.write(SPEC)
    result = subprocess.run([STAMPEDE, "lab", "run", "lab.toml"], cwd=WORK, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"the seed lab failed:\n{result.stderr}")
    return os.path.join(WORK, "seed.db")


def columns(db, table):
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def grow(path, wanted_runs, rng):
    """Copies the seed runs into new cells (client counts 3, 4, ...) until `wanted_runs`."""
    db = sqlite3.connect(path)
    # One template cell per (target, workload, script, scale); copies get new client counts.
    cells = db.execute("SELECT min(id), lab_id, target, workload, script, scale, max(clients), family FROM cells"
                       " GROUP BY lab_id, target, workload, script, scale").fetchall()
    runs = db.execute("SELECT * FROM runs WHERE status = 'completed'").fetchall()
    run_columns = columns(db, "runs")
    position = db.execute("SELECT max(position) FROM runs").fetchone()[0] + 1
    total = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    clients = db.execute("SELECT max(clients) FROM cells").fetchone()[0] + 1
    while total < wanted_runs:
        for cell_id, lab_id, target, workload, script, scale, _, family in cells:
            if total >= wanted_runs:
                break
            key = f"{target}/{workload}/{script}/{scale}/{clients}"
            new_cell = db.execute(
                "INSERT INTO cells (lab_id, key, target, workload, script, scale, clients, family)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (lab_id, key, target, workload, script, scale, clients, family)).fetchone()[0]
            for run in [r for r in runs if r[run_columns.index("cell_id")] == cell_id]:
                if total >= wanted_runs:
                    break
                factor = rng.uniform(0.9, 1.1)
                values = dict(zip(run_columns, run))
                old_id = values.pop("id")
                values.update(cell_id=new_cell, position=position,
                              tps=values["tps"] * factor, transactions=int(values["transactions"] * factor))
                names = ", ".join(values)
                marks = ", ".join("?" for _ in values)
                new_id = db.execute(f"INSERT INTO runs ({names}) VALUES ({marks}) RETURNING id",
                                    list(values.values())).fetchone()[0]
                for table in RUN_TABLES:
                    rest = [c for c in columns(db, table) if c != "run_id"]
                    db.execute(f"INSERT INTO {table} (run_id, {', '.join(rest)})"
                               f" SELECT ?, {', '.join(rest)} FROM {table} WHERE run_id = ?", (new_id, old_id))
                position += 1
                total += 1
        clients += 1
    db.commit()
    counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ["runs", "cells"] + RUN_TABLES}
    db.close()
    return counts


def render(path, fmt):
    out = os.path.join(WORK, f"report.{fmt}")
    start = time.perf_counter()
    result = subprocess.run([STAMPEDE, "report", path, "--base", "base", "--format", fmt, "-o", out],
                            capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"report --format {fmt} failed:\n{result.stderr}")
    return elapsed, os.path.getsize(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    path = seed_lab()
    counts = grow(path, args.runs, random.Random(7))
    print("rows: " + ", ".join(f"{table} {n}" for table, n in counts.items()))
    html_median = None
    for fmt in ["html", "md", "csv", "json"]:
        times, size = [], 0
        for _ in range(args.rounds):
            elapsed, size = render(path, fmt)
            times.append(elapsed)
        median = statistics.median(times)
        if fmt == "html":
            html_median = median
        print(f"{fmt:5} best {min(times):.3f} s  median {median:.3f} s  ({size / 1024:.0f} KiB)")
    print(f"html median / goal {GOAL_S:.0f} s: {html_median / GOAL_S:.3f} (goal < 1)")
    if not args.keep:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
