//! `mariadb = …` in a `[[target]]`: "system", a release series, or an installation's folder.

use std::path::Path;

use toml::Spanned;

use crate::lab::spec_text::{Source, SpecError};

/// `mariadb = "system"` or a directory of a MariaDB/MySQL installation, relative to the spec.
pub fn mariadb_source(
    source: &Source<'_>,
    value: &Spanned<toml::Value>,
    base: &Path,
) -> Result<String, SpecError> {
    let Some(text) = value.get_ref().as_str().map(str::trim) else {
        return Err(source.at(
            value,
            "mariadb: give \"system\", a release series (\"10.11\", \"11.8\") or a directory holding mariadbd or mysqld",
        ));
    };
    if text == "system" || crate::server::mariadb::release::is_series(text) {
        return Ok(text.into());
    }
    let dir = base.join(text);
    if !dir.is_dir() {
        return Err(source.at(
            value,
            format!(
                "mariadb: \"{}\" is neither \"system\", a release series (\"10.11\", \"11.8\") nor a directory holding mariadbd or mysqld",
                dir.display()
            ),
        ));
    }
    Ok(dir.display().to_string())
}
