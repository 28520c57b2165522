//! Server-wide settings changed with ALTER SYSTEM and put back exactly as they were: a value
//! that `postgresql.auto.conf` held is set again, one it did not hold is RESET, so the file
//! and `pg_settings` end as they began. Each change waits until new sessions have it: a reload
//! only signals the postmaster, which re-reads its files in its own time, and a new session's
//! `pg_conf_load_time()` is the postmaster's last reading.

use std::time::{Duration, Instant};

use super::queries::{query_rows, query_string, sql};
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;

/// One setting to change, with what it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemChange {
    pub name: String,
    pub value: String,
    pub before: String,
    /// Set by ALTER SYSTEM before: put back with SET, else RESET.
    pub in_auto_conf: bool,
}

/// How long a reload may take to reach new sessions.
const RELOAD_LIMIT: Duration = Duration::from_secs(10);

/// The changes that make each of `wanted` take effect: every one whose current value is not
/// already the same text. A value is remembered as SHOW prints it ("5min"), which SET takes
/// back. A name the server does not know is left out (callers check names first, or ask for
/// settings older servers lack). Refused when `pg_settings` hides where a value came from (a role without
/// pg_read_all_settings), since it could then not be put back exactly.
pub fn changes(conn: &ConnSpec, wanted: &[(String, String)]) -> Result<Vec<SystemChange>, Failure> {
    let mut changes = Vec::new();
    for (name, value) in wanted {
        let rows = query_rows(
            conn,
            &format!(
                "SELECT current_setting(name), setting, source, sourcefile IS NULL, coalesce(sourcefile, '') LIKE '%postgresql.auto.conf' FROM pg_settings WHERE name = {}",
                quote(name)
            ),
        )?;
        let Some(row) = rows.first() else {
            continue;
        };
        let hidden =
            row[2].as_deref() == Some("configuration file") && row[3].as_deref() == Some("t");
        if hidden {
            return Err(Failure::input(format!(
                "{name}: the server does not show this role which file its value comes from; grant it pg_read_all_settings so the value can be put back exactly"
            )));
        }
        let shown = row[0].clone().unwrap_or_default();
        if shown == *value || row[1].as_deref() == Some(value.as_str()) {
            continue;
        }
        changes.push(SystemChange {
            name: name.clone(),
            value: value.clone(),
            before: shown,
            in_auto_conf: row[4].as_deref() == Some("t"),
        });
    }
    Ok(changes)
}

pub fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// Sets every change and waits for it to take effect; when one fails, those already set are
/// put back before the error.
pub fn apply(
    conn: &ConnSpec,
    changes: &[SystemChange],
    note: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    for (done, change) in changes.iter().enumerate() {
        let set = sql(
            conn,
            &format!(
                "ALTER SYSTEM SET {} = {}",
                change.name,
                quote(&change.value)
            ),
        );
        if let Err(e) = set {
            let _ = restore(conn, &changes[..done], note);
            return Err(e);
        }
        note(&format!(
            "set {} = {} (was {})",
            change.name,
            quote(&change.value),
            quote(&change.before)
        ));
    }
    if let Err(e) = reload(conn, changes) {
        let _ = restore(conn, changes, note);
        return Err(e);
    }
    Ok(())
}

/// Puts every change back as it was and waits until new sessions see the former values.
pub fn restore(
    conn: &ConnSpec,
    changes: &[SystemChange],
    note: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    for change in changes {
        let statement = if change.in_auto_conf {
            format!(
                "ALTER SYSTEM SET {} = {}",
                change.name,
                quote(&change.before)
            )
        } else {
            format!("ALTER SYSTEM RESET {}", change.name)
        };
        sql(conn, &statement)?;
        note(&format!(
            "put back {} = {}",
            change.name,
            quote(&change.before)
        ));
    }
    reload(conn, changes)
}

/// Reloads the configuration and waits until new sessions have read it. ALTER SYSTEM has
/// checked each value already, so what the files hold is what the sessions get.
fn reload(conn: &ConnSpec, changes: &[SystemChange]) -> Result<(), Failure> {
    if changes.is_empty() {
        return Ok(());
    }
    let loaded = "SELECT pg_conf_load_time()::text";
    let before = query_string(conn, loaded)?;
    sql(conn, "SELECT pg_reload_conf()")?;
    let deadline = Instant::now() + RELOAD_LIMIT;
    while query_string(conn, loaded)? == before {
        if Instant::now() > deadline {
            return Err(Failure::run(format!(
                "the server did not reload its configuration within {} s of pg_reload_conf()",
                RELOAD_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
