#!/usr/bin/env python3
"""stampede vs pgbench over TLS, side by side on one server in one run; prints ratios.

Starts its own PostgreSQL with ssl = on (a self-signed certificate made with openssl) on
127.0.0.1:15710, loads pgbench at scale 10, then runs select-only, prepared, c=8, -j 2 under
sslmode=require (TLS 1.3, the server's choice of cipher) and, for scale, under sslmode=disable,
alternating the tools (ABBA) so drift hits both alike:
                     stampede tps / pgbench tps                  (goal >= 1.0 over TLS)
                     client CPU us per transaction, from wait4   (stampede / pgbench)

Usage: bench/tls_select_only.py [--seconds 15] [--rounds 2]
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


def run_tool(tool, args, sslmode):
    program = [STAMPEDE, "pgbench"] if tool == "stampede" else ["pgbench"]
    out, _, cpu = measured(program + args + [conninfo(sslmode)])
    tps = float(next(line for line in out.splitlines() if line.startswith("tps = ")).split()[2])
    txns = int(next(line for line in out.splitlines()
                    if line.startswith("number of transactions actually processed:")).split()[-1].split("/")[0])
    return tps, cpu * 1e6 / txns


def compare(sslmode, seconds, rounds):
    args = ["-S", "-M", "prepared", "-c", "8", "-j", "2", "-T", str(seconds), "-n"]
    results = {"pgbench": [], "stampede": []}
    for r in range(rounds):
        order = ("pgbench", "stampede") if r % 2 == 0 else ("stampede", "pgbench")
        for tool in order:
            results[tool].append(run_tool(tool, args, sslmode))
    mean = lambda xs: sum(xs) / len(xs)
    pg_tps, st_tps = (mean([r[0] for r in results[t]]) for t in ("pgbench", "stampede"))
    pg_cpu, st_cpu = (mean([r[1] for r in results[t]]) for t in ("pgbench", "stampede"))
    print(f"select-only prepared c=8 j=2 sslmode={sslmode:8} pgbench {pg_tps:9.0f} tps {pg_cpu:6.2f} us/txn | "
          f"stampede {st_tps:9.0f} tps {st_cpu:6.2f} us/txn | tps ratio {st_tps / pg_tps:.3f}  "
          f"cpu ratio {st_cpu / pg_cpu:.3f}")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
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
            compare(sslmode, opts.seconds, opts.rounds)
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
