//! Statements that change the server rather than the data — its configuration, its roles and
//! tablespaces, other sessions, its checkpoints and WAL — which a replay does not send unless
//! told to (`--allow-admin`, the lab's `options.allow_admin`): a capture that holds them
//! would reconfigure the target it measures.

use super::message::leading_words;
use super::replay_file::ReplayFile;
use super::summary::one_line;
use stampede_base::error::Failure;

/// Statements whose leading words make them administration.
const COMMANDS: &[(&[&str], &str)] = &[
    (&["alter", "system"], "ALTER SYSTEM"),
    (&["checkpoint"], "CHECKPOINT"),
    (&["create", "role"], "role DDL"),
    (&["alter", "role"], "role DDL"),
    (&["drop", "role"], "role DDL"),
    (&["create", "user"], "role DDL"),
    (&["alter", "user"], "role DDL"),
    (&["drop", "user"], "role DDL"),
    (&["create", "group"], "role DDL"),
    (&["alter", "group"], "role DDL"),
    (&["drop", "group"], "role DDL"),
    (&["reassign", "owned"], "role DDL"),
    (&["create", "tablespace"], "tablespace DDL"),
    (&["alter", "tablespace"], "tablespace DDL"),
    (&["drop", "tablespace"], "tablespace DDL"),
    (&["create", "database"], "database DDL"),
    (&["alter", "database"], "database DDL"),
    (&["drop", "database"], "database DDL"),
];

/// Functions that act on the server or on other sessions.
const FUNCTIONS: &[&str] = &[
    "pg_reload_conf",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_rotate_logfile",
    "pg_switch_wal",
    "pg_promote",
    "pg_create_restore_point",
    "pg_stat_reset",
    "pg_stat_reset_shared",
    "pg_stat_reset_single_table_counters",
    "pg_stat_reset_single_function_counters",
    "pg_stat_reset_slru",
    "pg_create_physical_replication_slot",
    "pg_create_logical_replication_slot",
    "pg_drop_replication_slot",
];

/// What makes `text` administration, or None for a statement on the data.
pub fn admin_kind(text: &str) -> Option<String> {
    let words = leading_words(text, 2);
    let leading = COMMANDS.iter().find(|(prefix, _)| {
        prefix.len() <= words.len() && prefix.iter().zip(&words).all(|(p, w)| p == w)
    });
    if let Some((_, kind)) = leading {
        return Some(kind.to_string());
    }
    let lower = text.to_ascii_lowercase();
    FUNCTIONS
        .iter()
        .find(|name| calls(&lower, name))
        .map(|name| format!("{name}()"))
}

/// Whether `name(` appears as a whole word (spaces allowed before the parenthesis).
fn calls(lower: &str, name: &str) -> bool {
    lower.match_indices(name).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let whole = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'))
            || lower[..at].ends_with("pg_catalog.");
        whole && lower[at + name.len()..].trim_start().starts_with('(')
    })
}

/// Refuses a capture holding administration, naming each kind with its count and first
/// statement, unless `allowed`.
pub fn refuse_admin(file: &ReplayFile, allowed: bool, how_to_allow: &str) -> Result<(), Failure> {
    if allowed {
        return Ok(());
    }
    let mut found: Vec<(String, u64, String)> = Vec::new();
    let counts = text_counts(file);
    for (text, count) in file.texts.iter().zip(counts) {
        let Some(kind) = admin_kind(text).filter(|_| count > 0) else {
            continue;
        };
        match found.iter_mut().find(|(k, _, _)| *k == kind) {
            Some(known) => known.1 += count,
            None => found.push((kind, count, one_line(text, 80))),
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = found
        .iter()
        .map(|(kind, count, first)| format!("  {kind}: {count} (first: {first})"))
        .collect();
    Err(Failure::input(format!(
        "the capture holds statements that change the server rather than the data; they are not replayed unless {how_to_allow} (nothing was sent):\n{}",
        listed.join("\n")
    )))
}

/// How many statements of the file use each text.
fn text_counts(file: &ReplayFile) -> Vec<u64> {
    let mut counts = vec![0; file.texts.len()];
    for statement in file.sessions.iter().flat_map(|s| &s.statements) {
        counts[statement.text as usize] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn administration_is_told_from_work_on_the_data() {
        let kind = |text: &str| admin_kind(text);
        assert_eq!(
            kind("ALTER SYSTEM RESET log_statement").as_deref(),
            Some("ALTER SYSTEM")
        );
        assert_eq!(
            kind("/* probe */ alter system set work_mem = '8MB'").as_deref(),
            Some("ALTER SYSTEM")
        );
        assert_eq!(
            kind("SELECT pg_reload_conf()").as_deref(),
            Some("pg_reload_conf()")
        );
        assert_eq!(
            kind("select pg_catalog.pg_terminate_backend (pid) from pg_stat_activity").as_deref(),
            Some("pg_terminate_backend()")
        );
        assert_eq!(kind("CHECKPOINT").as_deref(), Some("CHECKPOINT"));
        assert_eq!(kind("CREATE ROLE app LOGIN").as_deref(), Some("role DDL"));
        assert_eq!(kind("drop user app").as_deref(), Some("role DDL"));
        assert_eq!(
            kind("CREATE TABLESPACE fast LOCATION '/ssd'").as_deref(),
            Some("tablespace DDL")
        );
        assert_eq!(kind("SELECT * FROM orders WHERE id = $1"), None);
        assert_eq!(kind("ALTER TABLE orders ADD COLUMN note text"), None);
        assert_eq!(kind("SELECT my_pg_reload_conf()"), None);
        assert_eq!(kind("SELECT 'pg_reload_conf' AS name"), None);
        assert_eq!(kind("UPDATE users SET name = $1"), None);
    }
}
