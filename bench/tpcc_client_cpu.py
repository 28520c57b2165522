#!/usr/bin/env python3
"""Is stampede's TPROC-C client mode ever the bottleneck? Its CPU per transaction against the
server's, both from /proc, on the same machine in the same run.

A throwaway server (the system's PostgreSQL, fsync off) gets `stampede tpcc build`, then
`stampede tpcc run --mode client --vu 16` (no rampup, so that every transaction the client
spends CPU on is in the run's counts). The client's CPU is GNU time's user + system of the
stampede process; the server's is the change in the postmaster's own and reaped children's
times (/proc/PID/stat utime, stime, cutime, cstime: the backends exit when the run ends) plus
its live children's. Prints both per transaction and the ratio (goal: client <= 20% of server).
With --mode server the same for one CALL per transaction.

Usage: bench/tpcc_client_cpu.py [--vu 16] [--warehouses 8] [--seconds 30] [--mode client]
Build first: cargo build --release.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server, server_cpu_s  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vu", type=int, default=16)
    parser.add_argument("--warehouses", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--mode", default="client")
    parser.add_argument("--port", type=int, default=15471)
    args = parser.parse_args()
    server = Server(args.port, os.path.join(tempfile.gettempdir(), f"stampede-bench-{args.port}"),
                    "-c fsync=off -c shared_buffers=1GB -c synchronous_commit=off")
    server.init()
    server.start()
    json_path = os.path.join(tempfile.gettempdir(), f"stampede-cpu-{os.getpid()}.json")
    try:
        postmaster = int(open(os.path.join(server.data, "postmaster.pid")).readline())
        connection = ["-h", server.root, "-p", server.port, "-U", "postgres", "-d", "postgres"]
        subprocess.run([STAMPEDE, "tpcc", "build", f"--warehouses={args.warehouses}", "--seed=1"]
                       + connection, check=True, capture_output=True)
        before = server_cpu_s(postmaster)
        run = subprocess.run(["/usr/bin/time", "-f", "cpu-s %U %S", STAMPEDE, "tpcc", "run",
                              f"--mode={args.mode}", f"--vu={args.vu}", "--rampup=0s",
                              f"--duration={args.seconds}s", "--seed=1", "--json", json_path]
                             + connection, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"the run failed:\n{run.stdout}\n{run.stderr}")
        server_s = server_cpu_s(postmaster) - before
    finally:
        server.remove()
    with open(json_path) as f:
        report = json.load(f)
    os.remove(json_path)
    user, system = (float(x) for x in re.search(r"cpu-s ([\d.]+) ([\d.]+)", run.stderr).groups())
    client_s = user + system
    transactions = sum(t["count"] for t in report["transactions"].values())
    client_us = client_s * 1e6 / transactions
    server_us = server_s * 1e6 / transactions
    print(f"{args.mode} mode, {args.vu} virtual users, {args.warehouses} warehouses, {args.seconds} s: "
          f"{transactions} transactions, {report['nopm']:.0f} NOPM")
    print(f"client CPU {client_s:.2f} s = {client_us:.1f} us/transaction; "
          f"server CPU {server_s:.2f} s = {server_us:.1f} us/transaction")
    print(f"ratio client / server CPU per transaction: {client_us / server_us:.3f} (goal <= 0.20)")


if __name__ == "__main__":
    main()
