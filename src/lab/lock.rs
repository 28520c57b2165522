//! One lab at a time per results: `lab run`, `lab resume` and `lab calibrate` hold an advisory
//! lock (flock) on a file beside the results database (`<results>.lock`, or `<name>.lock`
//! beside the spec when the results are in PostgreSQL) for as long as they run. A second one
//! is refused, naming the process that holds it; the kernel releases the lock when that
//! process ends in any way (SIGKILL and the OOM killer included), so `lab resume` after a crash
//! is never refused by a stale lock. The file itself stays: removing it would let a process
//! that opened it a moment before lock a file no one else sees.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use stampede_base::error::Failure;
use stampede_store::Location;

/// Held for the lab's lifetime; dropping it releases the lock.
pub struct LabLock {
    _file: File,
}

/// Where a lab's lock is: `<results>.lock` beside a SQLite file (whichever lab of it runs,
/// its calibration included); with PostgreSQL results, `<name>.lock` beside the spec (from the
/// clusters' root, `<name>.servers`).
pub fn lock_path(results: &Location, server_root: &Path) -> PathBuf {
    match results {
        Location::Sqlite(file) => PathBuf::from(format!("{}.lock", file.display())),
        Location::Postgres(_) => server_root.with_extension("lock"),
    }
}

impl LabLock {
    /// Takes the lock, or refuses: another lab holds it (its pid and name are in the file).
    pub fn acquire(path: &Path, lab_name: &str) -> Result<LabLock, Failure> {
        let cannot = |e: std::io::Error| {
            Failure::input(format!("could not lock {}: {e}", path.display())).caused_by(e)
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(cannot)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(held_by_another(&mut file, path)),
            Err(TryLockError::Error(e)) => return Err(cannot(e)),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}\n{lab_name}", std::process::id()))
            .map_err(cannot)?;
        Ok(LabLock { _file: file })
    }
}

/// "lab \"x\" is running as pid 4242 with these results (…); …".
fn held_by_another(file: &mut File, path: &Path) -> Failure {
    let mut holder = String::new();
    let _ = file.read_to_string(&mut holder);
    let mut lines = holder.lines();
    let pid = lines.next().unwrap_or("?");
    let name = lines.next().unwrap_or("?");
    Failure::input(format!(
        "lab \"{name}\" is running as pid {pid} with these results (lock {}); wait for it to end, or stop it and `stampede lab resume`",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = std::env::temp_dir().join(format!("stampede-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = lock_path(
            &Location::Sqlite(dir.join("r.db")),
            &dir.join("r.db.servers/calibration"),
        );
        assert_eq!(path, dir.join("r.db.lock"));
        let elsewhere = Location::Postgres("postgresql://h/results".into());
        assert_eq!(
            lock_path(&elsewhere, Path::new("/labs/nightly.servers")),
            Path::new("/labs/nightly.lock")
        );
        let first = LabLock::acquire(&path, "nightly").unwrap();
        let refused = LabLock::acquire(&path, "other").err().unwrap();
        assert_eq!(
            refused.message(),
            format!(
                "lab \"nightly\" is running as pid {} with these results (lock {}); wait for it to end, or stop it and `stampede lab resume`",
                std::process::id(),
                path.display()
            )
        );
        drop(first);
        let again = LabLock::acquire(&path, "other");
        assert!(again.is_ok());
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
