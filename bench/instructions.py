#!/usr/bin/env python3
"""Client instructions per transaction, two stampede binaries side by side, counted by
callgrind: the same on a busy machine as on an idle one, so a before/after of a refactoring
(a crate split, an inlining change) is decided without the noise of a tps ratio.

Starts its own PostgreSQL on 127.0.0.1:15720 and runs `stampede pgbench -t N` under
`valgrind --tool=callgrind` for each binary and case: select-only prepared with one client
on one thread (the solo socket path) and four clients on one thread (the reactor path), the
10 `\\set` script (the interpreter) and a pipeline of 16 SELECTs. Prints Ir per transaction
and the ratio new / old. The counts include the process's start (connecting, parsing the
options), spread over the transactions: compare at the same --transactions, in the thousands.

Usage: STAMPEDE=new/stampede bench/instructions.py --against old/stampede [--transactions 5000]
"""
import argparse
import os
import re
import subprocess
import sys

from pgserver import Server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
SERVER = Server(15720, "/tmp/stampede-bench-15720")

PIPELINE_SCRIPT = "\\startpipeline\n" + "".join(
    f"\\set aid{i} random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid{i};\n"
    for i in range(16)
) + "\\endpipeline\n"

INTERPRETER_SCRIPT = "".join(
    f"\\set v{i} random(1, 100000 * :scale) + {i} * 2 - abs(-{i})\n" for i in range(10)
) + "SELECT :v9;\n"


def instructions(binary, args, out):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "pgbench"]
    done = subprocess.run(cmd + args + SERVER.conn("bench"), capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd + args)}\n{done.stdout}{done.stderr}")
    # Every thread's file; the totals line of each.
    total = 0
    for name in os.listdir(os.path.dirname(out)):
        if name.startswith(os.path.basename(out)):
            with open(os.path.join(os.path.dirname(out), name)) as f:
                total += int(re.search(r"^totals: (\d+)", f.read(), re.M).group(1))
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", required=True, help="the old stampede binary")
    parser.add_argument("--transactions", type=int, default=5000)
    opts = parser.parse_args()
    SERVER.init()
    SERVER.start()
    try:
        SERVER.pgbench_database("bench", 1)
        script = SERVER.write_file("interpreter.sql", INTERPRETER_SCRIPT)
        pipeline = SERVER.write_file("pipeline.sql", PIPELINE_SCRIPT)
        n = opts.transactions
        cases = [
            ("select-only prepared c=1 j=1", ["-S", "-M", "prepared", "-c", "1", "-j", "1", "-t", str(n), "-n"], n),
            ("select-only prepared c=4 j=1", ["-S", "-M", "prepared", "-c", "4", "-j", "1", "-t", str(n // 4), "-n"], n // 4 * 4),
            ("10 \\set + SELECT c=4 j=1", ["-f", script, "-M", "prepared", "-c", "4", "-j", "1", "-t", str(n // 4), "-n"], n // 4 * 4),
            ("pipeline 16 SELECTs c=4 j=1", ["-f", pipeline, "-M", "prepared", "-c", "4", "-j", "1", "-t", str(n // 16), "-n"], n // 16 * 4),
        ]
        print(f"server: {SERVER.bindir}; old {opts.against}, new {STAMPEDE}; callgrind Ir of the client")
        for name, args, txns in cases:
            counts = {}
            for label, binary in (("old", opts.against), ("new", STAMPEDE)):
                out_dir = os.path.join(SERVER.root, f"cg-{label}-{len(counts)}-{abs(hash(name))}")
                os.makedirs(out_dir)
                counts[label] = instructions(binary, ["--random-seed", "7"] + args,
                                             os.path.join(out_dir, "callgrind.out")) / txns
            print(f"{name:30} old {counts['old']:9.0f} Ir/txn | new {counts['new']:9.0f} Ir/txn | "
                  f"ratio {counts['new'] / counts['old']:.4f}")
            sys.stdout.flush()
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
