#!/usr/bin/env python3
"""stampede tproch build against the server's floor and against HammerDB's own TPROC-H build.

A throwaway server (the system's PostgreSQL, fsync off) gets, in turn:
- `stampede tproch build` at --scale-factor over --threads connections;
- the floor: the same rows from server-side files (written once with COPY TO from stampede's
  build, in the same text format stampede's COPY sends; the big tables in --threads parts)
  loaded with COPY FROM over --threads connections, no client in the way, then the same 24 key
  and index statements run as stampede runs them (keys at once, indexes at once, foreign keys in
  rounds) and the same VACUUM (ANALYZE);
- with --hammerdb SRC, HammerDB's TPROC-H build through its CLI (`buildschema`), with
  --hammerdb-threads build threads (1 with Debian's Pgtcl; more need the thread-safe build of
  bench/build_thread_safe_pgtcl.sh, passed as --pgtcl).
Prints each one's seconds and the ratios (goals: HammerDB / stampede >= 4, stampede / floor <= 1.3).

Usage: bench/tproch_build.py [--scale-factor 1] [--threads 2] [--rounds 1]
                             [--hammerdb /tmp/hammerdb6 [--hammerdb-threads 1] [--pgtcl SO]]
Build first: cargo build --release.
"""
import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hammerdb import shim_folder, PGTCL, hammerdb_version  # noqa: E402
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
TABLES = ["lineitem", "orders", "partsupp", "part", "customer", "supplier", "nation", "region"]


def psql(server, db, sql):
    result = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", server.root,
                             "-p", server.port, "-U", "postgres", "-d", db, "-c", sql],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"psql failed for {sql[:200]}: {result.stderr}")
    return result.stdout.strip()


def fresh_database(server, db):
    psql(server, "postgres", f"DROP DATABASE IF EXISTS {db}")
    psql(server, "postgres", f"CREATE DATABASE {db}")
    psql(server, "postgres", "CHECKPOINT")


def stampede_build(server, db, args):
    fresh_database(server, db)
    started = time.monotonic()
    subprocess.run([STAMPEDE, "tproch", "build", f"--scale-factor={args.scale_factor}",
                    f"--threads={args.threads}", "-h", server.root, "-p", server.port,
                    "-U", "postgres", "-d", db], check=True, capture_output=True)
    return time.monotonic() - started


def schema_statements(server, db):
    """The tables (CREATE), and the keys and indexes as stampede's build made them, in its phases."""
    creates = subprocess.run(["pg_dump", "-h", server.root, "-p", server.port, "-U", "postgres",
                              "--schema-only", "--section=pre-data", db],
                             capture_output=True, text=True, check=True).stdout
    primary = psql(server, db, """SELECT format('ALTER TABLE %s ADD CONSTRAINT %s %s', conrelid::regclass,
        conname, pg_get_constraintdef(oid)) FROM pg_constraint WHERE contype = 'p'
        AND connamespace = 'public'::regnamespace""").splitlines()
    indexes = psql(server, db, """SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
        WHERE NOT i.indisprimary AND i.indrelid::regclass::text = ANY('{%s}')""" % ",".join(TABLES)).splitlines()
    foreign = psql(server, db, """SELECT format('ALTER TABLE %s ADD CONSTRAINT %s %s|%s|%s', conrelid::regclass,
        conname, pg_get_constraintdef(oid), conrelid::regclass, confrelid::regclass)
        FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace""").splitlines()
    return creates, primary, indexes, [f.split("|") for f in foreign]


def rounds_of(foreign):
    """Foreign keys in rounds of keys on different tables, as stampede adds them."""
    left, rounds = list(foreign), []
    while left:
        locked, round_, rest = set(), [], []
        for statement, a, b in left:
            if a in locked or b in locked:
                rest.append((statement, a, b))
            else:
                locked |= {a, b}
                round_.append(statement)
        rounds.append(round_)
        left = rest
    return rounds


def dump_files(server, source, folder, threads):
    """Server-side text files of every table, the big ones in `threads` parts."""
    files = []
    for table in TABLES:
        parts = threads if table in ("lineitem", "orders", "partsupp") else 1
        columns = psql(server, source, f"""SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
            WHERE attrelid = '{table}'::regclass AND attnum > 0 AND NOT attisdropped""")
        for part in range(parts):
            path = os.path.join(folder, f"{table}.{part}")
            where = f"WHERE (ctid::text::point)[0]::bigint % {parts} = {part}" if parts > 1 else ""
            psql(server, source, f"COPY (SELECT {columns} FROM {table} {where}) TO '{path}' WITH (DELIMITER '|')")
            files.append((table, columns, path))
    return sorted(files, key=lambda f: -os.path.getsize(f[2]))


def floor(server, db, statements, files, threads):
    creates, primary, indexes, foreign = statements
    fresh_database(server, db)
    subprocess.run(["psql", "-X", "-q", "-h", server.root, "-p", server.port, "-U", "postgres", "-d", db],
                   input=creates, capture_output=True, text=True, check=True)
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda f: psql(server, db, f"COPY {f[0]} ({f[1]}) FROM '{f[2]}' WITH (DELIMITER '|')"),
                      files))
        list(pool.map(lambda s: psql(server, db, s), primary))
        list(pool.map(lambda s: psql(server, db, s), indexes))
        for round_ in rounds_of(foreign):
            list(pool.map(lambda s: psql(server, db, s), round_))
        list(pool.map(lambda t: psql(server, db, f"VACUUM (ANALYZE) {t}"), TABLES))
    return time.monotonic() - started


def hammerdb_build(server, args):
    psql(server, "postgres", "DROP DATABASE IF EXISTS tpch")
    psql(server, "postgres", "DROP ROLE IF EXISTS tpch")
    psql(server, "postgres", "CHECKPOINT")
    shim = shim_folder(args.pgtcl or PGTCL)
    script = os.path.join(shim, "build.tcl")
    sf = int(args.scale_factor) if args.scale_factor >= 1 else args.scale_factor
    with open(script, "w") as f:
        f.write("\n".join([
            "dbset db pg", "dbset bm TPC-H",
            "diset connection pg_host 127.0.0.1", f"diset connection pg_port {server.port}",
            "diset connection pg_sslmode disable",
            f"diset tpch pg_scale_fact {sf}", f"diset tpch pg_num_tpch_threads {args.hammerdb_threads}",
            "diset tpch pg_tpch_superuser postgres", "diset tpch pg_tpch_superuserpass postgres",
            "diset tpch pg_tpch_defaultdbase postgres", "diset tpch pg_tpch_user tpch",
            "diset tpch pg_tpch_pass tpch", "diset tpch pg_tpch_dbase tpch",
            "buildschema", "quit"]) + "\n")
    env = dict(os.environ, TCLLIBPATH=shim, TMP=shim)
    started = time.monotonic()
    run = subprocess.run(["tclsh8.6", "hammerdbcli", "auto", script], cwd=args.hammerdb, env=env,
                         capture_output=True, text=True)
    seconds = time.monotonic() - started
    if run.returncode != 0 or "SCHEMA COMPLETE" not in run.stdout:
        sys.exit(f"HammerDB failed:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
    rows = psql(server, "tpch", "SELECT count(*) FROM lineitem")
    return seconds, int(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-factor", type=float, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--port", type=int, default=15792)
    parser.add_argument("--hammerdb")
    parser.add_argument("--hammerdb-threads", type=int, default=1)
    parser.add_argument("--pgtcl")
    args = parser.parse_args()
    server = Server(args.port, "/tmp/stampede-bench-tproch", "-c fsync=off -c shared_buffers=1GB "
                    "-c max_wal_size=8GB -c maintenance_work_mem=512MB")
    server.init()
    server.start()
    dump = os.path.join(server.root, "dump")
    os.makedirs(dump)
    if os.geteuid() == 0:
        subprocess.run(["chown", "postgres", dump], check=True)
    try:
        first = stampede_build(server, "tproch_source", args)
        statements = schema_statements(server, "tproch_source")
        files = dump_files(server, "tproch_source", dump, args.threads)
        # The dump and the floor's copy need the room (SF 10: about 11 GB and 15 GB).
        psql(server, "postgres", "DROP DATABASE tproch_source")
        results = {"stampede": [first], "floor": [floor(server, "tproch_floor", statements, files, args.threads)]}
        for round_index in range(1, args.rounds):
            order = ["floor", "stampede"] if round_index % 2 == 0 else ["stampede", "floor"]
            for what in order:
                if what == "stampede":
                    results["stampede"].append(stampede_build(server, "tproch_run", args))
                else:
                    results["floor"].append(floor(server, "tproch_floor", statements, files, args.threads))
        mean = {k: sum(v) / len(v) for k, v in results.items()}
        line = (f"TPROC-H build at SF {args.scale_factor}, {args.threads} connections: stampede {mean['stampede']:.1f} s"
                f" | floor (COPY FROM server files + the same keys, indexes, VACUUM ANALYZE) {mean['floor']:.1f} s"
                f" | stampede / floor {mean['stampede'] / mean['floor']:.3f}"
                f" (stampede {', '.join(f'{v:.1f}' for v in results['stampede'])};"
                f" floor {', '.join(f'{v:.1f}' for v in results['floor'])})")
        if args.hammerdb:
            hammerdb, rows = hammerdb_build(server, args)
            line += (f" | HammerDB {hammerdb_version(args.hammerdb)} buildschema, {args.hammerdb_threads} build thread(s): {hammerdb:.1f} s"
                     f" ({rows:,} lineitem rows) | HammerDB / stampede {hammerdb / mean['stampede']:.2f}x")
        print(line)
    finally:
        server.remove()


if __name__ == "__main__":
    main()
