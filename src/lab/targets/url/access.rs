//! What the URL's role may do on a PostgreSQL server the lab did not start, and how each of a
//! target's settings is applied there: per database (`ALTER DATABASE … SET`, on the lab's own
//! databases, gone with them) where the setting's context lets a session take it, by
//! `ALTER SYSTEM` and a reload (put back after each run) where only the server's files do, and
//! refused where only a restart would — stampede does not restart a server it did not start.

use crate::lab::targets::setting_names::is_extension_setting;
use stampede_base::error::Failure;
use stampede_conn::ConnSpec;
use stampede_control::postgres::queries::{query_rows, query_string};
use stampede_control::postgres::system_settings::quote;

/// The role the URL logs in as, and what it may do.
#[derive(Debug, Clone)]
pub struct Access {
    pub role: String,
    pub superuser: bool,
    /// May create databases: the lab's datasets and per-run copies.
    pub createdb: bool,
    /// May run CHECKPOINT (superuser, or pg_checkpoint from 15 on).
    pub checkpoint: bool,
    pub version_num: i64,
    /// `SHOW server_version`: "16.4 (Debian 16.4-1)".
    pub version: String,
}

impl Access {
    pub fn read(conn: &ConnSpec) -> Result<Access, Failure> {
        let version_num: i64 = query_string(conn, "SHOW server_version_num")?
            .parse()
            .map_err(|e| Failure::run(format!("server_version_num: {e}")))?;
        let checkpoint = if version_num >= 150000 {
            "pg_has_role(current_user, 'pg_checkpoint', 'MEMBER')"
        } else {
            "false"
        };
        let rows = query_rows(
            conn,
            &format!(
                "SELECT current_user, rolsuper, rolcreatedb, {checkpoint}, current_setting('server_version') FROM pg_roles WHERE rolname = current_user"
            ),
        )?;
        let row = rows
            .first()
            .ok_or_else(|| Failure::run("the server shows no pg_roles row for its current user"))?;
        let yes = |index: usize| row[index].as_deref() == Some("t");
        Ok(Access {
            role: row[0].clone().unwrap_or_default(),
            superuser: yes(1),
            createdb: yes(2) || yes(1),
            checkpoint: yes(3) || yes(1),
            version_num,
            version: row[4].clone().unwrap_or_default(),
        })
    }

    /// Refused when the lab could not make its databases.
    pub fn check_databases(&self) -> Result<(), Failure> {
        if self.createdb {
            return Ok(());
        }
        Err(Failure::input(format!(
            "role \"{role}\" may not create databases, and the lab loads each dataset into a database of its own and copies it before each run that writes; grant it with ALTER ROLE \"{role}\" CREATEDB (or give a role that may)",
            role = self.role
        )))
    }
}

/// The target's settings by how each is applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsPlan {
    /// `ALTER DATABASE … SET` on each database the lab makes for the target.
    pub per_database: Vec<(String, String)>,
    /// `ALTER SYSTEM SET` and a reload for each of the target's runs, put back after it.
    pub system: Vec<(String, String)>,
}

/// How each setting is applied, from its context in `pg_settings`; refusals name the setting,
/// its context and what would make it possible.
pub fn plan_settings(
    conn: &ConnSpec,
    access: &Access,
    settings: &[(String, String)],
) -> Result<SettingsPlan, Failure> {
    let mut plan = SettingsPlan::default();
    for (name, value) in settings {
        let rows = query_rows(
            conn,
            &format!(
                "SELECT context FROM pg_settings WHERE name = {}",
                quote(&name.to_lowercase())
            ),
        )?;
        let setting = (name.clone(), value.clone());
        let Some(context) = rows.first().and_then(|row| row[0].clone()) else {
            if is_extension_setting(name) {
                plan.per_database.push(setting);
                continue;
            }
            return Err(Failure::input(format!(
                "settings.{name}: not a setting of this server (PostgreSQL {})",
                access.version
            )));
        };
        match context.as_str() {
            "user" | "backend" => plan.per_database.push(setting),
            "superuser" | "superuser-backend" => {
                may(conn, access, name, "SET", &context)?;
                plan.per_database.push(setting);
            }
            "sighup" => {
                may(conn, access, name, "ALTER SYSTEM", &context)?;
                plan.system.push(setting);
            }
            "postmaster" => return Err(Failure::input(format!(
                "settings.{name}: takes effect only when the server restarts (context {context}), and stampede does not restart a server it did not start; set it on the server yourself and compare servers, or use a target the lab starts"
            ))),
            _ => return Err(Failure::input(format!(
                "settings.{name}: cannot be changed on a running server (context {context})"
            ))),
        }
        check_value(conn, name, value, &context)?;
    }
    Ok(plan)
}

/// Whether the role holds `privilege` on the setting: a superuser does; from PostgreSQL 15 a
/// grant does (`GRANT SET|ALTER SYSTEM ON PARAMETER`).
fn may(
    conn: &ConnSpec,
    access: &Access,
    name: &str,
    privilege: &str,
    context: &str,
) -> Result<(), Failure> {
    if access.superuser {
        return Ok(());
    }
    let granted = access.version_num >= 150000
        && query_string(
            conn,
            &format!(
                "SELECT has_parameter_privilege({}, {})",
                quote(name),
                quote(privilege)
            ),
        )
        .is_ok_and(|t| t == "t");
    if granted {
        return Ok(());
    }
    let grant = if access.version_num >= 150000 {
        format!(
            "GRANT {privilege} ON PARAMETER {name} TO \"{}\"",
            access.role
        )
    } else {
        "a superuser (PostgreSQL 15 and later can grant it on the parameter)".to_string()
    };
    Err(Failure::input(format!(
        "settings.{name}: context {context}, which role \"{}\" may not set; it needs {grant}",
        access.role
    )))
}

/// A value the server refuses is refused now: a session sets it for one transaction where its
/// context allows (ALTER SYSTEM checks the others when it runs).
fn check_value(conn: &ConnSpec, name: &str, value: &str, context: &str) -> Result<(), Failure> {
    if !matches!(context, "user" | "superuser") {
        return Ok(());
    }
    let statement = format!(
        "BEGIN; SELECT set_config({}, {}, true); ROLLBACK",
        quote(name),
        quote(value)
    );
    query_rows(conn, &statement)
        .map(|_| ())
        .map_err(|e| Failure::input(format!("settings.{name} = {value:?}: {}", e.message())))
}
