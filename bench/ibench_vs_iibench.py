#!/usr/bin/env python3
"""stampede ibench step against the real iibench.py, step by step, on one server.

Each tool runs the Insert Benchmark's steps (l.i0, l.x, l.i1, l.i2, then qrN and qpN for each
rate) with the same iibench.py command line (np.sh's, one client) in a database of its own on
one throwaway server — PostgreSQL (with pg_stat_statements) or MariaDB — the tools alternating
by step (iibench first on even steps, stampede first on odd ones) so drift hits both alike.
Per step it prints each tool's rate (rows inserted a second; queries a second in the query
steps), client CPU per operation (user+system of the tool's processes, reaped children
included: iibench.py's are processes), the writer's rate against its target, and the ratios
stampede / iibench (goals: rate >= 1.0, CPU per operation <= 1.0, writers within 1%). It checks
what the server saw: the rows at the end of each step (count(*)), and on PostgreSQL the
statements (pg_stat_statements, normalized texts) with their calls per operation; on MariaDB
the Com_insert, Com_delete and Com_select counters per operation.

iibench.py is Mark Callaghan's (github.com/mdcallag/mytools, bench/ibench/iibench.py): fetch it
yourself and give its path; it needs a Python with psycopg2 and MySQLdb (Debian:
apt-get install python3-psycopg2 python3-mysqldb, then --python /usr/bin/python3).

Usage: bench/ibench_vs_iibench.py --iibench PATH [--python /usr/bin/python3]
                                  [--engine postgres|mariadb] [--rows 200000] [--writes 100000]
                                  [--query-seconds 10] [--rates 100,500]
Build first: cargo build --release.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402
from mysql_sysbench_vs_stampede import MariaDb  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
TOOLS = ("iibench", "stampede")


def steps(args, postgres):
    """(name, iibench.py options, operation) per step, as np.sh gives them to one client."""
    common = ["--table_name=pi1", "--data_length_min=10", "--data_length_max=20",
              "--secs_per_report=1", "--seed=1"]
    if postgres:
        common.append("--use_prepared_query")
    listed = [
        ("l.i0", ["--setup", f"--max_rows={args.rows}", "--rows_per_commit=100",
                  "--num_secondary_indexes=0"], "insert"),
        ("l.x", ["--max_rows=100", "--rows_per_commit=100", "--num_secondary_indexes=3",
                 "--secondary_at_end"], "insert"),
        ("l.i1", [f"--max_rows={args.writes * 4 // 5}", "--rows_per_commit=50",
                  "--delete_per_insert"], "insert"),
        ("l.i2", [f"--max_rows={args.writes // 5}", "--rows_per_commit=5",
                  "--delete_per_insert"], "insert"),
    ]
    for rate in [int(r) for r in args.rates.split(",")]:
        for kind, extra in (("qr", []), ("qp", ["--query_pk_only"])):
            listed.append((f"{kind}{rate}", [f"--max_rows={rate * args.query_seconds}",
                                             f"--rows_per_commit={min(50, rate)}",
                                             f"--inserts_per_second={rate}", "--query_threads=1",
                                             "--delete_per_insert"] + extra, "query"))
    return [(name, common + options, op) for name, options, op in listed]


def parse(output):
    """Rows from the Totals line, queries from the last interval line, and the writer's rate:
    the mean of the interval lines' inserts a second but the last (a part of a second, or
    iibench.py's wait for its next report after the inserts ended)."""
    totals = re.search(r"^Totals: ([\d.]+) secs, ([\d.]+) rows/sec, (\d+) rows", output, re.M)
    intervals = [l.split("\t") for l in output.splitlines()
                 if l.count("\t") == 16 and not l.startswith("i_sec")]
    if not totals or not intervals:
        sys.exit(f"no Totals or interval line in:\n{output}")
    whole = [float(i[2]) for i in intervals[:-1]] or [float(intervals[-1][2])]
    return sum(whole) / len(whole), int(totals.group(3)), int(intervals[-1][13])


class Postgres:
    def __init__(self, port):
        self.server = Server(port, "/tmp/stampede-bench-ibench-pg",
                             "-c shared_preload_libraries=pg_stat_statements "
                             "-c pg_stat_statements.max=1000 -c shared_buffers=1GB "
                             "-c max_wal_size=4GB")
        self.server.init()
        self.server.start()
        for tool in TOOLS:
            self.server.psql("postgres", f"CREATE DATABASE ib_{tool}")
            self.server.psql(f"ib_{tool}", "CREATE EXTENSION pg_stat_statements")

    def flags(self, tool):
        return ["--dbms=postgres", f"--db_host={self.server.root}", "--db_user=postgres",
                f"--db_name=ib_{tool}"]

    def env(self):
        return {**os.environ, "PGPORT": self.server.port}

    def query(self, tool, sql):
        out = subprocess.run(["psql", "-X", "-At", "-h", self.server.root, "-p", self.server.port,
                              "-U", "postgres", "-d", f"ib_{tool}", "-c", sql],
                             capture_output=True, text=True, check=True)
        return out.stdout

    def reset(self, tool):
        self.query(tool, "SELECT pg_stat_statements_reset()")

    def seen(self, tool):
        """Statements of this database: normalized text -> calls (the reset and this excluded)."""
        rows = self.query(tool, "SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') "
                                "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
                                "WHERE datname = current_database()) AND query NOT LIKE "
                                "'%pg_stat_statements%'")
        seen = {}
        for line in rows.splitlines():
            calls, text = line.split("|", 1)
            # Multi-row INSERTs differ in row count only through their $n lists.
            text = re.sub(r"\(\$\d+(, ?\$\d+)*\)(,\s*\(\$\d+(, ?\$\d+)*\))*", "(…)", text)
            seen[text] = seen.get(text, 0) + int(calls)
        return seen

    def rows(self, tool):
        return int(self.query(tool, "SELECT count(*) FROM pi1").strip())

    def settle(self, tool):
        self.query(tool, "VACUUM (ANALYZE) pi1")
        self.query(tool, "CHECKPOINT")

    def stop(self):
        self.server.remove()


class Mariadb:
    COUNTERS = ("COM_INSERT", "COM_DELETE", "COM_SELECT")

    def __init__(self, port):
        self.server = MariaDb(port, "/tmp/stampede-bench-ibench-mariadb")
        self.server.start()
        for tool in TOOLS:
            self.sql("", f"CREATE DATABASE ib_{tool}")

    def sql(self, db, statement):
        out = subprocess.run(["mariadb", "-uroot", f"--socket={self.server.socket}", "-N", "-B"]
                             + ([db] if db else []) + ["-e", statement],
                             capture_output=True, text=True, check=True)
        return out.stdout

    def flags(self, tool):
        return ["--dbms=mysql", f"--db_socket={self.server.socket}", "--db_user=root",
                f"--db_name=ib_{tool}"]

    def env(self):
        return dict(os.environ)

    def reset(self, tool):
        self.before = self.counters()

    def counters(self):
        text = self.sql("", "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM "
                            "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN "
                            "('COM_INSERT', 'COM_DELETE', 'COM_SELECT')")
        return {name: int(value) for name, value in (l.split("\t") for l in text.splitlines())}

    def seen(self, tool):
        after = self.counters()
        return {name: after[name] - self.before[name] for name in self.COUNTERS}

    def rows(self, tool):
        return int(self.sql(f"ib_{tool}", "SELECT count(*) FROM pi1").strip())

    def settle(self, tool):
        self.sql(f"ib_{tool}", "ANALYZE TABLE pi1")

    def stop(self):
        self.server.stop()


def measure(tool, server, options, args):
    if tool == "iibench":
        argv = [args.python, args.iibench]
    else:
        argv = [STAMPEDE, "ibench", "step"]
    argv += server.flags(tool) + options
    server.reset(tool)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    # iibench.py writes o.pgid.* files (backend pids for perf) where it runs.
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(argv, capture_output=True, text=True, env=server.env(),
                                cwd=scratch)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{tool} {' '.join(options)} failed:\n{result.stdout}\n{result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    writer, rows, queries = parse(result.stdout)
    # The step's time as np.sh takes it: around the process, its start included.
    return {"seconds": wall, "writer": writer, "rows": rows, "queries": queries, "cpu": cpu,
            "seen": server.seen(tool), "table_rows": server.rows(tool)}


# Statements (or MariaDB counters) that count queries; every other counts rows inserted.
QUERY_STATEMENT = re.compile(r"^(PREPARE \w+_query_ps|SELECT |select max|COM_SELECT)")


def per_op(counts, rows, queries, query_step):
    """Calls per operation: a query's statements per query, the writer's per row inserted."""
    return {text: calls / max(queries if query_step and QUERY_STATEMENT.match(text) else rows, 1)
            for text, calls in counts.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iibench", required=True, help="path to Callaghan's iibench.py")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--engine", default="postgres", choices=["postgres", "mariadb"])
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--writes", type=int, default=100000)
    parser.add_argument("--query-seconds", type=int, default=10)
    parser.add_argument("--rates", default="100,500")
    parser.add_argument("--port", type=int, default=15792)
    args = parser.parse_args()
    postgres = args.engine == "postgres"
    server = Postgres(args.port) if postgres else Mariadb(args.port)
    try:
        for index, (name, options, op) in enumerate(steps(args, postgres)):
            if name == f"qr{args.rates.split(',')[0]}":
                for tool in TOOLS:
                    server.settle(tool)
            order = TOOLS if index % 2 == 0 else tuple(reversed(TOOLS))
            got = {tool: measure(tool, server, options, args) for tool in order}
            report(name, op, options, got)
    finally:
        server.stop()


def report(name, op, options, got):
    line = f"{name:7}"
    rates, cpus = {}, {}
    for tool in TOOLS:
        g = got[tool]
        operations = g["queries"] if op == "query" else g["rows"]
        rates[tool] = operations / g["seconds"]
        cpus[tool] = g["cpu"] / max(operations, 1)
        line += (f" | {tool} {rates[tool]:9.1f} {op}s/s {cpus[tool] * 1e6:7.1f} us/{op}"
                 f" rows {g['table_rows']}")
        if op == "query":
            target = int(next(o for o in options if o.startswith("--inserts_per_second="))
                         .split("=")[1])
            line += f" writer {g['writer'] / target * 100:5.1f}%"
    line += (f" | rate ratio {rates['stampede'] / rates['iibench']:.3f}"
             f", cpu/op ratio {cpus['stampede'] / cpus['iibench']:.3f}")
    print(line, flush=True)
    if got["iibench"]["table_rows"] != got["stampede"]["table_rows"]:
        print(f"  ROWS DIFFER: {got['iibench']['table_rows']} against {got['stampede']['table_rows']}")
    seen = {tool: per_op(got[tool]["seen"], got[tool]["rows"], got[tool]["queries"], op == "query")
            for tool in TOOLS}
    for text in sorted(set(seen["iibench"]) | set(seen["stampede"])):
        a, b = seen["iibench"].get(text), seen["stampede"].get(text)
        same = a is not None and b is not None and abs(a - b) <= 0.02 * max(a, b) + 1e-9
        mark = "  " if same else "≠ "
        shown = text if len(text) <= 110 else text[:107] + "..."
        unit = "query" if op == "query" and QUERY_STATEMENT.match(text) else "row"
        print(f"  {mark}{shown}: per {unit} iibench {a if a is None else round(a, 4)}"
              f", stampede {b if b is None else round(b, 4)}")


if __name__ == "__main__":
    main()
