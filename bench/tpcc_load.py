#!/usr/bin/env python3
"""stampede tpcc build against the physical limit of loading the same data on the same server.

A throwaway server (the system's PostgreSQL, fsync off) gets `stampede tpcc build` of
--warehouses; its tables are then written to server-side files (COPY TO, binary) and loaded
into an empty copy of the schema with COPY FROM those files — the server's own fastest path,
no client at all — over the same number of connections, followed by the same key and index
builds, also in parallel. Prints both times (load + indexes; the build's ANALYZE and VACUUM are
shown apart, the limit has none) and their ratio (goal: stampede <= 1.3 x the limit), and
warehouses per minute. Rounds alternate the two (ABBA).

Usage: bench/tpcc_load.py [--warehouses 10] [--threads 2] [--rounds 1]
Build first: cargo build --release.
"""
import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
TABLES = ["item", "warehouse", "district", "stock", "customer", "history", "orders",
          "new_order", "order_line"]


def psql(server, db, sql):
    result = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", server.root,
                             "-p", server.port, "-U", "postgres", "-d", db, "-c", sql],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"psql failed for {sql}: {result.stderr}")
    return result.stdout.strip()


def stampede_build(server, db, args):
    psql(server, "postgres", f"DROP DATABASE IF EXISTS {db}")
    psql(server, "postgres", f"CREATE DATABASE {db}")
    psql(server, "postgres", "CHECKPOINT")
    started = time.monotonic()
    result = subprocess.run([STAMPEDE, "tpcc", "build", f"--warehouses={args.warehouses}",
                             f"--threads={args.threads}", "--seed=1", "-h", server.root, "-p", server.port,
                             "-U", "postgres", "-d", db], capture_output=True, text=True)
    total = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stdout}\n{result.stderr}")
    loaded = float(re.search(r"load and indexes ([\d.]+) s", result.stdout).group(1))
    return loaded, total


def index_statements(server, db):
    """The keys and indexes of the built database, as statements."""
    rows = psql(server, db, """
        SELECT CASE WHEN con.conname IS NOT NULL
                    THEN format('ALTER TABLE %s ADD CONSTRAINT %s %s', c.relname, con.conname,
                                pg_get_constraintdef(con.oid))
                    ELSE pg_get_indexdef(i.indexrelid) END
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.contype = 'p'
        WHERE c.relname = ANY('{item,warehouse,district,stock,customer,history,orders,new_order,order_line}')""")
    return rows.splitlines()


def physical_limit(server, source, args, files):
    db = "tpcc_limit"
    psql(server, "postgres", f"DROP DATABASE IF EXISTS {db}")
    psql(server, "postgres", f"CREATE DATABASE {db}")
    schema = subprocess.run(["pg_dump", "-h", server.root, "-p", server.port, "-U", "postgres",
                             "--schema-only", "--section=pre-data", "-t", "(" + "|".join(TABLES) + ")",
                             source], capture_output=True, text=True, check=True).stdout
    subprocess.run(["psql", "-X", "-q", "-h", server.root, "-p", server.port, "-U", "postgres", "-d", db],
                   input=schema, capture_output=True, text=True, check=True)
    indexes = index_statements(server, source)
    psql(server, "postgres", "CHECKPOINT")
    started = time.monotonic()
    # Largest first, over the same number of connections as the build.
    by_size = sorted(TABLES, key=lambda t: -os.path.getsize(files[t]))
    with ThreadPoolExecutor(args.threads) as pool:
        list(pool.map(lambda t: psql(server, db, f"COPY {t} FROM '{files[t]}' WITH (FORMAT binary)"),
                      by_size))
        list(pool.map(lambda s: psql(server, db, s), indexes))
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--port", type=int, default=15791)
    args = parser.parse_args()
    server = Server(args.port, "/tmp/stampede-bench-tpcc", "-c fsync=off -c shared_buffers=1GB "
                    "-c max_wal_size=8GB -c maintenance_work_mem=512MB")
    server.init()
    server.start()
    dump = os.path.join(server.root, "dump")
    os.makedirs(dump)
    if os.geteuid() == 0:
        subprocess.run(["chown", "postgres", dump], check=True)
    try:
        stampede_build(server, "tpcc_source", args)
        files = {t: os.path.join(dump, f"{t}.copy") for t in TABLES}
        for table, path in files.items():
            psql(server, "tpcc_source", f"COPY {table} TO '{path}' WITH (FORMAT binary)")
        results = {"stampede": [], "limit": [], "total": []}
        for round_index in range(args.rounds):
            order = ["stampede", "limit"] if round_index % 2 == 0 else ["limit", "stampede"]
            for what in order + order[::-1]:
                if what == "stampede":
                    loaded, total = stampede_build(server, "tpcc_run", args)
                    results["stampede"].append(loaded)
                    results["total"].append(total)
                else:
                    results["limit"].append(physical_limit(server, "tpcc_source", args, files))
        mean = {k: sum(v) / len(v) for k, v in results.items()}
        print(f"tpcc load of {args.warehouses} warehouses, {args.threads} connections:"
              f" stampede load+indexes {mean['stampede']:.2f} s (whole build with ANALYZE and VACUUM"
              f" {mean['total']:.2f} s, {args.warehouses * 60 / mean['total']:.1f} warehouses/min)"
              f" | COPY FROM server files + indexes {mean['limit']:.2f} s"
              f" | time ratio {mean['stampede'] / mean['limit']:.3f}"
              f" (stampede {', '.join(f'{v:.2f}' for v in results['stampede'])};"
              f" limit {', '.join(f'{v:.2f}' for v in results['limit'])})")
    finally:
        server.remove()


if __name__ == "__main__":
    main()
