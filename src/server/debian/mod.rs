//! Debian's archive (and Ubuntu's, which has the same layout) as a source of releases stampede
//! does not find elsewhere: a suite's signed index (`InRelease`, checked with `gpgv` against the
//! archive's keyring), the package lists it names (checked by the digests the signed index
//! gives) and files of the pool (checked by the digests the lists give). Nothing unchecked is
//! used. A suite is a Debian suite's name (`bookworm`) or `ubuntu/` and an Ubuntu one's
//! (`ubuntu/jammy-updates`). Ubuntu's keys come from Debian's `ubuntu-keyring` package, taken
//! through Debian's signed archive, when the system has none. Indexes are cached under the
//! cache root and refreshed after an hour; when the archive is out of reach the cached ones
//! serve. `packages` unpacks a server from the binary packages found here, for either engine.

pub mod packages;

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::server::fetch::get;
use crate::server::fetch::hex;
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

/// The keys that sign Debian's archive, as the `debian-archive-keyring` package installs them.
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Ubuntu's keys where its `ubuntu-keyring` package (Debian's or Ubuntu's) installs them.
const UBUNTU_KEYRING: &str = "usr/share/keyrings/ubuntu-archive-keyring.gpg";

/// The Debian suite whose `ubuntu-keyring` stampede takes when the system has no Ubuntu keys.
const UBUNTU_KEYRING_SUITE: &str = "trixie";

/// How long a downloaded index is used before the archive is asked again.
const INDEX_FRESH_FOR: Duration = Duration::from_secs(3600);

/// Which archive a suite is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Archive {
    Debian,
    Ubuntu,
}

impl Archive {
    /// The archive and the suite's name in it.
    pub fn of(suite: &str) -> (Archive, &str) {
        match suite.strip_prefix("ubuntu/") {
            Some(name) => (Archive::Ubuntu, name),
            None => (Archive::Debian, suite),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Archive::Debian => "Debian",
            Archive::Ubuntu => "Ubuntu",
        }
    }

    /// The mirror read (`STAMPEDE_DEBIAN_MIRROR`, `STAMPEDE_UBUNTU_MIRROR` override).
    fn mirror(self) -> String {
        let (variable, default) = match self {
            Archive::Debian => ("STAMPEDE_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
            Archive::Ubuntu => ("STAMPEDE_UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu"),
        };
        std::env::var(variable).unwrap_or_else(|_| default.into())
    }

    /// The components whose lists are read: Ubuntu keeps much of what Debian has in main
    /// (MariaDB among it) in universe.
    fn components(self) -> &'static [&'static str] {
        match self {
            Archive::Debian => &["main"],
            Archive::Ubuntu => &["main", "universe"],
        }
    }

    fn keyring(self) -> Result<PathBuf, Failure> {
        match self {
            Archive::Debian if Path::new(KEYRING).is_file() => Ok(KEYRING.into()),
            Archive::Debian => Err(Failure::input(format!(
                "checking Debian's signatures needs {KEYRING}; on Debian install debian-archive-keyring"
            ))),
            Archive::Ubuntu => ubuntu_keyring(),
        }
    }
}

/// "Debian unstable", "Ubuntu jammy-updates+jammy": suites joined by `+`, as users read them.
pub fn suites_label(suites: &str) -> String {
    let archive = Archive::of(suites).0;
    let names: Vec<&str> = suites
        .split('+')
        .map(|suite| Archive::of(suite).1)
        .collect();
    format!("{} {}", archive.label(), names.join("+"))
}

/// The suites an unpack of `suite`'s packages reads: an Ubuntu `-updates` (or `-security`)
/// pocket holds only what changed since the release, so the release's suite follows it.
pub fn with_release(suite: &str) -> Vec<String> {
    let (archive, name) = Archive::of(suite);
    match (archive, name.rsplit_once('-')) {
        (Archive::Ubuntu, Some((release, "updates" | "security"))) => {
            vec![suite.to_string(), format!("ubuntu/{release}")]
        }
        _ => vec![suite.to_string()],
    }
}

/// Ubuntu's archive keys: the system's, else Debian's `ubuntu-keyring` package unpacked into the
/// cache (its file checked through Debian's signed index, so the chain of trust holds).
fn ubuntu_keyring() -> Result<PathBuf, Failure> {
    let system = Path::new("/").join(UBUNTU_KEYRING);
    if system.is_file() {
        return Ok(system);
    }
    let dir = crate::server::host::cache_root()
        .join("debian")
        .join("ubuntu-keyring");
    let keyring = dir.join(UBUNTU_KEYRING);
    if keyring.is_file() {
        return Ok(keyring);
    }
    let package = binary_packages_named(UBUNTU_KEYRING_SUITE, &|name| name == "ubuntu-keyring")?
        .into_iter()
        .next()
        .ok_or_else(|| {
            Failure::run(format!(
                "Debian's {UBUNTU_KEYRING_SUITE} has no ubuntu-keyring package to check Ubuntu's signatures with"
            ))
        })?;
    let deb = fetch_pool_file(&package.file, &dir, &mut |_| {})?;
    let output = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&dir)
        .output()
        .map_err(|e| Failure::input(format!("dpkg-deb: {e}")).caused_by(e))?;
    if !output.status.success() || !keyring.is_file() {
        return Err(Failure::run(format!(
            "unpacking {}: {}",
            deb.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(keyring)
}

/// A file of the archive's pool with the digest its list gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolFile {
    pub archive: Archive,
    /// The path under the mirror, e.g. `pool/main/p/postgresql-19/postgresql-19_19~rc1.orig.tar.bz2`.
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl PoolFile {
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// One source package of a suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePackage {
    pub suite: String,
    pub name: String,
    pub version: String,
    pub files: Vec<PoolFile>,
}

/// The source packages of `suite` whose name `wanted` accepts.
pub fn source_packages(
    suite: &str,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<SourcePackage>, Failure> {
    let text = component_lists(suite, "source/Sources.xz")?;
    Ok(stanzas(&text)
        .filter(|stanza| field(stanza, "Package").is_some_and(wanted))
        .filter_map(|stanza| source_package(suite, stanza))
        .collect())
}

fn source_package(suite: &str, stanza: &str) -> Option<SourcePackage> {
    let directory = field(stanza, "Directory")?;
    let files = multiline_field(stanza, "Checksums-Sha256")
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let sha256 = parts.next()?.to_string();
            let size = parts.next()?.parse().ok()?;
            let name = parts.next()?;
            Some(PoolFile {
                archive: Archive::of(suite).0,
                path: format!("{directory}/{name}"),
                size,
                sha256,
            })
        })
        .collect();
    Some(SourcePackage {
        suite: suite.into(),
        name: field(stanza, "Package")?.into(),
        version: field(stanza, "Version")?.into(),
        files,
    })
}

/// One binary package of a suite, as its list describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryPackage {
    pub name: String,
    pub version: String,
    /// `Pre-Depends` and `Depends`, each a list of alternatives (the names only).
    pub depends: Vec<Vec<String>>,
    /// The virtual packages it provides.
    pub provides: Vec<String>,
    pub file: PoolFile,
}

/// The binary packages of `suite` for this machine's architecture.
pub fn binary_packages(suite: &str) -> Result<Vec<BinaryPackage>, Failure> {
    binary_packages_named(suite, &|_| true)
}

/// The binary packages of `suite` whose name `wanted` accepts.
pub fn binary_packages_named(
    suite: &str,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<BinaryPackage>, Failure> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let text = component_lists(suite, &format!("binary-{arch}/Packages.xz"))?;
    let archive = Archive::of(suite).0;
    Ok(stanzas(&text)
        .filter(|stanza| field(stanza, "Package").is_some_and(wanted))
        .filter_map(|stanza| binary_package(archive, stanza))
        .collect())
}

/// `list` (under each component) of `suite`, every component's text one after the other.
fn component_lists(suite: &str, list: &str) -> Result<String, Failure> {
    let mut text = String::new();
    for component in Archive::of(suite).0.components() {
        text.push_str(&package_list(suite, &format!("{component}/{list}"))?);
        text.push_str("\n\n");
    }
    Ok(text)
}

fn binary_package(archive: Archive, stanza: &str) -> Option<BinaryPackage> {
    let names = |value: Option<&str>| -> Vec<Vec<String>> {
        value
            .unwrap_or("")
            .split(',')
            .filter(|group| !group.trim().is_empty())
            .map(|group| {
                group
                    .split('|')
                    .map(|alternative| {
                        let name = alternative.split_whitespace().next().unwrap_or("");
                        name.split(':').next().unwrap_or(name).to_string()
                    })
                    .collect()
            })
            .collect()
    };
    let mut depends = names(field(stanza, "Pre-Depends"));
    depends.extend(names(field(stanza, "Depends")));
    Some(BinaryPackage {
        name: field(stanza, "Package")?.into(),
        version: field(stanza, "Version")?.into(),
        depends,
        provides: names(field(stanza, "Provides"))
            .into_iter()
            .flatten()
            .collect(),
        file: PoolFile {
            archive,
            path: field(stanza, "Filename")?.into(),
            size: field(stanza, "Size")?.parse().ok()?,
            sha256: field(stanza, "SHA256")?.into(),
        },
    })
}

/// Downloads `file` into `dir` (kept there: a second call finds it), its digest checked.
pub fn fetch_pool_file(
    file: &PoolFile,
    dir: &Path,
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<PathBuf, Failure> {
    let target = dir.join(file.name());
    if target.is_file() && crate::server::fetch::file_sha256(&target)? == file.sha256 {
        return Ok(target);
    }
    let url = format!("{}/{}", file.archive.mirror(), file.path);
    let what = format!(
        "downloading {} from {}'s archive",
        file.name(),
        file.archive.label()
    );
    let bytes = stampede_conn::control_runtime()
        .block_on(crate::server::fetch::fetch_with_progress(
            &url, &what, events,
        ))
        .map_err(|e| Failure::run(format!("downloading {url}: {e}")).caused_by(e))?;
    check_digest(file.archive, file.name(), &bytes, &file.sha256)?;
    write_atomically(&target, &bytes)?;
    Ok(target)
}

/// The digest of `suite`'s signed index as it stands (cached for an hour): what identifies the
/// suite's lists.
pub fn index_digest(suite: &str) -> Result<String, Failure> {
    let dir = crate::server::host::cache_root().join("debian").join(suite);
    Ok(hex(&Sha256::digest(signed_index(suite, &dir)?.as_bytes())))
}

/// The text of `path` (an `.xz` list) in `suite`, checked against the signed index.
fn package_list(suite: &str, path: &str) -> Result<String, Failure> {
    let dir = crate::server::host::cache_root().join("debian").join(suite);
    let release = signed_index(suite, &dir)?;
    let (archive, name) = Archive::of(suite);
    let sha256 = listed_digest(&release, path).ok_or_else(|| {
        Failure::run(format!(
            "{}'s {name} index does not list {path}; the suite may not exist",
            archive.label()
        ))
    })?;
    let cached = dir.join(path.replace('/', "_"));
    let unpacked = unpacked_path(&cached, &sha256);
    if let Ok(text) = std::fs::read_to_string(&unpacked) {
        return Ok(text);
    }
    let bytes = match std::fs::read(&cached) {
        Ok(bytes) if hex(&Sha256::digest(&bytes)) == sha256 => bytes,
        _ => {
            let url = format!("{}/dists/{name}/{path}", archive.mirror());
            let bytes = get(&url)?;
            check_digest(archive, path, &bytes, &sha256)?;
            write_atomically(&cached, &bytes)?;
            bytes
        }
    };
    let text = unxz(&bytes).map_err(|e| e.map_message(|m| format!("{suite} {path}: {m}")))?;
    keep_unpacked(&cached, &unpacked, &text);
    Ok(text)
}

/// Where the list whose compressed digest is `sha256` is kept unpacked: xz takes about two
/// seconds a suite, and resolving one release reads every suite's list.
fn unpacked_path(cached: &Path, sha256: &str) -> PathBuf {
    let name = cached.file_name().unwrap_or_default().to_string_lossy();
    cached.with_file_name(format!("{name}.{}.txt", &sha256[..16.min(sha256.len())]))
}

/// Keeps `text` at `unpacked`, and drops the unpacked texts of the list's earlier versions. A
/// cache that cannot be written only costs the next resolve its xz.
fn keep_unpacked(cached: &Path, unpacked: &Path, text: &str) {
    let prefix = format!(
        "{}.",
        cached.file_name().unwrap_or_default().to_string_lossy()
    );
    let dir = cached.parent().expect("a file in a directory");
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix) && name.ends_with(".txt") && entry.path() != unpacked {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let _ = write_atomically(unpacked, text.as_bytes());
}

/// The signed part of `suite`'s `InRelease`, its signature checked; from the cache when fresh or
/// when the archive does not answer.
fn signed_index(suite: &str, dir: &Path) -> Result<String, Failure> {
    let cached = dir.join("InRelease");
    let fresh = std::fs::metadata(&cached)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age < INDEX_FRESH_FOR);
    if !fresh {
        let (archive, name) = Archive::of(suite);
        let url = format!("{}/dists/{name}/InRelease", archive.mirror());
        match get(&url) {
            Ok(bytes) => {
                verify_signature(&bytes, suite)?;
                write_atomically(&cached, &bytes)?;
            }
            Err(e) if !cached.is_file() => return Err(e),
            Err(_) => {}
        }
    }
    let bytes = std::fs::read(&cached)
        .map_err(|e| Failure::run(format!("{}: {e}", cached.display())).caused_by(e))?;
    verify_signature(&bytes, suite)
}

/// `gpgv` on a clear-signed index: the signed text when a key of the archive keyring made it.
fn verify_signature(signed: &[u8], suite: &str) -> Result<String, Failure> {
    let (archive, name) = Archive::of(suite);
    let keyring = archive.keyring()?;
    let output = filter(
        Command::new("gpgv")
            .arg("--keyring")
            .arg(&keyring)
            .args(["--output", "-", "-"]),
        signed,
        &format!("checking {}'s signatures needs gpgv", archive.label()),
        "gpgv",
    )?;
    if !output.status.success() {
        return Err(Failure::run(format!(
            "{}'s {name} index has no good signature from the archive keyring: {}",
            archive.label(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `command` fed `input` on stdin, its output collected; a program that is not there is named
/// with the package that has it.
fn filter(
    command: &mut Command,
    input: &[u8],
    needs: &str,
    package: &str,
) -> Result<std::process::Output, Failure> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Failure::input(format!("{needs}: {e}; on Debian install {package}")).caused_by(e)
        })?;
    let mut stdin = child.stdin.take().expect("spawned with this stream piped");
    let input = input.to_vec();
    // Written from a thread: the child's output may fill its pipe before it reads all input.
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let output = child
        .wait_with_output()
        .map_err(|e| Failure::run(format!("{command:?}: {e}")).caused_by(e))?;
    let _ = writer.join();
    Ok(output)
}

/// The sha256 the signed index gives for `path`.
fn listed_digest(release: &str, path: &str) -> Option<String> {
    multiline_field(release, "SHA256").find_map(|line| {
        let mut parts = line.split_whitespace();
        let digest = parts.next()?;
        let _size = parts.next()?;
        (parts.next()? == path).then(|| digest.to_string())
    })
}

fn check_digest(archive: Archive, what: &str, bytes: &[u8], expected: &str) -> Result<(), Failure> {
    let actual = hex(&Sha256::digest(bytes));
    if actual == expected {
        return Ok(());
    }
    Err(Failure::run(format!(
        "{what} from {}'s archive has sha256 {actual}, its signed index says {expected}; nothing was used",
        archive.label()
    )))
}

fn unxz(bytes: &[u8]) -> Result<String, Failure> {
    let output = filter(
        Command::new("xz").arg("-dc"),
        bytes,
        "reading Debian's lists needs xz",
        "xz-utils",
    )?;
    if !output.status.success() {
        return Err(Failure::run(format!(
            "xz: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    String::from_utf8(output.stdout).map_err(|e| Failure::run(format!("not UTF-8: {e}")))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let dir = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::run(format!("{}: {e}", dir.display())).caused_by(e))?;
    crate::server::host::open_to_everyone(dir)?;
    let partial = dir.join(format!(
        ".{}.{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            Failure::run(format!("{}: {e}", path.display())).caused_by(e)
        })
}

/// The paragraphs of a control file (stanzas separated by blank lines).
fn stanzas(text: &str) -> impl Iterator<Item = &str> {
    text.split("\n\n").filter(|s| !s.trim().is_empty())
}

/// A single-line field's value.
fn field<'a>(stanza: &'a str, name: &str) -> Option<&'a str> {
    stanza.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (!line.starts_with(' ') && key == name).then(|| value.trim())
    })
}

/// A multi-line field's continuation lines.
fn multiline_field<'a>(stanza: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut lines = stanza.lines();
    let header = format!("{name}:");
    let found = lines.by_ref().any(|line| line.trim_end() == header);
    lines
        .take_while(move |line| found && line.starts_with(' '))
        .map(str::trim)
}

/// Debian's version order (`dpkg --compare-versions`): epoch, then the upstream version, then
/// the revision; `~` sorts before anything, even the end (`19~rc1` < `19`).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (a_epoch, a_upstream, a_revision) = version_parts(a);
    let (b_epoch, b_upstream, b_revision) = version_parts(b);
    a_epoch
        .cmp(&b_epoch)
        .then_with(|| compare_part(a_upstream, b_upstream))
        .then_with(|| compare_part(a_revision, b_revision))
}

fn version_parts(version: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) => (epoch.parse().unwrap_or(0), rest),
        None => (0, version),
    };
    match rest.rsplit_once('-') {
        Some((upstream, revision)) => (epoch, upstream, revision),
        None => (epoch, rest, ""),
    }
}

fn compare_part(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    while !a.is_empty() || !b.is_empty() {
        let a_text = a.iter().take_while(|c| !c.is_ascii_digit()).count();
        let b_text = b.iter().take_while(|c| !c.is_ascii_digit()).count();
        let text = (0..a_text.max(b_text)).map(|i| {
            (
                a.get(i).filter(|_| i < a_text),
                b.get(i).filter(|_| i < b_text),
            )
        });
        for (x, y) in text {
            match char_order(x).cmp(&char_order(y)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        (a, b) = (&a[a_text..], &b[b_text..]);
        let a_digits = a.iter().take_while(|c| c.is_ascii_digit()).count();
        let b_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let number = |digits: &[u8]| -> u128 {
            std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0)
        };
        match number(&a[..a_digits]).cmp(&number(&b[..b_digits])) {
            Ordering::Equal => {}
            other => return other,
        }
        (a, b) = (&a[a_digits..], &b[b_digits..]);
    }
    Ordering::Equal
}

/// dpkg's weights: `~` first, then the end of the part, then letters, then everything else.
fn char_order(c: Option<&u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_alphabetic() => i32::from(*c),
        Some(c) => i32::from(*c) + 256,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ubuntu_suites_name_their_archive_and_pockets_read_their_release() {
        assert_eq!(Archive::of("ubuntu/jammy"), (Archive::Ubuntu, "jammy"));
        assert_eq!(Archive::of("bookworm"), (Archive::Debian, "bookworm"));
        assert_eq!(
            with_release("ubuntu/jammy-updates"),
            ["ubuntu/jammy-updates", "ubuntu/jammy"]
        );
        assert_eq!(with_release("unstable"), ["unstable"]);
        assert_eq!(
            suites_label("ubuntu/jammy-updates+ubuntu/jammy"),
            "Ubuntu jammy-updates+jammy"
        );
        assert_eq!(suites_label("unstable"), "Debian unstable");
    }

    #[test]
    fn versions_order_as_dpkg_orders_them() {
        let ascending = [
            "19~beta2-1",
            "19~rc1-1",
            "19.0-1",
            "19.0-2",
            "19.1-1",
            "19.10-1",
            "1:18.0-1",
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                compare_versions(pair[0], pair[1]),
                Ordering::Less,
                "{pair:?}"
            );
            assert_eq!(
                compare_versions(pair[1], pair[0]),
                Ordering::Greater,
                "{pair:?}"
            );
        }
        assert_eq!(compare_versions("19~rc1", "19"), Ordering::Less);
        assert_eq!(compare_versions("1.0a", "1.0"), Ordering::Greater);
        assert_eq!(
            compare_versions("11.8.9+ds-4", "11.8.9+ds-4"),
            Ordering::Equal
        );
    }

    #[test]
    fn a_packages_stanza_gives_its_dependencies_and_file() {
        let stanza = "Package: mariadb-server-core\nVersion: 1:11.8.9+ds-4\nPre-Depends: libc6 (>= 2.43)\nDepends: mariadb-common (>= 1:11.8.9+ds-4), libaio1t64 (>= 0.3.93) | libaio1:amd64, zlib1g\nProvides: virtual-mysql-server-core\nFilename: pool/main/m/mariadb/mariadb-server-core_11.8.9+ds-4_amd64.deb\nSize: 100\nSHA256: ab\n";
        let package = binary_package(Archive::Debian, stanza).unwrap();
        assert_eq!(package.version, "1:11.8.9+ds-4");
        assert_eq!(
            package.depends,
            vec![
                vec!["libc6".to_string()],
                vec!["mariadb-common".to_string()],
                vec!["libaio1t64".to_string(), "libaio1".to_string()],
                vec!["zlib1g".to_string()],
            ]
        );
        assert_eq!(package.provides, vec!["virtual-mysql-server-core"]);
        assert_eq!(
            package.file.name(),
            "mariadb-server-core_11.8.9+ds-4_amd64.deb"
        );
    }

    #[test]
    fn a_sources_stanza_gives_its_files_with_their_digests() {
        let list = "Package: postgresql-19\nVersion: 19~rc1-1\nChecksums-Sha256:\n aa 4903 postgresql-19_19~rc1-1.dsc\n bb 23831435 postgresql-19_19~rc1.orig.tar.bz2\nDirectory: pool/main/p/postgresql-19\n\nPackage: other\nVersion: 1\n";
        let stanza = stanzas(list).next().unwrap();
        let package = source_package("experimental", stanza).unwrap();
        assert_eq!(package.version, "19~rc1-1");
        assert_eq!(package.files.len(), 2);
        assert_eq!(
            package.files[1].path,
            "pool/main/p/postgresql-19/postgresql-19_19~rc1.orig.tar.bz2"
        );
        assert_eq!(package.files[1].name(), "postgresql-19_19~rc1.orig.tar.bz2");
        assert_eq!(package.files[1].size, 23831435);
        assert_eq!(stanzas(list).count(), 2);
        let release = "Suite: experimental\nSHA256:\n 1234 10 main/source/Sources.xz\n 5678 20 main/source/Sources.gz\n";
        assert_eq!(
            listed_digest(release, "main/source/Sources.xz").as_deref(),
            Some("1234")
        );
        assert_eq!(listed_digest(release, "main/nothing"), None);
    }
}
