//! PostgreSQL's configuration profiles: `untuned` (initdb's defaults plus what the lab
//! needs), `tuned` (study 001's "starter" tuning scaled to this machine), or a postgresql.conf
//! fragment. Every value and its rule is listed in docs/lab.md.

use std::path::Path;

use crate::server::profile::{whole_megabytes, Machine, ProfileRules, GB, MB};
use stampede_base::error::Failure;

/// PostgreSQL's rules.
pub struct Postgres;

/// postgresql.conf sizes in whole megabytes, which every version accepts.
fn size(bytes: u64) -> String {
    format!("{}MB", whole_megabytes(bytes))
}

impl ProfileRules for Postgres {
    /// The settings a lab server always has: pg_stat_statements loaded, enough connections.
    fn lab_needs(max_clients: usize) -> Vec<(String, String)> {
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
    fn tuned(machine: &Machine, max_clients: usize) -> Vec<(String, String)> {
        let max_connections = max_clients + 20;
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
    fn read_fragment(path: &Path) -> Result<Vec<(String, String)>, Failure> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::profile::{settings, Profile};

    #[test]
    fn tuned_scales_with_the_machine_and_overrides_win() {
        let machine = Machine {
            ram_bytes: 24 * GB,
            cores: 2,
            free_disk_bytes: 80 * GB,
        };
        let all = settings::<Postgres>(
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
        let untuned = settings::<Postgres>(&Profile::Untuned, &machine, 200, &[]).unwrap();
        assert_eq!(untuned.len(), 3);
        assert!(untuned.contains(&("max_connections".into(), "220".into())));
    }
}
