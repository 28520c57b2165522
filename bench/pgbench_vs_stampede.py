#!/usr/bin/env python3
"""stampede vs pgbench, side by side on one server in one run; prints ratios.

Starts its own PostgreSQL (initdb as the `postgres` user when run as root) on 127.0.0.1:15700,
then measures, alternating the two tools so drift hits both alike:
  * init at scale 50:        stampede seconds / pgbench seconds        (goal <= 0.5)
  * select-only, prepared, TCP, -j 2, c=8 and c=32, and c=4 -j 4 (a thread per client):
                             stampede tps / pgbench tps                 (goal >= 1.00)
                             client CPU us per transaction, both from wait4 rusage (user+sys)
  * tpcb-like, prepared, TCP, c=8, -j 2: tps ratio                      (goal >= 1.00)
  * interpreter: 10 \\set lines + a trivial SELECT, prepared, c=8 -j 2   (goal >= 1.00)
  * pipeline: 16 SELECTs in \\startpipeline..\\endpipeline, c=8 -j 2   (goal tps >= 1.00,
    client CPU per transaction <= pgbench's)

Usage: bench/pgbench_vs_stampede.py [--seconds 15] [--rounds 2] [--scale 50] [--skip-init]
                                    [--only NAME]   (e.g. --only tpcb)
Build first: cargo build --release.
"""
import argparse
import os
import re
import subprocess
import sys
import time

from pgserver import Server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
SERVER = Server(15700, "/tmp/stampede-bench-15700")
DATA = SERVER.root


def conn(db):
    return SERVER.conn(db)


def psql(db, sql):
    SERVER.psql(db, sql)


def measured(cmd):
    """Runs cmd; returns (stdout+stderr, wall seconds, cpu seconds user+sys) from wait4."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out}")
    return out, wall, usage.ru_utime + usage.ru_stime


def run_tool(tool, args, db):
    program = [STAMPEDE, "pgbench"] if tool == "stampede" else ["pgbench"]
    out, _, cpu = measured(program + args + conn(db))
    tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    txns = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return tps, cpu * 1e6 / txns


ONLY = ""


def compare_runs(name, args, db, rounds):
    if ONLY not in name:
        return
    results = {"pgbench": [], "stampede": []}
    for r in range(rounds):
        # ABBA order: whatever the previous run leaves behind (dirty pages, dead rows,
        # autovacuum) falls on both tools alike.
        order = ("pgbench", "stampede") if r % 2 == 0 else ("stampede", "pgbench")
        for tool in order:
            results[tool].append(run_tool(tool, args, db))
    mean = lambda xs: sum(xs) / len(xs)
    pg_tps, st_tps = mean([r[0] for r in results["pgbench"]]), mean([r[0] for r in results["stampede"]])
    pg_cpu, st_cpu = mean([r[1] for r in results["pgbench"]]), mean([r[1] for r in results["stampede"]])
    print(f"{name:34} pgbench {pg_tps:9.0f} tps {pg_cpu:6.2f} us/txn | stampede {st_tps:9.0f} tps "
          f"{st_cpu:6.2f} us/txn | tps ratio {st_tps / pg_tps:.3f}  cpu ratio {st_cpu / pg_cpu:.3f}")
    sys.stdout.flush()


INTERPRETER_SCRIPT = "".join(
    f"\\set v{i} random(1, 100000 * :scale) + {i} * 2 - abs(-{i})\n" for i in range(10)
) + "SELECT :v9;\n"

PIPELINE_SCRIPT = "\\startpipeline\n" + "".join(
    f"\\set aid{i} random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid{i};\n"
    for i in range(16)
) + "\\endpipeline\n"


def write_script(name, text):
    path = os.path.join(DATA, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def compare_init(scale, rounds):
    times = {"pgbench": [], "stampede": []}
    for r in range(rounds):
        for tool in ("pgbench", "stampede"):
            db = f"init_{tool}_{r}"
            psql("postgres", f"DROP DATABASE IF EXISTS {db}")
            psql("postgres", f"CREATE DATABASE {db}")
            # Start each load from a clean WAL state, or a checkpoint triggered by the previous
            # load lands in the next one and decides the result.
            psql("postgres", "CHECKPOINT")
            program = [STAMPEDE, "pgbench"] if tool == "stampede" else ["pgbench"]
            _, wall, _ = measured(program + ["-i", "-q", "-s", str(scale)] + conn(db))
            times[tool].append(wall)
            psql("postgres", f"DROP DATABASE {db}")
    pg, st = min(times["pgbench"]), min(times["stampede"])
    print(f"{'init -s ' + str(scale):34} pgbench {pg:6.2f} s | stampede {st:6.2f} s | time ratio {st / pg:.3f} "
          f"(best of {rounds})")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scale", type=int, default=50)
    parser.add_argument("--skip-init", action="store_true")
    parser.add_argument("--only", default="", help="run only the comparisons whose name contains this")
    opts = parser.parse_args()
    global ONLY
    ONLY = opts.only
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    SERVER.init()
    SERVER.start()
    try:
        print(f"server: {SERVER.bindir}, 127.0.0.1:{SERVER.port}; {opts.seconds} s per run, {opts.rounds} rounds, alternating")
        if not opts.skip_init and not opts.only:
            compare_init(opts.scale, opts.rounds)
        psql("postgres", "CREATE DATABASE bench")
        subprocess.run(["pgbench", "-i", "-q", "-s", "10"] + conn("bench"), check=True, capture_output=True)
        secs = str(opts.seconds)
        for clients in (8, 32):
            compare_runs(f"select-only prepared c={clients} j=2",
                         ["-S", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", secs, "-n"], "bench",
                         opts.rounds)
        # A thread per client: stampede's solo path (driver/stream.rs, SoloSocket).
        compare_runs("select-only prepared c=4 j=4",
                     ["-S", "-M", "prepared", "-c", "4", "-j", "4", "-T", secs, "-n"], "bench",
                     opts.rounds)
        compare_runs("tpcb-like prepared c=8 j=2",
                     ["-M", "prepared", "-c", "8", "-j", "2", "-T", secs], "bench", opts.rounds)
        interpreter = write_script("interpreter.sql", INTERPRETER_SCRIPT)
        compare_runs("10 \\set + SELECT prepared c=8 j=2",
                     ["-f", interpreter, "-M", "prepared", "-c", "8", "-j", "2", "-T", secs, "-n"], "bench",
                     opts.rounds)
        pipeline = write_script("pipeline.sql", PIPELINE_SCRIPT)
        compare_runs("pipeline 16 SELECTs c=8 j=2",
                     ["-f", pipeline, "-M", "prepared", "-c", "8", "-j", "2", "-T", secs, "-n"], "bench",
                     opts.rounds)
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
