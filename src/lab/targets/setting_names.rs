//! A target's `settings` checked against the names its own server binary knows, before
//! anything starts: a PostgreSQL setting on a MariaDB target (or the reverse) or a typo is
//! refused by name instead of failing the server's start halfway through a lab.

use std::path::Path;
use std::process::Command;

use crate::server::mariadb::managed::MariadbBinaries;
use crate::server::mariadb::profile::Mariadb;
use crate::server::postgres::binaries::Binaries;
use crate::server::profile::ProfileRules;
use stampede_base::error::Failure;

/// Refuses the first setting PostgreSQL's binaries do not know. A binary that cannot list its
/// settings is not checked (the server's start still is).
pub fn check_postgres(pg: &Binaries, settings: &[(String, String)]) -> Result<(), Failure> {
    let Some(known) = postgres_settings(&pg.bin_dir.join("postgres")) else {
        return Ok(());
    };
    // Dotted names are extensions' (pg_stat_statements.track), defined when loaded.
    let unknown = settings
        .iter()
        .map(|(name, _)| name)
        .find(|name| !name.contains('.') && !known.contains(&name.to_lowercase()));
    match unknown {
                Some(name) => Err(Failure::input(format!(
                    "settings.{name}: not a setting of PostgreSQL {} (`postgres --describe-config` lists them); MariaDB/MySQL variables belong on a target with mariadb = …",
                    pg.version.trim_start_matches("postgres (PostgreSQL) ")
                ))),
                None => Ok(()),
            }
}

/// A dotted name of identifiers (pg_stat_statements.track): an extension's setting, which a
/// server defines when the extension loads and otherwise keeps as a placeholder.
pub fn is_extension_setting(name: &str) -> bool {
    let identifier = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    name.contains('.') && name.split('.').all(identifier)
}

/// Refuses the first setting a MariaDB/MySQL server binary does not know.
pub fn check_mariadb(
    mariadb: &MariadbBinaries,
    settings: &[(String, String)],
) -> Result<(), Failure> {
    let Some(known) = mariadb_variables(&mariadb.server) else {
        return Ok(());
    };
    let is_known = |name: &str| {
        let name = Mariadb::normal_name(name);
        // `loose_` options are ignored by a server that lacks them; `skip_x` is `x` off.
        name.starts_with("loose_")
            || known.contains(&name)
            || name
                .strip_prefix("skip_")
                .is_some_and(|n| known.contains(&n.to_string()))
    };
    match settings.iter().map(|(name, _)| name).find(|name| !is_known(name)) {
                Some(name) => Err(Failure::input(format!(
                    "settings.{name}: not a variable of {} {} (`{} --verbose --help` lists them); PostgreSQL settings belong on a target with postgres = …",
                    mariadb.server.file_name().map_or("mariadbd".into(), |n| n.to_string_lossy()),
                    mariadb.version,
                    mariadb.server.display()
                ))),
                None => Ok(()),
            }
}

/// `postgres --describe-config`: one setting per line, its name first.
fn postgres_settings(postgres: &Path) -> Option<Vec<String>> {
    let output = Command::new(postgres)
        .arg("--describe-config")
        .output()
        .ok()?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split('\t').next())
            .map(str::to_lowercase)
            .collect()
    })
}

/// The variables table of `mariadbd --verbose --help`, names spelt with `_`.
fn mariadb_variables(server: &Path) -> Option<Vec<String>> {
    let output = Command::new(server)
        .args(["--no-defaults", "--verbose", "--help"])
        .output()
        .ok()?;
    let names = variable_names(&String::from_utf8_lossy(&output.stdout));
    (!names.is_empty()).then_some(names)
}

fn variable_names(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Variables (--variable-name=value)"))
        .skip_while(|line| !line.starts_with("---"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .map(Mariadb::normal_name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_table_is_read_from_the_help() {
        let help = "Usage...\n  --port=#  Port\n\nVariables (--variable-name=value)\nand boolean options {FALSE|TRUE}  Value (after reading options)\n------------ -----\nallow-suspicious-udfs   FALSE\ninnodb-buffer-pool-size 134217728\n\nTo see what values...\n";
        assert_eq!(
            variable_names(help),
            ["allow_suspicious_udfs", "innodb_buffer_pool_size"]
        );
    }
}
