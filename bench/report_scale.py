#!/usr/bin/env python3
"""How long `stampede report` takes over a results database of 1,000 runs (goal: under 5 s),
and with --history how long `stampede history` takes over a year of nightly invocations (365
invocations x 50 cells x 5 runs; goal: under 5 s, the HTML under 5 MB).

A small real lab (the system's PostgreSQL, two targets that differ in shared_buffers, select-only
and tpcb-like at 1 and 2 clients, 2 runs each: 16 runs with every probe's rows) is grown to
--runs runs by copying its runs into new cells (more client counts) with every row that belongs
to a run (per-second series, counters, statements, counter series, wait events), throughput
scaled by a random factor so that verdicts vary. Then each format is rendered --rounds times;
prints the best and median wall time per format and the ratio of the HTML's median to 5 s.

--history: the seed lab's schema is refilled with 365 invocations of one spec (tags night=N,
one machine), 50 cells each of 5 runs: per cell a level, 2% noise per invocation and 1% per
run, and a 5% step down at night 200 in every tenth cell. Then `history --html` runs --rounds
times; prints the time, the HTML's size, how many cells show the step at 200 ± 1 and how many
other change points were reported, and the ratios to 5 s and 5 MB.

Usage: bench/report_scale.py [--runs 1000] [--rounds 3] [--keep] [--history]
Build first: cargo build --release.
"""
import argparse
import math
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


def fill_history(path, rng, invocations=365, cells=50, runs=5, step_at=200):
    """Replaces the seed's labs with `invocations` nightly invocations of one spec."""
    db = sqlite3.connect(path)
    for table in RUN_TABLES + ["runs", "cells", "plans", "target_settings", "targets", "lab_tags", "labs"]:
        db.execute(f"DELETE FROM {table}")
    levels = [rng.uniform(1_000, 50_000) for _ in range(cells)]
    night_noise = [[rng.gauss(0, 0.02) for _ in range(cells)] for _ in range(invocations)]
    for night in range(invocations):
        name = "nightly" if night == 0 else f"nightly #{night + 1}"
        created = 1_780_000_000 + 86_400 * night
        lab = db.execute(
            "INSERT INTO labs (name, spec, seed, created_unix_s, client_cores, history, machine, kernel, ended_unix_s)"
            " VALUES (?, 'synthetic', 1, ?, 2, 'nightly', 'bench, 2 x CPU', '6.1', ?) RETURNING id",
            (name, created, created + 3600)).fetchone()[0]
        db.execute("INSERT INTO lab_tags (lab_id, key, value) VALUES (?, 'night', ?)", (lab, str(night + 1)))
        position = 0
        for cell in range(cells):
            clients = cell % 10 + 1
            script = ["select-only", "tpcb-like", "simple-update", "read-write", "point-select"][cell // 10]
            key = f"pg/pgbench/{script}/1/{clients}"
            cell_id = db.execute(
                "INSERT INTO cells (lab_id, key, target, workload, script, scale, clients, family)"
                " VALUES (?, ?, 'pg', 'pgbench', ?, '1', ?, 'pgbench') RETURNING id",
                (lab, key, script, clients)).fetchone()[0]
            stepped = cell % 10 == 0 and night >= step_at
            level = levels[cell] * (0.95 if stepped else 1.0) * math.exp(night_noise[night][cell])
            for repetition in range(runs):
                tps = level * math.exp(rng.gauss(0, 0.01))
                db.execute(
                    "INSERT INTO runs (cell_id, repetition, position, status, started_unix_s, ended_unix_s,"
                    " resolved_scale, duration_s, transactions, failures, tps, p50_ms, p95_ms, p99_ms)"
                    " VALUES (?, ?, ?, 'completed', ?, ?, 1, 10, ?, 0, ?, 0.5, 0.8, 1.0)",
                    (cell_id, repetition, position, created + position * 11, created + position * 11 + 10,
                     int(tps * 10), tps))
                position += 1
    db.commit()
    db.close()


def history_bench(path, rounds):
    fill_history(path, random.Random(11))
    out = os.path.join(WORK, "history.html")
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = subprocess.run([STAMPEDE, "history", path, "--html", out], capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit(f"history failed:\n{result.stderr}")
    text = result.stdout
    found = sum(1 for line in text.splitlines() if 'at "nightly #201"' in line or 'at "nightly #200"' in line
                or 'at "nightly #202"' in line)
    changes = sum(1 for line in text.splitlines() if line.startswith("    regression at") or
                  line.startswith("    improvement at"))
    size = os.path.getsize(out)
    median = statistics.median(times)
    print(f"history: 365 invocations x 50 cells x 5 runs: best {min(times):.3f} s  median {median:.3f} s, "
          f"HTML {size / 1e6:.2f} MB")
    print(f"  the 5% step at night 201 found in {found} of 5 stepped cells; {changes - found} other change points in 50 cells")
    print(f"history median / goal {GOAL_S:.0f} s: {median / GOAL_S:.3f}; HTML / 5 MB: {size / 5e6:.3f} (goals < 1)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--history", action="store_true", help="measure `history` over a year of invocations")
    args = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    path = seed_lab()
    if args.history:
        history_bench(path, args.rounds)
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
        return
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
