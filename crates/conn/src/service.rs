//! libpq's connection service file: `service=NAME` (or `PGSERVICE`) names a section of
//! `PGSERVICEFILE` (default `~/.pg_service.conf`) or, failing that, of
//! `PGSYSCONFDIR/pg_service.conf` (Debian's libpq: /etc/postgresql-common), whose `key=value`
//! lines are connection keywords. As in libpq, the first file holding the section wins, and
//! the section's values come under those the connection string gives itself.

use std::path::PathBuf;

use crate::ConnSpecError;

/// Debian's libpq looks here when PGSYSCONFDIR is not set.
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The keywords of service `name`, in file order.
pub fn lookup(name: &str) -> Result<Vec<(String, String)>, ConnSpecError> {
    for file in files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let section = section(&text, name)
            .map_err(|e| ConnSpecError::file(&file, format!("{}: {e}", file.display())))?;
        if let Some(pairs) = section {
            return Ok(pairs);
        }
    }
    Err(ConnSpecError::UnknownService(name.into()))
}

fn files() -> Vec<PathBuf> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let user = env("PGSERVICEFILE")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".pg_service.conf")));
    let system = PathBuf::from(env("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.into()))
        .join("pg_service.conf");
    user.into_iter().chain([system]).collect()
}

/// The pairs under `[name]` in a service file's text, if it has that section.
fn section(text: &str, name: &str) -> Result<Option<Vec<(String, String)>>, ConnSpecError> {
    let mut inside = false;
    let mut found = false;
    let mut pairs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = header.trim() == name;
            found |= inside;
            continue;
        }
        if !inside {
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| {
            ConnSpecError::Syntax(format!("syntax error in service file, line {}", number + 1))
        })?;
        let key = key.trim();
        if key == "service" {
            return Err(ConnSpecError::Syntax(format!(
                "nested service specifications not supported, line {}",
                number + 1
            )));
        }
        pairs.push((key.to_string(), value.trim().to_string()));
    }
    Ok(found.then_some(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_read_and_others_are_not() {
        let text = "# services\n[other]\nhost=elsewhere\n\n[bench]\nhost = db.example\nport=6432\ndbname=app\n";
        assert_eq!(
            section(text, "bench").unwrap(),
            Some(vec![
                ("host".into(), "db.example".into()),
                ("port".into(), "6432".into()),
                ("dbname".into(), "app".into()),
            ])
        );
        assert_eq!(section(text, "missing").unwrap(), None);
        assert!(section("[x]\nnot a pair\n", "x")
            .unwrap_err()
            .to_string()
            .starts_with("syntax error in service file, line 2"));
        assert!(section("[x]\nservice=y\n", "x")
            .unwrap_err()
            .to_string()
            .starts_with("nested service"));
    }
}
