#!/usr/bin/env python3
"""dbSTRESS on MariaDB: stampede's client CPU per transaction against the server's.

Issue 20's goal: at 8 sessions of dbSTRESS read-only, the injector must cost at most 10% of
what the server spends per transaction, or the comparison measures the injector. A throwaway
MariaDB (the same as bench/mysql_sysbench_vs_stampede.py's) gets `stampede dbstress prepare
--engine mariadb`; then `stampede dbstress run --mode ro --sessions 8` runs in each protocol.
The client's CPU is its process's user+system time (rusage of the child); the server's is
mariadbd's utime+stime from /proc over the same run. Prints per protocol the transactions per
second, both CPU times per transaction and their ratio client / server (goal: <= 0.10).

Usage: bench/dbstress_client_cost.py [--seconds 10] [--sessions 8] [--objects 100000]
Build first: cargo build --release; needs mariadb-server (apt-get install).
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mysql_sysbench_vs_stampede import STAMPEDE, MariaDb, execute  # noqa: E402


def process_cpu_s(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(server):
    """mariadbd's pid (runuser's child)."""
    with open(f"/proc/{server.process.pid}/task/{server.process.pid}/children") as children:
        return int(children.read().split()[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--objects", type=int, default=100000)
    args = parser.parse_args()
    server = MariaDb(15792, os.path.join(tempfile.gettempdir(), "stampede-bench-dbstress-mdb"))
    server.start()
    try:
        connection = ["--engine", "mariadb", "--socket", server.socket, "-U", "root", "-d",
                      "sbtest"]
        execute([STAMPEDE, "dbstress", "prepare", "--objects", str(args.objects)] + connection,
                "prepare")
        pid = server_pid(server)
        print(f"dbSTRESS ro, {args.sessions} sessions, {args.seconds} s, {args.objects} objects")
        print(f"{'protocol':<10} {'tps':>10} {'client us/txn':>14} {'server us/txn':>14} "
              f"{'client/server':>14}")
        for protocol in ["prepared", "simple"]:
            report = os.path.join(server.root, f"{protocol}.json")
            argv = [STAMPEDE, "dbstress", "run", "--mode", "ro", "--sessions",
                    str(args.sessions), "--time", str(args.seconds), "--json", report]
            if protocol == "prepared":
                argv.append("--prepared")
            server_before = process_cpu_s(pid)
            _, client_cpu = execute(argv + connection, f"run ({protocol})")
            server_cpu = process_cpu_s(pid) - server_before
            with open(report) as f:
                result = json.load(f)
            transactions = result["transactions"]
            client_us = client_cpu / transactions * 1e6
            server_us = server_cpu / transactions * 1e6
            print(f"{protocol:<10} {result['tps']:>10.0f} {client_us:>14.1f} {server_us:>14.1f} "
                  f"{client_us / server_us:>14.3f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
