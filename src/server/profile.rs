//! What every engine's configuration profile shares: the profile a target names (`untuned`,
//! `tuned` or a file), the machine its rules scale with, the order in which settings are
//! layered (the profile's, then the lab's needs, then the user's overrides: later entries win),
//! and the configuration a lab server is provisioned with. Each engine's rules live in its own
//! folder (`postgres/profile.rs`, `mariadb/profile.rs`); every value and its rule is listed in
//! docs/lab.md.

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profile {
    Untuned,
    Tuned,
    /// A configuration fragment in the engine's own file format.
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
    /// Free space where the server's data lives.
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

/// A size in whole megabytes (at least 1), the unit both engines' files accept everywhere.
pub(crate) fn whole_megabytes(bytes: u64) -> u64 {
    (bytes / MB).max(1)
}

/// How a lab server of this engine is set up.
pub struct ServerConfig<'a> {
    pub profile: &'a Profile,
    /// Overrides on top of the profile, as the engine's configuration file spells them.
    pub settings: &'a [(String, String)],
    /// Pin the server to these CPUs.
    pub cpus: Option<Vec<usize>>,
    /// The most clients any workload will open (the profile sizes max_connections from it).
    pub max_clients: usize,
}

/// One engine's rules for a profile.
pub trait ProfileRules {
    /// The engine's starter tuning, scaled to this machine.
    fn tuned(machine: &Machine, max_clients: usize) -> Vec<(String, String)>;
    /// What a lab server always has (statement statistics on, connections for every client).
    fn lab_needs(max_clients: usize) -> Vec<(String, String)>;
    /// The `name = value` settings of a configuration fragment in the engine's format.
    fn read_fragment(path: &Path) -> Result<Vec<(String, String)>, Failure>;
    /// A setting's name as the engine's file and its catalog spell it.
    fn normal_name(name: &str) -> String {
        name.to_string()
    }
}

/// The profile's settings, then the lab's needs, then the user's overrides: later entries win.
pub fn settings<R: ProfileRules>(
    profile: &Profile,
    machine: &Machine,
    max_clients: usize,
    overrides: &[(String, String)],
) -> Result<Vec<(String, String)>, Failure> {
    let mut all = match profile {
        Profile::Untuned => Vec::new(),
        Profile::Tuned => R::tuned(machine, max_clients),
        Profile::File(path) => R::read_fragment(path)?,
    };
    all.extend(R::lab_needs(max_clients));
    all.extend(
        overrides
            .iter()
            .map(|(name, value)| (R::normal_name(name), value.clone())),
    );
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
    fn later_settings_win_in_first_seen_order() {
        let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
        let merged = merge(vec![pair("a", "1"), pair("b", "2"), pair("a", "3")]);
        assert_eq!(merged, vec![pair("a", "3"), pair("b", "2")]);
        assert_eq!(whole_megabytes(10), 1);
        assert_eq!(whole_megabytes(3 * GB), 3072);
    }
}
