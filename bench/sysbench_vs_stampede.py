#!/usr/bin/env python3
"""stampede sysbench against the real sysbench (1.0.20, pgsql driver) on one server, same tables.

A throwaway server (the system's PostgreSQL, fsync off) gets the sbtest tables from
`stampede sysbench prepare`; then each test runs with both tools in ABBA order per round (so
drift hits both alike), same threads, same seconds, prepared statements. Prints per test the
mean QPS of each tool and their ratio (stampede / sysbench; goal >= 1.0).

Usage: bench/sysbench_vs_stampede.py [--seconds 10] [--rounds 2] [--threads 4]
                                     [--tables 4] [--table-size 100000]
Build first: cargo build --release; needs sysbench on PATH (apt-get install sysbench).
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.path.join(ROOT, "target", "release", "stampede")
TESTS = ["oltp_point_select", "oltp_read_only", "oltp_read_write"]


def qps(output):
    match = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", output)
    if not match:
        sys.exit(f"no queries line in:\n{output}")
    return float(match.group(1))


def run(tool, test, server, args):
    options = [f"--tables={args.tables}", f"--table-size={args.table_size}",
               f"--threads={args.threads}", f"--time={args.seconds}",
               f"--pgsql-host={server.root}", f"--pgsql-port={server.port}",
               "--pgsql-user=postgres", "--pgsql-db=postgres"]
    if tool == "sysbench":
        command = ["sysbench", test, "--db-driver=pgsql"] + options + ["run"]
    else:
        command = [STAMPEDE, "sysbench", "run", test] + options
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{tool} {test} failed:\n{result.stdout}\n{result.stderr}")
    return qps(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=100000)
    parser.add_argument("--port", type=int, default=15790)
    args = parser.parse_args()
    server = Server(args.port, "/tmp/stampede-bench-sysbench", "-c fsync=off -c shared_buffers=512MB")
    server.init()
    server.start()
    try:
        prepare = subprocess.run(
            [STAMPEDE, "sysbench", "prepare", f"--tables={args.tables}",
             f"--table-size={args.table_size}", f"--threads={args.threads}",
             f"--pgsql-host={server.root}", f"--pgsql-port={server.port}",
             "--pgsql-user=postgres", "--pgsql-db=postgres"],
            capture_output=True, text=True)
        if prepare.returncode != 0:
            sys.exit(f"prepare failed:\n{prepare.stderr}")
        for test in TESTS:
            results = {"sysbench": [], "stampede": []}
            for round_index in range(args.rounds):
                order = ["sysbench", "stampede"] if round_index % 2 == 0 else ["stampede", "sysbench"]
                for tool in order + order[::-1]:
                    results[tool].append(run(tool, test, server, args))
            mean = {tool: sum(v) / len(v) for tool, v in results.items()}
            print(f"{test:20} sysbench {mean['sysbench']:10.0f} qps | stampede {mean['stampede']:10.0f} qps"
                  f" | ratio {mean['stampede'] / mean['sysbench']:.3f}")
    finally:
        server.remove()


if __name__ == "__main__":
    main()
