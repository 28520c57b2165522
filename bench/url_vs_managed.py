#!/usr/bin/env python3
"""Does reaching a server by URL add anything to the measured path? One lab, two targets side by
side, interleaved: "managed" (a server the lab starts from the system's binaries) and "url" (a
server this script starts from the same binaries with the same settings, reached by a libpq
key=value string on its unix socket, as the managed one is). pgbench select-only and tpcb-like,
scale 10, 2 clients, RUNS rounds of DURATION. Prints, per script, the paired tps ratio url /
managed with its 95% interval and verdict (from `stampede report --format json`), and the extra
wall time per run the url path's reads add (each run's recorded overhead: copies, checkpoints,
settings and probes), and the settings that differ between the two servers as each target's
record holds them.

With --metrics, the url target names a metrics source (a Prometheus this script starts,
scraping a node_exporter on this machine every 250 ms): the script also prints the paired
server CPU per transaction url (node CPU from Prometheus, less stampede's own) / managed (its
processes in /proc), and the overhead per run then includes waiting for the scrape after each
run's end.

    bench/url_vs_managed.py [--runs 10] [--duration 10s] [--metrics]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pgserver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
PORT = 15931

# Both servers get these; the managed target's profile adds what it needs to run the lab's
# clients and pg_stat_statements, which the url server is given too (its tracking costs a few
# percent of tpcb-like).
SETTINGS = {"shared_buffers": "128MB", "fsync": "off", "max_wal_size": "1GB"}
URL_ONLY = "-c shared_preload_libraries=pg_stat_statements"

SPEC = """name = "url-vs-managed"
runs = {runs}
duration = "{duration}"
warmup = "2s"
seed = 11

[[target]]
name = "managed"
postgres = "{bindir}"
settings = {{ {settings} }}

[[target]]
name = "url"
url = "host={socket} port={port} user=postgres dbname=postgres"
{metrics}

[[workload]]
name = "pgbench"
scripts = ["select-only", "tpcb-like"]
scale = [10]
clients = [2]
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--metrics", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="stampede-url-bench-")
    os.chmod(work, 0o755)
    flags = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items()) + " " + URL_ONLY
    server = pgserver.Server(PORT, os.path.join(work, "url-server"), flags)
    server.init()
    server.start()
    platform = start_platform(work) if args.metrics else None
    try:
        spec = os.path.join(work, "lab.toml")
        with open(spec, "w") as f:
            f.write(SPEC.format(
                runs=args.runs, duration=args.duration, bindir=server.bindir, port=PORT,
                socket=server.root,
                metrics=(f'metrics = {{ prometheus = "{platform[0]}", instance = "{platform[1]}" }}'
                         if platform else ""),
                settings=", ".join(f'{k} = "{v}"' for k, v in SETTINGS.items())))
        subprocess.run([STAMPEDE, "lab", "run", spec], check=True)
        db = os.path.join(work, "url-vs-managed.db")
        report(db, metrics=bool(platform))
    finally:
        if platform:
            for child in platform[2]:
                child.kill()
                child.wait()
        subprocess.run([STAMPEDE, "lab", "clean", spec], capture_output=True)
        server.remove()
        shutil.rmtree(work, ignore_errors=True)


PROMETHEUS_PORT = 15932
NODE_EXPORTER_PORT = 15933


def start_platform(work):
    """node_exporter (the collectors a lab reads) and a Prometheus scraping it every 250 ms."""
    instance = f"127.0.0.1:{NODE_EXPORTER_PORT}"
    exporter = subprocess.Popen(
        ["prometheus-node-exporter", f"--web.listen-address={instance}",
         "--collector.disable-defaults", "--collector.cpu", "--collector.diskstats",
         "--collector.meminfo", "--collector.uname"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\n"
                f"scrape_configs:\n  - job_name: node\n    static_configs:\n"
                f"      - targets: [\"{instance}\"]\n")
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={config}",
         f"--storage.tsdb.path={os.path.join(work, 'prometheus')}",
         f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{PROMETHEUS_PORT}"
    for _ in range(60):
        probe = subprocess.run(["curl", "-s", f"{base}/api/v1/query?query=node_uname_info"],
                               capture_output=True, text=True)
        if "nodename" in probe.stdout:
            break
        time.sleep(0.5)
    return base, instance, [prometheus, exporter]


def report(db, metrics):
    metric_names = ["tps", "server_cpu"] if metrics else ["tps"]
    for metric in metric_names:
        out = subprocess.run([STAMPEDE, "report", db, "--format", "json", "--metric", metric],
                             check=True, capture_output=True, text=True).stdout
        for comparison in json.loads(out)["comparisons"]:
            for cell in comparison["cells"]:
                print(f"{cell['cell']['script']}: url / managed {metric} = "
                      f"{cell['ratio']:.4f} [{cell['ci_low']:.4f}–{cell['ci_high']:.4f}] "
                      f"{cell['verdict']} ({cell['pairs']} pairs)")
    conn = sqlite3.connect(db)
    for target in ("managed", "url"):
        overheads = [r[0] for r in conn.execute(
            "SELECT r.overhead_s FROM runs r JOIN cells c ON c.id = r.cell_id "
            "WHERE c.target = ? AND r.status = 'completed'", (target,))]
        print(f"{target}: overhead per run median {statistics.median(overheads):.3f} s "
              f"(min {min(overheads):.3f}, max {max(overheads):.3f}, {len(overheads)} runs)")
    differ = conn.execute(
        "SELECT a.name, a.setting, b.setting FROM target_settings a "
        "JOIN targets ta ON ta.id = a.target_id AND ta.name = 'managed' "
        "JOIN target_settings b ON b.name = a.name "
        "JOIN targets tb ON tb.id = b.target_id AND tb.name = 'url' "
        "WHERE a.setting IS NOT b.setting ORDER BY a.name").fetchall()
    print("settings that differ (managed, url): " +
          (", ".join(f"{n} ({x}, {y})" for n, x, y in differ) or "none"))


if __name__ == "__main__":
    main()
