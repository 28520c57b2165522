#!/usr/bin/env python3
"""Does stampede's TPROC-C do HammerDB's work per transaction? Server CPU per transaction (all
types and per type), the procedures' statements per transaction, and NOPM, for stampede's
server mode against HammerDB's own PostgreSQL procedures on the same server in the same run.

HammerDB's procedures are read from a HammerDB checkout (--hammerdb-src, its
src/postgresql/pgoltp.tcl: the stored-procedure variant), created in a schema `hammerdb` of a
database stampede built, and called as HammerDB's driver calls them (the simple protocol with
literals, its inputs, its 10/10/1/1/1 mix, a fixed Stock-Level district per user) by
`stampede pgbench -M simple` scripts. --before adds an older stampede binary (its own build).
Each variant gets its own database; runs alternate between variants (ABBA over --rounds).

Server CPU is the postmaster's own, reaped and live children's /proc times around a run;
statements per transaction are the nested statements pg_stat_statements counts (track = all),
the CALL not included; NOPM is Δ sum(district.d_next_o_id) per minute.

Usage: bench/tpcc_server_cost.py --hammerdb-src PATH [--before BIN] [--warehouses 4]
       [--seconds 60] [--type-seconds 10] [--vu 1,4] [--rounds 2]

--hammerdb-cli runs HammerDB itself instead (bench/hammerdb.py: its CLI, its loader, its
driver) beside `stampede tpcc build` and `stampede tpcc run`, each on its own database of one
server, runs alternating ABBA: build times, then per virtual-user count NOPM (each tool's own),
server CPU per transaction, and per transaction type the server time per call
(pg_stat_user_functions with track_functions = pl: every CALL, nested statements included),
the runs' range beside each median, the ratio of the medians and the median of the rounds'
ratios (`paired`: a round's runs are back to back), and the runs whose Stock-Level count took 5 ms or more
(auto_explain; a session's plan over the district's whole order_line). One virtual user works on
its home warehouse; several use all warehouses in both tools (dealt out alike; HammerDB's home
warehouses are drawn at random per user, so two users may share one by chance).
       bench/tpcc_server_cost.py --hammerdb-cli --hammerdb-src PATH [--pgtcl SO] [--warehouses 4]
       [--rampup-minutes 1] [--minutes 1] [--vu 1,4] [--rounds 2] [--pin] [--setting NAME=VALUE]
       [--statement-cpu [--statement-log FILE]] [--vacuum-between-runs] [--no-idle]
       [--server-log FILE]
--setting plan_cache_mode=force_generic_plan takes PL/pgSQL's choice between custom and generic
plans (which decides whether a session's Stock-Levels go slow, see bench/results/tpcc.md) out of both
tools' runs alike. --statement-cpu adds, per type, the CPU per call of the procedure's
statements (pg_stat_kcache beside pg_stat_statements, Debian's postgresql-NN-pg-stat-kcache;
--statement-log FILE gets every statement's executions and CPU per execution per run): with more
users than server CPUs a call's wall time includes its waits behind the others, its CPU does
not. `both us/txn` (server + client CPU per transaction) is what one user's NOPM goes by: its
client and server take turns. bench/tpcc_statement_compare.py puts the two tools' like
statements of a statement log side by side. --vacuum-between-runs turns autovacuum off and
vacuums and analyzes both databases before every run (no run beside a vacuum). --no-idle (with
--pin) keeps both CPUs busy with a SCHED_IDLE loop, so no run pays for waking an idle CPU, which
a slower client makes its server do more often. --server-log FILE keeps the server's log (with
--setting auto_explain.sample_rate=... and log_analyze/log_buffers: sampled plans with buffers).
Build first: cargo build --release.
"""
import argparse
import os
import resource
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402
from tpcc_client_cpu import server_cpu_s  # noqa: E402
from hammerdb import HammerDB  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
TYPES = [("new-order", "100,0,0,0,0", "neword"), ("payment", "0,100,0,0,0", "payment"),
         ("order-status", "0,0,100,0,0", "ostat"), ("delivery", "0,0,0,100,0", "delivery"),
         ("stock-level", "0,0,0,0,100", "slev")]
# HammerDB's draw of 1..23 per transaction.
HAMMERDB_WEIGHTS = {"neword": 10, "payment": 10, "delivery": 1, "slev": 1, "ostat": 1}


def hammerdb_procedures(source):
    """The six definitions of pgoltp.tcl's stored-procedure variant (not Oracle-compatible):
    the second `set sql(1)` block that creates DBMS_RANDOM, through sql(6)."""
    text = open(os.path.join(source, "src", "postgresql", "pgoltp.tcl")).read()
    starts = [m.start() for m in re.finditer(r"set sql\(1\) \{\s*CREATE OR REPLACE FUNCTION DBMS_RANDOM", text)]
    position, definitions = starts[1], []
    for number in range(1, 7):
        position = text.index(f"set sql({number}) {{", position)
        depth, begin = 0, text.index("{", position)
        for end in range(begin, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        definitions.append(text[begin + 1:end])
        position = end
    qualified = []
    for sql in definitions:
        sql = re.sub(r"CREATE OR REPLACE (FUNCTION|PROCEDURE) (\w+)",
                     lambda m: f"CREATE OR REPLACE {m.group(1)} hammerdb.{m.group(2)}", sql, count=1)
        qualified.append(sql)
    return qualified


def hammerdb_scripts(directory, warehouses, c_last):
    """HammerDB's driver (neword, payment, ostat, delivery, slev procs of pgoltp.tcl) as
    pgbench scripts: the same inputs, literals in the simple protocol. HammerDB draws last
    names with the C its loader used (123); on stampede's build that is the load's `c_last`."""
    home = f"\\set w_id :client_id % {warehouses} + 1\n"
    stamp = "now()::timestamp without time zone"
    name = f"\\set name tpcc_last_name(((random(0, 255) | random(0, 999)) + {c_last}) % 1000)\n"
    other = (f"1 + (:w_id + random(0, {warehouses - 2})) % {warehouses}" if warehouses > 1 else ":w_id")
    scripts = {
        "neword": home + "\\set d_id random(1, 10)\n\\set c_id random(1, 3000)\n\\set ol_cnt random(5, 15)\n"
        f"call hammerdb.neword(:w_id, {warehouses}, :d_id, :c_id, :ol_cnt, 0.0, '', '', 0.0, 0.0, 0, {stamp});\n",
        "payment": home + "\\set d_id random(1, 10)\n"
        f"\\if random(1, 100) <= 85\n\\set c_w_id :w_id\n\\set c_d_id :d_id\n\\else\n\\set c_w_id {other}\n"
        "\\set c_d_id random(1, 10)\n\\endif\n" + name +
        "\\set c_id random(1, 3000)\n\\set byname case when random(1, 100) <= 60 then 1 else 0 end\n"
        "\\set amount random(1, 5000)\n"
        "call hammerdb.payment(:w_id, :d_id, :c_w_id, :c_d_id, :byname, :amount, '0', ':name', :c_id"
        + ", ''" * 18 + f", {stamp}, 0.0, 0.0, 0.0, '', {stamp});\n",
        "ostat": home + "\\set d_id random(1, 10)\n" + name +
        "\\set c_id random(1, 3000)\n\\set byname case when random(1, 100) <= 60 then 1 else 0 end\n"
        f"call hammerdb.ostat(:w_id, :d_id, :c_id, :byname, ':name', '', '', 0.0, 0, {stamp}, 0, '');\n",
        "delivery": home + f"\\set carrier random(1, 10)\ncall hammerdb.delivery(:w_id, :carrier, {stamp});\n",
        # HammerDB draws each user's Stock-Level district once.
        "slev": home + "\\set threshold random(10, 20)\n"
        "call hammerdb.slev(:w_id, (:client_id * 7 + 3) % 10 + 1, :threshold, 0);\n",
    }
    paths = {}
    for key, text in scripts.items():
        paths[key] = os.path.join(directory, f"{key}.sql")
        with open(paths[key], "w") as f:
            f.write(text)
    return paths


class Variant:
    def __init__(self, name, binary, db):
        self.name, self.binary, self.db = name, binary, db
        self.mixed = {}  # vu -> list of (cpu us/txn, statements/txn, nopm)
        self.per_type = {}  # type -> list of cpu us/txn


def psql_value(server, db, sql):
    out = subprocess.run(["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", server.port, "-U", "postgres",
                          "-d", db, "-c", sql], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def run_once(server, postmaster, variant, scripts, warehouses, vu, seconds, only=None):
    """One run: (server CPU us per transaction, nested statements per transaction, NOPM)."""
    connection = ["-h", "127.0.0.1", "-p", server.port, "-U", "postgres", "-d", variant.db]
    psql_value(server, variant.db, "SELECT pg_stat_statements_reset()")
    before_orders = int(psql_value(server, variant.db, "SELECT sum(d_next_o_id) FROM district"))
    before_cpu = server_cpu_s(postmaster)
    started = time.monotonic()
    if variant.name == "hammerdb":
        keys = [only] if only else list(HAMMERDB_WEIGHTS)
        command = [STAMPEDE, "pgbench", "-n", "-M", "simple", "-c", str(vu), "-j", str(vu), "-T", str(seconds)]
        for key in keys:
            command += ["-f", f"{scripts[key]}@{HAMMERDB_WEIGHTS[key]}"]
        env = dict(os.environ, PGOPTIONS="-c search_path=public,hammerdb")
        # stampede pgbench's -d is pgbench's --debug: the database goes last.
        run = subprocess.run(command + connection[:-2] + [variant.db], capture_output=True, text=True,
                             env=env)
        match = re.search(r"number of transactions actually processed: (\d+)", run.stdout)
        transactions = int(match.group(1)) if match else 0
    else:
        # The mix is named: the before binary's default was 45/43/4/4/4.
        mix = ["--mix", next(m for t, m, _ in TYPES if t == only) if only else "hammerdb"]
        run = subprocess.run([variant.binary, "tpcc", "run", f"--vu={vu}", "--rampup=0s",
                              f"--duration={seconds}s", "--seed=1"] + mix + connection,
                             capture_output=True, text=True)
        transactions = sum(int(m) for m in re.findall(r"^[a-z-]+ +(\d+) ", run.stdout, re.M))
    elapsed = time.monotonic() - started
    if run.returncode != 0 or transactions == 0:
        sys.exit(f"{variant.name} run failed:\n{run.stdout}\n{run.stderr}")
    server_s = server_cpu_s(postmaster) - before_cpu
    after_orders = int(psql_value(server, variant.db, "SELECT sum(d_next_o_id) FROM district"))
    nested = int(psql_value(server, variant.db,
                            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d "
                            "ON d.oid = s.dbid WHERE d.datname = current_database() AND NOT toplevel"))
    return (server_s * 1e6 / transactions, nested / transactions,
            (after_orders - before_orders) / (elapsed / 60))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hammerdb-src", required=True)
    parser.add_argument("--before")
    parser.add_argument("--warehouses", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--type-seconds", type=int, default=10)
    parser.add_argument("--vu", default="1,4")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=15472)
    parser.add_argument("--hammerdb-cli", action="store_true")
    parser.add_argument("--rampup-minutes", type=int, default=1)
    parser.add_argument("--minutes", type=int, default=1)
    parser.add_argument("--pgtcl", help="a thread-safe Pgtcl (bench/build_thread_safe_pgtcl.sh)")
    parser.add_argument("--pin", action="store_true",
                        help="the server's processes on CPU 0, the tools' on CPU 1 (no shared core)")
    parser.add_argument("--statement-cpu", action="store_true",
                        help="per type, the CPU of each procedure's statements per call (pg_stat_kcache: "
                             "Debian's postgresql-NN-pg-stat-kcache), beside the wall time (--hammerdb-cli)")
    parser.add_argument("--statement-log", default=os.path.join(tempfile.gettempdir(), "statement_cpu.log"),
                        help="with --statement-cpu, each run's statements: executions, CPU per execution")
    parser.add_argument("--vacuum-between-runs", action="store_true",
                        help="autovacuum off, both databases vacuumed and analyzed before every run "
                             "(--hammerdb-cli): no run shares the server CPU with a vacuum")
    parser.add_argument("--no-idle", action="store_true",
                        help="with --pin, a SCHED_IDLE spinner on each pinned CPU for the whole sitting "
                             "(--hammerdb-cli): neither CPU ever goes idle, so no process pays for waking "
                             "an idle CPU, which a slower peer makes it do more often and for longer")
    parser.add_argument("--server-log", metavar="FILE",
                        help="keep the server's log (auto_explain's plans) in FILE when the sitting ends "
                             "(--hammerdb-cli)")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a server setting for both tools' runs (--hammerdb-cli), e.g. "
                             "plan_cache_mode=force_generic_plan; repeatable")
    args = parser.parse_args()
    if args.no_idle and not args.pin:
        parser.error("--no-idle needs --pin (the CPUs to keep busy)")
    if args.hammerdb_cli:
        return beside_hammerdb(args)
    server = Server(args.port, os.path.join(tempfile.gettempdir(), f"stampede-bench-{args.port}"),
                    "-c fsync=off -c shared_buffers=1GB -c synchronous_commit=off "
                    "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all "
                    "-c pg_stat_statements.max=10000 -c autovacuum=off")
    server.init()
    server.start()
    variants = [Variant("stampede", STAMPEDE, "tpcc_stampede"), Variant("hammerdb", STAMPEDE, "tpcc_hammerdb")]
    if args.before:
        variants.append(Variant("before", args.before, "tpcc_before"))
    try:
        postmaster = int(open(os.path.join(server.data, "postmaster.pid")).readline())
        for variant in variants:
            server.psql("postgres", f"CREATE DATABASE {variant.db}")
            subprocess.run([variant.binary, "tpcc", "build", f"--warehouses={args.warehouses}", "--seed=1",
                            "-h", "127.0.0.1", "-p", server.port, "-U", "postgres", "-d", variant.db],
                           check=True, capture_output=True)
            server.psql(variant.db, "CREATE EXTENSION pg_stat_statements")
            if variant.name == "hammerdb":
                server.psql(variant.db, "CREATE SCHEMA hammerdb")
                for definition in hammerdb_procedures(args.hammerdb_src):
                    server.psql(variant.db, definition)
                c_last = int(psql_value(server, variant.db, "SELECT c_last_load FROM stampede_tpcc"))
                scripts = hammerdb_scripts(tempfile.mkdtemp(prefix="hammerdb-"), args.warehouses, c_last)
        for round_index in range(args.rounds):
            order = variants if round_index % 2 == 0 else list(reversed(variants))
            for vu in (int(v) for v in args.vu.split(",")):
                for variant in order:
                    result = run_once(server, postmaster, variant, scripts, args.warehouses, vu, args.seconds)
                    variant.mixed.setdefault(vu, []).append(result)
            for type_name, _, key in TYPES:
                for variant in order:
                    only = key if variant.name == "hammerdb" else type_name
                    cpu, statements, _ = run_once(server, postmaster, variant, scripts, args.warehouses, 1,
                                                  args.type_seconds, only)
                    variant.per_type.setdefault(type_name, []).append((cpu, statements))
    finally:
        server.remove()
    report(variants, args)


def report(variants, args):
    reference = next(v for v in variants if v.name == "hammerdb")
    print(f"{args.warehouses} warehouses, {args.seconds} s per mixed run, {args.type_seconds} s per type "
          f"run, {args.rounds} rounds (medians)")
    for vu in sorted(reference.mixed):
        print(f"\nmix at {vu} virtual user(s):")
        print(f"{'':10} {'server us/txn':>14} {'statements/txn':>15} {'NOPM':>10}")
        for variant in variants:
            cpu, statements, nopm = (statistics.median(x) for x in zip(*variant.mixed[vu]))
            print(f"{variant.name:10} {cpu:14.0f} {statements:15.2f} {nopm:10.0f}")
        ours = [statistics.median(x) for x in zip(*variants[0].mixed[vu])]
        theirs = [statistics.median(x) for x in zip(*reference.mixed[vu])]
        print(f"stampede / hammerdb: server CPU per transaction {ours[0] / theirs[0]:.3f}, statements per "
              f"transaction {ours[1] / theirs[1]:.3f}, NOPM {ours[2] / theirs[2]:.3f} (goal: the first two "
              f"within 0.95-1.05)")
    print("\nper transaction type at 1 virtual user (server us/txn, statements/txn):")
    for type_name, _, _ in TYPES:
        cells = []
        for variant in variants:
            cpu, statements = (statistics.median(x) for x in zip(*variant.per_type[type_name]))
            cells.append(f"{variant.name} {cpu:7.0f} us {statements:5.2f}")
        print(f"{type_name:13} " + " | ".join(cells))


# track_functions counts every CALL of each procedure and its time (pg_stat_user_functions):
# pg_stat_statements cannot before PostgreSQL 16 (each simple CALL's literals make an entry of
# their own, evicted beyond pg_stat_statements.max, and the evictions cost the server CPU).
# auto_explain logs a statement's plan when it runs 5 ms or more (nested statements too): a
# Stock-Level count takes about 1 ms on the usual plans and 10 ms on the one over the district's
# whole order_line, so a session that chose that plan is seen in the log (see slow_stock_levels).
SERVER_SETTINGS = ("-c fsync=off -c shared_buffers=1GB -c synchronous_commit=off -c max_wal_size=8GB "
                   "-c track_functions=pl -c shared_preload_libraries=auto_explain "
                   "-c auto_explain.log_min_duration=5ms -c auto_explain.log_nested_statements=on")
PROCEDURES = ["neword", "payment", "ostat", "delivery", "slev"]


def children_cpu_s():
    """User and system CPU of this script's finished children: the tool's process of a run."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def database_transactions(server, db):
    """Commits and rollbacks of `db`: one per CALL in both tools (the tools' own few queries
    aside)."""
    return int(psql_value(server, db, "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                      "WHERE datname = current_database()"))


def procedure_times(server, db):
    """{procedure: (calls, total ms)} of the database's procedures so far (pg_stat_user_functions,
    nested statements included): every call, as the backends reported them when they ended."""
    rows = psql_value(server, db, "SELECT lower(funcname), calls, total_time FROM pg_stat_user_functions")
    times = {}
    for line in rows.splitlines():
        name, calls, total_ms = line.split("|")
        times[name] = (int(calls), float(total_ms))
    return times


def cpu_per_call(cpu, before, after):
    """{procedure: its statements' CPU us per call}, and under None the unattributed CPU per
    CALL of any procedure."""
    calls = {name: count - before.get(name, (0, 0.0))[0] for name, (count, _) in after.items()}
    means = {name: seconds * 1e6 / calls[name] for name, seconds in cpu.items() if name and calls.get(name)}
    means[None] = cpu.get(None, 0.0) * 1e6 / max(1, sum(calls.values()))
    return means


def per_call(before, after):
    """{procedure: mean server us per call} between two procedure_times readings."""
    means = {}
    for name, (calls, total_ms) in after.items():
        calls_before, ms_before = before.get(name, (0, 0.0))
        if calls > calls_before:
            means[name] = (total_ms - ms_before) * 1000 / (calls - calls_before)
    return means


# --statement-cpu: pg_stat_kcache (getrusage around each statement's executor) beside
# pg_stat_statements, every nested statement tracked and no utility statement (so the CALLs'
# literals make no entries). A procedure's statements are its CPU inside the server apart from
# PL/pgSQL's own steps (assignments, loops) and the CALL's parse: the same work in both tools, and
# a measure of CPU, where pg_stat_user_functions' time per call is wall time, which with more
# sessions than CPUs includes the waits behind the others.
STATEMENT_CPU_SETTINGS = ("-c shared_preload_libraries=auto_explain,pg_stat_statements,pg_stat_kcache "
                          "-c pg_stat_statements.track=all -c pg_stat_statements.track_utility=off "
                          "-c pg_stat_statements.max=10000 -c pg_stat_kcache.track=all")


def words(text):
    return set(re.findall(r"[a-z_][a-z0-9_]*", text.lower()))


def statement_cpu(server, db, log=None):
    """{procedure: CPU s} of the nested statements pg_stat_kcache measured in `db` since its
    reset, each given to the one procedure whose source holds every word of the statement's
    text (the procedures' variables differ: HammerDB's and stampede's p_, os_, no_ ...), and
    under None the CPU of statements that no procedure or several hold. `log`, a file, gets
    one line per statement: its procedure, executions, CPU us per execution, its text."""
    sources = {}
    rows = psql_value(server, db, "SELECT lower(proname), regexp_replace(prosrc, '\\s+', ' ', 'g') FROM pg_proc "
                                  f"WHERE lower(proname) IN ({','.join(repr(p) for p in PROCEDURES)})")
    for line in rows.splitlines():
        name, source = line.split("|", 1)
        sources[name] = sources.get(name, set()) | words(source)
    # Each side summed by queryid: the two extensions may tell top and nested apart differently.
    rows = psql_value(server, db, "SELECT regexp_replace(s.query, '\\s+', ' ', 'g'), s.calls, k.cpu FROM "
                                  "(SELECT queryid, sum(exec_user_time + exec_system_time) AS cpu "
                                  " FROM pg_stat_kcache() WHERE dbid = current_database_oid() GROUP BY queryid) k "
                                  "JOIN (SELECT queryid, min(query) AS query, sum(calls) AS calls FROM pg_stat_statements "
                                  " WHERE dbid = current_database_oid() GROUP BY queryid) s USING (queryid)"
                      .replace("current_database_oid()",
                               "(SELECT oid FROM pg_database WHERE datname = current_database())"))
    cpu = {}
    for line in rows.splitlines():
        query, executions, seconds = line.rsplit("|", 2)
        holders = [name for name, source in sources.items() if words(query) <= source]
        owner = holders[0] if len(holders) == 1 else None
        cpu[owner] = cpu.get(owner, 0.0) + float(seconds)
        if log:
            log.write(f"{owner or '-':9} {int(executions):9} {float(seconds) * 1e6 / max(1, int(executions)):9.1f} "
                      f"{query[:160]}\n")
    return cpu


def reset_statement_cpu(server):
    psql_value(server, "postgres", "SELECT pg_stat_statements_reset(), pg_stat_kcache_reset()")


def wait_for_autovacuum(server, db, tables=("order_line", "stock", "customer"), limit_s=240):
    """HammerDB's build ends with ANALYZE; autovacuum vacuums its tables within a minute or
    two. Its runs start from that state, as a user's would."""
    deadline = time.monotonic() + limit_s
    names = ",".join(f"'{t}'" for t in tables)
    while time.monotonic() < deadline:
        done = psql_value(server, db, f"SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ({names}) "
                                      "AND last_autovacuum IS NOT NULL")
        if int(done) == len(tables):
            return
        time.sleep(5)
    print("autovacuum had not vacuumed HammerDB's tables: its runs start from unvacuumed tables")


def slow_stock_levels(log_text):
    """Stock-Level counts auto_explain logged (5 ms or more) in a run's part of the server log."""
    return len(re.findall(r"Query Text: SELECT COUNT\(DISTINCT", log_text, re.IGNORECASE))


def log_size(server):
    return os.path.getsize(os.path.join(server.root, "log"))


def log_since(server, offset):
    with open(os.path.join(server.root, "log"), errors="replace") as f:
        f.seek(offset)
        return f.read()


def pin_server(postmaster):
    """The postmaster and its children on CPU 0; backends forked later inherit it."""
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    for pid in [str(postmaster)] + children:
        subprocess.run(["taskset", "-a", "-c", "-p", "0", pid], check=True, capture_output=True)


def keep_cpus_busy(cpus):
    """One busy loop per CPU at SCHED_IDLE: it runs only when nothing else wants the CPU, and a
    waking backend or client preempts it at once, so the CPU never enters its idle state (and
    the hypervisor never halts it). The loop's own time is charged to it, not to the tools."""
    return [subprocess.Popen(["taskset", "-c", cpu, "chrt", "--idle", "0", "sh", "-c", "while :; do :; done"])
            for cpu in cpus]


def stampede_run(server, db, vu, rampup_minutes, minutes, prefix):
    command = prefix + [STAMPEDE, "tpcc", "run", f"--vu={vu}", f"--rampup={rampup_minutes}m", f"--duration={minutes}m",
               "-h", "127.0.0.1", "-p", server.port, "-U", "postgres", "-d", db]
    if vu > 1:
        command.append("--all-warehouses")
    run = subprocess.run(command, capture_output=True, text=True)
    match = re.search(r"System achieved (\d+) NOPM from (\d+) PostgreSQL TPM", run.stdout)
    if run.returncode != 0 or not match:
        sys.exit(f"stampede run failed:\n{run.stdout}\n{run.stderr}")
    return int(match.group(1))


def beside_hammerdb(args):
    settings = SERVER_SETTINGS + "".join(f" -c {setting}" for setting in args.setting)
    if args.statement_cpu:
        settings += " " + STATEMENT_CPU_SETTINGS
    if args.vacuum_between_runs:
        settings += " -c autovacuum=off"
    server = Server(args.port, os.path.join(tempfile.gettempdir(), f"stampede-bench-{args.port}"), settings)
    library = os.path.join(os.path.dirname(server.bindir), "lib", "pg_stat_kcache.so")
    if args.statement_cpu and not os.path.exists(library):
        sys.exit(f"--statement-cpu needs pg_stat_kcache ({library}): apt-get install "
                 f"postgresql-{os.path.basename(os.path.dirname(server.bindir))}-pg-stat-kcache")
    if args.statement_cpu:
        open(args.statement_log, "w").close()  # this sitting's runs only, for tpcc_statement_compare.py
    if args.server_log:
        open(args.server_log, "w").close()  # a path that cannot be written fails now, not after the sitting
    server.init()
    server.start()
    hammerdb = HammerDB(args.hammerdb_src, "127.0.0.1", server.port, "tpcc_hammerdb", args.warehouses,
                        args.pgtcl)
    spinners = []
    results = {"hammerdb": {}, "stampede": {}}  # tool -> vu -> [(nopm, cpu us/txn, {type: us/call})]
    try:
        postmaster = int(open(os.path.join(server.data, "postmaster.pid")).readline())
        prefix = ["taskset", "-c", "1"] if args.pin else []
        if args.pin:
            pin_server(postmaster)
            hammerdb.prefix = prefix
        if args.no_idle:
            spinners = keep_cpus_busy(["0", "1"])
        started = time.monotonic()
        hammerdb.build()
        hammerdb_build_s = time.monotonic() - started
        server.psql("postgres", "CREATE DATABASE tpcc_stampede")
        started = time.monotonic()
        subprocess.run(prefix + [STAMPEDE, "tpcc", "build", f"--warehouses={args.warehouses}", "-h", "127.0.0.1",
                        "-p", server.port, "-U", "postgres", "-d", "tpcc_stampede"], check=True,
                       capture_output=True)
        stampede_build_s = time.monotonic() - started
        print(f"build of {args.warehouses} warehouses: HammerDB {hammerdb_build_s:.1f} s, stampede "
              f"{stampede_build_s:.1f} s: stampede {hammerdb_build_s / stampede_build_s:.1f}x as fast")
        if not args.vacuum_between_runs:
            wait_for_autovacuum(server, "tpcc_hammerdb")
        if args.statement_cpu:
            for db in ("postgres", "tpcc_hammerdb", "tpcc_stampede"):
                server.psql(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; "
                                "CREATE EXTENSION IF NOT EXISTS pg_stat_kcache")
        tools = ["hammerdb", "stampede"]
        for round_index in range(args.rounds):
            for vu in (int(v) for v in args.vu.split(",")):
                order = tools if round_index % 2 == 0 else list(reversed(tools))
                for tool in order:
                    db = f"tpcc_{tool}"
                    if args.vacuum_between_runs:
                        for each in ("tpcc_hammerdb", "tpcc_stampede"):
                            server.psql(each, "VACUUM (ANALYZE)")
                    transactions_before = database_transactions(server, db)
                    procedures_before = procedure_times(server, db)
                    cpu_before = server_cpu_s(postmaster)
                    client_before = children_cpu_s()
                    log_before = log_size(server)
                    if args.statement_cpu:
                        reset_statement_cpu(server)
                    if tool == "hammerdb":
                        nopm, _ = hammerdb.run(vu, args.rampup_minutes, args.minutes, all_warehouses=vu > 1)
                    else:
                        nopm = stampede_run(server, db, vu, args.rampup_minutes, args.minutes, prefix)
                    cpu_s = server_cpu_s(postmaster) - cpu_before
                    client_s = children_cpu_s() - client_before
                    time.sleep(1)  # the sessions' last statistics reach the statistics views
                    transactions = database_transactions(server, db) - transactions_before
                    procedures_after = procedure_times(server, db)
                    per_type = per_call(procedures_before, procedures_after)
                    slow = slow_stock_levels(log_since(server, log_before))
                    type_cpu = {}
                    if args.statement_cpu:
                        with open(args.statement_log, "a") as log:
                            log.write(f"round {round_index + 1} {tool} {vu} vu\n")
                            cpu = statement_cpu(server, db, log)
                        type_cpu = cpu_per_call(cpu, procedures_before, procedures_after)
                    results[tool].setdefault(vu, []).append(
                        (nopm, cpu_s * 1e6 / transactions, per_type, client_s * 1e6 / transactions, slow, type_cpu))
                    print(f"round {round_index + 1} {tool:8} {vu} vu: NOPM {nopm}, server "
                          f"{cpu_s * 1e6 / transactions:.0f} us/txn, client {client_s * 1e6 / transactions:.0f} "
                          f"us/txn, per call " + " ".join(f"{name} {per_type.get(name, float('nan')):.0f}"
                                                          for name in PROCEDURES)
                          + f" us, Stock-Levels of 5 ms or more: {slow}"
                          + ("".join(f", {name} {type_cpu.get(name, float('nan')):.0f}" for name in PROCEDURES)
                             + f" us CPU/call, unattributed {type_cpu.get(None, 0):.1f} us/txn"
                             if args.statement_cpu else ""), flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
        try:
            if args.server_log and os.path.exists(os.path.join(server.root, "log")):
                shutil.copyfile(os.path.join(server.root, "log"), args.server_log)
        finally:
            server.remove()
    report_beside_hammerdb(results, args)


def spread(values):
    """The median and the range of a cell's runs, as `median (lowest-highest)`."""
    values = [v for v in values if v == v]
    if not values:
        return float("nan"), "no runs"
    return statistics.median(values), f"{min(values):.0f}-{max(values):.0f}"


def paired_ratio(ours, theirs):
    """The median of each round's stampede / HammerDB: a round's two runs are back to back, so
    the machine's drift between rounds (which moves both tools' medians) cancels."""
    ratios = [o / t for o, t in zip(ours, theirs) if o == o and t == t and t]
    return statistics.median(ratios) if ratios else float("nan")


def report_beside_hammerdb(results, args):
    print(f"\n{args.warehouses} warehouses, {args.rampup_minutes} min ramp-up + {args.minutes} min per run, "
          f"{args.rounds} rounds ABBA (medians, the runs' range){', server on CPU 0 and tools on CPU 1' if args.pin else ''}"
          + "".join(f", {setting}" for setting in args.setting)
          + (", autovacuum off and both databases vacuumed before every run" if args.vacuum_between_runs else ""))
    for vu in sorted(results["hammerdb"]):
        print(f"\n{vu} virtual user(s){' (all warehouses)' if vu > 1 else ''}:")
        print(f"{'':14} {'hammerdb':>10} {'range':>13} {'stampede':>10} {'range':>13} {'ratio':>7} {'paired':>7}")
        # One user's client and server take turns: its NOPM goes as 1 / (server + client CPU per
        # transaction), so that sum's ratio tells how much of a NOPM ratio the clients make.
        rows = [("NOPM", lambda r: r[0]), ("server us/txn", lambda r: r[1]), ("client us/txn", lambda r: r[3]),
                ("both us/txn", lambda r: r[1] + r[3])]
        rows += [(f"{name} us/call", lambda r, name=name: r[2].get(name, float("nan"))) for name in PROCEDURES]
        if args.statement_cpu:
            rows += [(f"{name} CPU/call", lambda r, name=name: r[5].get(name, float("nan"))) for name in PROCEDURES]
            rows.append(("unattributed", lambda r: r[5].get(None, float("nan"))))
        for label, value in rows:
            theirs_runs = [value(r) for r in results["hammerdb"][vu]]
            ours_runs = [value(r) for r in results["stampede"][vu]]
            theirs, theirs_range = spread(theirs_runs)
            ours, ours_range = spread(ours_runs)
            # Under 1 us (the unattributed bookkeeping) a ratio is noise over noise: not printed.
            ratios = (f"{ours / theirs:7.3f} {paired_ratio(ours_runs, theirs_runs):7.3f}" if theirs >= 1
                      else f"{'-':>7} {'-':>7}")
            print(f"{label:14} {theirs:10.0f} {theirs_range:>13} {ours:10.0f} {ours_range:>13} {ratios}")
        slow = {tool: sum(1 for r in results[tool][vu] if r[4]) for tool in results}
        print(f"runs with a Stock-Level of 5 ms or more: hammerdb {slow['hammerdb']} of "
              f"{len(results['hammerdb'][vu])}, stampede {slow['stampede']} of {len(results['stampede'][vu])}")
    print("\nratio: of the medians; paired: the median of the rounds' ratios")
    print("goal: per type within 0.90-1.10; server us/txn and NOPM within 0.95-1.05")


if __name__ == "__main__":
    main()
