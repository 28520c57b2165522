#!/usr/bin/env python3
"""stampede sysbench against the real sysbench (1.0.20, pgsql driver) on one server, same tables.

A throwaway server (the system's PostgreSQL, fsync off) gets the sbtest tables from
`stampede sysbench prepare`; then each test runs at each thread count with both tools in ABBA
order per round (so drift hits both alike), same seconds, prepared statements. Prints per test
and thread count the mean QPS of each tool and their ratio (stampede / sysbench; goal >= 1.0).

`--prepare` also times `prepare` of --prepare-tables x --prepare-size rows with both tools
(cleanup between, ABBA, same --threads), and prints stampede's time over sysbench's (goal
<= 0.5).

Usage: bench/sysbench_vs_stampede.py [--seconds 10] [--rounds 2] [--threads 4,16]
                                     [--tests oltp_point_select,oltp_read_only]
                                     [--tables 4] [--table-size 100000]
                                     [--prepare] [--prepare-tables 4] [--prepare-size 1000000]
Build first: cargo build --release; needs sysbench on PATH (apt-get install sysbench).
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))


def qps(output):
    match = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", output)
    if not match:
        sys.exit(f"no queries line in:\n{output}")
    return float(match.group(1))


def command(tool, action, test, server, options):
    connection = [f"--pgsql-host={server.root}", f"--pgsql-port={server.port}",
                  "--pgsql-user=postgres", "--pgsql-db=postgres"]
    if tool == "sysbench":
        # sysbench's prepare/cleanup need a test script; oltp_common's tables are the same.
        return ["sysbench", test, "--db-driver=pgsql"] + options + connection + [action]
    return [STAMPEDE, "sysbench", action] + ([test] if action == "run" else []) + options + connection


def execute(argv, what):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{what} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def run(tool, test, threads, server, args):
    options = [f"--tables={args.tables}", f"--table-size={args.table_size}",
               f"--threads={threads}", f"--time={args.seconds}"]
    return qps(execute(command(tool, "run", test, server, options), f"{tool} {test}"))


def prepare_seconds(tool, server, args):
    options = [f"--tables={args.prepare_tables}", f"--table-size={args.prepare_size}",
               f"--threads={args.prepare_threads}"]
    execute(command(tool, "cleanup", "oltp_read_only", server, options), f"{tool} cleanup")
    server.psql("postgres", "CHECKPOINT")
    started = time.monotonic()
    execute(command(tool, "prepare", "oltp_read_only", server, options), f"{tool} prepare")
    seconds = time.monotonic() - started
    execute(command(tool, "cleanup", "oltp_read_only", server, options), f"{tool} cleanup")
    return seconds


def abba(rounds, measure):
    results = {"sysbench": [], "stampede": []}
    for round_index in range(rounds):
        order = ["sysbench", "stampede"] if round_index % 2 == 0 else ["stampede", "sysbench"]
        for tool in order + order[::-1]:
            results[tool].append(measure(tool))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", default="4,16")
    parser.add_argument("--tests", default="oltp_point_select,oltp_read_only")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=100000)
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--prepare-only", action="store_true")
    parser.add_argument("--prepare-tables", type=int, default=4)
    parser.add_argument("--prepare-size", type=int, default=1000000)
    parser.add_argument("--prepare-threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=15790)
    args = parser.parse_args()
    server = Server(args.port, "/tmp/stampede-bench-sysbench",
                    "-c fsync=off -c shared_buffers=512MB -c max_wal_size=4GB")
    server.init()
    server.start()
    try:
        if args.prepare or args.prepare_only:
            results = abba(args.rounds, lambda tool: prepare_seconds(tool, server, args))
            mean = {tool: sum(v) / len(v) for tool, v in results.items()}
            print(f"prepare {args.prepare_tables} x {args.prepare_size} rows, {args.prepare_threads} threads:"
                  f" sysbench {mean['sysbench']:.2f} s | stampede {mean['stampede']:.2f} s"
                  f" | time ratio {mean['stampede'] / mean['sysbench']:.3f}"
                  f" (sysbench {', '.join(f'{v:.2f}' for v in results['sysbench'])};"
                  f" stampede {', '.join(f'{v:.2f}' for v in results['stampede'])})", flush=True)
        if args.prepare_only:
            return
        execute([STAMPEDE, "sysbench", "prepare", f"--tables={args.tables}",
                 f"--table-size={args.table_size}", "--threads=4",
                 f"--pgsql-host={server.root}", f"--pgsql-port={server.port}",
                 "--pgsql-user=postgres", "--pgsql-db=postgres"], "prepare")
        for test in args.tests.split(","):
            for threads in [int(t) for t in args.threads.split(",")]:
                results = abba(args.rounds, lambda tool: run(tool, test, threads, server, args))
                mean = {tool: sum(v) / len(v) for tool, v in results.items()}
                print(f"{test:20} {threads:3} threads  sysbench {mean['sysbench']:10.0f} qps"
                      f" | stampede {mean['stampede']:10.0f} qps"
                      f" | ratio {mean['stampede'] / mean['sysbench']:.3f}", flush=True)
    finally:
        server.remove()


if __name__ == "__main__":
    main()
