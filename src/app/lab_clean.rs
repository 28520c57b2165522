//! `stampede lab clean SPEC`: the lab's clusters removed — each target's server folder under
//! `<results>.servers/` (a data directory of a few hundred MB each) — once no lab of these
//! results runs (it takes the lab's lock) and every server still running from them (a lab
//! killed before it could stop them) is stopped. The results database stays: reports,
//! history and gate read it, and `lab run` makes the clusters again when it needs them. On a
//! server the lab reaches by URL, the settings a killed lab left changed are put back and the
//! lab's own databases dropped. The Clusters a cloudnativepg target created and left (kept, or
//! a lab killed outright) are deleted with their volumes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::{CommandResult, Failure};
use crate::lab::lock::{lock_path, LabLock};
use crate::lab::spec;
use crate::lab::targets::{LabPlace, SpecTargets, Targets};

/// How long a server stopped here has to end before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(30);

pub fn clean(path: &Path) -> CommandResult {
    // A lab whose script files are gone is cleaned all the same.
    let spec =
        spec::load_as(path, spec::Scripts::Unchecked).map_err(|e| Failure::input(e.to_string()))?;
    let root = &spec.server_root;
    let remote: Vec<_> = spec
        .targets
        .iter()
        .filter(|t| !t.server.is_managed())
        .collect();

    if !root.exists() && remote.is_empty() {
        println!("nothing to clean: {} does not exist", root.display());
        return Ok(());
    }
    let _lock = LabLock::acquire(&lock_path(&spec.results, root), &spec.name)?;
    for target in remote {
        match target.server.clean() {
            Some(cleaned) => println!("target \"{}\": {}", target.name, cleaned?),
            None => clean_remote(&spec, target)?,
        }
    }
    if !root.exists() {
        return Ok(());
    }
    let stopped = stop_servers(root)?;
    let bytes = size_of(root);
    let clusters = std::fs::read_dir(root).map_or(0, |entries| {
        entries.flatten().filter(|e| e.path().is_dir()).count()
    });
    std::fs::remove_dir_all(root)
        .map_err(|e| Failure::run(format!("could not remove {}: {e}", root.display())))?;
    println!(
        "removed {}: {clusters} server folder(s), {:.1} MB{}; the results ({}) are kept",
        root.display(),
        bytes as f64 / 1e6,
        if stopped > 0 {
            format!(", {stopped} running server(s) stopped first")
        } else {
            String::new()
        },
        spec.results
    );
    Ok(())
}

/// A server the lab reaches: reached as a lab would (which puts back what a killed lab left
/// set) and handed back as at a lab's end (its databases of the lab's dropped).
fn clean_remote(spec: &spec::LabSpec, target: &spec::TargetSpec) -> Result<(), Failure> {
    let resolved = SpecTargets.resolve(target, &mut |_| {})?;
    let place = LabPlace {
        lab: &spec.name,
        root: spec.server_root.join(&target.name),
        max_clients: 1,
        keep_data: false,
        keep_clusters: false,
        notes: &|_| {},
        run_duration: spec.duration,
    };
    let server = SpecTargets.provision(resolved.as_ref(), target, &place)?;
    server.release(true);
    println!(
        "target \"{}\" ({}): its settings as they were, the lab's databases dropped",
        target.name,
        target.server.spec_text()
    );
    Ok(())
}

/// Stops every server whose pid file lies under `root` and whose process still runs there
/// (its working directory is its data directory): PostgreSQL by a fast shutdown (SIGINT),
/// MariaDB by SIGTERM, each killed when it has not ended within `STOP_LIMIT`.
fn stop_servers(root: &Path) -> Result<usize, Failure> {
    let mut stopped = 0;
    for pid_file in pid_files(root) {
        let Some(pid) = running_under(&pid_file, root) else {
            continue;
        };
        let signal = if pid_file.ends_with("postmaster.pid") {
            Signal::SIGINT
        } else {
            Signal::SIGTERM
        };
        println!("stopping the server of {} (pid {pid})", pid_file.display());
        stampede_base::sys::send_signal(pid, signal);
        let deadline = Instant::now() + STOP_LIMIT;
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if Path::new(&format!("/proc/{pid}")).exists() {
            stampede_base::sys::kill_now(pid);
        }
        stopped += 1;
    }
    Ok(stopped)
}

/// `postmaster.pid` and MariaDB's `*.pid` files under `root`.
fn pid_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(path),
                Ok(kind) if kind.is_file() && path.extension().is_some_and(|e| e == "pid") => {
                    found.push(path)
                }
                _ => {}
            }
        }
    }
    found
}

/// The pid a pid file names, when that process runs from a folder under `root` (a stale file's
/// pid may since belong to anything).
fn running_under(pid_file: &Path, root: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(pid_file).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    cwd.starts_with(&root).then_some(pid)
}

/// Bytes of the files under `path`.
fn size_of(path: &Path) -> u64 {
    let mut total = 0;
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => folders.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}
