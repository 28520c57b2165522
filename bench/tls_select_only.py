#!/usr/bin/env python3
"""stampede vs pgbench over TLS, side by side on one server in one run; prints ratios.

Starts its own PostgreSQL with ssl = on (a self-signed certificate made with openssl) on
127.0.0.1:15710, loads pgbench at scale 10, then runs select-only, prepared, at -c 1 -j 1 (a
thread's only client: the solo socket), -c 4 -j 2 and -c 8 -j 2 (several clients per thread:
the sweep), under sslmode=require (TLS 1.3, the server's choice of cipher) and, for scale,
under sslmode=disable, rotating the tools' order each round so drift hits all alike:
                     stampede tps / pgbench tps                  (goal >= 1.0 over TLS)
                     client CPU us per transaction, from wait4   (stampede / pgbench)
With --against OLD, an older stampede binary runs in the same rotation and its ratios print
beside the new one's (a before/after of a change, in one sitting).

Usage: bench/tls_select_only.py [--seconds 15] [--rounds 2] [--against old/stampede]
Build first: cargo build --release.
"""
import argparse
import os
import shutil
import subprocess
import sys

from pgbench_vs_stampede import STAMPEDE, measured
from pgserver import Server

SERVER = Server(15710, "/tmp/stampede-bench-tls-15710")


def make_certificate(root):
    """A self-signed certificate for localhost, readable by the server's user only."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", "server.key", "-out", "server.crt", "-subj", "/CN=localhost"],
                   cwd=root, check=True, capture_output=True)
    for name in ("server.key", "server.crt"):
        path = os.path.join(root, name)
        os.chmod(path, 0o600)
        if os.geteuid() == 0:
            shutil.chown(path, "postgres", "postgres")


def conninfo(sslmode):
    return f"host=127.0.0.1 port={SERVER.port} user=postgres dbname=bench sslmode={sslmode}"


def run_tool(program, args, sslmode):
    out, _, cpu = measured(program + args + [conninfo(sslmode)])
    tps = float(next(line for line in out.splitlines() if line.startswith("tps = ")).split()[2])
    txns = int(next(line for line in out.splitlines()
                    if line.startswith("number of transactions actually processed:")).split()[-1].split("/")[0])
    return tps, cpu * 1e6 / txns


def compare(tools, sslmode, clients, jobs, seconds, rounds):
    args = ["-S", "-M", "prepared", "-c", str(clients), "-j", str(jobs), "-T", str(seconds), "-n"]
    results = {name: [] for name in tools}
    names = list(tools)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            results[name].append(run_tool(tools[name], args, sslmode))
    mean = lambda xs: sum(xs) / len(xs)
    tps = {name: mean([r[0] for r in results[name]]) for name in names}
    cpu = {name: mean([r[1] for r in results[name]]) for name in names}
    line = (f"c={clients} j={jobs} sslmode={sslmode:8} pgbench {tps['pgbench']:7.0f} tps "
            f"{cpu['pgbench']:5.2f} us/txn")
    for name in names[1:]:
        line += (f" | {name} {tps[name]:7.0f} tps {cpu[name]:5.2f} us/txn, "
                 f"tps ratio {tps[name] / tps['pgbench']:.3f} cpu ratio {cpu[name] / cpu['pgbench']:.3f}")
    print(line)
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", help="an older stampede binary, measured beside this one")
    opts = parser.parse_args()
    tools = {"pgbench": ["pgbench"], "stampede": [STAMPEDE, "pgbench"]}
    if opts.against:
        tools["old"] = [opts.against, "pgbench"]
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    SERVER.init()
    make_certificate(SERVER.root)
    SERVER.settings = (f"-c ssl=on -c ssl_cert_file={SERVER.root}/server.crt "
                       f"-c ssl_key_file={SERVER.root}/server.key")
    SERVER.start()
    try:
        print(f"server: {SERVER.bindir}, 127.0.0.1:{SERVER.port} with ssl = on; "
              f"{opts.seconds} s per run, {opts.rounds} rounds, alternating")
        SERVER.psql("postgres", "CREATE DATABASE bench")
        subprocess.run(["pgbench", "-i", "-q", "-s", "10"] + SERVER.conn("bench"), check=True,
                       capture_output=True)
        for sslmode in ("require", "disable"):
            for clients, jobs in ((1, 1), (4, 2), (8, 2)):
                compare(tools, sslmode, clients, jobs, opts.seconds, opts.rounds)
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
