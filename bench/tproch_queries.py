#!/usr/bin/env python3
"""Each TPROC-H query's server time when stampede sends it against when HammerDB does, on the
same data, the same text and the same settings.

A throwaway server (the system's PostgreSQL, fsync off, pg_stat_statements loaded, every
statement logged) gets a stampede build at --scale-factor. HammerDB's TPROC-H driver (through its
CLI: one virtual user, one query set; the statements it sent are read back from the server's
log, since its VERBOSE mode prints every result row through its GUI thread and takes minutes
for Q10's 38,000) runs the 22 queries; then
stampede's driver sends those same 22 texts in HammerDB's order on one session (one
`stampede pgbench -r -f` script, run once), so the parameters, and with them the plans, are
HammerDB's. Each round draws new parameters (HammerDB's); the ratios are over rounds. pg_stat_statements, reset before
each tool, gives every query's execution time on the server; the tools' own times (HammerDB's
"query N completed in X seconds", stampede's latency) give the client's share.
Prints a row per query and the geometric mean of the server-time ratios (goal: each within ±5%).

Usage: bench/tproch_queries.py --hammerdb /tmp/hammerdb412 [--scale-factor 1] [--rounds 3]
Build first: cargo build --release.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hammerdb import shim_folder, PGTCL, hammerdb_version  # noqa: E402
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))


def psql(server, db, sql, user="postgres"):
    result = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h",
                             server.root, "-p", server.port, "-U", user, "-d", db, "-c", sql],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"psql failed for {sql[:200]}: {result.stderr}")
    return result.stdout.strip()


def statement_times(server):
    """(query text, calls, total exec ms) of the tpch database's statements."""
    rows = psql(server, "tpch", """SELECT query, calls, total_exec_time FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'tpch')""")
    return [(r.split("\t")[0], int(r.split("\t")[1]), float(r.split("\t")[2])) for r in rows.splitlines()]


def shape(text):
    """A statement with its constants made `?`, as pg_stat_statements' `$n` are: to match the two."""
    text = re.sub(r"'[^']*'", "?", text)
    text = re.sub(r"\$\d+", "?", text)
    text = re.sub(r"(?<![\w$])\d+(\.\d+)?", "?", text)
    return re.sub(r"\s+", " ", text).strip().lower()[:80]


def timed_select(text):
    """The statement a tool's time is for: query 15's SELECT, the only statement otherwise."""
    parts = [p.strip() for p in text.split(";") if p.strip()]
    return parts[1] if len(parts) == 3 else parts[0]


def server_ms(times, text):
    """The server's mean time for a text's timed statement."""
    key = shape(timed_select(text))
    matches = [t for t in times if shape(t[0]) == key]
    return sum(t[2] for t in matches) / max(1, sum(t[1] for t in matches)) if matches else float("nan")


def hammerdb_queries(server, args):
    shim = shim_folder(args.pgtcl or PGTCL)
    script = os.path.join(shim, "run.tcl")
    with open(script, "w") as f:
        f.write("\n".join([
            "dbset db pg", "dbset bm TPC-H",
            "diset connection pg_host 127.0.0.1", f"diset connection pg_port {server.port}",
            "diset connection pg_sslmode disable",
            f"diset tpch pg_scale_fact {int(args.scale_factor)}", "diset tpch pg_tpch_user tpch",
            "diset tpch pg_tpch_pass tpch", "diset tpch pg_tpch_dbase tpch",
            "diset tpch pg_total_querysets 1", "diset tpch pg_verbose false",
            "diset tpch pg_degree_of_parallel 2", "diset tpch pg_refresh_on false",
            "loadscript", "vuset vu 1", "vuset logtotemp 0", "vucreate", "vurun", "vudestroy",
            "quit"]) + "\n")
    env = dict(os.environ, TCLLIBPATH=shim, TMP=shim)
    run = subprocess.run(["tclsh8.6", "hammerdbcli", "auto", script], cwd=args.hammerdb, env=env,
                         capture_output=True, text=True)
    order, seconds = [], {}
    for line in run.stdout.splitlines():
        started = re.search(r"Executing Query (\d+) \(\d+ of 22\)", line)
        if started:
            order.append(int(started.group(1)))
        done = re.search(r"query (\d+) completed in ([\d.]+) seconds", line)
        if done:
            seconds[int(done.group(1))] = float(done.group(2))
    if len(order) != 22:
        sys.exit(f"HammerDB ran {len(order)} queries:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
    # The statements HammerDB's session sent after its scale-factor check, in its order; query
    # 15 is its view's creation, its SELECT and the view's drop.
    with open(os.path.join(server.root, "log")) as f:
        logged = [line.split("statement: ", 1)[1].strip() for line in f if "statement: " in line]
    start = max(i for i, text in enumerate(logged) if text.startswith("SELECT count(*) FROM SUPPLIER")) + 1
    sent, texts = logged[start:], {}
    for number in order:
        take = 3 if number == 15 else 1
        texts[number] = "; ".join(sent[:take])
        sent = sent[take:]
    return texts, seconds


def stampede_queries(server, texts, order):
    """The 22 texts in HammerDB's order as one script, one session, run once; each statement's
    latency from `-r`."""
    folder = tempfile.mkdtemp(prefix="tproch-queries-")
    path = os.path.join(folder, "queryset.sql")
    statements = [s.strip() for number in order for s in texts[number].split(";") if s.strip()]
    with open(path, "w") as f:
        f.write("".join(s + ";\n" for s in statements))
    out = subprocess.run([STAMPEDE, "pgbench", "-n", "-r", "-f", path, "-t", "1", "-h", server.root, "-p",
                          server.port, "-U", "tpch", "tpch"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"stampede failed: {out.stderr}")
    latencies = [float(m.group(1)) for m in re.finditer(r"^\s+([\d.]+)\s+\d+\s+\S", out.stdout, re.M)]
    if len(latencies) != len(statements):
        sys.exit(f"{len(latencies)} statement latencies for {len(statements)} statements:\n{out.stdout}")
    by_text = dict(zip(statements, latencies))
    return {number: by_text[timed_select(texts[number])] / 1000 for number in order}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hammerdb", required=True)
    parser.add_argument("--scale-factor", type=float, default=1)
    parser.add_argument("--port", type=int, default=15794)
    parser.add_argument("--pgtcl")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = Server(args.port, "/tmp/stampede-bench-tproch-queries",
                    "-c fsync=off -c shared_buffers=1GB -c max_wal_size=8GB "
                    "-c shared_preload_libraries=pg_stat_statements -c log_statement=all")
    server.init()
    server.start()
    try:
        psql(server, "postgres", "CREATE ROLE tpch LOGIN SUPERUSER")
        psql(server, "postgres", "CREATE DATABASE tpch OWNER tpch")
        subprocess.run([STAMPEDE, "tproch", "build", f"--scale-factor={args.scale_factor}", "--threads=2",
                        "-h", server.root, "-p", server.port, "-U", "tpch", "-d", "tpch"],
                       check=True, capture_output=True)
        psql(server, "tpch", "CREATE EXTENSION pg_stat_statements")
        rows = {number: [] for number in range(1, 23)}
        for _ in range(args.rounds):
            psql(server, "tpch", "SELECT pg_stat_statements_reset()")
            texts, hammerdb_s = hammerdb_queries(server, args)
            hammerdb_server = statement_times(server)
            psql(server, "tpch", "SELECT pg_stat_statements_reset()")
            order = sorted(texts, key=lambda n: list(texts).index(n))
            stampede_s = stampede_queries(server, texts, order)
            stampede_server = statement_times(server)
            for number in range(1, 23):
                h = server_ms(hammerdb_server, texts[number])
                s = server_ms(stampede_server, texts[number])
                rows[number].append((h, s, hammerdb_s[number] * 1000 - h, stampede_s[number] * 1000 - s))
        print(f"query  HammerDB server ms  stampede server ms  ratio   HammerDB client-server ms  stampede client-server ms"
              f"   (means of {args.rounds} round(s))")
        ratios = []
        for number, samples in rows.items():
            h, s, hc, sc = (sum(v[i] for v in samples) / len(samples) for i in range(4))
            ratio = math.exp(sum(math.log(v[1] / v[0]) for v in samples) / len(samples))
            ratios.append(ratio)
            print(f"Q{number:<4} {h:18.1f} {s:19.1f} {ratio:7.3f} {hc:26.1f} {sc:26.1f}")
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        outside = [f"Q{i + 1}" for i, r in enumerate(ratios) if abs(r - 1) > 0.05]
        print(f"TPROC-H at SF {args.scale_factor}, HammerDB {hammerdb_version(args.hammerdb)}'s texts: stampede / HammerDB server time,"
              f" geometric mean {mean:.3f}; outside ±5%: {', '.join(outside) or 'none'}")
    finally:
        server.remove()


if __name__ == "__main__":
    main()
