#!/usr/bin/env python3
"""2,000 TPROC-C virtual users with keying and thinking from one stampede process.

A throwaway server (the system's PostgreSQL, fsync off, max_connections above the users) gets
`stampede tpcc build`, then `stampede tpcc run --keying-thinking --vu N` (HammerDB's seconds:
New-Order 18/12, Payment 3/12, Order-Status 2/5, Delivery 2/10, Stock-Level 2/5). Prints:
  - the client's peak RSS (GNU time's maximum resident set; goal < 1 GiB);
  - the New-Order rate the server counted (sum(district.d_next_o_id), read by this script at
    two instants inside the run, away from its start and end) against the rate the pauses
    imply: users x New-Order share (45% x 99% committed) / mean cycle, the cycle being the
    mix-weighted keying + mean think + the run's mean response time (goal: within 5%);
  - stampede's own NOPM over the whole run against the same implied rate (the users start
    spread as in the steady state, so no start-up transient should show).

Usage: bench/tpcc_keying.py [--vu 2000] [--warehouses 10] [--seconds 300]
Build first: cargo build --release.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
# (transaction, weight %, keying s, mean think s): mix 45/43/4/4/4, New-Order split 99:1.
PAUSES = [("new-order", 44.55, 18, 12), ("new-order-rollback", 0.45, 18, 12),
          ("payment", 43, 3, 12), ("order-status", 4, 2, 5), ("delivery", 4, 2, 10),
          ("stock-level", 4, 2, 5)]


def psql(server, sql):
    result = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", server.root,
                             "-p", server.port, "-U", "postgres", "-d", "postgres", "-c", sql],
                            capture_output=True, text=True, check=True)
    return result.stdout.strip()


def new_orders(server):
    return int(psql(server, "SELECT sum(d_next_o_id) FROM district"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vu", type=int, default=2000)
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--port", type=int, default=15470)
    args = parser.parse_args()
    server = Server(args.port, os.path.join(tempfile.gettempdir(), f"stampede-bench-{args.port}"),
                    f"-c max_connections={args.vu + 50} -c fsync=off -c shared_buffers=1GB "
                    "-c synchronous_commit=off")
    server.init()
    server.start()
    json_path = os.path.join(tempfile.gettempdir(), f"stampede-keying-{os.getpid()}.json")
    try:
        connection = ["-h", server.root, "-p", server.port, "-U", "postgres", "-d", "postgres"]
        subprocess.run([STAMPEDE, "tpcc", "build", f"--warehouses={args.warehouses}", "--seed=1"]
                       + connection, check=True, capture_output=True)
        run = subprocess.Popen(["/usr/bin/time", "-f", "max-rss-kb %M", STAMPEDE, "tpcc", "run",
                                f"--vu={args.vu}", "--keying-thinking", "--rampup=0s", "--mix=45,43,4,4,4",
                                f"--duration={args.seconds}s", "--seed=1", "--json", json_path]
                               + connection, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Connections take a while to open; sample once all users are in, well after the start
        # (the users' first waits are staggered over one mean cycle) and before the end.
        window = (args.seconds * 0.25, args.seconds * 0.9)
        started = time.monotonic()
        while int(psql(server, "SELECT count(*) FROM pg_stat_activity "
                               "WHERE application_name = 'stampede-tpcc'")) < args.vu:
            if run.poll() is not None:
                sys.exit(f"the run ended early:\n{run.stdout.read()}\n{run.stderr.read()}")
            time.sleep(0.5)
        connected = time.monotonic()
        time.sleep(window[0])
        first, first_at = new_orders(server), time.monotonic()
        time.sleep(window[1] - window[0])
        last, last_at = new_orders(server), time.monotonic()
        out, err = run.communicate()
        if run.returncode != 0:
            sys.exit(f"the run failed:\n{out}\n{err}")
    finally:
        server.remove()
    with open(json_path) as f:
        report = json.load(f)
    os.remove(json_path)
    rss_mib = int(re.search(r"max-rss-kb (\d+)", err).group(1)) / 1024
    cycle_s = sum(weight / 100 * (keying + think
                                  + report["transactions"][name]["latency_ms"]["mean"] / 1000)
                  for name, weight, keying, think in PAUSES)
    implied = args.vu * 0.4455 / cycle_s
    achieved = (last - first) / (last_at - first_at)
    print(f"{args.vu} virtual users, {args.warehouses} warehouses, {args.seconds} s "
          f"(all connected after {connected - started:.1f} s)")
    print(f"client peak RSS: {rss_mib:.0f} MiB (goal < 1024)")
    print(f"mean cycle {cycle_s:.3f} s; New-Orders/s implied {implied:.2f}, "
          f"server counted {achieved:.2f} from second {window[0]:.0f} to {window[1]:.0f}")
    print(f"ratio achieved / implied: {achieved / implied:.3f} (goal 0.95..1.05)")
    print(f"stampede's own NOPM over the whole run: {report['nopm']:.0f} "
          f"(= {report['nopm'] / 60:.2f}/s, {report['nopm'] / 60 / implied:.3f} of implied), errors "
          f"{sum(t['errors'] for t in report['transactions'].values())}")


if __name__ == "__main__":
    main()
