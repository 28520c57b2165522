"""HammerDB itself, driven by its CLI: its TPROC-C loader (`buildschema`) and its timed driver
(`vurun`) for PostgreSQL, from a HammerDB source tree (the public repository at tag v4.12,
without its Build/ folder) and Debian's Tcl packages (tcl8.6, libpgtcl, tcl-thread,
libsqlite3-tcl).

Three gaps between that tree and Debian's packages are bridged by a shim folder put first on
TCLLIBPATH (HammerDB's files are not changed): its CLI loads a `ticklecharts` package that only
draws job charts (an empty package stands in); Debian's Pgtcl lacks the `pg_notice_handler`
HammerDB calls after connecting (a no-op; notices are not needed); and Debian's Pgtcl shares two
string buffers between threads, which corrupts HammerDB's calls with two or more virtual users
(one Tcl thread each): `pgtcl` names a build with those buffers thread-local
(bench/build_thread_safe_pgtcl.sh), required for more than one virtual user.
"""
import os
import re
import subprocess
import tempfile

PGTCL = "/usr/lib/tcltk/x86_64-linux-gnu/pgtcl2.7/libpgtcl2.7.7.so"


def shim_folder(pgtcl):
    folder = tempfile.mkdtemp(prefix="hammerdb-shim-")
    os.makedirs(os.path.join(folder, "pgtcl"))
    # The version the library provides (the shim's folder comes first on the path, so its
    # script wins over an installed Pgtcl of the same version).
    version = subprocess.run(["tclsh8.6"], input=f"load {pgtcl} Pgtcl\nputs [package provide Pgtcl]\n",
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(folder, "pgtcl", "pkgIndex.tcl"), "w") as f:
        f.write(f"package ifneeded Pgtcl {version} [list apply {{{{}} {{\n"
                f"    load {pgtcl} Pgtcl\n"
                "    proc ::pg_notice_handler {args} {}\n"
                "}}]\n")
    os.makedirs(os.path.join(folder, "ticklecharts"))
    with open(os.path.join(folder, "ticklecharts", "pkgIndex.tcl"), "w") as f:
        f.write("package ifneeded ticklecharts 3.0 {package provide ticklecharts 3.0}\n")
    return folder


def hammerdb_version(source):
    """The version a HammerDB source tree's CLI announces (`set hdb_version "v4.12"`)."""
    with open(os.path.join(source, "hammerdbcli")) as f:
        match = re.search(r'set hdb_version "([^"]+)"', f.read())
    return match.group(1) if match else "(unknown version)"


class HammerDB:
    def __init__(self, source, host, port, database, warehouses, pgtcl=None):
        if not os.path.exists(os.path.join(source, "hammerdbcli")):
            raise SystemExit(f"{source} is not a HammerDB source tree (no hammerdbcli)")
        if not os.path.exists(PGTCL):
            raise SystemExit("Debian's libpgtcl is missing: apt-get install tcl8.6 libpgtcl "
                             "tcl-thread libsqlite3-tcl")
        self.thread_safe = pgtcl is not None
        # A command prefix for the CLI, such as taskset's.
        self.prefix = []
        self.source, self.shim = source, shim_folder(pgtcl or PGTCL)
        self.settings = [
            "dbset db pg", "dbset bm TPC-C",
            f"diset connection pg_host {host}", f"diset connection pg_port {port}",
            "diset connection pg_sslmode disable",
            f"diset tpcc pg_count_ware {warehouses}", "diset tpcc pg_num_vu 1",
            "diset tpcc pg_superuser postgres", "diset tpcc pg_superuserpass postgres",
            "diset tpcc pg_defaultdbase postgres", "diset tpcc pg_user tpcc",
            "diset tpcc pg_pass tpcc", f"diset tpcc pg_dbase {database}",
            "diset tpcc pg_storedprocs true",
        ]

    def cli(self, commands):
        script = os.path.join(self.shim, "job.tcl")
        with open(script, "w") as f:
            f.write("\n".join(self.settings + commands + ["quit"]) + "\n")
        env = dict(os.environ, TCLLIBPATH=self.shim, TMP=self.shim)
        run = subprocess.run(self.prefix + ["tclsh8.6", "hammerdbcli", "auto", script], cwd=self.source,
                             env=env, capture_output=True, text=True)
        if run.returncode != 0 or "FINISHED FAILED" in run.stdout or "Error" in run.stdout:
            raise SystemExit(f"HammerDB failed:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
        return run.stdout

    def build(self):
        """HammerDB's own loader, one virtual user (its default pg_num_vu)."""
        self.cli(["buildschema"])

    def run(self, virtual_users, rampup_minutes, duration_minutes, all_warehouses=False):
        """One timed run; HammerDB's own NOPM and TPM."""
        if virtual_users > 1 and not self.thread_safe:
            raise SystemExit("more than one HammerDB virtual user needs a thread-safe Pgtcl: "
                             "bench/build_thread_safe_pgtcl.sh DIR, then --pgtcl DIR/libpgtcl.so")
        out = self.cli([
            "diset tpcc pg_driver timed", f"diset tpcc pg_rampup {rampup_minutes}",
            f"diset tpcc pg_duration {duration_minutes}",
            f"diset tpcc pg_allwarehouse {'true' if all_warehouses else 'false'}",
            "diset tpcc pg_total_iterations 100000000", "loadscript",
            f"vuset vu {virtual_users}", "vuset logtotemp 0", "vucreate", "vurun", "vudestroy",
        ])
        match = re.search(r"System achieved (\d+) NOPM from (\d+) PostgreSQL TPM", out)
        if not match:
            raise SystemExit(f"no HammerDB result in:\n{out[-3000:]}")
        return int(match.group(1)), int(match.group(2))
