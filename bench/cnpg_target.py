#!/usr/bin/env python3
"""A CloudNativePG Cluster as a lab's target, measured on the suite's one-node Kubernetes with
the operator (.ci/kube/cloudnativepg):

1. Time to the first measured second: `stampede lab run` of a one-instance cloudnativepg target
   (pgbench select-only from one pod), split by the lab's progress lines and the Kubernetes
   objects' own timestamps into: the lab's start, the operator (Cluster created → its initdb
   pod scheduled, a volume bound), initdb (its pod's start to its end; the operand image is
   local, so no pull), the instance (its pod created → Ready), the lab seeing it healthy,
   the load, and the run's pod start plus warmup.
2. The same server as a cloudnativepg target and as a url target: one Cluster made with
   kubectl, `cloudnativepg = { cluster = … }` beside `url = …` (its superuser, the password
   from its Secret), in interleaved rounds. Each target's clients run in one pod (on this
   node's network): the cloudnativepg target's reach the Cluster's -rw Service, the url
   target's the primary's address the URL gives. Prints the paired
   tps ratio (url / cloudnativepg) per round and their geometric mean, and each target's median
   per-run overhead (the cloudnativepg target's Job, and its reads of the Cluster, the
   kubelet and the operator's exporter around each run), and those reads' own time.

Usage: bench/cnpg_target.py [--rounds 8] [--seconds 20] [--clients 4]
Build first: cargo build --release. Needs root (the cluster's kubelet and containerd) and the
caches of .ci/kube/build and .ci/kube/cloudnativepg. Its cluster is on ports 15940-15949.
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPEDE = os.environ.get("STAMPEDE", os.path.join(ROOT, "target", "release", "stampede"))
KUBE = os.path.join(ROOT, ".ci", "kube")
IMAGE = "localhost/stampede:bench"
OPERAND = "localhost/cnpg-postgresql:15"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Kube:
    def __init__(self, state):
        self.state = state
        self.cache = sh([os.path.join(KUBE, "build")]).stdout.strip()
        env = {**os.environ, "STAMPEDE_KUBE_CACHE": self.cache}
        self.cnpg = sh([os.path.join(KUBE, "cloudnativepg")], env=env).stdout.strip()
        self.kubeconfig = sh([os.path.join(KUBE, "up"), state]).stdout.strip()
        archive = os.path.join(state, "stampede.tar")
        sh([os.path.join(KUBE, "image"), IMAGE, archive, STAMPEDE, "/usr/local/bin/stampede"], env=env)
        for image in [archive, f"{self.cnpg}/images/operator.tar", f"{self.cnpg}/images/postgresql-15.tar"]:
            self.ctr("images", "import", image)
        self.kubectl("apply", "--server-side", "-f", f"{self.cnpg}/cnpg.yaml")
        self.kubectl("rollout", "status", "-n", "cnpg-system", "deployment/cnpg-controller-manager",
                     "--timeout=180s")
        self.apply("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: bench}\n"
                   "provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n")
        self.volumes = 0

    def ctr(self, *args):
        sh([os.path.join(self.cache, "deb/usr/bin/ctr"), "--address",
            os.path.join(self.state, "containerd.sock"), "-n", "k8s.io", *args])

    def kubectl(self, *args):
        return sh([os.path.join(self.cache, "bin/kubectl"), "--kubeconfig", self.kubeconfig, *args]).stdout

    def apply(self, manifest):
        path = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, dir=self.state)
        path.write(manifest)
        path.close()
        self.kubectl("apply", "-f", path.name)

    def volume(self):
        self.volumes += 1
        name = f"bench-{self.volumes}"
        directory = os.path.join(self.state, "volumes", name)
        os.makedirs(directory)
        os.chown(directory, 26, 26)
        os.chmod(directory, 0o700)
        self.apply(f"apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec:\n"
                   f"  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteOnce]\n"
                   f"  storageClassName: bench\n  persistentVolumeReclaimPolicy: Retain\n"
                   f"  hostPath: {{path: {directory}}}\n")

    def json(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def down(self):
        sh([os.path.join(KUBE, "down"), self.state])


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def condition(obj, kind):
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == kind and c["status"] == "True":
            return when(c["lastTransitionTime"])
    return None


def lab_spec(name, targets, seconds, clients, runs, extra=""):
    # Every target's clients from one pod: a url target's too (pods = 1).
    return (f'name = "{name}"\nruns = {runs}\nduration = "{seconds}s"\nwarmup = "2s"\n\n'
            f'[kubernetes]\nimage = "{IMAGE}"\nimage_pull_policy = "Never"\nhost_network = true\n'
            f'coordinator_address = "127.0.0.1"\ncoordinator_port = 15948\npod_start_timeout = "120s"\n'
            f'{extra}\n{targets}\n[[workload]]\nname = "pgbench"\nscripts = ["select-only"]\n'
            f'clients = [{clients}]\nthreads = 2\npods = 1\n')


def run_lab(kube, directory, spec, *args, env=None):
    """`lab run`, each stderr line with the time it came."""
    path = os.path.join(directory, "lab.toml")
    with open(path, "w") as f:
        f.write(spec)
    child = subprocess.Popen([STAMPEDE, "lab", "run", path, *args], stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "KUBECONFIG": kube.kubeconfig, **(env or {})})
    lines = [(time.time(), line.rstrip("\n")) for line in child.stderr]
    if child.wait() != 0:
        sys.exit("lab run failed:\n" + "\n".join(line for _, line in lines))
    return lines


def first_line(lines, text):
    return next(t for t, line in lines if text in line)


def first_second(kube, directory, seconds):
    kube.volume()
    target = ('[[target]]\nname = "one"\ncloudnativepg = { image = "' + OPERAND +
              '", storage = { class = "bench", size = "1Gi" } }\n')
    started = time.time()
    lines = run_lab(kube, directory, lab_spec("first", target, seconds, 2, 1), "--keep-clusters")
    cluster = kube.json("clusters.postgresql.cnpg.io", "first-one")
    instance = kube.json("pod", "first-one-1")
    # The initdb Job's pod is gone once the Cluster is up: its events stay.
    events = kube.json("events")["items"]

    def event(prefix, reason):
        for e in events:
            if e["involvedObject"]["name"].startswith(prefix) and e["reason"] == reason:
                return when(e.get("eventTime") or e.get("firstTimestamp") or e["lastTimestamp"])
        sys.exit(f"no {reason} event of {prefix}: {[(e['involvedObject']['name'], e['reason']) for e in events]}")

    created = when(cluster["metadata"]["creationTimestamp"])
    initdb_scheduled = event("first-one-1-initdb-", "Scheduled")
    initdb_done = event("first-one-1-initdb", "Completed")
    steps = [
        ("lab start to Cluster created (spec, kube, checks)", started, first_line(lines, "creating Cluster")),
        ("operator: Cluster created to initdb pod scheduled (volume bound)", created, initdb_scheduled),
        ("initdb: its pod scheduled to its Job complete", initdb_scheduled, initdb_done),
        ("instance: initdb done to its pod Ready", initdb_done, condition(instance, "Ready")),
        ("lab sees the Cluster healthy and connects", condition(instance, "Ready"), first_line(lines, "loading pgbench")),
        ("dataset load (pgbench -i -s 1)", first_line(lines, "loading pgbench"), first_line(lines, "done in")),
    ]
    # The run's line comes before the target is provisioned; its result after the run.
    run_done = first_line(lines, " tps")
    print("\ntime to the first measured second, one-instance Cluster (s):")
    for what, start, end in steps:
        print(f"  {what:<62} {end - start:6.1f}")
    pod_and_warmup = run_done - first_line(lines, "done in") - seconds
    print(f"  {'sealing, the run pod scheduled and joined, the 2 s warmup':<62} {pod_and_warmup:6.1f}")
    total = run_done - started - seconds
    print(f"  {'lab run to the first measured second':<62} {total:6.1f}")
    print("  (image: the operand image is imported, never pulled: 0 here, a pull's time on a cloud node)")
    kube.kubectl("delete", "clusters.postgresql.cnpg.io", "first-one", "--wait=true")


def side_by_side(kube, directory, rounds, seconds, clients):
    kube.volume()
    kube.apply("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: shared}\nspec:\n"
               f"  instances: 1\n  imageName: {OPERAND}\n  imagePullPolicy: Never\n"
               "  enableSuperuserAccess: true\n  storage: {storageClass: bench, size: 1Gi}\n"
               "  postgresql: {shared_preload_libraries: [pg_stat_statements]}\n"
               # The exporter's queries run at each scrape, as on the lab's own Clusters: the
               # lab reads it (and times the reads) only then.
               "  monitoring: {metricsQueriesTTL: 0s}\n")
    kube.kubectl("wait", "clusters.postgresql.cnpg.io/shared", "--for=jsonpath={.status.readyInstances}=1",
                 "--timeout=300s")
    time.sleep(5)
    address = kube.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=shared-rw", "-o",
                           "jsonpath={.items[0].endpoints[0].addresses[0]}").strip()
    secret = kube.json("secret", "shared-superuser")["data"]["password"]
    import base64
    superuser = base64.b64decode(secret).decode()
    # Both targets' clients from a pod, as the Cluster's superuser: the url target's pods read
    # its password from the Cluster's Secret, as the cloudnativepg target's do.
    targets = ('[[target]]\nname = "cloudnativepg"\ncloudnativepg = { cluster = "shared" }\n\n'
               f'[[target]]\nname = "url"\nurl = "host={address} port=5432 user=postgres dbname=postgres"\n')
    spec = lab_spec("side", targets, seconds, clients, rounds,
                    extra='password_secret = "shared-superuser/password"\n')
    run_lab(kube, directory, spec, env={"PGPASSWORD": superuser})
    db = sqlite3.connect(os.path.join(directory, "side.db"))
    rows = db.execute("SELECT c.target, r.repetition, r.tps, r.overhead_s FROM runs r JOIN cells c "
                      "ON c.id = r.cell_id WHERE r.status = 'completed'").fetchall()
    tps = {(t, rep): v for t, rep, v, _ in rows}
    ratios = [tps[("url", r)] / tps[("cloudnativepg", r)] for r in range(rounds)
              if ("url", r) in tps and ("cloudnativepg", r) in tps]
    print(f"\nthe same Cluster, {clients} clients from one pod for each target, select-only, {seconds} s runs:")
    for r, ratio in enumerate(ratios):
        print(f"  round {r + 1}: url {tps[('url', r)]:9.0f} tps, cloudnativepg {tps[('cloudnativepg', r)]:9.0f}"
              f" tps, ratio {ratio:.3f}")
    mean = math.exp(statistics.mean(math.log(x) for x in ratios))
    print(f"  geometric mean of the rounds' ratios (url / cloudnativepg): {mean:.3f}"
          f" (range {min(ratios):.3f}–{max(ratios):.3f}; ±3% asked)")
    for target in ["cloudnativepg", "url"]:
        overhead = statistics.median(o for t, _, _, o in rows if t == target)
        print(f"  median per-run overhead, {target}: {overhead:.2f} s")
    # What the Cluster's metrics cost each run: the kubelet's summary and the exporter's page,
    # each read at the window's two edges (recorded by the lab as read_s).
    reads = db.execute("SELECT k.source, k.value FROM run_counters k JOIN runs r ON r.id = k.run_id "
                       "JOIN cells c ON c.id = r.cell_id WHERE c.target = 'cloudnativepg' "
                       "AND k.name = 'read_s'").fetchall()
    for source, what in [("kubelet", "the kubelet's summary"), ("cnpg", "the operator's exporter")]:
        values = [v for s, v in reads if s == source]
        if values:
            print(f"  median time reading {what} at a window's two edges: "
                  f"{statistics.median(values) * 1000:.0f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="stampede-bench-cnpg-")
    kube = Kube(state)
    try:
        first_second(kube, tempfile.mkdtemp(dir=state), 5)
        side_by_side(kube, tempfile.mkdtemp(dir=state), args.rounds, args.seconds, args.clients)
    finally:
        kube.down()


if __name__ == "__main__":
    main()
