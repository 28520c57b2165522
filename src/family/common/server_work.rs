//! A local server's work over an interval: the CPU seconds and storage bytes of its process
//! tree (PostgreSQL's postmaster and its children, MariaDB's one process), read from /proc when
//! the server runs on this machine and its pid file can be read; nothing otherwise.

use serde::Serialize;

use super::sql_session::Session;
use crate::probe::server_io::{self, ServerIo};

/// CPU seconds and storage bytes of the server's processes over an interval.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ServerWork {
    pub cpu_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl ServerWork {
    /// "server CPU 1.23 s, read 4.5 MB, written 0.0 MB"
    pub fn describe(&self) -> String {
        format!(
            "server CPU {:.2} s, read {:.1} MB, written {:.1} MB",
            self.cpu_s,
            self.read_bytes as f64 / 1e6,
            self.write_bytes as f64 / 1e6
        )
    }
}

/// Server CPU and I/O readings, when the server is local.
#[derive(Clone)]
pub struct Meter {
    pub server_pid: Option<u32>,
}

pub struct Reading {
    cpu_s: f64,
    io: ServerIo,
}

impl Meter {
    pub fn read(&self) -> Option<Reading> {
        let pid = self.server_pid?;
        Some(Reading {
            cpu_s: crate::probe::server_cpu::tree_seconds(pid)?,
            io: server_io::read_tree(pid)?,
        })
    }

    pub fn since(&self, before: &Option<Reading>) -> Option<ServerWork> {
        let (before, after) = (before.as_ref()?, self.read()?);
        Some(ServerWork {
            cpu_s: after.cpu_s - before.cpu_s,
            read_bytes: after.io.read_bytes.saturating_sub(before.io.read_bytes),
            write_bytes: after.io.write_bytes.saturating_sub(before.io.write_bytes),
        })
    }
}

/// The server's root process when it runs on this machine and its pid file can be read:
/// PostgreSQL's postmaster (superuser, or pg_read_all_settings, reads data_directory),
/// MariaDB's server (`@@pid_file`).
pub async fn local_server_pid(session: &mut Session) -> Option<u32> {
    let pid_file = match session {
        Session::Postgres(_) => {
            let dir: String = session.value("SHOW data_directory").await.ok()??;
            std::path::PathBuf::from(dir).join("postmaster.pid")
        }
        Session::Mysql(_) => {
            let file: String = session.value("SELECT @@pid_file").await.ok()??;
            std::path::PathBuf::from(file)
        }
    };
    let text = std::fs::read_to_string(pid_file).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    std::fs::metadata(format!("/proc/{pid}")).ok()?;
    Some(pid)
}
