//! A server from Debian's binary packages, unpacked into the cache as zonky's builds are, never
//! installed system-wide: the packages asked for and the shared libraries they need (the
//! dependency closure through `lib*` packages, the C library included), each checked against
//! its signed list. A suite newer than this machine's needs its own C library, so every program
//! and library unpacked is patched (`patchelf`) to load the suite's dynamic loader and look
//! for libraries in the unpack first: the same binaries Debian ships, self-contained.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::{self as debian, BinaryPackage};
use crate::server::setup::SetupEvent;
use stampede_base::error::Failure;

/// The packages of a suite unpacked under `root`.
#[derive(Debug, Clone)]
pub struct Unpacked {
    pub root: PathBuf,
    pub suite: String,
    /// (name, version) of every package unpacked, the ones asked for first.
    pub packages: Vec<(String, String)>,
}

impl Unpacked {
    /// "mariadb-server-core 1:11.8.9+ds-4 (Debian unstable)".
    pub fn describe(&self) -> String {
        let (name, version) = &self.packages[0];
        format!(
            "{name} {version} ({}, unpacked)",
            debian::suites_label(&self.suite)
        )
    }
}

/// What Debian packages the binaries at `bin_dir` come from, if they are an unpack's.
pub fn record_of(bin_dir: &Path) -> Option<String> {
    let root = bin_dir
        .ancestors()
        .find(|dir| dir.join(RECORD_FILE).is_file())?;
    let text = std::fs::read_to_string(root.join(RECORD_FILE)).ok()?;
    let first = text.lines().next()?;
    let mut parts = first.split_whitespace();
    let (name, version) = (parts.next()?, parts.next()?);
    let suite = text.lines().find_map(|line| line.strip_prefix("suite "))?;
    Some(format!(
        "{}'s packages: {name} {version} ({}, unpacked by stampede)",
        debian::Archive::of(suite).0.label(),
        debian::suites_label(suite)
    ))
}

/// The record kept beside an unpack, so that a second use finds it.
const RECORD_FILE: &str = "stampede-packages.txt";

/// `wanted` from `suite` with the libraries they need, unpacked and patched (from the cache
/// when done before with the same package files).
pub fn unpack(
    suites: &[&str],
    wanted: &[&str],
    events: &mut dyn FnMut(SetupEvent<'_>),
) -> Result<Unpacked, Failure> {
    let suite = suites.join("+");
    // The same suites' signed indexes and the same request give the same packages: an unpack
    // made then is used without reading the (large) package lists again.
    let memo = resolution_memo(suites, wanted)?;
    if let Some(unpacked) = std::fs::read_to_string(&memo)
        .ok()
        .and_then(|root| recorded(Path::new(root.trim()), &suite))
    {
        return Ok(unpacked);
    }
    let indexes = suites
        .iter()
        .map(|suite| debian::binary_packages(suite))
        .collect::<Result<Vec<_>, _>>()?;
    let closure = closure(&indexes, wanted).map_err(|missing| {
        Failure::input(format!(
            "{} has no package {missing}",
            debian::suites_label(&suite)
        ))
    })?;
    let key = closure_key(&closure);
    let root = crate::server::host::cache_root()
        .join("debian-packages")
        .join(format!("{}-{key}", wanted[0]));
    let packages: Vec<(String, String)> = closure
        .iter()
        .map(|p| (p.name.clone(), p.version.clone()))
        .collect();
    let unpacked = Unpacked {
        root: root.clone(),
        suite: suite.clone(),
        packages,
    };
    if root.join(RECORD_FILE).is_file() {
        remember(&memo, &root)?;
        return Ok(unpacked);
    }
    need_tools()?;
    let downloads = crate::server::host::cache_root()
        .join("debian-packages")
        .join("debs");
    let partial = root.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let result = (|| {
        for package in &closure {
            let deb = debian::fetch_pool_file(&package.file, &downloads, events)?;
            run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&partial))?;
        }
        events(SetupEvent::Note(&format!(
            "unpacked {} packages of {}; pointing their programs at the unpacked libraries",
            closure.len(),
            debian::suites_label(&suite)
        )));
        make_self_contained(&partial, &root)?;
        let mut record: String = closure
            .iter()
            .map(|p| format!("{} {} {}\n", p.name, p.version, p.file.sha256))
            .collect();
        record.push_str(&format!("suite {suite}\n"));
        std::fs::write(partial.join(RECORD_FILE), record)
            .map_err(|e| Failure::run(format!("{}: {e}", partial.display())).caused_by(e))
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    run(Command::new("chmod").args(["-R", "a+rX"]).arg(&partial))?;
    crate::server::host::open_to_everyone(root.parent().expect("under the cache"))?;
    if std::fs::rename(&partial, &root).is_err() {
        // Another process unpacked the same packages meanwhile.
        let _ = std::fs::remove_dir_all(&partial);
    }
    remember(&memo, &root)?;
    Ok(unpacked)
}

/// Where the unpack of `wanted` from `suites`, at their current signed indexes, is remembered.
fn resolution_memo(suites: &[&str], wanted: &[&str]) -> Result<PathBuf, Failure> {
    let mut hasher = Sha256::new();
    for suite in suites {
        hasher.update(suite.as_bytes());
        hasher.update(debian::index_digest(suite)?.as_bytes());
    }
    for name in wanted {
        hasher.update(b"\0");
        hasher.update(name.as_bytes());
    }
    let key = crate::server::fetch::hex(&hasher.finalize()[..12]);
    Ok(crate::server::host::cache_root()
        .join("debian-packages")
        .join("resolved")
        .join(key))
}

fn remember(memo: &Path, root: &Path) -> Result<(), Failure> {
    let dir = memo
        .parent()
        .expect("the memo file is named under resolved/, never a root");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(memo, root.display().to_string()))
        .map_err(|e| Failure::run(format!("{}: {e}", memo.display())).caused_by(e))
}

/// The unpack at `root`, from its record, if it is complete.
fn recorded(root: &Path, suite: &str) -> Option<Unpacked> {
    let text = std::fs::read_to_string(root.join(RECORD_FILE)).ok()?;
    let packages = text
        .lines()
        .filter(|line| !line.starts_with("suite "))
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect();
    Some(Unpacked {
        root: root.to_path_buf(),
        suite: suite.to_string(),
        packages,
    })
}

/// The packages `wanted` names with every library package they depend on, transitively; the
/// name of a dependency no package satisfies is the error. Packages that are not libraries
/// (configuration, scripts, debconf) are left out: stampede runs the programs itself. `suites`
/// are in order: the wanted packages come from the first that has them, the libraries from the
/// last (experimental's packages are built against unstable's libraries).
fn closure<'a>(
    suites: &'a [Vec<BinaryPackage>],
    wanted: &[&str],
) -> Result<Vec<&'a BinaryPackage>, String> {
    let maps: Vec<Names<'a>> = suites.iter().map(|index| Names::of(index)).collect();
    let find_wanted = |name: &str| maps.iter().find_map(|names| names.find(name));
    let find_library = |name: &str| maps.iter().rev().find_map(|names| names.find(name));
    let mut chosen: Vec<&BinaryPackage> = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut queue: VecDeque<&BinaryPackage> = VecDeque::new();
    for name in wanted {
        let package = find_wanted(name).ok_or_else(|| name.to_string())?;
        if seen.insert(&package.name) {
            queue.push_back(package);
        }
    }
    while let Some(package) = queue.pop_front() {
        chosen.push(package);
        for group in &package.depends {
            let dependency = group.iter().find_map(|name| {
                if wanted.contains(&name.as_str()) {
                    find_wanted(name)
                } else {
                    find_library(name)
                }
            });
            let Some(dependency) = dependency else {
                if group.iter().any(|name| is_library(name)) {
                    return Err(group.join(" | "));
                }
                continue;
            };
            if (is_library(&dependency.name) || wanted.contains(&dependency.name.as_str()))
                && seen.insert(&dependency.name)
            {
                queue.push_back(dependency);
            }
        }
    }
    Ok(chosen)
}

/// A suite's packages by name and by the virtual names they provide (the newest version wins).
struct Names<'a> {
    by_name: BTreeMap<&'a str, &'a BinaryPackage>,
    providers: BTreeMap<&'a str, &'a BinaryPackage>,
}

impl<'a> Names<'a> {
    fn of(index: &'a [BinaryPackage]) -> Names<'a> {
        let mut by_name: BTreeMap<&str, &BinaryPackage> = BTreeMap::new();
        for package in index {
            let newer = by_name.get(package.name.as_str()).is_none_or(|known| {
                debian::compare_versions(&package.version, &known.version).is_gt()
            });
            if newer {
                by_name.insert(&package.name, package);
            }
        }
        let mut providers: BTreeMap<&str, &BinaryPackage> = BTreeMap::new();
        for package in by_name.values() {
            for virtual_name in &package.provides {
                providers.entry(virtual_name).or_insert(package);
            }
        }
        Names { by_name, providers }
    }

    fn find(&self, name: &str) -> Option<&'a BinaryPackage> {
        self.by_name
            .get(name)
            .or_else(|| self.providers.get(name))
            .copied()
    }
}

/// Debian names shared-library packages `lib…` (zlib's is the exception); Perl modules share
/// the prefix but are not libraries a server loads.
fn is_library(name: &str) -> bool {
    (name.starts_with("lib") && !name.ends_with("-perl") && !name.ends_with("-bin"))
        || name == "zlib1g"
}

/// The cache key: the package files' digests.
fn closure_key(closure: &[&BinaryPackage]) -> String {
    let mut digests: Vec<&str> = closure.iter().map(|p| p.file.sha256.as_str()).collect();
    digests.sort();
    let mut hasher = Sha256::new();
    for digest in digests {
        hasher.update(digest.as_bytes());
    }
    crate::server::fetch::hex(&hasher.finalize()[..8])
}

/// Points every ELF program under `tree` (which will live at `root`) at the unpacked dynamic
/// loader and library directories. A program's `DT_RPATH` serves every library it loads, and
/// the libraries a server loads later (extensions), so libraries themselves stay as shipped.
fn make_self_contained(tree: &Path, root: &Path) -> Result<(), Failure> {
    let rpath: Vec<String> = LIBRARY_DIRS
        .iter()
        .filter(|dir| tree.join(dir).is_dir())
        .map(|dir| root.join(dir).display().to_string())
        .collect();
    let rpath = rpath.join(":");
    let loader = LIBRARY_DIRS
        .iter()
        .chain(&["lib64", "usr/lib64"])
        .map(|dir| Path::new(dir).join("ld-linux-x86-64.so.2"))
        .find_map(|path| resolve_in_tree(tree, &path))
        .map(|path| root.join(path));
    let mut files = Vec::new();
    collect_elf_files(tree, &mut files)?;
    for file in files {
        if !has_interpreter(&file)? {
            continue;
        }
        let mut command = Command::new("patchelf");
        command.arg("--force-rpath").arg("--set-rpath").arg(&rpath);
        if let Some(loader) = &loader {
            command.arg("--set-interpreter").arg(loader);
        }
        run(command.arg(&file))?;
    }
    Ok(())
}

/// Where Debian's packages put shared libraries (merged /usr and not).
const LIBRARY_DIRS: [&str; 4] = [
    "usr/lib/x86_64-linux-gnu",
    "lib/x86_64-linux-gnu",
    "usr/lib",
    "lib",
];

/// `relative` under `tree` with symbolic links followed inside the tree (an absolute link
/// target means the tree's own file, not the system's), if it leads to a file.
fn resolve_in_tree(tree: &Path, relative: &Path) -> Option<PathBuf> {
    let mut current = relative.to_path_buf();
    for _ in 0..16 {
        let full = tree.join(&current);
        let metadata = std::fs::symlink_metadata(&full).ok()?;
        if !metadata.file_type().is_symlink() {
            return metadata.is_file().then_some(current);
        }
        let target = std::fs::read_link(&full).ok()?;
        current = match target.strip_prefix("/") {
            Ok(absolute) => absolute.to_path_buf(),
            Err(_) => current.parent()?.join(target),
        };
    }
    None
}

fn collect_elf_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Failure::run(format!("{}: {e}", dir.display())).caused_by(e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_elf_files(&path, files)?;
        } else if kind.is_file() && is_elf(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

/// Whether the ELF file names a dynamic loader (a program, not a library).
fn has_interpreter(path: &Path) -> Result<bool, Failure> {
    let output = Command::new("patchelf")
        .arg("--print-interpreter")
        .arg(path)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| Failure::input(format!("patchelf: {e}")).caused_by(e))?;
    Ok(output.status.success() && !output.stdout.is_empty())
}

fn need_tools() -> Result<(), Failure> {
    for (tool, package) in [("patchelf", "patchelf"), ("dpkg-deb", "dpkg")] {
        crate::server::host::need_tool_for("unpacking Debian's packages", tool, package)?;
    }
    Ok(())
}

fn run(command: &mut Command) -> Result<(), Failure> {
    let output = command
        .output()
        .map_err(|e| Failure::run(format!("{command:?}: {e}")).caused_by(e))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Failure::run(format!(
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use debian::PoolFile;

    fn package(name: &str, depends: &[&[&str]]) -> BinaryPackage {
        BinaryPackage {
            name: name.into(),
            version: "1".into(),
            depends: depends
                .iter()
                .map(|group| group.iter().map(|n| n.to_string()).collect())
                .collect(),
            provides: Vec::new(),
            file: PoolFile {
                archive: debian::Archive::Debian,
                path: format!("pool/{name}.deb"),
                size: 1,
                sha256: name.into(),
            },
        }
    }

    #[test]
    fn the_closure_takes_libraries_and_leaves_scaffolding() {
        let index = vec![
            package(
                "postgresql-19",
                &[
                    &["postgresql-client-19"],
                    &["postgresql-common"],
                    &["libc6"],
                    &["libicu78"],
                    &["debconf", "debconf-2.0"],
                ],
            ),
            package("postgresql-client-19", &[&["libpq5"], &["perl"]]),
            package("postgresql-common", &[&["perl"]]),
            package("libpq5", &[&["libc6"], &["libssl3t64"]]),
            package("libicu78", &[&["libc6"], &["libstdc++6"]]),
            package("libstdc++6", &[&["libc6"], &["libgcc-s1"]]),
            package("libgcc-s1", &[&["libc6"]]),
            package("libc6", &[&["libgcc-s1"]]),
            package("libssl3t64", &[&["libc6"]]),
            package("perl", &[]),
            package("debconf", &[]),
        ];
        let index = vec![index];
        let names: Vec<&str> = closure(&index, &["postgresql-19", "postgresql-client-19"])
            .unwrap()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "postgresql-19",
                "postgresql-client-19",
                "libc6",
                "libicu78",
                "libpq5",
                "libgcc-s1",
                "libstdc++6",
                "libssl3t64"
            ]
        );
        assert_eq!(
            closure(&index, &["mariadb-server-core"]).unwrap_err(),
            "mariadb-server-core"
        );
        let broken = vec![vec![package("server", &[&["libgone1"]])]];
        assert_eq!(closure(&broken, &["server"]).unwrap_err(), "libgone1");
    }
}
