#!/usr/bin/env python3
"""What watching a run costs it: tps with --metrics-addr scraped every second (as Prometheus
would) against the same run without, side by side on one server in one sitting.

Starts its own PostgreSQL on 127.0.0.1:15712, loads pgbench at scale 10, then per round runs
the workload plain and with --metrics-addr (a thread of this script GETs /metrics each second
while it runs), in rotating order; prints each round's ratios and their geometric means with
a 95% t interval:
                     tps with metrics / tps without                 (goal >= 0.99)
                     client CPU per transaction, with / without     (from wait4)
and the scrape's size and time. Workloads (--workload):
  pgbench   `stampede pgbench -S -M prepared -c N -T SECONDS` (the driver's intervals)
  lua       sysbench's oltp_point_select.lua, --threads N --time SECONDS (read once a second
            from the script's own counters)
  ibench    `ibench run --steps l.i0` of 100,000 rows per second asked for, N clients (each
            INSERT of 100 rows recorded into a tally); its rate is the step's rows a second

Usage: bench/live_cost.py [--workload pgbench] [--seconds 15] [--rounds 6] [--clients 1]
Build first: cargo build --release (or STAMPEDE=path/to/stampede).
"""
import argparse
import math
import os
import socket
import statistics
import sys
import threading
import time
import urllib.request

from pgbench_vs_stampede import STAMPEDE, measured
from pgserver import Server

SERVER = Server(15712, "/tmp/stampede-bench-live-15712")
# Student's t at 97.5% for 1..10 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper(threading.Thread):
    """GETs /metrics every second until stopped; keeps the sizes and times."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.stop, self.sizes, self.times = url, threading.Event(), [], []

    def run(self):
        while not self.stop.wait(1.0):
            try:
                start = time.monotonic()
                body = urllib.request.urlopen(self.url, timeout=1).read()
                self.times.append(time.monotonic() - start)
                self.sizes.append(len(body))
            except OSError:
                pass  # not listening yet, or already gone


def workload_args(workload, seconds, clients):
    """The command of one run (without the server's options) and how to read its rate."""
    if workload == "lua":
        args = [STAMPEDE, "sysbench", "/usr/share/sysbench/oltp_point_select.lua",
                "--db-driver=pgsql", "--pgsql-host=127.0.0.1", f"--pgsql-port={SERVER.port}",
                "--pgsql-user=postgres", "--pgsql-db=bench", "--tables=1",
                "--table-size=100000", f"--threads={clients}", f"--time={seconds}"]
        return args, [], lambda out: per_second(out, "transactions:")
    if workload == "ibench":
        # About `seconds` long at this machine's ~100,000 rows a second.
        args = [STAMPEDE, "ibench", "run", "--steps", "l.i0", "--rows", str(100_000 * seconds),
                "--clients", str(clients), "--settle", "0"]
        return args, SERVER.conn("bench")[:-1] + ["-d", "bench"], ibench_rows_per_s
    args = [STAMPEDE, "pgbench", "-S", "-M", "prepared", "-c", str(clients), "-j",
            str(min(clients, 2)), "-T", str(seconds), "-n"]
    return args, SERVER.conn("bench"), lambda out: float(
        next(line for line in out.splitlines() if line.startswith("tps = ")).split()[2])


def per_second(out, label):
    """sysbench's `transactions: N (R per sec.)`: N and R."""
    line = next(line.strip() for line in out.splitlines() if line.strip().startswith(label))
    count = int(line.split()[1])
    return float(line.split("(")[1].split()[0]), count


def ibench_rows_per_s(out):
    """The l.i0 step's line `l.i0: N client(s), S s: R inserts/s, …`: R and the rows."""
    line = next(line for line in out.splitlines() if line.startswith("l.i0: "))
    words = line.replace(",", " ").split()
    rate, seconds = float(words[words.index("inserts/s") - 1]), float(words[3])
    return rate, round(rate * seconds)


def run(workload, seconds, clients, metrics):
    args, connection, rate_of = workload_args(workload, seconds, clients)
    scraper = None
    if metrics:
        port = free_port()
        address = f"127.0.0.1:{port}"
        args += [f"--metrics-addr={address}"] if workload == "lua" else ["--metrics-addr", address]
        scraper = Scraper(f"http://127.0.0.1:{port}/metrics")
        scraper.start()
    tail = ["run"] if workload == "lua" else []
    out, _, cpu = measured(args + connection + tail)
    if scraper:
        scraper.stop.set()
    if workload == "pgbench":
        tps = rate_of(out)
        txns = int(next(line for line in out.splitlines()
                        if line.startswith("number of transactions actually processed:")).split()[-1].split("/")[0])
    else:
        tps, txns = rate_of(out)
    return tps, cpu * 1e6 / txns, scraper


def prepare(workload):
    if workload == "lua":
        args, _, _ = workload_args("lua", 1, 1)
        measured(args + ["prepare"])


def geometric_mean(ratios):
    """The geometric mean of the ratios and its 95% t interval, as text."""
    logs = [math.log(x) for x in ratios]
    mean = statistics.mean(logs)
    half = T975[len(logs) - 2] * statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else 0
    return (f"{math.exp(mean):.4f} (95% CI {math.exp(mean - half):.4f}-{math.exp(mean + half):.4f}, "
            f"{len(ratios)} rounds)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--workload", choices=["pgbench", "lua", "ibench"], default="pgbench")
    opts = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    SERVER.init()
    SERVER.start()
    try:
        SERVER.pgbench_database("bench", 10)
        prepare(opts.workload)
        print(f"server: {SERVER.bindir}, 127.0.0.1:{SERVER.port}; {opts.workload}, "
              f"{opts.clients} client(s), {opts.seconds} s per run, {opts.rounds} rounds, "
              "order rotating")
        ratios, cpu_ratios, scrapes = [], [], []
        for r in range(opts.rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            tps, cpu = {}, {}
            for metrics in order:
                tps[metrics], cpu[metrics], scraper = run(
                    opts.workload, opts.seconds, opts.clients, metrics)
                if scraper:
                    scrapes.append(scraper)
            ratios.append(tps[True] / tps[False])
            cpu_ratios.append(cpu[True] / cpu[False])
            print(f"round {r + 1}: without {tps[False]:8.0f} tps {cpu[False]:6.2f} us/txn, with "
                  f"--metrics-addr {tps[True]:8.0f} tps {cpu[True]:6.2f} us/txn, tps ratio "
                  f"{ratios[-1]:.4f}")
            sys.stdout.flush()
        print(f"tps with / without --metrics-addr: {geometric_mean(ratios)}")
        print(f"client CPU per transaction, with / without: {geometric_mean(cpu_ratios)}")
        sizes = [s for scraper in scrapes for s in scraper.sizes]
        times = [t for scraper in scrapes for t in scraper.times]
        if sizes:
            print(f"scrapes: {len(sizes)}, {statistics.median(sizes)} bytes, "
                  f"median {statistics.median(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms")
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
