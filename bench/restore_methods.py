#!/usr/bin/env python3
"""How should the lab give each write run pristine data? Measures the two candidates on one
server, alternating them, and prints seconds per restore and their ratio.

  template  DROP DATABASE run; CREATE DATABASE run TEMPLATE dataset STRATEGY FILE_COPY;
            CHECKPOINT                          (what the lab does, PostgreSQL 15+)
  datadir   pg_ctl stop -m fast; replace the data directory by a copy of the stopped
            cluster's snapshot (cp -a); pg_ctl start -w; CHECKPOINT

Before each restore a short tpcb-like run dirties the copy being replaced, as a lab run would.
Usage: bench/restore_methods.py [--scale 50] [--rounds 4]
"""
import argparse
import os
import shutil
import subprocess
import time

from pgserver import Server, as_server_user

SERVER = Server(15701, "/tmp/stampede-bench-restore", "-c max_wal_size=4GB -c fsync=on")
SNAPSHOT = os.path.join(SERVER.root, "snapshot")


def dirty(db):
    subprocess.run(["pgbench", "-n", "-T", "3", "-c", "4"] + SERVER.conn(db), check=True, capture_output=True)


def restore_template():
    started = time.monotonic()
    SERVER.psql("postgres", "DROP DATABASE IF EXISTS run")
    SERVER.psql("postgres", "CREATE DATABASE run TEMPLATE dataset STRATEGY FILE_COPY")
    SERVER.psql("postgres", "CHECKPOINT")
    return time.monotonic() - started


def restore_datadir():
    started = time.monotonic()
    SERVER.stop()
    shutil.rmtree(SERVER.data)
    subprocess.run(as_server_user(["cp", "-a", SNAPSHOT, SERVER.data]), check=True)
    SERVER.start()
    SERVER.psql("postgres", "CHECKPOINT")
    return time.monotonic() - started


def du(path):
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout
    return int(out.split()[0])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    SERVER.init()
    SERVER.start()
    try:
        SERVER.psql("postgres", "CREATE DATABASE dataset")
        subprocess.run(["pgbench", "-i", "-q", "-s", str(args.scale)] + SERVER.conn("dataset"),
                       check=True, capture_output=True)
        SERVER.psql("dataset", "VACUUM (FREEZE, ANALYZE)")
        SERVER.psql("postgres", "CHECKPOINT")
        SERVER.psql("postgres", "CREATE DATABASE run TEMPLATE dataset STRATEGY FILE_COPY")
        # The data-directory snapshot holds the dataset and a run copy, as the lab's would.
        SERVER.stop()
        subprocess.run(as_server_user(["cp", "-a", SERVER.data, SNAPSHOT]), check=True)
        SERVER.start()
        print(f"scale {args.scale}: dataset {du(os.path.join(SERVER.data, 'base'))} MB in base/, "
              f"data directory {du(SERVER.data)} MB")
        times = {"template": [], "datadir": []}
        methods = {"template": restore_template, "datadir": restore_datadir}
        for round_index in range(args.rounds):
            order = ["template", "datadir"] if round_index % 2 == 0 else ["datadir", "template"]
            for name in order:
                dirty("run")
                times[name].append(methods[name]())
        mean = {name: sum(t) / len(t) for name, t in times.items()}
        for name, values in times.items():
            print(f"{name:9} mean {mean[name]:6.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
        print(f"datadir / template time ratio {mean['datadir'] / mean['template']:.2f}")
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
