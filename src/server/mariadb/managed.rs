//! A MariaDB or MySQL server stampede owns: its binaries, a data directory initialised for it,
//! its own socket and a port on 127.0.0.1, started and stopped cleanly. When stampede runs as
//! root the server runs as the unprivileged `mysql` user (else the PostgreSQL server's).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::host::OsUser;
use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;

const SERVER_NAMES: [&str; 2] = ["mariadbd", "mysqld"];
const INSTALL_NAMES: [&str; 2] = ["mariadb-install-db", "mysql_install_db"];
/// Where distributions put the server when it is not on PATH.
const SYSTEM_DIRS: [&str; 4] = [
    "/usr/sbin",
    "/usr/bin",
    "/usr/local/mysql/bin",
    "/usr/libexec",
];
const START_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    MariaDb,
    MySql,
}

/// A server binary and how to initialise a data directory for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariadbBinaries {
    pub server: PathBuf,
    /// `mariadb-install-db`; MySQL initialises with `mysqld --initialize-insecure` instead.
    pub install_db: Option<PathBuf>,
    pub flavor: Flavor,
    /// As `--version` says it, e.g. `10.11.6-MariaDB-0+deb12u1`.
    pub version: String,
    /// Where the binaries came from ("system" or the bin/ path given).
    pub source: String,
    /// Unpacked from Debian's packages: the server's compiled-in paths (plugins, messages)
    /// point at the system's directories, so they are given under the unpack.
    pub unpacked: bool,
}

impl MariadbBinaries {
    /// `system`: the server on PATH or in the distribution's directories; else a directory
    /// holding `mariadbd`/`mysqld` (itself, or its `bin/` or `sbin/`).
    pub fn find(source: &str) -> Result<MariadbBinaries, Failure> {
        let dirs: Vec<PathBuf> = if source == "system" {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
                .collect()
        } else {
            let root = PathBuf::from(source);
            vec![root.clone(), root.join("bin"), root.join("sbin")]
        };
        let server = find_in(&dirs, &SERVER_NAMES).ok_or_else(|| {
            Failure::input(format!(
                "no mariadbd or mysqld in {}; install mariadb-server or give the bin/ directory of a MariaDB or MySQL installation",
                if source == "system" { "PATH, /usr/sbin or /usr/local/mysql/bin".to_string() } else { source.to_string() }
            ))
        })?;
        let version = server_version(&server)?;
        let flavor = if version.contains("MariaDB") {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        };
        let mut install_dirs = dirs.clone();
        if let Some(parent) = server.parent().and_then(Path::parent) {
            install_dirs.extend([parent.join("bin"), parent.join("scripts")]);
        }
        let install_db = find_in(&install_dirs, &INSTALL_NAMES);
        if flavor == Flavor::MariaDb && install_db.is_none() {
            return Err(Failure::input(format!(
                "found {} but no mariadb-install-db beside it to create a data directory",
                server.display()
            )));
        }
        Ok(MariadbBinaries {
            server,
            install_db,
            flavor,
            version,
            source: source.to_string(),
            unpacked: false,
        })
    }

    /// The installation's base directory (the parent of `bin/` or `sbin/`).
    fn base_dir(&self) -> Option<PathBuf> {
        self.server.parent()?.parent().map(Path::to_path_buf)
    }
}

fn find_in(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        dirs.iter()
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

/// `mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)`.
fn server_version(server: &Path) -> Result<String, Failure> {
    let output = Command::new(server)
        .arg("--version")
        .output()
        .map_err(|e| Failure::input(format!("could not run {}: {e}", server.display())))?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .skip_while(|word| *word != "Ver")
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| {
            Failure::input(format!(
                "{} --version did not say its version: {}",
                server.display(),
                text.trim()
            ))
        })
}

/// A managed MariaDB/MySQL server.
#[derive(Debug, Clone)]
pub struct MariadbServer {
    pub binaries: MariadbBinaries,
    /// Holds `data/`, `run/` (socket and pid file), `my.cnf` and the error log.
    pub root: PathBuf,
    pub port: u16,
    pub run_as: Option<OsUser>,
    /// Server variables written into `my.cnf` (the profile's and the target's).
    pub settings: Vec<(String, String)>,
}

impl MariadbServer {
    pub fn new(binaries: MariadbBinaries, root: PathBuf, port: u16) -> Result<Self, Failure> {
        let run_as = match stampede_base::sys::is_root() {
            true => match OsUser::lookup("mysql") {
                Some(user) => Some(user),
                None => OsUser::for_server()?,
            },
            false => None,
        };
        Ok(MariadbServer {
            binaries,
            root,
            port,
            run_as,
            settings: Vec::new(),
        })
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn socket(&self) -> PathBuf {
        self.root.join("run").join("mysqld.sock")
    }

    fn pid_file(&self) -> PathBuf {
        self.root.join("run").join("mysqld.pid")
    }

    pub fn log_file(&self) -> PathBuf {
        self.root.join("server.log")
    }

    fn config_file(&self) -> PathBuf {
        self.root.join("my.cnf")
    }

    pub fn is_initialized(&self) -> bool {
        self.data_dir().join("mysql").is_dir()
    }

    /// The superuser over the server's socket (install-db's `root` has no password).
    pub fn spec(&self) -> MysqlSpec {
        MysqlSpec {
            socket: Some(self.socket()),
            host: "127.0.0.1".to_string(),
            port: self.port,
            user: "root".to_string(),
            password: None,
            database: String::new(),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} {} ({}) on port {}, data in {}",
            match self.binaries.flavor {
                Flavor::MariaDb => "MariaDB",
                Flavor::MySql => "MySQL",
            },
            self.binaries.version,
            self.binaries.source,
            self.port,
            self.data_dir().display()
        )
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.root);
        if let Some(user) = &self.run_as {
            command.uid(user.uid).gid(user.gid).env("HOME", &self.root);
        }
        command
    }

    fn make_dir(&self, dir: &Path) -> Result<(), Failure> {
        let failed = |what: &str, e: std::io::Error| {
            Failure::run(format!("could not {what} {}: {e}", dir.display())).caused_by(e)
        };
        std::fs::create_dir_all(dir).map_err(|e| failed("create", e))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| failed("restrict", e))?;
        if let Some(user) = &self.run_as {
            std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))
                .map_err(|e| failed(&format!("give {} to", user.name), e))?;
        }
        Ok(())
    }

    /// Creates the data directory: MariaDB's install-db with a password-less `root` (socket
    /// and 127.0.0.1) and no test database, or MySQL's `--initialize-insecure`.
    pub fn init(&self) -> Result<(), Failure> {
        self.make_dir(&self.root)?;
        self.make_dir(&self.root.join("run"))?;
        let output = match &self.binaries.install_db {
            Some(install_db) if self.binaries.flavor == Flavor::MariaDb => {
                let mut command = self.command(install_db);
                command
                    .arg("--no-defaults")
                    .arg(format!("--datadir={}", self.data_dir().display()))
                    .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
                if self.binaries.source != "system" {
                    if let Some(base) = self.binaries.base_dir() {
                        command.arg(format!("--basedir={}", base.display()));
                    }
                }
                command.args(self.unpacked_paths());
                command.output()
            }
            _ => self
                .command(&self.binaries.server)
                .arg("--no-defaults")
                .arg("--initialize-insecure")
                .arg(format!("--datadir={}", self.data_dir().display()))
                .output(),
        };
        let output = output.map_err(|e| Failure::run(format!("could not initialise: {e}")))?;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&output.stderr).into_owned()
                + &String::from_utf8_lossy(&output.stdout);
            return Err(Failure::run(format!(
                "creating the data directory in {} failed:\n{}",
                self.data_dir().display(),
                last_lines(&text, 5)
            )));
        }
        self.write_config()
    }

    /// `my.cnf`: the server's own paths and port, then the settings.
    pub fn write_config(&self) -> Result<(), Failure> {
        let mut text = format!(
            "# written by stampede\n[mysqld]\ndatadir = {}\nsocket = {}\npid-file = {}\nlog-error = {}\nport = {}\nbind-address = 127.0.0.1\nskip-name-resolve\n",
            self.data_dir().display(),
            self.socket().display(),
            self.pid_file().display(),
            self.log_file().display(),
            self.port,
        );
        if let Some(base) = self
            .binaries
            .base_dir()
            .filter(|_| self.binaries.source != "system")
        {
            text.push_str(&format!("basedir = {}\n", base.display()));
        }
        for option in self.unpacked_paths() {
            text.push_str(option.trim_start_matches("--"));
            text.push('\n');
        }
        for (name, value) in &self.settings {
            match value.as_str() {
                "" => text.push_str(&format!("{name}\n")),
                value => text.push_str(&format!("{name} = {value}\n")),
            }
        }
        let path = self.config_file();
        std::fs::write(&path, text).map_err(|e| {
            Failure::run(format!("could not write {}: {e}", path.display())).caused_by(e)
        })
    }

    /// `--plugin-dir` and `--lc-messages-dir` under an unpack of Debian's packages (the
    /// compiled-in ones are the system's, which may hold another version or nothing).
    fn unpacked_paths(&self) -> Vec<String> {
        let Some(base) = self.binaries.base_dir().filter(|_| self.binaries.unpacked) else {
            return Vec::new();
        };
        let mut options = Vec::new();
        let plugins = base.join("lib/mysql/plugin");
        if plugins.is_dir() {
            options.push(format!("--plugin-dir={}", plugins.display()));
        }
        if let Some(messages) = ["share/mariadb", "share/mysql"]
            .iter()
            .map(|dir| base.join(dir))
            .find(|dir| dir.join("english").is_dir())
        {
            options.push(format!("--lc-messages-dir={}", messages.display()));
        }
        options
    }

    pub fn pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.pid_file()).ok()?;
        let pid: i32 = text.trim().parse().ok()?;
        process_alive(pid).then_some(pid)
    }

    pub fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Starts the server in its own process group and waits until it accepts a connection on
    /// its socket; a server that exits first is reported with its error log's last lines.
    pub fn start(&self) -> Result<(), Failure> {
        if self.is_running() {
            return Ok(());
        }
        let _ = std::fs::remove_file(self.socket());
        let mut command = self.command(&self.binaries.server);
        // --defaults-file must come first; it keeps /etc/mysql out.
        command
            .arg(format!("--defaults-file={}", self.config_file().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = command.spawn().map_err(|e| {
            Failure::run(format!(
                "could not start {}: {e}",
                self.binaries.server.display()
            ))
        })?;
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(self.failed_to_start(&format!("the server exited ({status})")));
            }
            if self.accepts_connections() {
                // Reap the server when it ends, so that it leaves no zombie behind.
                std::thread::spawn(move || child.wait());
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                return Err(self.failed_to_start("the server did not accept connections in time"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn failed_to_start(&self, what: &str) -> Failure {
        Failure::run(format!(
            "{what}; its error log {} ends with:\n{}",
            self.log_file().display(),
            self.log_tail(5)
        ))
    }

    fn accepts_connections(&self) -> bool {
        stampede_control::mysql::ControlSession::connect(&self.spec())
            .and_then(|mut session| session.execute("SELECT 1"))
            .is_ok()
    }

    /// The last `lines` lines of the error log.
    pub fn log_tail(&self, lines: usize) -> String {
        last_lines(
            &std::fs::read_to_string(self.log_file()).unwrap_or_default(),
            lines,
        )
    }

    /// A clean shutdown: SIGTERM, then wait for the process to end (SIGKILL after two minutes).
    pub fn stop(&self) -> Result<(), Failure> {
        let Some(pid) = self.pid() else {
            return Ok(());
        };
        let target = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGTERM);
        let started = Instant::now();
        while process_alive(pid) {
            if started.elapsed() > STOP_TIMEOUT {
                let _ = nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL);
                return Err(Failure::run(format!(
                    "the server (pid {pid}) did not stop in {} s and was killed",
                    STOP_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

/// Alive and not a zombie: a server that exited but was not yet reaped counts as gone.
fn process_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z") | Some("X") | None)
}

fn last_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
