#!/usr/bin/env python3
"""stampede bisect's cost: an incremental step's build against a clean build of the same commit,
and the whole synthetic bisection's machine time split into building and measuring.

The history is the test suite's (tests/bisect.rs): PostgreSQL's release tarball as the first
commit, 16 harmless commits after it, one that spins in the executor's start-up (commit 5),
one that does not compile (8) and its fix (9).

  1. Clean build: `stampede server build <checkout at t5>` into a fresh cache, ccache off.
  2. `stampede bisect --good t0 --bad t16` into another fresh cache, ccache off (the kept tree
     alone): its step table gives each commit's build seconds. Prints each incremental step's
     seconds / the clean build's (goal <= 0.25), and the bisection's wall time with the shares
     spent building and measuring.

Usage: bench/bisect_build.py TARBALL [--cflags -O2] [--duration 1s]
TARBALL: target/pgsrc/postgresql-15_*.orig.tar.bz2 (.ci/fetch-pg-source puts it there).
Build first: cargo build --release. Run on a quiet machine: build times are wall clock.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
WORK = "/tmp/stampede-bench-bisect"
SPINS, BROKEN, FIXED, COMMITS = 5, 8, 9, 16


def git(repo, *args, env=None):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def commit(repo, n, subject):
    git(repo, "add", "-A")
    date = f"2026-01-01T00:{n:02}:00Z"
    env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    git(repo, "-c", "user.name=Synthetic", "-c", "user.email=synthetic@localhost",
        "commit", "-q", "-m", subject, env=env)
    git(repo, "tag", f"t{n}")


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def change(repo, n):
    misc = os.path.join(repo, "src/backend/utils/adt/misc.c")
    if n == SPINS:
        path = os.path.join(repo, "src/backend/executor/execMain.c")
        text = open(path).read()
        anchor = "\tAssert(queryDesc->estate == NULL);\n"
        spin = ("\t{\n\t\tvolatile int spin;\n\n\t\tfor (spin = 0; spin < 100000; spin++)\n"
                "\t\t\t;\n\t}\n")
        open(path, "w").write(text.replace(anchor, anchor + spin, 1))
        return "executor: spin at every query's start"
    if n == BROKEN:
        append(misc, "int synthetic_broken = ;\n")
        return "utils: a line that does not compile"
    if n == FIXED:
        text = open(misc).read()
        open(misc, "w").write(text.replace("int synthetic_broken = ;\n", ""))
        return "utils: fix the build"
    if n % 2 == 0:
        append(misc, f"/* harmless change {n} */\n")
        return f"utils: comment {n}"
    append(os.path.join(repo, "README"), f"harmless change {n}\n")
    return f"docs: line {n}"


def history(tarball):
    repo = os.path.join(WORK, "history")
    os.makedirs(repo)
    subprocess.run(["tar", "-xf", tarball, "-C", repo, "--strip-components=1"], check=True)
    git(repo, "init", "-q")
    commit(repo, 0, "PostgreSQL 15 release tarball")
    for n in range(1, COMMITS + 1):
        commit(repo, n, change(repo, n))
    return repo


def run(cmd, env):
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.monotonic() - start, proc.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tarball")
    parser.add_argument("--cflags", default="-O2")
    parser.add_argument("--duration", default="1s")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    repo = history(os.path.abspath(args.tarball))
    base_env = dict(os.environ, STAMPEDE_CCACHE="0")

    checkout = os.path.join(WORK, "checkout")
    subprocess.run(["git", "clone", "-q", repo, checkout], check=True)
    git(checkout, "checkout", "-q", f"t{SPINS}")
    env = dict(base_env, STAMPEDE_CACHE=os.path.join(WORK, "clean-cache"))
    clean, _ = run([STAMPEDE, "server", "build", checkout, "--cflags", args.cflags], env)
    print(f"clean build of t{SPINS} (stampede server build, ccache off): {clean:.1f} s")

    spec = os.path.join(WORK, "hot.toml")
    with open(spec, "w") as f:
        f.write(f"""name = "hot"
runs = "auto"
precision = "10%"
max_runs = 8
duration = "{args.duration}"
seed = 7

[[target]]
name = "pg"
postgres = {{ cflags = "{args.cflags}" }}
settings = {{ fsync = false }}

[[workload]]
name = "pgbench"
scripts = ["select-only"]
clients = [1]
""")
    env = dict(base_env, STAMPEDE_CACHE=os.path.join(WORK, "bisect-cache"))
    wall, out = run([STAMPEDE, "bisect", "--source", repo, "--good", "t0", "--bad", f"t{COMMITS}",
                     spec], env)
    print(out)
    rows = []
    for line in out.splitlines():
        m = re.match(r"^(ends|\d+)\s+([0-9a-f]{12})\s.*?\s(\d+) s(?:, cached)?\s+(\S.*)$", line)
        if m:
            rows.append((m.group(1), m.group(2), float(m.group(3)), m.group(4).strip()))
    first_build = rows[0][2]
    steps = [seconds for (step, _, seconds, _) in rows[1:]]
    print(f"first build in the kept tree (t0, configure included): {first_build:.0f} s")
    for (step, short, seconds, _) in rows[1:]:
        print(f"  step {step:>4} {short}: {seconds:.0f} s = {seconds / clean:.3f} x the clean build")
    if steps:
        print(f"incremental step / clean build: median {sorted(steps)[len(steps) // 2] / clean:.3f}"
              f", max {max(steps) / clean:.3f} (goal <= 0.25)")
    building = sum(seconds for (_, _, seconds, _) in rows)
    measuring = sum(parse_duration(m) for (_, _, _, m) in rows)
    print(f"bisection wall time {wall:.0f} s: building {building:.0f} s ({building / wall:.0%}), "
          f"measuring {measuring:.0f} s ({measuring / wall:.0%}), the rest "
          f"{wall - building - measuring:.0f} s (git, the step labs' set-up, the report)")


def parse_duration(text):
    """The measure column: "13 s", "1 min 5 s", "-"."""
    total = 0.0
    for value, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(h|min|s)\b", text):
        total += float(value) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


if __name__ == "__main__":
    main()
