//! Configuration profiles for managed MariaDB/MySQL servers, the counterparts of the
//! PostgreSQL ones: `untuned` (the server's defaults plus what the lab needs), `tuned` (the
//! usual InnoDB starter rules scaled to this machine), or a my.cnf fragment. Every value and
//! its rule is listed in docs/lab.md.

use std::path::Path;

use crate::server::profile::{whole_megabytes, Machine, ProfileRules, GB, MB};
use stampede_base::error::Failure;

/// MariaDB's (and MySQL's) rules.
pub struct Mariadb;

impl ProfileRules for Mariadb {
    /// What a lab server always has: statement digests on (pg_stat_statements' counterpart), and
    /// connections for the largest client count.
    fn lab_needs(max_clients: usize) -> Vec<(String, String)> {
        vec![
            ("performance_schema".into(), "ON".into()),
            (
                "max_connections".into(),
                (max_clients + 20).max(151).to_string(),
            ),
        ]
    }

    /// InnoDB's starter tuning: a quarter of RAM for the buffer pool (as shared_buffers), a redo
    /// log half its size (at most a tenth of the free disk, 256 MB to 16 GB) so that checkpoints
    /// are rare, O_DIRECT (no double caching), SSD I/O capacity, and no neighbour flushing.
    fn tuned(machine: &Machine, _max_clients: usize) -> Vec<(String, String)> {
        let buffer_pool = machine.ram_bytes / 4;
        let redo = (buffer_pool / 2)
            .min(machine.free_disk_bytes / 10)
            .clamp(256 * MB, 16 * GB);
        [
            ("innodb_buffer_pool_size", mysql_size(buffer_pool)),
            ("innodb_log_file_size", mysql_size(redo)),
            ("innodb_log_buffer_size", "64M".to_string()),
            ("innodb_flush_method", "O_DIRECT".to_string()),
            ("innodb_io_capacity", "2000".to_string()),
            ("innodb_io_capacity_max", "4000".to_string()),
            ("innodb_flush_neighbors", "0".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect()
    }

    /// `name = value` lines of a my.cnf fragment (section headers, comments and blank lines
    /// skipped; a bare option such as `skip-log-bin` keeps an empty value and is written bare).
    fn read_fragment(path: &Path) -> Result<Vec<(String, String)>, Failure> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::run(format!("could not read profile {}: {e}", path.display())).caused_by(e)
        })?;
        Ok(text
            .lines()
            .map(|line| line.split(['#', ';']).next().unwrap_or("").trim())
            .filter(|line| !line.is_empty() && !line.starts_with('['))
            .map(|line| match line.split_once('=') {
                Some((name, value)) => (
                    Self::normal_name(name),
                    value.trim().trim_matches(['\'', '"']).to_string(),
                ),
                None => (Self::normal_name(line), String::new()),
            })
            .collect())
    }

    /// Server variables are spelt with `-` or `_`; my.cnf and `SHOW VARIABLES` agree on `_`.
    fn normal_name(name: &str) -> String {
        name.trim().replace('-', "_")
    }
}

/// my.cnf sizes in whole megabytes ("512M").
fn mysql_size(bytes: u64) -> String {
    format!("{}M", whole_megabytes(bytes))
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
        let all = settings::<Mariadb>(
            &Profile::Tuned,
            &machine,
            32,
            &[("innodb-io-capacity".into(), "500".into())],
        )
        .unwrap();
        let get = |name: &str| all.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(get("innodb_buffer_pool_size"), "6144M");
        assert_eq!(get("innodb_log_file_size"), "3072M");
        assert_eq!(get("innodb_io_capacity"), "500");
        assert_eq!(get("max_connections"), "151");
        assert_eq!(get("performance_schema"), "ON");
        let small_disk = Machine {
            free_disk_bytes: GB,
            ..machine
        };
        assert_eq!(Mariadb::tuned(&small_disk, 1)[1].1, "256M");
        assert_eq!(
            settings::<Mariadb>(&Profile::Untuned, &machine, 300, &[])
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn fragments_read_as_my_cnf() {
        let path = std::env::temp_dir().join(format!("stampede-mycnf-{}", std::process::id()));
        std::fs::write(
            &path,
            "[mysqld]\n# comment\ninnodb-buffer-pool-size = 1G\nskip-log-bin\nsync_binlog='0' ; why\n",
        )
        .unwrap();
        assert_eq!(
            Mariadb::read_fragment(&path).unwrap(),
            vec![
                ("innodb_buffer_pool_size".to_string(), "1G".to_string()),
                ("skip_log_bin".to_string(), String::new()),
                ("sync_binlog".to_string(), "0".to_string()),
            ]
        );
        let _ = std::fs::remove_file(path);
    }
}
