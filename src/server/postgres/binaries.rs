//! Finding PostgreSQL server binaries on this machine: `STAMPEDE_PG_BIN`, then `pg_config` on
//! PATH, then the newest `/usr/lib/postgresql/*/bin`.

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};
use std::process::Command;

const NOT_FOUND: &str = "no PostgreSQL server binaries found (looked at STAMPEDE_PG_BIN, pg_config on PATH and /usr/lib/postgresql/*/bin); install PostgreSQL or pass a connection (-h/-p/-U/-d)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    pub bin_dir: PathBuf,
    /// `postgres --version` output, e.g. "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
    pub version: String,
}

impl Binaries {
    pub fn at(bin_dir: &Path) -> Result<Binaries, Failure> {
        let postgres = bin_dir.join("postgres");
        let output = Command::new(&postgres)
            .arg("--version")
            .output()
            .map_err(|e| {
                Failure::run(format!(
                    "no usable PostgreSQL server at {}: {e}",
                    postgres.display()
                ))
                .caused_by(e)
            })?;
        if !bin_dir.join("initdb").is_file() || !bin_dir.join("pg_ctl").is_file() {
            return Err(Failure::run(format!(
                "{} lacks initdb or pg_ctl",
                bin_dir.display()
            )));
        }
        Ok(Binaries {
            bin_dir: bin_dir.to_path_buf(),
            version: String::from_utf8_lossy(&output.stdout).trim().to_string(),
        })
    }

    /// The major version number, e.g. 15 (9 for 9.6: compare it, do not print it).
    pub fn major(&self) -> Option<u32> {
        // "19rc1" and "19beta2" are 19 too.
        let major = self.release().split('.').next()?;
        let digits: String = major.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }

    /// The release as `postgres --version` prints it, e.g. "15.18" or "9.6.24".
    pub fn release(&self) -> &str {
        self.version.split_whitespace().nth(2).unwrap_or("")
    }

    pub fn find_best() -> Result<Binaries, Failure> {
        if let Ok(dir) = std::env::var("STAMPEDE_PG_BIN") {
            return Binaries::at(Path::new(&dir));
        }
        // Tests of a machine without PostgreSQL set this to hide the system's binaries.
        if std::env::var_os("STAMPEDE_HIDE_SYSTEM_PG").is_some() {
            return Err(Failure::input(NOT_FOUND));
        }
        let from_pg_config = Command::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        if let Some(found) = from_pg_config.and_then(|dir| Binaries::at(&dir).ok()) {
            return Ok(found);
        }
        newest_debian_install().ok_or_else(|| Failure::input(NOT_FOUND))
    }
}

fn newest_debian_install() -> Option<Binaries> {
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((major, entry.path().join("bin")))
        })
        .collect();
    majors.sort();
    majors
        .into_iter()
        .rev()
        .find_map(|(_, dir)| Binaries::at(&dir).ok())
}
