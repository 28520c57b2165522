//! Configuration profiles for managed clusters: `untuned` (initdb's defaults plus what the lab
//! needs), `tuned` (study 001's "starter" tuning scaled to this machine), or a postgresql.conf
//! fragment. Every value and its rule is listed in docs/lab.md.

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profile {
    Untuned,
    Tuned,
    /// A postgresql.conf fragment.
    File(PathBuf),
}

impl Profile {
    pub fn name(&self) -> String {
        match self {
            Profile::Untuned => "untuned".into(),
            Profile::Tuned => "tuned".into(),
            Profile::File(path) => path.display().to_string(),
        }
    }
}

/// What the rules scale with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    pub ram_bytes: u64,
    pub cores: usize,
    /// Free space where the cluster's data lives.
    pub free_disk_bytes: u64,
}

pub(crate) const MB: u64 = 1024 * 1024;
pub(crate) const GB: u64 = 1024 * MB;

impl Machine {
    pub fn probe(data_root: &Path) -> Machine {
        Machine {
            ram_bytes: total_ram().unwrap_or(4 * GB),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            free_disk_bytes: free_disk(data_root).unwrap_or(u64::MAX),
        }
    }
}

fn total_ram() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub fn free_disk(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stat = nix::sys::statvfs::statvfs(existing).ok()?;
    Some(stat.blocks_available() as u64 * stat.fragment_size() as u64)
}

/// postgresql.conf sizes in whole megabytes, which every version accepts.
pub(crate) fn size(bytes: u64) -> String {
    format!("{}MB", (bytes / MB).max(1))
}

/// The settings a lab server always has: pg_stat_statements loaded, enough connections.
pub fn lab_needs(max_clients: usize) -> Vec<(String, String)> {
    vec![
        (
            "shared_preload_libraries".into(),
            "pg_stat_statements".into(),
        ),
        ("pg_stat_statements.track".into(), "all".into()),
        (
            "max_connections".into(),
            (max_clients + 20).max(100).to_string(),
        ),
    ]
}

/// Study 001's starter tuning, scaled from its 96-core, 384 GB machine to this one.
pub fn tuned(machine: &Machine, max_connections: usize) -> Vec<(String, String)> {
    let ram = machine.ram_bytes;
    let shared_buffers = ram / 4;
    let work_mem = (ram / (4 * max_connections.max(1) as u64)).clamp(4 * MB, 128 * MB);
    let wal_buffers = (shared_buffers / 100).clamp(16 * MB, GB);
    let max_wal_size = (machine.free_disk_bytes / 10).clamp(GB, 300 * GB);
    vec![
        ("shared_buffers".into(), size(shared_buffers)),
        ("effective_cache_size".into(), size(ram / 4 * 3)),
        ("maintenance_work_mem".into(), size((ram / 16).min(2 * GB))),
        ("work_mem".into(), size(work_mem)),
        ("wal_buffers".into(), size(wal_buffers)),
        ("max_wal_size".into(), size(max_wal_size)),
        ("checkpoint_completion_target".into(), "0.9".into()),
        ("checkpoint_timeout".into(), "15min".into()),
        ("random_page_cost".into(), "1.1".into()),
        ("cpu_tuple_cost".into(), "0.03".into()),
        (
            "autovacuum_max_workers".into(),
            (machine.cores / 10).max(3).to_string(),
        ),
        ("autovacuum_vacuum_cost_limit".into(), "3000".into()),
    ]
}

/// `name = value` lines of a postgresql.conf fragment (comments and blank lines skipped).
pub fn read_fragment(path: &Path) -> Result<Vec<(String, String)>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::run(format!("could not read profile {}: {e}", path.display())).caused_by(e)
    })?;
    let mut settings = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (name, value) = line.split_once('=').ok_or_else(|| {
            Failure::run(format!(
                "{}:{}: expected name = value",
                path.display(),
                number + 1
            ))
        })?;
        let value = value.trim().trim_matches('\'').to_string();
        settings.push((name.trim().to_string(), value));
    }
    Ok(settings)
}

/// The profile's settings, then the lab's needs, then the user's overrides: later entries win.
pub fn settings(
    profile: &Profile,
    machine: &Machine,
    max_clients: usize,
    overrides: &[(String, String)],
) -> Result<Vec<(String, String)>, Failure> {
    let needs = lab_needs(max_clients);
    let max_connections = max_clients + 20;
    let mut all = match profile {
        Profile::Untuned => Vec::new(),
        Profile::Tuned => tuned(machine, max_connections),
        Profile::File(path) => read_fragment(path)?,
    };
    all.extend(needs);
    all.extend(overrides.iter().cloned());
    Ok(merge(all))
}

/// The last value of each name, in first-seen order.
pub fn merge(all: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = Vec::new();
    for (name, value) in all {
        match merged.iter_mut().find(|(n, _)| *n == name) {
            Some(existing) => existing.1 = value,
            None => merged.push((name, value)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuned_scales_with_the_machine_and_overrides_win() {
        let machine = Machine {
            ram_bytes: 24 * GB,
            cores: 2,
            free_disk_bytes: 80 * GB,
        };
        let all = settings(
            &Profile::Tuned,
            &machine,
            32,
            &[("shared_buffers".into(), "128MB".into())],
        )
        .unwrap();
        let get = |name: &str| all.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(get("shared_buffers"), "128MB");
        assert_eq!(get("effective_cache_size"), "18432MB");
        assert_eq!(get("maintenance_work_mem"), "1536MB");
        assert_eq!(get("max_wal_size"), "8192MB");
        assert_eq!(get("autovacuum_max_workers"), "3");
        assert_eq!(get("max_connections"), "100");
        assert_eq!(get("shared_preload_libraries"), "pg_stat_statements");
        let untuned = settings(&Profile::Untuned, &machine, 200, &[]).unwrap();
        assert_eq!(untuned.len(), 3);
        assert!(untuned.contains(&("max_connections".into(), "220".into())));
    }
}
