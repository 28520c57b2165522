#!/usr/bin/env python3
"""What only a clock can check, stampede beside pgbench on one server in one run: how closely
`-R` holds its rate, the schedule lag, how much `\\sleep 2 ms` overshoots in `-r`'s table, and
when the first `-P 1` line arrives while every client waits 2.5 s in the server. The tests
check the counts and the order of these events; this script measures their timing.

Usage: bench/clock.py [--rounds 2]      (starts its own PostgreSQL on 127.0.0.1:15710)
Build first: cargo build --release; STAMPEDE=path measures another build.
"""
import argparse
import os
import re
import subprocess
import sys
import time

from pgserver import Server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
SERVER = Server(15710, "/tmp/stampede-bench-15710")


def program(tool):
    return [STAMPEDE, "pgbench"] if tool == "stampede" else ["pgbench"]


def run(tool, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    out = subprocess.run(program(tool) + args + SERVER.conn("bench"), capture_output=True,
                         text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{tool} failed: {out.stderr}")
    return out.stdout


def rate(tool):
    text = run(tool, ["-S", "-R", "200", "-T", "10", "-c", "2", "-j", "2", "-n"])
    tps = float(re.search(r"^tps = ([0-9.]+)", text, re.M).group(1))
    lag = float(re.search(r"rate limit schedule lag: avg ([0-9.]+)", text).group(1))
    return tps / 200, lag


def sleep_overshoot(tool, script):
    text = run(tool, ["-n", "-f", script, "-T", "3", "-r"])
    rows = text.split("statement latencies in milliseconds")[1].splitlines()[1:]
    sleep_row = next(row for row in rows if "\\sleep" in row)
    return float(sleep_row.split()[0]) - 2.0


def first_progress(tool, script):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    started = time.monotonic()
    child = subprocess.Popen(program(tool) + ["-n", "-f", script, "-c", "2", "-j", "2", "-T", "3",
                                              "-P", "1"] + SERVER.conn("bench"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    arrived = None
    for line in child.stderr:
        if line.startswith("progress: 1.0 s") and arrived is None:
            arrived = time.monotonic() - started
    child.wait()
    return arrived


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    SERVER.init()
    SERVER.start()
    try:
        SERVER.pgbench_database("bench", 1)
        sleep_script = SERVER.write_file("sleep.sql", "\\set x random(1, 10)\nSELECT :x;\n\\sleep 2 ms\n")
        idle_script = SERVER.write_file("idle.sql", "SELECT pg_sleep(2.5);\n")
        print(f"server: {SERVER.bindir}, 127.0.0.1:{SERVER.port}; {opts.rounds} rounds, alternating")
        for r in range(opts.rounds):
            order = ("pgbench", "stampede") if r % 2 == 0 else ("stampede", "pgbench")
            for tool in order:
                held, lag = rate(tool)
                overshoot = sleep_overshoot(tool, sleep_script)
                progress = first_progress(tool, idle_script)
                print(f"round {r + 1} {tool:8}  -R 200: tps/rate {held:.3f}, lag {lag:.3f} ms | "
                      f"\\sleep 2 ms overshoot {overshoot:.3f} ms | first -P 1 line at "
                      f"{progress:.2f} s (first transaction ends at 2.5 s)")
                sys.stdout.flush()
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
