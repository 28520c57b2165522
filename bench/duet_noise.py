#!/usr/bin/env python3
"""Does running both targets at once (duet benchmarking, Bulej et al. 2020) make their ratio
less noisy on this machine than running them one after the other?

Two identical PostgreSQL clusters (fsync off, pgbench scale 10). Each round measures the pair
three ways, `stampede pgbench -S -c 1 -T DURATION` against each:
  - sequential: a then b (b then a in odd rounds), as a lab's interleaved rounds do;
  - duet: a and b at the same time, the scheduler free to put them anywhere;
  - pinned duet: a and b at the same time, a's server and client on CPU 0, b's on CPU 1.
Prints, per design, the sd of ln(tps_b / tps_a) over the rounds (the noise the paired analysis
sees), the runs' own CV, and the rounds a +-3% interval would need at that sd.

    bench/duet_noise.py [--rounds 10] [--duration 10] [--b-settings '-c shared_buffers=1MB']
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgserver import Server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
PORTS = (15731, 15732)


def pgbench(server, duration, cpu=None):
    """Starts one select-only run; returns the process (its stdout carries the tps line)."""
    command = [STAMPEDE, "pgbench", "-S", "-c", "1", "-T", str(duration)] + server.conn("bench")
    if cpu is not None:
        command = ["taskset", "-c", str(cpu)] + command
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tps(process):
    out, err = process.communicate()
    match = re.search(r"^tps = ([0-9.]+)", out, re.M)
    if process.returncode != 0 or not match:
        sys.exit(f"pgbench failed ({process.returncode}):\n{out}\n{err}")
    return float(match.group(1))


def sequential(servers, duration, round_index):
    order = servers if round_index % 2 == 0 else servers[::-1]
    values = {id(s): tps(pgbench(s, duration)) for s in order}
    return values[id(servers[0])], values[id(servers[1])]


def duet(servers, duration, pinned):
    running = [pgbench(s, duration, cpu if pinned else None) for cpu, s in enumerate(servers)]
    return tps(running[0]), tps(running[1])


def pin_server(server, cpu):
    """Moves every process of the cluster (postmaster and children) to one CPU; backends
    forked later inherit it from the postmaster."""
    pid = open(os.path.join(server.data, "postmaster.pid")).readline().strip()
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), pid], check=True, capture_output=True)
    children = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
    for child in children:
        subprocess.run(["taskset", "-p", "-c", str(cpu), child], capture_output=True)


def unpin_server(server):
    pin_server(server, "0-%d" % (os.cpu_count() - 1))


def summary(name, pairs):
    logs = [math.log(b / a) for a, b in pairs]
    sd = statistics.stdev(logs)
    values = [v for pair in pairs for v in pair]
    cv = statistics.stdev(values) / statistics.fmean(values)
    # Rounds for a +-3% t interval at this sd (normal approximation of t beyond 30).
    rounds = math.ceil((1.96 * sd / math.log(1.03)) ** 2)
    ratio = math.exp(statistics.fmean(logs))
    print(f"{name:<14} {len(pairs):>6} {sd:>10.4f} {cv:>8.1%} {ratio:>7.3f} "
          f"{statistics.fmean(values):>9.0f} {rounds:>14}")
    return sd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--b-settings", default="",
                        help="server options for b only (a real difference, e.g. "
                             "'-c shared_buffers=1MB'): does the duet ratio match the sequential one?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stampede-duet-") as work:
        os.chmod(work, 0o755)
        servers = [Server(port, os.path.join(work, f"s{port}"), "-c fsync=off " + extra)
                   for port, extra in zip(PORTS, ("", args.b_settings))]
        try:
            for server in servers:
                server.init()
                server.start()
                server.pgbench_database("bench", 10)
            designs = {"sequential": [], "duet": [], "pinned duet": []}
            for round_index in range(args.rounds):
                designs["sequential"].append(sequential(servers, args.duration, round_index))
                designs["duet"].append(duet(servers, args.duration, pinned=False))
                for cpu, server in enumerate(servers):
                    pin_server(server, cpu)
                designs["pinned duet"].append(duet(servers, args.duration, pinned=True))
                for server in servers:
                    unpin_server(server)
                print(f"round {round_index + 1}: " + "; ".join(
                    f"{name} {pairs[-1][0]:.0f}/{pairs[-1][1]:.0f}" for name, pairs in designs.items()),
                    file=sys.stderr)
        finally:
            for server in servers:
                server.remove()
    print(f"{args.rounds} rounds x {args.duration} s, select-only, 1 client per target"
          + (f", b with {args.b_settings}" if args.b_settings else ""))
    print(f"{'design':<14} {'rounds':>6} {'sd ln(b/a)':>10} {'run CV':>8} {'ratio':>7} "
          f"{'mean tps':>9} {'rounds for 3%':>14}")
    sds = {name: summary(name, pairs) for name, pairs in designs.items()}
    for name in ("duet", "pinned duet"):
        print(f"{name} / sequential sd: {sds[name] / sds['sequential']:.2f}")


if __name__ == "__main__":
    main()
