#!/usr/bin/env python3
"""sysbench's own Lua scripts through stampede's Lua path, against the real sysbench running the
same files and stampede's native tests, on PostgreSQL and MariaDB, same tables.

A throwaway PostgreSQL (the system's, fsync off) and MariaDB (as in mysql_sysbench_vs_stampede.py)
get the sbtest tables from `stampede sysbench prepare`; then for each script (Debian's
/usr/share/sysbench/<test>.lua) and thread count, three tools run in turn, the order rotated and
mirrored per round (A B C C B A, then B C A A C B, ...) so drift hits all alike, same seconds:
  sysbench  the real sysbench 1.0.20 running the script file
  lua       stampede sysbench <the same file> ... run  (the embedded LuaJIT and sysbench's API)
  native    stampede sysbench <test> ... run             (stampede's own implementation)
Prints each tool's mean QPS and client CPU per event (user+system of the tool's process over its
events), then the ratios lua/sysbench (goals: QPS >= 1.00, CPU per event <= 1.0) and
lua/native (the Lua path's cost over native).

Usage: bench/sysbench_lua.py [--seconds 10] [--rounds 2] [--threads 4,16]
                             [--tests oltp_point_select,oltp_read_only] [--engines pgsql,mysql]
                             [--tables 4] [--table-size 100000]
Build first: cargo build --release; needs sysbench and mariadb-server (apt-get install).
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mysql_sysbench_vs_stampede import MariaDb, execute  # noqa: E402 (tool CPU per run)
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
SCRIPTS = "/usr/share/sysbench"
TOOLS = ["sysbench", "lua", "native"]


def argv_of(tool, test, connection, options):
    script = os.path.join(SCRIPTS, f"{test}.lua")
    if tool == "sysbench":
        return ["sysbench", script] + options + connection + ["run"]
    if tool == "lua":
        return [STAMPEDE, "sysbench", script] + options + connection + ["run"]
    return [STAMPEDE, "sysbench", test] + options + connection + ["run"]


def measure(tool, test, threads, connection, args):
    options = [f"--tables={args.tables}", f"--table-size={args.table_size}",
               f"--threads={threads}", f"--time={args.seconds}"]
    output, cpu = execute(argv_of(tool, test, connection, options), f"{tool} {test}")
    queries = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", output)
    events = re.search(r"transactions:\s+(\d+)", output)
    if not queries or not events:
        sys.exit(f"no queries/transactions line in:\n{output}")
    return float(queries.group(1)), cpu / max(int(events.group(1)), 1)


def rounds(count, run):
    results = {tool: [] for tool in TOOLS}
    for index in range(count):
        order = TOOLS[index % 3:] + TOOLS[:index % 3]
        for tool in order + order[::-1]:
            results[tool].append(run(tool))
    return results


def bench_engine(engine, connection, args):
    execute([STAMPEDE, "sysbench", "prepare", f"--tables={args.tables}",
             f"--table-size={args.table_size}", "--threads=4"] + connection, f"{engine} prepare")
    for test in args.tests.split(","):
        for threads in [int(t) for t in args.threads.split(",")]:
            results = rounds(args.rounds,
                             lambda tool: measure(tool, test, threads, connection, args))
            qps = {t: sum(q for q, _ in v) / len(v) for t, v in results.items()}
            cpu = {t: sum(c for _, c in v) / len(v) for t, v in results.items()}
            cells = " | ".join(f"{t} {qps[t]:8.0f} qps {cpu[t] * 1e6:6.1f} us/event" for t in TOOLS)
            print(f"{engine:5} {test:18} {threads:3} threads  {cells}"
                  f" || lua/sysbench qps {qps['lua'] / qps['sysbench']:.3f}"
                  f" cpu {cpu['lua'] / cpu['sysbench']:.3f}"
                  f" | lua/native qps {qps['lua'] / qps['native']:.3f}"
                  f" cpu {cpu['lua'] / cpu['native']:.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", default="4,16")
    parser.add_argument("--tests", default="oltp_point_select,oltp_read_only")
    parser.add_argument("--engines", default="pgsql,mysql")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=100000)
    args = parser.parse_args()
    engines = args.engines.split(",")
    if "pgsql" in engines:
        server = Server(15792, "/tmp/stampede-bench-lua-pg",
                        "-c fsync=off -c shared_buffers=512MB -c max_wal_size=4GB")
        server.init()
        server.start()
        try:
            bench_engine("pgsql", ["--db-driver=pgsql", f"--pgsql-host={server.root}",
                                   f"--pgsql-port={server.port}", "--pgsql-user=postgres",
                                   "--pgsql-db=postgres"], args)
        finally:
            server.remove()
    if "mysql" in engines:
        server = MariaDb(15793, "/tmp/stampede-bench-lua-mariadb")
        server.start()
        try:
            bench_engine("mysql", ["--db-driver=mysql", f"--mysql-socket={server.socket}",
                                   "--mysql-user=root", "--mysql-db=sbtest"], args)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
