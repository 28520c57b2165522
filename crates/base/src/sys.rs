//! The few operating-system facts and settings stampede needs beyond std, through nix's safe
//! wrappers (no `unsafe` in the crate's own code).

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::{geteuid, Pid};

/// Root must hand the server to an unprivileged user and keeps its caches system-wide.
pub fn is_root() -> bool {
    geteuid().is_root()
}

/// Pins the calling thread (and whatever it spawns afterwards, which inherits the mask).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).map_err(std::io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

/// The login name of the effective user, when the password database knows it.
pub fn effective_user_name() -> Option<String> {
    nix::unistd::User::from_uid(geteuid())
        .ok()
        .flatten()
        .map(|user| user.name)
}

/// The processes whose parent is `parent`, from /proc (empty where /proc cannot be read).
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent_of(*pid) == Some(parent))
        .collect()
}

/// A process's parent, from /proc/<pid>/stat (fields counted from the command's last `)`,
/// which may itself hold spaces and parentheses).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_command = &stat[stat.rfind(')')? + 1..];
    after_command.split_whitespace().nth(1)?.parse().ok()
}

/// SIGKILL: the one signal a stopped or hung process cannot ignore or postpone.
pub fn kill_now(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// The machine a lab ran on, as a history keys its series: two machines' numbers are never
/// one series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub host: String,
    pub cores: usize,
    pub cpu_model: String,
    pub kernel: String,
}

impl Machine {
    /// This machine, from /proc (what cannot be read stays empty).
    pub fn this() -> Machine {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|text| text.trim().to_string())
                .unwrap_or_default()
        };
        let cpu_model = read("/proc/cpuinfo")
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                (name.trim() == "model name").then(|| value.trim().to_string())
            })
            .unwrap_or_default();
        Machine {
            host: read("/proc/sys/kernel/hostname"),
            cores: crate::cpu::cores(),
            cpu_model,
            kernel: read("/proc/sys/kernel/osrelease"),
        }
    }

    /// What a series is kept apart by: the host, its cores and their model (not the kernel,
    /// which an upgrade changes under a series that should go on, visibly).
    pub fn key(&self) -> String {
        format!("{}, {} × {}", self.host, self.cores, self.cpu_model)
    }
}
