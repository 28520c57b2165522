"""A throwaway PostgreSQL server for the bench scripts: initdb (as the `postgres` user when run
as root), start on 127.0.0.1:<port> with its socket in the data folder, psql, stop and remove."""
import os
import shutil
import subprocess


def pg_bin():
    out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
    if out.returncode == 0 and os.path.exists(os.path.join(out.stdout.strip(), "initdb")):
        return out.stdout.strip()
    versions = sorted(int(v) for v in os.listdir("/usr/lib/postgresql") if v.isdigit())
    return f"/usr/lib/postgresql/{versions[-1]}/bin"


TICKS = os.sysconf("SC_CLK_TCK")


def process_times(pid, with_reaped):
    """A process's user+system seconds; with_reaped adds its reaped children's."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the ")": state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based).
    return sum(int(fields[i]) for i in ((11, 12, 13, 14) if with_reaped else (11, 12))) / TICKS


def server_cpu_s(postmaster):
    """CPU of every postgres process: the postmaster with its reaped children (backends that
    ended), and its live children. A child reaped between the two reads would be counted in
    neither (or both), so the reads repeat until the reaped children's time stands still."""
    while True:
        reaped = process_times(postmaster, with_reaped=True)
        live = 0.0
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True)
        for pid in children.stdout.split():
            try:
                live += process_times(pid, with_reaped=False)
            except (FileNotFoundError, ProcessLookupError):
                pass  # exited in between: the postmaster's reaped times have moved
        if process_times(postmaster, with_reaped=True) == reaped:
            return reaped + live


def as_server_user(cmd):
    return ["runuser", "-u", "postgres", "--"] + cmd if os.geteuid() == 0 else cmd


class Server:
    def __init__(self, port, root, settings=""):
        self.port = str(port)
        self.root = root
        self.data = os.path.join(root, "data")
        self.bindir = pg_bin()
        self.settings = settings

    def init(self):
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        subprocess.run(as_server_user([f"{self.bindir}/initdb", "-D", self.data, "-A", "trust",
                                       "-U", "postgres", "--no-locale", "-E", "UTF8"]),
                       check=True, capture_output=True)

    def start(self):
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   f"-c max_connections=100 {self.settings}")
        subprocess.run(as_server_user([f"{self.bindir}/pg_ctl", "-D", self.data, "-l",
                                       os.path.join(self.root, "log"), "-w", "-o", options, "start"]),
                       check=True, capture_output=True)

    def stop(self):
        subprocess.run(as_server_user([f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "stop"]),
                       capture_output=True)

    def remove(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def conn(self, db):
        return ["-h", "127.0.0.1", "-p", self.port, "-U", "postgres", db]

    def psql(self, db, sql):
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"] + self.conn(db)[:-1] + ["-d", db, "-c", sql],
                       check=True, capture_output=True)

    def pgbench_database(self, db, scale):
        """Creates `db` and initializes pgbench's tables in it with the system's pgbench."""
        self.psql("postgres", f"CREATE DATABASE {db}")
        subprocess.run(["pgbench", "-i", "-q", "-s", str(scale)] + self.conn(db), check=True,
                       capture_output=True)

    def write_file(self, name, text):
        """A file in the server's folder (removed with it); returns its path."""
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(text)
        return path
