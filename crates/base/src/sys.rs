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

/// Sends `signal` (SIGINT, SIGTERM, …) to `pid`; false when there is no such process to
/// signal.
pub fn send_signal(pid: u32, signal: nix::sys::signal::Signal) -> bool {
    i32::try_from(pid).is_ok_and(|pid| nix::sys::signal::kill(Pid::from_raw(pid), signal).is_ok())
}

/// SIGKILL: the one signal a stopped or hung process cannot ignore or postpone.
pub fn kill_now(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// The machine a lab ran on, as a history keys its series: two machines' numbers are never
/// one series. In a pod, the machine is the node it was scheduled on (`NODE_NAME_ENV`, from the
/// downward API), not the pod's own host name, which every new pod changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub host: String,
    pub cores: usize,
    pub cpu_model: String,
    pub kernel: String,
    /// MemTotal (0 when it cannot be read).
    pub memory_bytes: u64,
    /// The CPUs the process's cgroup may use (a pod's CPU limit), when it is limited.
    pub cpu_limit: Option<f64>,
}

/// The variable a pod's manifest sets to its node's name.
pub const NODE_NAME_ENV: &str = "STAMPEDE_NODE_NAME";

impl Machine {
    /// This machine, from /proc and the cgroup (what cannot be read stays empty).
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
        let host = std::env::var(NODE_NAME_ENV)
            .ok()
            .filter(|node| !node.is_empty())
            .unwrap_or_else(|| read("/proc/sys/kernel/hostname"));
        Machine {
            host,
            cores: crate::cpu::cores(),
            cpu_model,
            kernel: read("/proc/sys/kernel/osrelease"),
            memory_bytes: memory_total(&read("/proc/meminfo")).unwrap_or(0),
            cpu_limit: cgroup_cpu_limit(),
        }
    }

    /// What a series is kept apart by: the host, its cores and their model, and a CPU limit
    /// when there is one (not the kernel, which an upgrade changes under a series that should
    /// go on, visibly).
    pub fn key(&self) -> String {
        let key = format!("{}, {} × {}", self.host, self.cores, self.cpu_model);
        match self.cpu_limit {
            Some(limit) => format!("{key}, limited to {} CPUs", round_limit(limit)),
            None => key,
        }
    }

    /// Everything recorded about the machine, as one line: two runs on machines with the same
    /// identity ran on the same hardware, kernel and limit.
    pub fn identity(&self) -> String {
        format!(
            "{}; {} MiB; kernel {}",
            self.key(),
            self.memory_bytes >> 20,
            self.kernel
        )
    }
}

fn round_limit(limit: f64) -> f64 {
    (limit * 100.0).round() / 100.0
}

/// MemTotal from /proc/meminfo's text, in bytes.
fn memory_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The CPU quota of this process's cgroup in CPUs: cgroup v2's `cpu.max`, or v1's
/// `cpu.cfs_quota_us` over `cpu.cfs_period_us`; None when unlimited or unreadable.
fn cgroup_cpu_limit() -> Option<f64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let first = |paths: &[String]| -> Option<String> {
        paths.iter().find_map(|p| std::fs::read_to_string(p).ok())
    };
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // In a container the cgroup is usually mounted at its own root, so both places count.
        if controllers.is_empty() {
            let paths = [
                format!("/sys/fs/cgroup{path}/cpu.max"),
                "/sys/fs/cgroup/cpu.max".into(),
            ];
            if let Some(text) = first(&paths) {
                return quota_v2(&text);
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            let read = |file: &str| -> Option<i64> {
                let paths = [
                    format!("/sys/fs/cgroup/cpu,cpuacct{path}/{file}"),
                    format!("/sys/fs/cgroup/cpu/{file}"),
                ];
                first(&paths)?.trim().parse().ok()
            };
            let (quota, period) = (read("cpu.cfs_quota_us")?, read("cpu.cfs_period_us")?);
            return (quota > 0 && period > 0).then(|| quota as f64 / period as f64);
        }
    }
    None
}

/// cgroup v2's `cpu.max`: "max 100000" (unlimited) or "150000 100000" (1.5 CPUs).
fn quota_v2(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let quota: f64 = words.next()?.parse().ok()?;
    let period: f64 = words.next()?.parse().ok()?;
    (period > 0.0).then_some(quota / period)
}

#[cfg(test)]
mod machine_tests {
    use super::*;

    #[test]
    fn cgroup_quotas_and_memory_are_read() {
        assert_eq!(quota_v2("max 100000\n"), None);
        assert_eq!(quota_v2("150000 100000\n"), Some(1.5));
        assert_eq!(
            memory_total("MemTotal:       24576000 kB\nMemFree: 1 kB"),
            Some(24576000 * 1024)
        );
        let machine = Machine {
            host: "node-1".into(),
            cores: 64,
            cpu_model: "EPYC".into(),
            kernel: "6.1.0".into(),
            memory_bytes: 512 << 30,
            cpu_limit: Some(1.5),
        };
        assert_eq!(machine.key(), "node-1, 64 × EPYC, limited to 1.5 CPUs");
        assert_eq!(
            machine.identity(),
            "node-1, 64 × EPYC, limited to 1.5 CPUs; 524288 MiB; kernel 6.1.0"
        );
    }
}
