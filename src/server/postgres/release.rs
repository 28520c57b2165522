//! Which PostgreSQL a version names and where its binaries come from: zonky's builds on Maven
//! Central for the majors it publishes (9.6–18 today, and any later major once it does), else
//! the release tarball Debian's source packages carry (the `.orig` tarball is the upstream
//! release: 19's release candidates and releases while zonky has none), built by `build.rs` like
//! any other source and cached the same way.

use std::path::PathBuf;

use super::binaries::Binaries;
use super::build::{self, BuildRequest};
use super::download;
use crate::server::debian::{self, packages as debian_packages, PoolFile, SourcePackage};
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

/// The suites whose source packages carry PostgreSQL releases zonky lacks, newest first.
pub const SUITES: [&str; 2] = ["experimental", "unstable"];

/// A version a target may name: a major or an exact version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// One of zonky's majors or versions ("16", "16.4.0").
    Zonky,
    /// A later major ("19", "20"): zonky's build once it publishes one, else the newest release
    /// tarball reachable.
    Major(String),
    /// An exact release of a later major ("19rc1", "19~beta2", "19.1"), as its tarball is named.
    Exact { major: String, release: String },
}

/// What `text` names, if it is a version at all.
pub fn parse(text: &str) -> Option<Wanted> {
    if download::major_of(text).is_some() {
        return Some(Wanted::Zonky);
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = text.split_at(digits);
    let major_number: u32 = major.parse().ok()?;
    if major_number < 10 {
        return None;
    }
    if rest.is_empty() {
        return Some(Wanted::Major(major.into()));
    }
    // zonky names its builds major.minor.patch ("19.0.0"), a later major's too once published.
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some(Wanted::Zonky);
    }
    let release = release_name(text);
    let tail = &release[digits..];
    let exact = tail
        .strip_prefix('.')
        .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
        || ["beta", "rc", "alpha"].iter().any(|stage| {
            tail.strip_prefix(stage)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    exact.then(|| Wanted::Exact {
        major: major.into(),
        release,
    })
}

/// A release as its upstream tarball names it: Debian's `19~rc1` is `19rc1`.
fn release_name(version: &str) -> String {
    version.replace('~', "")
}

/// A PostgreSQL release tarball in one of Debian's suites.
#[derive(Debug, Clone)]
pub struct SourceRelease {
    pub major: String,
    /// The upstream version as Debian writes it (`19~rc1`).
    pub upstream: String,
    pub package: SourcePackage,
    pub tarball: PoolFile,
}

impl SourceRelease {
    /// `19rc1`, as the tarball and `version()` name it.
    pub fn release(&self) -> String {
        release_name(&self.upstream)
    }

    /// "postgresql-19_19~rc1.orig.tar.bz2 (Debian experimental, postgresql-19 19~rc1-1)".
    pub fn describe(&self) -> String {
        format!(
            "{} (Debian {}, {} {})",
            self.tarball.name(),
            self.package.suite,
            self.package.name,
            self.package.version
        )
    }

    fn from_package(package: SourcePackage) -> Option<SourceRelease> {
        let major = package.name.strip_prefix("postgresql-")?.to_string();
        if major.is_empty() || !major.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        let version = package
            .version
            .split_once(':')
            .map_or(package.version.as_str(), |v| v.1);
        let upstream = version
            .rsplit_once('-')
            .map_or(version, |v| v.0)
            .to_string();
        let tarball = package
            .files
            .iter()
            .find(|file| file.name().contains(".orig.tar."))?
            .clone();
        Some(SourceRelease {
            major,
            upstream,
            package,
            tarball,
        })
    }
}

/// Every PostgreSQL release tarball in Debian's suites, newest first per major.
pub fn source_releases() -> Result<Vec<SourceRelease>, Failure> {
    let mut releases = Vec::new();
    let mut errors = Vec::new();
    for suite in SUITES {
        match debian::source_packages(suite, &|name| name.starts_with("postgresql-")) {
            Ok(packages) => {
                releases.extend(packages.into_iter().filter_map(SourceRelease::from_package))
            }
            Err(e) => errors.push(e),
        }
    }
    if releases.is_empty() {
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
    }
    releases.sort_by(|a, b| {
        major_number(&b.major)
            .total_cmp(&major_number(&a.major))
            .then_with(|| debian::compare_versions(&b.package.version, &a.package.version))
    });
    Ok(releases)
}

fn major_number(major: &str) -> f64 {
    major.parse().unwrap_or(0.0)
}

/// The newest release per major, newest major first.
pub fn newest_per_major(releases: &[SourceRelease]) -> Vec<&SourceRelease> {
    let mut newest: Vec<&SourceRelease> = Vec::new();
    for release in releases {
        if newest.last().is_none_or(|last| last.major != release.major) {
            newest.push(release);
        }
    }
    newest
}

/// The release `wanted` names among Debian's, if one is reachable.
fn find<'a>(releases: &'a [SourceRelease], wanted: &Wanted) -> Option<&'a SourceRelease> {
    match wanted {
        Wanted::Zonky => None,
        Wanted::Major(major) => releases.iter().find(|r| &r.major == major),
        Wanted::Exact { major, release } => releases
            .iter()
            .find(|r| &r.major == major && &r.release() == release),
    }
}

/// Checks that `version` can be had, without downloading or building it: a later major or
/// release must be published by zonky or carried by one of Debian's suites.
pub fn check(version: &str) -> Result<(), Failure> {
    match locate(version)? {
        Located::Zonky => download::check_published(version),
        Located::Source(_) => Ok(()),
    }
}

/// Where `version`'s binaries come from.
enum Located {
    Zonky,
    Source(Box<SourceRelease>),
}

fn locate(version: &str) -> Result<Located, Failure> {
    let wanted = parse(version).ok_or_else(|| unknown_version(version))?;
    let major = match &wanted {
        Wanted::Zonky => return Ok(Located::Zonky),
        Wanted::Major(major) => major.clone(),
        Wanted::Exact { major, .. } => major.clone(),
    };
    if matches!(wanted, Wanted::Major(_)) && download::newest_available(&major).is_ok() {
        return Ok(Located::Zonky);
    }
    let releases = source_releases()?;
    match find(&releases, &wanted) {
        Some(release) => Ok(Located::Source(Box::new(release.clone()))),
        None => Err(not_reachable(version, &releases)),
    }
}

/// The binaries of `version`: zonky's download, or a build of the release tarball (from the
/// cache when built before), announced in one line.
pub fn binaries(
    version: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Binaries, Failure> {
    let release = match locate(version)? {
        Located::Zonky => return download::binaries(version, events),
        Located::Source(release) => release,
    };
    let tarball = match debian::fetch_pool_file(&release.tarball, &sources_dir(), events) {
        Ok(tarball) => tarball,
        Err(e) => {
            let why = format!(
                "PostgreSQL {version}: zonky publishes no {} build and the source tarball is out of reach ({})",
                release.major,
                e.message()
            );
            return debian_build(&release, &why, events);
        }
    };
    let request = BuildRequest {
        source: tarball,
        cflags: None,
        configure: Vec::new(),
        patches: Vec::new(),
        origin: Some(release.describe()),
    };
    let why = format!(
        "PostgreSQL {version}: zonky publishes no {} build",
        release.major
    );
    events(SetupEvent::Note(&format!(
        "{why}; building {} (the newest reachable) from source, or taking it from the build cache",
        release.describe()
    )));
    let mut announce = |step: build::Step, seconds: Option<f64>| {
        if let Some(seconds) = seconds {
            events(SetupEvent::Note(&format!(
                "build: {} done in {seconds:.1} s",
                step.name()
            )));
        }
    };
    let built = build::build(&request, &mut announce)?;
    let seconds: f64 = built.record.steps.iter().map(|(_, s)| s).sum();
    let how = if built.cache_hit {
        "from the build cache".to_string()
    } else {
        format!("built in {seconds:.0} s")
    };
    events(SetupEvent::Note(&format!(
        "PostgreSQL {} {how}: {}",
        release.release(),
        built.binaries.bin_dir.display()
    )));
    Ok(built.binaries)
}

/// Debian's own build of the release (its binary packages, unpacked into the cache), when the
/// archive serves the packages but not the source tarball. Its flags are Debian's (`-O2`), not
/// stampede's: the report names the provenance of each target.
fn debian_build(
    release: &SourceRelease,
    why: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Binaries, Failure> {
    let major = &release.major;
    events(SetupEvent::Note(&format!(
        "{why}; using Debian's build of {} from its {} packages",
        release.upstream, release.package.suite
    )));
    let server = format!("postgresql-{major}");
    let client = format!("postgresql-client-{major}");
    // Experimental's packages are built against unstable's libraries.
    let suites: Vec<&str> = match release.package.suite.as_str() {
        "experimental" => vec!["experimental", "unstable"],
        suite => vec![suite],
    };
    let unpacked = debian_packages::unpack(&suites, &[&server, &client], events)?;
    let bin_dir = unpacked
        .root
        .join(format!("usr/lib/postgresql/{major}/bin"));
    let binaries = Binaries::at(&bin_dir)?;
    events(SetupEvent::Note(&format!(
        "PostgreSQL {}: {}",
        binaries.release(),
        unpacked.describe()
    )));
    Ok(binaries)
}

/// The suite whose client programs stampede takes when the machine has none: Debian's
/// development suite, which carries the newest released major.
const CLIENT_SUITE: &str = "unstable";

/// The bin/ directory of the newest PostgreSQL client programs stampede can get (pg_dump,
/// pg_restore, psql): the machine's own when its best binaries hold them, else Debian's
/// `postgresql-client` of the newest major its development suite carries, unpacked
/// self-contained into the cache. zonky's builds hold the server alone, and a newer pg_dump
/// dumps every older server.
pub fn client_programs(events: &mut dyn FnMut(SetupEvent<'_>)) -> Result<PathBuf, Failure> {
    if let Ok(best) = Binaries::find_best() {
        if best.bin_dir.join("pg_dump").is_file() && best.bin_dir.join("pg_restore").is_file() {
            return Ok(best.bin_dir);
        }
    }
    debian_client_programs(events)
}

/// Debian's `postgresql-client` of the newest major its development suite carries, unpacked.
pub fn debian_client_programs(events: &mut dyn FnMut(SetupEvent<'_>)) -> Result<PathBuf, Failure> {
    let releases = source_releases()?;
    let major = newest_per_major(&releases)
        .into_iter()
        .find(|r| r.package.suite == CLIENT_SUITE)
        .map(|r| r.major.clone())
        .ok_or_else(|| {
            Failure::run(format!(
                "Debian's {CLIENT_SUITE} carries no PostgreSQL: install PostgreSQL's client programs (Debian and Ubuntu: apt-get install postgresql-client)"
            ))
        })?;
    let client = format!("postgresql-client-{major}");
    events(SetupEvent::Note(&format!(
        "client programs: Debian's {client} from {CLIENT_SUITE}"
    )));
    let unpacked = debian_packages::unpack(&[CLIENT_SUITE], &[&client], events)?;
    let bin_dir = unpacked
        .root
        .join(format!("usr/lib/postgresql/{major}/bin"));
    if !bin_dir.join("pg_dump").is_file() {
        return Err(Failure::run(format!(
            "{client} unpacked into {} holds no pg_dump",
            unpacked.root.display()
        )));
    }
    Ok(bin_dir)
}

/// Debian's own build of `version` (a major or an exact release) whatever zonky publishes, so
/// that releases built alike are compared (`postgres = { debian = "18" }` beside `"19"`).
pub fn debian_binaries(
    version: &str,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Binaries, Failure> {
    let release = debian_release(version)?;
    let why = format!("PostgreSQL {version}: Debian's build, as the target asks");
    debian_build(&release, &why, events)
}

/// Checks that Debian's suites carry `version`, without downloading its packages.
pub fn check_debian(version: &str) -> Result<(), Failure> {
    debian_release(version).map(|_| ())
}

fn debian_release(version: &str) -> Result<SourceRelease, Failure> {
    let wanted = match parse(version) {
        Some(Wanted::Zonky) if !version.contains('.') || version == "9.6" => {
            Wanted::Major(version.to_string())
        }
        Some(Wanted::Zonky) | None => return Err(unknown_version(version)),
        Some(wanted) => wanted,
    };
    let releases = source_releases()?;
    find(&releases, &wanted)
        .cloned()
        .ok_or_else(|| not_reachable(version, &releases))
}

/// Where release tarballs are kept once downloaded.
fn sources_dir() -> PathBuf {
    crate::server::host::cache_root().join("sources")
}

fn unknown_version(version: &str) -> Failure {
    Failure::input(format!(
        "unknown PostgreSQL version \"{version}\"; use a major (\"16\", \"19\"), an exact version (\"16.4.0\", \"19rc1\"), \"master\" or {{ git = …, ref = … }}"
    ))
}

/// Names what is reachable: zonky's majors and the releases Debian's suites carry.
fn not_reachable(version: &str, releases: &[SourceRelease]) -> Failure {
    let debian: Vec<String> = newest_per_major(releases)
        .iter()
        .map(|r| format!("{} ({})", r.major, r.upstream))
        .collect();
    let zonky = download::MAJORS;
    Failure::input(format!(
        "PostgreSQL {version} is not reachable: zonky (Maven Central) publishes {}–{}; Debian's source packages ({}) carry {}; a development branch builds from git with postgres = {{ git = \"…\", ref = \"master\" }}",
        zonky[0],
        zonky[zonky.len() - 1],
        SUITES.join(", "),
        if debian.is_empty() { "none".to_string() } else { debian.join(", ") }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_into_zonky_later_majors_and_exact_releases() {
        assert_eq!(parse("16"), Some(Wanted::Zonky));
        assert_eq!(parse("9.6.24"), Some(Wanted::Zonky));
        assert_eq!(parse("19"), Some(Wanted::Major("19".into())));
        assert_eq!(parse("20"), Some(Wanted::Major("20".into())));
        let exact = |release: &str| Wanted::Exact {
            major: "19".into(),
            release: release.into(),
        };
        assert_eq!(parse("19rc1"), Some(exact("19rc1")));
        assert_eq!(parse("19~beta2"), Some(exact("19beta2")));
        assert_eq!(parse("19.1"), Some(exact("19.1")));
        assert_eq!(parse("19.0.0"), Some(Wanted::Zonky));
        for refused in [
            "", "x", "9", "9.5", "19.", "19rc", "19.x", "19-1", "master", "1",
        ] {
            assert_eq!(parse(refused), None, "{refused}");
        }
    }

    #[test]
    fn a_debian_package_is_a_release_with_its_orig_tarball() {
        let file = |name: &str| PoolFile {
            archive: debian::Archive::Debian,
            path: format!("pool/main/p/postgresql-19/{name}"),
            size: 1,
            sha256: "00".into(),
        };
        let package = SourcePackage {
            suite: "experimental".into(),
            name: "postgresql-19".into(),
            version: "19~rc1-1".into(),
            files: vec![
                file("postgresql-19_19~rc1-1.dsc"),
                file("postgresql-19_19~rc1.orig.tar.bz2"),
            ],
        };
        let release = SourceRelease::from_package(package.clone()).unwrap();
        assert_eq!(release.major, "19");
        assert_eq!(release.upstream, "19~rc1");
        assert_eq!(release.release(), "19rc1");
        assert_eq!(
            release.describe(),
            "postgresql-19_19~rc1.orig.tar.bz2 (Debian experimental, postgresql-19 19~rc1-1)"
        );
        let common = SourcePackage {
            name: "postgresql-common".into(),
            ..package
        };
        assert!(SourceRelease::from_package(common).is_none());
    }
}
