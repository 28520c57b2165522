#!/usr/bin/env python3
"""TPC-H's data generation alone: `stampede tproch generate` against the C dbgen on the same
cores, both writing dbgen's .tbl files into a tmpfs folder (so the disk does not set the pace).
dbgen runs as --threads processes, each one chunk of every table (`-C N -S k`, its own way of
using several cores); stampede as --threads threads. Prints each one's rows per second and the
ratio, and checks that the two wrote the same lineitem bytes.

Usage: bench/tproch_generate.py --dbgen DIR [--scale-factor 10] [--threads 2] [--dir /dev/shm/tpch]
DIR holds a built dbgen and its dists.dss (TPC-H's kit; github.com/electrum/tpch-dbgen builds
with `make MACHINE=LINUX`). Build first: cargo build --release.
"""
import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
ROWS_PER_SF = 10_000 + 150_000 + 200_000 + 800_000 + 1_500_000  # lineitem counted apart


def lineitem_digest(folder):
    digest = hashlib.sha256()
    parts = sorted(glob.glob(os.path.join(folder, "lineitem.tbl*")),
                   key=lambda p: int(p.rsplit(".", 1)[1]) if p[-1].isdigit() else 0)
    lines = 0
    for part in parts:
        with open(part, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
                lines += block.count(b"\n")
    return digest.hexdigest(), lines


def timed_stampede(args, folder):
    started = time.monotonic()
    subprocess.run([STAMPEDE, "tproch", "generate", f"--scale-factor={args.scale_factor}",
                    f"--threads={args.threads}", f"--dir={folder}"], check=True, capture_output=True)
    return time.monotonic() - started


def timed_dbgen(args, folder):
    os.makedirs(folder)
    dbgen = os.path.join(args.dbgen, "dbgen")
    dists = os.path.join(args.dbgen, "dists.dss")
    started = time.monotonic()
    chunks = [subprocess.Popen([dbgen, "-b", dists, "-s", str(args.scale_factor), "-f",
                                "-C", str(args.threads), "-S", str(k)], cwd=folder,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for k in range(1, args.threads + 1)] if args.threads > 1 else \
        [subprocess.Popen([dbgen, "-b", dists, "-s", str(args.scale_factor), "-f"], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for chunk in chunks:
        if chunk.wait() != 0:
            sys.exit("dbgen failed")
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dbgen", required=True)
    parser.add_argument("--scale-factor", type=float, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dir", default="/dev/shm/stampede-tpch-generate")
    args = parser.parse_args()
    results = {}
    for what, timed in [("dbgen", timed_dbgen), ("stampede", timed_stampede)]:
        folder = os.path.join(args.dir, what)
        shutil.rmtree(folder, ignore_errors=True)
        seconds = timed(args, folder)
        digest, lines = lineitem_digest(folder)
        results[what] = (seconds, digest, lines)
        shutil.rmtree(folder)
    rows = ROWS_PER_SF * args.scale_factor + results["dbgen"][2] + 30
    d, s = results["dbgen"][0], results["stampede"][0]
    print(f"TPC-H generation at SF {args.scale_factor}, {args.threads} core(s): "
          f"dbgen {d:.1f} s ({rows / d:,.0f} rows/s) | stampede {s:.1f} s ({rows / s:,.0f} rows/s)"
          f" | stampede's rate / dbgen's {d / s:.2f}x"
          f" | lineitem identical: {results['dbgen'][1] == results['stampede'][1]}"
          f" ({results['stampede'][2]:,} lines)")


if __name__ == "__main__":
    main()
