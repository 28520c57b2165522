//! Defaults that changed between the versions a report compares, read from the servers' own
//! catalogs (never a hand-kept list): each setting whose compiled-in default
//! (`pg_settings.boot_val`) differs between the base and a target of another major, whether the
//! lab's settings overrode it on both sides, and the settings one version has and the other
//! lacks. initdb's own defaults (data checksums since 18) show in the values of the settings
//! fixed at initdb.

use stampede_store::{SettingRow, TargetSettings};

/// Settings whose default says where or on what the server runs, not what the version does.
const ENVIRONMENT: [&str; 22] = [
    "application_name",
    "client_encoding",
    "cluster_name",
    "config_file",
    "data_directory",
    "data_directory_mode",
    "dynamic_library_path",
    "external_pid_file",
    "hba_file",
    "huge_pages_status",
    "ident_file",
    "lc_collate",
    "lc_ctype",
    "lc_messages",
    "lc_monetary",
    "lc_numeric",
    "lc_time",
    "server_encoding",
    "server_version",
    "server_version_num",
    "ssl_library",
    "unix_socket_directories",
];

/// Settings fixed when the cluster is made, whose value (not boot value) is initdb's default.
const INITDB_DEFAULTS: [&str; 1] = ["data_checksums"];

/// How many added or dropped settings a warning names before it counts the rest.
const NAMED: usize = 8;

/// One warning per target whose major differs from the base's, when a default changed.
pub fn changed_defaults(settings: &[TargetSettings], base: &str, targets: &[&str]) -> Vec<String> {
    let Some(base_settings) = settings.iter().find(|s| s.target == base) else {
        return Vec::new();
    };
    targets
        .iter()
        .filter(|target| **target != base)
        .filter_map(|target| settings.iter().find(|s| s.target == *target))
        .filter_map(|other| warning(base_settings, other))
        .collect()
}

fn warning(base: &TargetSettings, other: &TargetSettings) -> Option<String> {
    let base_release = release(base.server_version.as_deref()?)?;
    let other_release = release(other.server_version.as_deref()?)?;
    if major(&base_release) == major(&other_release) {
        return None;
    }
    let compared = |rows: &[SettingRow]| rows.iter().any(|r| r.boot_val.is_some());
    if !compared(&base.settings) || !compared(&other.settings) {
        return None;
    }
    let changes = changes(&base.settings, &other.settings);
    let (overridden, in_effect): (Vec<&Change>, Vec<&Change>) =
        changes.iter().partition(|c| c.overridden);
    let added = only_in(&other.settings, &base.settings);
    let dropped = only_in(&base.settings, &other.settings);
    if changes.is_empty() && added.is_empty() && dropped.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !in_effect.is_empty() {
        parts.push(list(&in_effect));
    }
    if !overridden.is_empty() {
        parts.push(format!(
            "overridden here by both targets' settings: {}",
            list(&overridden)
        ));
    }
    if !added.is_empty() {
        parts.push(format!("{other_release} adds {}", named(&added)));
    }
    if !dropped.is_empty() {
        parts.push(format!("{other_release} drops {}", named(&dropped)));
    }
    Some(format!(
        "defaults changed from \"{}\" (PostgreSQL {base_release}) to \"{}\" (PostgreSQL {other_release}), by the servers' boot values: {}",
        base.target,
        other.target,
        parts.join("; ")
    ))
}

/// A default that changed.
struct Change {
    name: String,
    from: String,
    to: String,
    /// Both targets run a value of their own (from the lab's settings), equal on both sides.
    overridden: bool,
}

fn changes(base: &[SettingRow], other: &[SettingRow]) -> Vec<Change> {
    base.iter()
        .filter(|row| !ENVIRONMENT.contains(&row.name.as_str()))
        .filter_map(|row| {
            let theirs = other.iter().find(|o| o.name == row.name)?;
            let (from, to) = (default_row(row)?, default_row(theirs)?);
            let (from_value, to_value) =
                (super::why::normalized(&from)?, super::why::normalized(&to)?);
            if from_value == to_value
                || from_value.contains('/')
                || to_value.contains('/')
                || nothing_either_way(&from_value, &to_value)
            {
                return None;
            }
            let set_here = |r: &SettingRow| r.source.as_deref().is_some_and(|s| s != "default");
            let overridden = set_here(row)
                && set_here(theirs)
                && super::why::normalized(row) == super::why::normalized(theirs);
            Some(Change {
                name: row.name.clone(),
                from: shown(&from),
                to: shown(&to),
                overridden,
            })
        })
        .collect()
}

/// A switch that became a list keeps its meaning: 18's log_connections is `''` (no aspect
/// logged) where 17's was `off`, which says the same and is no changed default.
fn nothing_either_way(from: &str, to: &str) -> bool {
    let nothing = |value: &str| matches!(value, "" | "off" | "false" | "none");
    nothing(from) && nothing(to)
}

/// The row as its default: the boot value, or for a setting fixed at initdb its value.
fn default_row(row: &SettingRow) -> Option<SettingRow> {
    let value = if INITDB_DEFAULTS.contains(&row.name.as_str()) {
        row.setting.clone()
    } else {
        row.boot_val.clone()
    };
    Some(SettingRow {
        setting: Some(value?),
        ..row.clone()
    })
}

fn shown(row: &SettingRow) -> String {
    let value = row.setting.clone().unwrap_or_default();
    if value.is_empty() {
        return "''".into();
    }
    super::why::with_unit(row).unwrap_or(value)
}

fn list(changes: &[&Change]) -> String {
    changes
        .iter()
        .map(|c| format!("{} {} → {}", c.name, c.from, c.to))
        .collect::<Vec<_>>()
        .join(", ")
}

fn only_in<'a>(mine: &'a [SettingRow], theirs: &[SettingRow]) -> Vec<&'a str> {
    mine.iter()
        .filter(|row| !theirs.iter().any(|t| t.name == row.name))
        .map(|row| row.name.as_str())
        .collect()
}

fn named(names: &[&str]) -> String {
    let shown: Vec<&str> = names.iter().take(NAMED).copied().collect();
    let more = names.len().saturating_sub(NAMED);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{} setting(s): {}{tail}", names.len(), shown.join(", "))
}

/// "PostgreSQL 19rc1 on x86_64…" → "19rc1".
fn release(version: &str) -> Option<String> {
    version
        .strip_prefix("PostgreSQL ")?
        .split_whitespace()
        .next()
        .map(str::to_string)
}

/// "9.6.24" → "9.6", "19rc1" → "19".
fn major(release: &str) -> String {
    if let Some(rest) = release.strip_prefix("9.") {
        return format!("9.{}", rest.split('.').next().unwrap_or(""));
    }
    release.chars().take_while(char::is_ascii_digit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, setting: &str, boot: &str, source: &str) -> SettingRow {
        SettingRow {
            name: name.into(),
            setting: Some(setting.into()),
            unit: None,
            source: Some(source.into()),
            boot_val: Some(boot.into()),
            context: None,
        }
    }

    fn target(name: &str, version: &str, settings: Vec<SettingRow>) -> TargetSettings {
        TargetSettings {
            target: name.into(),
            server_version: Some(version.into()),
            settings,
        }
    }

    #[test]
    fn changed_boot_values_are_named_with_what_overrode_them() {
        let in_pages = |mut row: SettingRow| {
            row.unit = Some("8kB".into());
            row
        };
        let base = target(
            "pg18",
            "PostgreSQL 18.6 on x86_64-pc-linux-gnu",
            vec![
                row("jit", "on", "on", "default"),
                row("max_locks_per_transaction", "64", "64", "default"),
                in_pages(row("shared_buffers", "16384", "1024", "configuration file")),
                row("work_mem", "4096", "4096", "default"),
                row("data_directory", "/a", "", "override"),
                row("old_setting", "1", "1", "default"),
                row("log_connections", "off", "off", "default"),
            ],
        );
        let other = target(
            "pg19",
            "PostgreSQL 19rc1 on x86_64-pc-linux-gnu",
            vec![
                row("jit", "off", "off", "default"),
                row("max_locks_per_transaction", "128", "128", "default"),
                in_pages(row("shared_buffers", "16384", "2048", "configuration file")),
                row("work_mem", "4096", "4096", "default"),
                row("data_directory", "/b", "", "override"),
                row("new_setting", "1", "1", "default"),
                // 18 made it a list: '' logs no aspect, as off did.
                row("log_connections", "", "", "default"),
            ],
        );
        let warnings = changed_defaults(&[base.clone(), other], "pg18", &["pg18", "pg19"]);
        assert_eq!(
            warnings,
            vec!["defaults changed from \"pg18\" (PostgreSQL 18.6) to \"pg19\" (PostgreSQL 19rc1), by the servers' boot values: jit on → off, max_locks_per_transaction 64 → 128; overridden here by both targets' settings: shared_buffers 1024 8kB → 2048 8kB; 19rc1 adds 1 setting(s): new_setting; 19rc1 drops 1 setting(s): old_setting"]
        );
        // One major on both sides: nothing to say.
        let same = target("again", "PostgreSQL 18.1 on x86_64", base.settings.clone());
        assert!(changed_defaults(&[base, same], "pg18", &["pg18", "again"]).is_empty());
    }
}
