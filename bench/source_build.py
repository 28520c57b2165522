#!/usr/bin/env python3
"""Builds from source: stampede's build against the same build by hand, then three builds of one
major side by side. Prints ratios.

  1. Build time: `stampede server build TARBALL --cflags FLAGS` (into a fresh cache) against the
     same steps by hand (tar, configure --prefix CFLAGS=FLAGS, make -jN, make -C
     contrib/pg_stat_statements -jN, both installed): stampede seconds / by-hand seconds
     (goal <= 1.10). The two alternate when --build-rounds > 1. Then the same request again:
     a cache hit (goal < 1 s; the tarball's digest is most of it).
  2. The builds compared: Debian's package, zonky's (`stampede server download MAJOR`, compiled
     with -Os) and the one built in step 1. Each serves pgbench select-only (-S -M prepared,
     c=8 -j 2, TCP) with the real pgbench as the client, in rotation; prints tps and the server's
     CPU per transaction (the postmaster's own and its reaped children's user+sys time from
     /proc), each relative to Debian's.

Usage: bench/source_build.py TARBALL [--cflags -O2] [--build-rounds 1] [--seconds 20]
                             [--rounds 2] [--scale 20] [--skip-build]
TARBALL: e.g. target/pgsrc/postgresql-15_15.18.orig.tar.bz2 (.ci/fetch-pg-source puts it there).
Build first: cargo build --release. Run on a quiet machine: the build times are wall clock.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

from pgserver import Server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STAMPEDE=path measures another build (an old binary against a new one, in one sitting).
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
WORK = "/tmp/stampede-bench-source-build"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def timed(cmd, cwd=None, env=None):
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.monotonic() - start, proc.stdout


def by_hand(tarball, cflags):
    """The steps a user types, timed as a whole."""
    work = os.path.join(WORK, "by-hand")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "src"))
    os.makedirs(os.path.join(work, "build"))
    jobs = f"-j{os.cpu_count()}"
    build = os.path.join(work, "build")
    steps = [
        (["tar", "-xf", tarball, "-C", os.path.join(work, "src"), "--strip-components=1"], None),
        ([os.path.join(work, "src", "configure"), f"--prefix={work}/install", f"CFLAGS={cflags}"], build),
        (["make", jobs], build),
        (["make", jobs, "-C", "contrib/pg_stat_statements"], build),
        (["make", "install"], build),
        (["make", "-C", "contrib/pg_stat_statements", "install"], build),
    ]
    total = 0.0
    for cmd, cwd in steps:
        seconds, _ = timed(cmd, cwd=cwd)
        total += seconds
    shutil.rmtree(work, ignore_errors=True)
    return total


def with_stampede(tarball, cflags, round_number):
    """`stampede server build` into a fresh cache; returns (seconds, bin dir)."""
    cache = os.path.join(WORK, f"cache-{round_number}")
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)
    os.chmod(WORK, 0o755)
    env = dict(os.environ, STAMPEDE_CACHE=cache)
    seconds, out = timed([STAMPEDE, "server", "build", tarball, "--cflags", cflags], env=env)
    return seconds, out.strip()


def compare_build_times(tarball, cflags, rounds):
    hand, tool, bin_dir = [], [], None
    for r in range(rounds):
        order = ("hand", "stampede") if r % 2 == 0 else ("stampede", "hand")
        for who in order:
            if who == "hand":
                hand.append(by_hand(tarball, cflags))
            else:
                seconds, bin_dir = with_stampede(tarball, cflags, r)
                tool.append(seconds)
    h, s = min(hand), min(tool)
    print(f"build {os.path.basename(tarball)} CFLAGS={cflags}: by hand {h:6.1f} s | "
          f"stampede {s:6.1f} s | time ratio {s / h:.3f} (best of {rounds})")
    cache = os.path.join(WORK, f"cache-{rounds - 1}")
    hit, _ = timed([STAMPEDE, "server", "build", tarball, "--cflags", cflags],
                   env=dict(os.environ, STAMPEDE_CACHE=cache))
    print(f"the same build again: a cache hit in {hit:.3f} s (goal < 1 s)")
    sys.stdout.flush()
    return bin_dir


def server_cpu_seconds(server):
    """The postmaster's user+sys time and its reaped children's (every backend that ended)."""
    with open(os.path.join(server.data, "postmaster.pid")) as f:
        pid = f.readline().strip()
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime are fields 14-17 of stat; the split starts at field 3.
    return sum(int(v) for v in fields[11:15]) / CLK_TCK


def measure(server, seconds):
    before = server_cpu_seconds(server)
    args = ["pgbench", "-S", "-M", "prepared", "-c", "8", "-j", "2", "-T", str(seconds)]
    _, out = timed(args + server.conn("bench"))
    time.sleep(1)  # the backends end after pgbench does; their time counts once reaped
    cpu = server_cpu_seconds(server) - before
    tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    txns = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return tps, cpu * 1e6 / txns


def compare_builds(builds, seconds, rounds, scale):
    servers = []
    for i, (name, bin_dir) in enumerate(builds):
        server = Server(15720 + i, f"/tmp/stampede-bench-build-{i}", "-c shared_buffers=256MB")
        server.bindir = bin_dir
        server.init()
        server.start()
        servers.append((name, server))
    try:
        for _, server in servers:
            server.psql("postgres", "CREATE DATABASE bench")
            timed(["pgbench", "-i", "-q", "-s", str(scale)] + server.conn("bench"))
            server.psql("bench", "VACUUM ANALYZE")
            server.psql("bench", "CHECKPOINT")
        results = {name: [] for name, _ in servers}
        for r in range(rounds):
            rotation = servers[r % len(servers):] + servers[:r % len(servers)]
            for name, server in rotation:
                results[name].append(measure(server, seconds))
    finally:
        for _, server in servers:
            server.remove()
    mean = lambda xs: sum(xs) / len(xs)
    base_tps = mean([r[0] for r in results[servers[0][0]]])
    base_cpu = mean([r[1] for r in results[servers[0][0]]])
    print(f"select-only -M prepared c=8 -j 2, scale {scale}, {seconds} s x {rounds} rounds "
          f"(ratios to {servers[0][0]}):")
    for name, _ in servers:
        tps = mean([r[0] for r in results[name]])
        cpu = mean([r[1] for r in results[name]])
        print(f"  {name:34} {tps:9.0f} tps {cpu:7.1f} us server CPU/txn | tps ratio "
              f"{tps / base_tps:.3f}  cpu ratio {cpu / base_cpu:.3f}")
    sys.stdout.flush()


def major_of(tarball):
    match = re.search(r"postgresql-(\d+)", os.path.basename(tarball))
    if not match:
        sys.exit(f"cannot tell the major from {tarball}")
    return match.group(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tarball")
    parser.add_argument("--cflags", default="-O2")
    parser.add_argument("--build-rounds", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--skip-build", action="store_true",
                        help="use the build already in stampede's own cache")
    opts = parser.parse_args()
    if not os.path.exists(STAMPEDE):
        sys.exit("build first: cargo build --release")
    tarball = os.path.abspath(opts.tarball)
    os.makedirs(WORK, exist_ok=True)
    if opts.skip_build:
        _, out = timed([STAMPEDE, "server", "build", tarball, "--cflags", opts.cflags])
        built = out.strip()
    else:
        built = compare_build_times(tarball, opts.cflags, opts.build_rounds)
    major = major_of(tarball)
    _, zonky = timed([STAMPEDE, "server", "download", major])
    debian = f"/usr/lib/postgresql/{major}/bin"
    builds = [(f"debian {major}", debian), (f"zonky {major} (-Os)", zonky.strip()),
              (f"built {major} ({opts.cflags})", built)]
    compare_builds(builds, opts.seconds, opts.rounds, opts.scale)


if __name__ == "__main__":
    main()
