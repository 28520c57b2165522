#!/usr/bin/env python3
"""stampede replay against Debian's pgreplay on the same captured log and the same server.

A throwaway PostgreSQL logs every statement (stderr, pgreplay's prefix `%m|%u|%d|%c|`) while
pgbench runs a workload on database `app`: tpcb-like over the simple protocol beside a custom
script of prepared statements with parameters, both rate-limited. stampede captures that log;
then, alternating which goes first each round, each tool replays it on a fresh copy of the
starting data (database `app` again: pgreplay connects to the logged database names):

- at the captured speed (stampede --speed 1, pgreplay -s 1): pg_stat_statements' calls per
  normalized statement against the original run's (must be equal), the schedule lag on one
  yardstick for both — the replay server's own log: each statement's time there since the
  replay's first statement, less its captured time since the capture's first (milliseconds, as
  %m writes them; negative values are the millisecond rounding) — and client CPU (user+system
  of the tool's process) per statement;
- as fast as each can (stampede --speed 0; pgreplay -j -s 1000, its fastest), with statement
  logging off: statements a second and client CPU per statement.

Goals (the issue's): calls equal; stampede's lag lower; its maximum rate higher; its CPU per
statement no higher. pgreplay replays sessions from one thread; stampede's --jobs is left at
its default (the machine's cores).

pgreplay sends the log's statements in one order across all sessions, waiting for each to be
answered: when a replayed session's row lock is taken in another order than in the capture, a
session waits for a lock whose holder pgreplay will not serve until it is answered, and it
spins (a CPU at 100%) for ever. pgbench's tpcb-like (every transaction updates one of a few
branches) does that within seconds here, so the default workload is simple-update (random
accounts of 100,000 x scale) beside the custom script; `--builtin tpcb-like` shows the hang:
a run that does not end within 5 x the capture's time + 30 s is reported as hung and killed.

Usage: bench/replay_vs_pgreplay.py [--seconds 20] [--rate 200] [--scale 10] [--rounds 2]
                                   [--builtin simple-update|tpcb-like]
Needs pgreplay (apt-get install pgreplay) and pgbench; build first: cargo build --release.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
TOOLS = ("pgreplay", "stampede")
CUSTOM = """\\set id random(1, 100000 * :scale)
\\set k random(1, 1000)
\\set tid random(1, 10 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :id;
UPDATE pgbench_tellers SET tbalance = tbalance + :k WHERE tid = :tid;
INSERT INTO replay_notes (aid, k, note) VALUES (:id, :k, 'note ' || :k::text);
"""
LOGGING = """
logging_collector = on
log_destination = 'stderr'
log_rotation_size = 0
log_rotation_age = 0
log_line_prefix = '%m|%u|%d|%c|'
log_statement = 'all'
log_connections = on
log_disconnections = on
shared_preload_libraries = 'pg_stat_statements'
fsync = off
autovacuum = off
"""


def query(server, db, sql):
    out = subprocess.run(["psql", "-X", "-At"] + server.conn(db)[:-1] + ["-d", db, "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def current_log(server):
    return os.path.join(server.data, query(server, "postgres", "SELECT pg_current_logfile()"))


def log_mark(server):
    """Where the server's log ends now (it does not rotate: log_rotation_size = 0)."""
    path = current_log(server)
    return path, os.path.getsize(path)


def log_since(server, mark, name, work):
    """What the server logged since `mark`, as a file of its own in `work`. The collector
    writes a message's lines at once; a moment's wait lets the last ones arrive."""
    time.sleep(0.5)
    path, offset = mark
    if current_log(server) != path:
        sys.exit(f"the server's log rotated away from {path}")
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read()
    out = os.path.join(work, name)
    with open(out, "wb") as f:
        f.write(text)
    return out


def fresh_app(server):
    query(server, "postgres", "DROP DATABASE IF EXISTS app")
    query(server, "postgres", "CREATE DATABASE app TEMPLATE pristine")
    query(server, "postgres", "SELECT pg_stat_statements_reset()")


def calls(server):
    rows = query(server, "postgres",
                 "SELECT s.calls || ' ' || regexp_replace(s.query, '\\s+', ' ', 'g') FROM "
                 "pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                 "WHERE d.datname = 'app' AND s.calls > 0 ORDER BY 1")
    return sorted(rows.splitlines())


def statement_times(path):
    """Per session of database app, its statements' log times in ms (log_statement's lines:
    logged as each statement arrived), sessions in the order of their first statement."""
    sessions = {}
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split("|", 4)
            if len(parts) < 5 or parts[2] != "app":
                continue
            message = parts[4]
            if not (message.startswith("LOG:  statement: ") or message.startswith("LOG:  execute ")):
                continue
            stamp = parts[0]  # 2026-12-02 02:14:29.716 UTC
            clock = stamp.split(" ")[1]
            hours, minutes, seconds = clock.split(":")
            day = int(stamp.split(" ")[0].replace("-", ""))
            ms = ((day * 24 + int(hours)) * 60 + int(minutes)) * 60_000 + round(float(seconds) * 1000)
            sessions.setdefault(parts[3], []).append(ms)
    return sorted(sessions.values(), key=lambda times: times[0])


def yardstick_lag(capture_log, replay_log):
    """Each replayed statement's lag (ms) on the server's clock: its replayed time less its
    captured time, less the least such difference (the replay's start: the statement sent
    soonest after its time counts as on time)."""
    captured, replayed = statement_times(capture_log), statement_times(replay_log)
    if not captured or not replayed:
        sys.exit(f"no statements of database app in {capture_log} ({len(captured)} sessions) "
                 f"or {replay_log} ({len(replayed)} sessions)")
    differences = []
    for c, r in zip(captured, replayed):
        differences += [rt - ct for ct, rt in zip(c, r)]
    start = min(differences)
    return [d - start for d in differences]


class Hung(Exception):
    pass


def run_tool(tool, server, capture_log, replay_file, fast, json_path, limit):
    port = server.port
    if tool == "pgreplay":
        speed = ["-j", "-s", "1000"] if fast else ["-s", "1"]
        cmd = ["pgreplay", "-h", "127.0.0.1", "-p", port] + speed + [capture_log]
    else:
        cmd = [STAMPEDE, "replay", replay_file, "-h", "127.0.0.1", "-p", port, "-U", "postgres",
               "-d", "app", "--speed", "0" if fast else "1", "--json", json_path]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise Hung(f"{tool} did not end within {limit} s")
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(os.path.dirname(replay_file), f"{tool}.out"), "a") as f:
        f.write(out.stdout + out.stderr)
    return wall, cpu


def stuck_sessions(server):
    """The replayed database's sessions as a hung replay left them (its process is killed)."""
    return query(server, "postgres",
                 "SELECT string_agg(state || coalesce(' waiting on ' || wait_event, ''), '; ') "
                 "FROM pg_stat_activity WHERE datname = 'app'")


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main():
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rate", type=int, default=200, help="transactions a second, both pgbench runs")
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=15497)
    parser.add_argument("--builtin", default="simple-update")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="replay-bench-")
    os.chmod(work, 0o755)
    server = Server(args.port, os.path.join(work, "pg"))
    server.init()
    with open(os.path.join(server.data, "postgresql.conf"), "a") as f:
        f.write(LOGGING)
    server.start()
    try:
        bench(server, work, args)
    finally:
        if not os.environ.get("KEEP"):
            server.remove()
            subprocess.run(["rm", "-rf", work])


def bench(server, work, args):
    server.psql("postgres", "CREATE EXTENSION pg_stat_statements")
    server.pgbench_database("pristine", args.scale)
    server.psql("pristine", "CREATE TABLE replay_notes (aid int, k int, note text)")
    fresh_app(server)
    script = os.path.join(work, "custom.sql")
    with open(script, "w") as f:
        f.write(CUSTOM)
    mark = log_mark(server)
    simple_rate, prepared_rate = str(args.rate * 3 // 5), str(args.rate * 2 // 5)
    seconds = str(args.seconds)
    simple = subprocess.Popen(["pgbench", "-b", args.builtin, "-M", "simple", "-c", "4", "-R",
                               simple_rate, "-T", seconds]
                              + server.conn("app"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["pgbench", "-M", "prepared", "-c", "2", "-R", prepared_rate, "-T", seconds, "-n",
                    "-f", script] + server.conn("app"), check=True, capture_output=True)
    simple.wait()
    capture_log = log_since(server, mark, "capture.log", work)
    original = calls(server)
    replay_file = os.path.join(work, "app.replay")
    out = subprocess.run([STAMPEDE, "capture", capture_log, "-o", replay_file, "--database", "app"],
                         check=True, capture_output=True, text=True)
    statements = int(next(l for l in out.stdout.splitlines() if l.startswith("statements: ")).split()[1])
    print(f"captured {statements} statements over {args.seconds} s ({args.rate} tps offered)")
    results = {tool: {"lag": [], "cpu": [], "fast_rate": [], "fast_cpu": [], "self_lag": []}
               for tool in TOOLS}
    json_path = os.path.join(work, "replay.json")
    limit = 5 * args.seconds + 30
    for round_ in range(args.rounds):
        order = TOOLS if round_ % 2 == 0 else TOOLS[::-1]
        for tool in order:
            fresh_app(server)
            mark = log_mark(server)
            try:
                wall, cpu = run_tool(tool, server, capture_log, replay_file, False, json_path, limit)
            except Hung as hung:
                print(f"round {round_ + 1} {tool:8} speed 1: HUNG ({hung}); sessions then: "
                      f"{stuck_sessions(server)}", flush=True)
                fresh_app(server)
                continue
            replay_log = log_since(server, mark, f"{tool}-{round_}.log", work)
            same = calls(server) == original
            lags = yardstick_lag(capture_log, replay_log)
            r = results[tool]
            r["lag"] += lags
            r["cpu"].append(cpu * 1e6 / statements)
            if tool == "stampede":
                with open(json_path) as f:
                    r["self_lag"].append(json.load(f)["lag"])
            print(f"round {round_ + 1} {tool:8} speed 1: {wall:6.2f} s, calls equal to the "
                  f"original: {same}, lag p50 {percentile(lags, 0.5)} ms, p99 "
                  f"{percentile(lags, 0.99)} ms, CPU {cpu * 1e6 / statements:.1f} us/statement")
        query(server, "postgres", "ALTER SYSTEM SET log_statement = 'none'")
        query(server, "postgres", "SELECT pg_reload_conf()")
        for tool in order:
            fresh_app(server)
            try:
                wall, cpu = run_tool(tool, server, capture_log, replay_file, True, json_path, limit)
            except Hung as hung:
                print(f"round {round_ + 1} {tool:8} fastest: HUNG ({hung}); sessions then: "
                      f"{stuck_sessions(server)}", flush=True)
                continue
            results[tool]["fast_rate"].append(statements / wall)
            results[tool]["fast_cpu"].append(cpu * 1e6 / statements)
            print(f"round {round_ + 1} {tool:8} fastest: {statements / wall:8.0f} statements/s, "
                  f"CPU {cpu * 1e6 / statements:.1f} us/statement")
        query(server, "postgres", "ALTER SYSTEM RESET log_statement")
        query(server, "postgres", "SELECT pg_reload_conf()")
    summarize(results)


def summarize(results):
    s, p = results["stampede"], results["pgreplay"]
    if not s["lag"] or not p["lag"] or not s["fast_rate"] or not p["fast_rate"]:
        print("\nno ratio: a tool hung in every round of a phase (above)")
        return
    print("\nover all rounds (stampede / pgreplay)")
    for name, key in (("lag mean (ms)", None), ("lag p50 (ms)", 0.5), ("lag p90 (ms)", 0.9),
                      ("lag p99 (ms)", 0.99)):
        value = (lambda lags: statistics.mean(lags)) if key is None else (lambda lags: percentile(lags, key))
        print(f"  {name:28} stampede {value(s['lag']):8.3f}  pgreplay {value(p['lag']):8.3f}")
    late = lambda lags: 100.0 * sum(1 for x in lags if x > 10) / len(lags)
    print(f"  {'lag > 10 ms (%)':28} stampede {late(s['lag']):8.3f}  pgreplay {late(p['lag']):8.3f}")
    for name, key in (("CPU us/statement, speed 1", "cpu"), ("fastest statements/s", "fast_rate"),
                      ("CPU us/statement, fastest", "fast_cpu")):
        a, b = statistics.median(s[key]), statistics.median(p[key])
        print(f"  {name:28} stampede {a:8.1f}  pgreplay {b:8.1f}  ratio {a / b:.3f}")
    for lag in s["self_lag"]:
        print(f"  stampede's own lag report (us resolution): p50 {lag['p50_ms']:.3f} ms, "
              f"p99 {lag['p99_ms']:.3f} ms, late {lag['late_pct']:.2f}%")


if __name__ == "__main__":
    main()
