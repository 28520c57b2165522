#!/usr/bin/env python3
"""stampede sysbench against the real sysbench (mysql driver) on one MariaDB, same tables.

A throwaway MariaDB (Debian's mariadb-server: mariadb-install-db, then mariadbd as the `mysql`
user on its own socket, buffer pool 1 GiB, no flush per commit) gets the sbtest tables from
`stampede sysbench prepare --db-driver mysql`; then each test runs at each thread count with
both tools in ABBA order per round (so drift hits both alike), same seconds, prepared statements
(sysbench's default), over the socket. Prints per test and thread count each tool's mean QPS and
client CPU per event (user+system of the tool's process over its events), and the ratios
stampede / sysbench (goals: QPS >= 1.0, CPU per event <= 1.0).

Usage: bench/mysql_sysbench_vs_stampede.py [--seconds 10] [--rounds 2] [--threads 4,16]
                                           [--tests oltp_point_select,oltp_read_only]
                                           [--tables 4] [--table-size 100000]
Build first: cargo build --release; needs sysbench and mariadb-server (apt-get install).
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysbench_vs_stampede import abba  # noqa: E402  (the same ABBA order as on PostgreSQL)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))


class MariaDb:
    def __init__(self, port, root):
        self.port, self.root = port, root
        self.socket = os.path.join(root, "mysqld.sock")
        self.process = None

    def start(self):
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        shutil.chown(self.root, "mysql", "mysql")
        data = os.path.join(self.root, "data")
        subprocess.run(["runuser", "-u", "mysql", "--", "mariadb-install-db", "--no-defaults",
                        f"--datadir={data}", "--auth-root-authentication-method=normal",
                        "--skip-test-db"], check=True, capture_output=True)
        self.process = subprocess.Popen(
            ["runuser", "-u", "mysql", "--", "mariadbd", "--no-defaults", f"--datadir={data}",
             f"--socket={self.socket}", f"--port={self.port}", "--bind-address=127.0.0.1",
             f"--log-error={self.root}/error.log", "--innodb-buffer-pool-size=1G",
             "--innodb-flush-log-at-trx-commit=0", "--max-connections=500"])
        for _ in range(300):
            if subprocess.run(["mariadb", "-uroot", f"--socket={self.socket}", "-e", "SELECT 1"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit("MariaDB did not start; see " + self.root + "/error.log")
        subprocess.run(["mariadb", "-uroot", f"--socket={self.socket}", "-e",
                        "CREATE DATABASE sbtest"], check=True)

    def stop(self):
        if self.process:
            subprocess.run(["mariadb-admin", "-uroot", f"--socket={self.socket}", "shutdown"])
            self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def connection(server):
    return ["--db-driver=mysql", f"--mysql-socket={server.socket}", "--mysql-user=root",
            "--mysql-db=sbtest"]


def execute(argv, what):
    """Runs a tool; returns its stdout and the CPU seconds (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(argv, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{what} failed:\n{result.stdout}\n{result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result.stdout, cpu


def run(tool, test, threads, server, args):
    options = [f"--tables={args.tables}", f"--table-size={args.table_size}",
               f"--threads={threads}", f"--time={args.seconds}"]
    if tool == "sysbench":
        argv = ["sysbench", test] + options + connection(server) + ["run"]
    else:
        argv = [STAMPEDE, "sysbench", "run", test] + options + connection(server)
    output, cpu = execute(argv, f"{tool} {test}")
    queries = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", output)
    events = re.search(r"transactions:\s+(\d+)", output)
    if not queries or not events:
        sys.exit(f"no queries/transactions line in:\n{output}")
    return float(queries.group(1)), cpu / max(int(events.group(1)), 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", default="4,16")
    parser.add_argument("--tests", default="oltp_point_select,oltp_read_only")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=100000)
    parser.add_argument("--port", type=int, default=15791)
    args = parser.parse_args()
    server = MariaDb(args.port, "/tmp/stampede-bench-mariadb")
    server.start()
    try:
        execute([STAMPEDE, "sysbench", "prepare", f"--tables={args.tables}",
                 f"--table-size={args.table_size}", "--threads=4"] + connection(server), "prepare")
        for test in args.tests.split(","):
            for threads in [int(t) for t in args.threads.split(",")]:
                results = abba(args.rounds, lambda tool: run(tool, test, threads, server, args))
                qps = {tool: sum(q for q, _ in v) / len(v) for tool, v in results.items()}
                cpu = {tool: sum(c for _, c in v) / len(v) for tool, v in results.items()}
                print(f"{test:18} {threads:3} threads  sysbench {qps['sysbench']:9.0f} qps"
                      f" {cpu['sysbench'] * 1e6:6.1f} us/event | stampede {qps['stampede']:9.0f} qps"
                      f" {cpu['stampede'] * 1e6:6.1f} us/event | qps ratio"
                      f" {qps['stampede'] / qps['sysbench']:.3f}, cpu/event ratio"
                      f" {cpu['stampede'] / cpu['sysbench']:.3f}", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
