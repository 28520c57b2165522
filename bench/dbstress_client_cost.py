#!/usr/bin/env python3
"""dbSTRESS on MariaDB: the injector's client CPU per transaction against the server's.

Issue 20's goal: at 8 sessions of dbSTRESS read-only, the injector must cost at most 10% of
what the server spends per transaction, or the comparison measures the injector. A throwaway
MariaDB (the same as bench/mysql_sysbench_vs_stampede.py's) gets `stampede dbstress prepare
--engine mariadb`; then, alternating, in each round:
- `stampede dbstress run --mode ro --sessions 8 --prepared`, and the same without --prepared;
- the peer: sysbench running the same transaction (SEL1 and SEL2 of set 1 on uniformly drawn
  object references bound as text, server-side prepared, every row stored by libmariadb's
  mysql_stmt_store_result) from a Lua script written here, at as many threads. It is what the
  leanest C client costs for the same work on the same server.
The client's CPU is its process's user+system time (rusage of the child); the server's is
mariadbd's utime+stime from /proc over the same run. Prints per run the transactions per
second, both CPU times per transaction and their ratio client / server (goal: <= 0.10), then
each injector's mean ratio.

Usage: bench/dbstress_client_cost.py [--seconds 10] [--sessions 8] [--objects 100000]
                                     [--rounds 2]
Build first: cargo build --release; needs mariadb-server and sysbench (apt-get install).
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mysql_sysbench_vs_stampede import STAMPEDE, MariaDb, execute  # noqa: E402

# stampede's ro transaction on MariaDB (src/family/dbstress/statements.rs), in sysbench's Lua.
SYSBENCH_RO = """
sysbench.cmdline.options = {objects = {"objects", 100000}}
local sel1 = "SELECT S.REF, S.NAME, Z.REF, Z.NAME, O.NAME, O.CREATE_DATE, O.NOTE FROM object1 O, section1 S, zone1 Z WHERE S.REF = O.REF_SECTION AND Z.REF = S.REF_ZONE AND O.REF = ?"
local sel2 = "SELECT S.REF, S.NAME, H.HORDER, H.BEGIN_DATE, H.END_DATE, H.NOTE FROM history1 H, stat1 S WHERE S.REF = H.REF_STAT AND H.REF_OBJECT = ? ORDER BY H.HORDER"
function thread_init()
  con = sysbench.sql.driver():connect()
  s1 = con:prepare(sel1)
  s2 = con:prepare(sel2)
  p1 = s1:bind_create(sysbench.sql.type.CHAR, 10)
  p2 = s2:bind_create(sysbench.sql.type.CHAR, 10)
  s1:bind_param(p1)
  s2:bind_param(p2)
end
function event()
  p1:set(tostring(sysbench.rand.uniform(0, sysbench.opt.objects - 1)))
  s1:execute():free()
  p2:set(tostring(sysbench.rand.uniform(0, sysbench.opt.objects - 1)))
  s2:execute():free()
end
function thread_done()
  s1:close()
  s2:close()
  con:disconnect()
end
"""


def process_cpu_s(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(server):
    """mariadbd's pid (runuser's child)."""
    with open(f"/proc/{server.process.pid}/task/{server.process.pid}/children") as children:
        return int(children.read().split()[0])


def stampede_run(protocol, server, args):
    """Runs stampede's dbSTRESS ro; returns (argv runner, transactions reader)."""
    report = os.path.join(server.root, f"{protocol}.json")
    argv = [STAMPEDE, "dbstress", "run", "--mode", "ro", "--sessions", str(args.sessions),
            "--time", str(args.seconds), "--json", report, "--engine", "mariadb", "--socket",
            server.socket, "-U", "root", "-d", "sbtest"]
    if protocol == "prepared":
        argv.append("--prepared")

    def transactions(_output):
        with open(report) as f:
            return json.load(f)["transactions"]
    return argv, transactions


def sysbench_run(server, args):
    script = os.path.join(server.root, "dbstress_ro.lua")
    with open(script, "w") as f:
        f.write(SYSBENCH_RO)
    argv = ["sysbench", script, f"--objects={args.objects}", f"--threads={args.sessions}",
            f"--time={args.seconds}", "--db-driver=mysql", f"--mysql-socket={server.socket}",
            "--mysql-user=root", "--mysql-db=sbtest", "run"]

    def transactions(output):
        found = re.search(r"transactions:\s+(\d+)", output)
        if not found:
            sys.exit(f"no transactions line in:\n{output}")
        return int(found.group(1))
    return argv, transactions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--objects", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server = MariaDb(15792, os.path.join(tempfile.gettempdir(), "stampede-bench-dbstress-mdb"))
    server.start()
    try:
        execute([STAMPEDE, "dbstress", "prepare", "--objects", str(args.objects), "--engine",
                 "mariadb", "--socket", server.socket, "-U", "root", "-d", "sbtest"], "prepare")
        pid = server_pid(server)
        print(f"dbSTRESS ro, {args.sessions} sessions, {args.seconds} s, {args.objects} objects")
        print(f"{'injector':<20} {'tps':>8} {'client us/txn':>14} {'server us/txn':>14} "
              f"{'client/server':>14}", flush=True)
        runs = {
            "stampede prepared": lambda: stampede_run("prepared", server, args),
            "sysbench prepared": lambda: sysbench_run(server, args),
            "stampede simple": lambda: stampede_run("simple", server, args),
        }
        ratios = {name: [] for name in runs}
        for round_number in range(args.rounds):
            order = list(runs) if round_number % 2 == 0 else list(reversed(runs))
            for name in order:
                argv, read_transactions = runs[name]()
                server_before = process_cpu_s(pid)
                output, client_cpu = execute(argv, name)
                server_cpu = process_cpu_s(pid) - server_before
                transactions = read_transactions(output)
                client_us = client_cpu / transactions * 1e6
                server_us = server_cpu / transactions * 1e6
                ratios[name].append(client_us / server_us)
                print(f"{name:<20} {transactions / args.seconds:>8.0f} {client_us:>14.1f} "
                      f"{server_us:>14.1f} {client_us / server_us:>14.3f}", flush=True)
        for name, values in ratios.items():
            print(f"mean client/server, {name}: {sum(values) / len(values):.3f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
