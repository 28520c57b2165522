#!/usr/bin/env python3
"""What the live page costs and weighs.

1. A lab's select-only tps with `--serve` and a page open (a thread of this script reads its
   event stream, as a browser does) against the same lab without, in rotating order on one
   server in one sitting; prints the ratio's geometric mean with a 95% t interval
   (goal >= 0.99). Both write each run's seconds to the results database as they come (that
   is not optional); the script counts those writes per measured second from the live rows'
   update times, sampled every 50 ms.
2. A 1,000-run lab's page: a results database made by one tiny lab, then grown by SQL to 20
   cells x 2 targets x 25 rounds (not ended); `stampede serve` on it; the live page's size, the
   time to its last byte, a headless Chromium's time to a screenshot of it (its first paint,
   bounded above), and the size of the report the page becomes at the end.

Usage: bench/live_page.py [--seconds 6] [--rounds 4]
Build first: cargo build --release (or STAMPEDE=path/to/stampede).
"""
import argparse
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

from pgbench_vs_stampede import STAMPEDE
from pgserver import Server

SERVER = Server(15714, "/tmp/stampede-bench-page-15714")
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


def spec(folder, seconds, rounds=1):
    path = os.path.join(folder, "lab.toml")
    url = f"postgresql://postgres@127.0.0.1:{SERVER.port}/postgres"
    with open(path, "w") as f:
        f.write(
            f'name = "page"\nruns = {rounds}\nduration = "{seconds}s"\nwarmup = "1s"\n'
            f'[[target]]\nname = "a"\nurl = "{url}"\n'
            '[[workload]]\nname = "pgbench"\nscripts = ["select-only"]\nclients = [2]\n'
        )
    return path


class Writes(threading.Thread):
    """Samples the live rows' update times: each new one is a write of the lab's."""

    def __init__(self, db):
        super().__init__(daemon=True)
        self.db, self.stop, self.seen = db, threading.Event(), set()

    def run(self):
        while not self.stop.wait(0.05):
            try:
                with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=1) as c:
                    for row in c.execute("SELECT id, updated_unix_s, seconds FROM live_runs"):
                        self.seen.add(row)
            except sqlite3.Error:
                pass


class Reader(threading.Thread):
    """Reads the page's event stream as a browser would."""

    def __init__(self, stderr_path):
        super().__init__(daemon=True)
        self.stderr_path, self.events = stderr_path, 0

    def run(self):
        url = None
        while url is None:
            time.sleep(0.1)
            text = open(self.stderr_path).read()
            if "live page at " in text:
                url = text.split("live page at ")[1].split()[0]
        try:
            with urllib.request.urlopen(url + "events", timeout=60) as stream:
                for line in stream:
                    self.events += line.startswith(b"data:")
        except OSError:
            pass


def lab_tps(seconds, serve):
    folder = tempfile.mkdtemp(prefix="stampede-bench-page-")
    try:
        path = spec(folder, seconds)
        err = os.path.join(folder, "err")
        args = [STAMPEDE, "lab", "run", path] + (["--serve"] if serve else [])
        writes = Writes(os.path.join(folder, "page.db"))
        writes.start()
        reader = Reader(err)
        if serve:
            reader.start()
        with open(err, "w") as e:
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=e)
        writes.stop.set()
        writes.join()
        db = sqlite3.connect(os.path.join(folder, "page.db"))
        tps = db.execute("SELECT tps FROM runs").fetchone()[0]
        per_second = len({updated for (_, updated, s) in writes.seen if s > 0}) / seconds
        return tps, per_second, reader.events
    finally:
        shutil.rmtree(folder)


def interval(ratios):
    logs = [math.log(r) for r in ratios]
    mean = statistics.mean(logs)
    half = T975[len(logs) - 2] * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def cost(seconds, rounds):
    ratios, writes, events = [], [], []
    for round_ in range(rounds):
        order = [False, True] if round_ % 2 == 0 else [True, False]
        tps = {}
        for serve in order:
            tps[serve], per_second, seen = lab_tps(seconds, serve)
            writes.append(per_second)
            if serve:
                events.append(seen)
        ratios.append(tps[True] / tps[False])
        print(f"round {round_ + 1}: {tps[False]:.0f} tps without, {tps[True]:.0f} with --serve: "
              f"{ratios[-1]:.4f}")
    mean, low, high = interval(ratios)
    print(f"tps with --serve / without: {mean:.4f} (95% CI {low:.4f}-{high:.4f})  goal >= 0.99")
    print(f"results-database writes per measured second: {statistics.mean(writes):.2f} "
          f"(goal <= 1); page events per lab: {statistics.mean(events):.1f}")


def grow(db, targets=2, cells=20, rounds=25):
    """The tiny lab's one cell and run copied into cells x targets x rounds runs."""
    c = sqlite3.connect(db)
    lab, = c.execute("SELECT id FROM labs").fetchone()
    cell = c.execute("SELECT key, workload, script, scale, family FROM cells").fetchone()
    run = c.execute("SELECT tps, p50_ms, p99_ms FROM runs").fetchone()
    c.execute("DELETE FROM run_series")
    for table in ["run_counters", "run_statements", "run_counter_series", "run_wait_events",
                  "run_metrics", "run_settings", "runs", "cells"]:
        c.execute(f"DELETE FROM {table}")
    # Not ended: the page is the live one (an ended lab's page is its report).
    c.execute("UPDATE labs SET planned_rounds = ?, ended_unix_s = NULL", (rounds,))
    position = 0
    for k in range(cells):
        for t in range(targets):
            name = "ab"[t]
            key = f"{name}/pgbench/select-only/1/{k + 1}"
            cur = c.execute(
                "INSERT INTO cells (lab_id, key, target, workload, script, scale, clients, family)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (lab, key, name, cell[1], cell[2], cell[3], k + 1, cell[4]))
            for r in range(rounds):
                position += 1
                noise = 1 + 0.01 * ((r * 7 + k) % 5 - 2) + 0.03 * t
                c.execute(
                    "INSERT INTO runs (cell_id, repetition, position, status, started_unix_s,"
                    " ended_unix_s, duration_s, transactions, failures, tps, p50_ms, p99_ms)"
                    " VALUES (?, ?, ?, 'completed', 0, 1, 10, ?, 0, ?, ?, ?)",
                    (cur.lastrowid, r, position, int(run[0] * 10 * noise), run[0] * noise,
                     run[1], run[2]))
    c.commit()
    return position


def page_weight():
    folder = tempfile.mkdtemp(prefix="stampede-bench-page-")
    try:
        subprocess.run([STAMPEDE, "lab", "run", spec(folder, 1)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = os.path.join(folder, "page.db")
        runs = grow(db)
        err = open(os.path.join(folder, "err"), "w+")
        serve = subprocess.Popen([STAMPEDE, "serve", db], stderr=err)
        try:
            url = None
            while url is None:
                time.sleep(0.1)
                err.seek(0)
                text = err.read()
                if "live page at " in text:
                    url = text.split("live page at ")[1].split()[0]
            start = time.monotonic()
            body = urllib.request.urlopen(url).read()
            served = time.monotonic() - start
            shot = os.path.join(folder, "page.png")
            start = time.monotonic()
            subprocess.run(["chromium-headless-shell", "--headless", "--no-sandbox",
                            "--disable-gpu", f"--user-data-dir={folder}/profile",
                            f"--screenshot={shot}", "--window-size=1000,1400", url],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            painted = time.monotonic() - start
        finally:
            serve.terminate()
            serve.wait()
        report = os.path.join(folder, "report.html")
        subprocess.run([STAMPEDE, "report", db, "-o", report], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"{runs}-run lab: live page {len(body) / 1024:.0f} KB served in "
              f"{served * 1000:.0f} ms; Chromium's screenshot of it {painted:.2f} s from its "
              f"start; its report (the page at the end) {os.path.getsize(report) / 1024:.0f} KB")
    finally:
        shutil.rmtree(folder)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    SERVER.init()
    SERVER.start()
    try:
        cost(args.seconds, args.rounds)
        page_weight()
    finally:
        SERVER.remove()


if __name__ == "__main__":
    main()
