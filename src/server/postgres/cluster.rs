//! A PostgreSQL cluster stampede owns: initdb, start, stop, status. PostgreSQL refuses to run as
//! root, so when stampede is root the server runs as an unprivileged user that owns the data.

use stampede_base::error::Failure;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::binaries::Binaries;
use crate::server::host::OsUser;

#[derive(Debug, Clone)]
pub struct Cluster {
    pub binaries: Binaries,
    /// Holds `data/`, the socket and the log.
    pub root: PathBuf,
    pub port: u16,
    pub run_as: Option<OsUser>,
    /// Pin the server (postmaster and every backend) to these CPUs.
    pub cpus: Option<Vec<usize>>,
}

impl Cluster {
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    pub fn log_file(&self) -> PathBuf {
        self.root.join("server.log")
    }

    pub fn is_initialized(&self) -> bool {
        self.data_dir().join("PG_VERSION").is_file()
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.binaries.bin_dir.join(program));
        command.current_dir(&self.root).env_remove("PGDATA");
        if let Some(user) = &self.run_as {
            command.uid(user.uid).gid(user.gid).env("HOME", &self.root);
        }
        command
    }

    fn give_to_server_user(&self, path: &Path) -> Result<(), Failure> {
        if let Some(user) = &self.run_as {
            std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid)).map_err(|e| {
                Failure::run(format!(
                    "could not give {} to {}: {e}",
                    path.display(),
                    user.name
                ))
                .caused_by(e)
            })?;
        }
        Ok(())
    }

    /// Creates the cluster: the server listens on its own socket directory and 127.0.0.1 only;
    /// local socket connections are trusted, TCP ones need `password`.
    pub fn init(
        &self,
        superuser: &str,
        password: &str,
        settings: &[(&str, String)],
    ) -> Result<(), Failure> {
        for dir in [self.root.clone(), self.socket_dir()] {
            std::fs::create_dir_all(&dir).map_err(|e| {
                Failure::run(format!("could not create {}: {e}", dir.display())).caused_by(e)
            })?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(
                |e| Failure::run(format!("could not restrict {}: {e}", dir.display())).caused_by(e),
            )?;
            self.give_to_server_user(&dir)?;
        }
        let password_file = self.root.join("initdb.pw");
        std::fs::write(&password_file, password).map_err(|e| {
            Failure::run(format!("could not write {}: {e}", password_file.display())).caused_by(e)
        })?;
        self.give_to_server_user(&password_file)?;
        // SCRAM arrived in PostgreSQL 10; 9.6 has md5.
        let host_auth = if self.binaries.major().is_some_and(|major| major < 10) {
            "--auth-host=md5"
        } else {
            "--auth-host=scram-sha-256"
        };
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-U", superuser, "-E", "UTF8", "--no-locale"])
            .args(["--auth-local=trust", host_auth])
            .arg(format!("--pwfile={}", password_file.display()))
            .output();
        let _ = std::fs::remove_file(&password_file);
        check_output("initdb", output)?;
        self.append_settings(settings)
    }

    /// Appends the port and `settings` again (later lines win), e.g. for a new port.
    pub fn reconfigure(&self, settings: &[(String, String)]) -> Result<(), Failure> {
        let borrowed: Vec<(&str, String)> = settings
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        self.append_settings(&borrowed)
    }

    fn append_settings(&self, settings: &[(&str, String)]) -> Result<(), Failure> {
        let mut conf = format!(
            "\n# written by stampede\nport = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n",
            self.port,
            self.socket_dir().display()
        );
        for (name, value) in settings {
            conf.push_str(&format!("{name} = '{value}'\n"));
        }
        let path = self.data_dir().join("postgresql.auto.conf");
        let existing = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, existing + &conf).map_err(|e| {
            Failure::run(format!("could not write {}: {e}", path.display())).caused_by(e)
        })?;
        self.give_to_server_user(&path)
    }

    pub fn is_running(&self) -> bool {
        self.command("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(self.data_dir())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    pub fn start(&self) -> Result<(), Failure> {
        let mut command = self.command("pg_ctl");
        command
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.log_file());
        let output = match self.cpus.clone() {
            Some(cpus) => output_pinned(command, cpus),
            None => command.output(),
        };
        check_output("pg_ctl start", output).map_err(|e| {
            e.map_message(|text| {
                format!(
                    "{text}; the server log {} ends with:\n{}",
                    self.log_file().display(),
                    self.log_tail(3)
                )
            })
        })
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.log_file()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The running postmaster's pid, from its pid file, when that process is this cluster's
    /// (its working directory is the data directory: a stale file's pid may be another
    /// program's by now).
    pub fn postmaster_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        let pid: u32 = text.lines().next()?.trim().parse().ok()?;
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
        let data = std::fs::canonicalize(self.data_dir()).ok()?;
        (cwd == data).then_some(pid)
    }

    /// Kills a server that runs but does not answer (stopped, hung): the postmaster and every
    /// process it forked, with SIGKILL, since pg_ctl's signals wait on a process that does not
    /// run. True if there was one. The children are listed before the postmaster dies (they
    /// are then handed to another parent).
    pub fn kill_hung(&self) -> bool {
        let Some(postmaster) = self.postmaster_pid() else {
            return false;
        };
        let children = stampede_base::sys::children_of(postmaster);
        stampede_base::sys::kill_now(postmaster);
        for child in children {
            stampede_base::sys::kill_now(child);
        }
        true
    }

    pub fn stop(&self) -> Result<(), Failure> {
        let output = self
            .command("pg_ctl")
            .args(["stop", "-w", "-m", "fast", "-D"])
            .arg(self.data_dir())
            .output();
        check_output("pg_ctl stop", output)
    }
}

fn check_output(what: &str, output: std::io::Result<Output>) -> Result<(), Failure> {
    let output =
        output.map_err(|e| Failure::run(format!("could not run {what}: {e}")).caused_by(e))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let detail = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    Err(Failure::run(format!("{what} failed: {detail}")))
}

/// Runs `command` from a thread pinned to `cpus`: pg_ctl inherits the thread's mask, and so do
/// its children (the postmaster and every backend).
fn output_pinned(mut command: Command, cpus: Vec<usize>) -> std::io::Result<Output> {
    std::thread::spawn(move || {
        stampede_base::sys::pin_current_thread(&cpus)?;
        command.output()
    })
    .join()
    .unwrap_or_else(|_| {
        Err(std::io::Error::other(
            "the thread starting the server panicked",
        ))
    })
}
