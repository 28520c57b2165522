//! The ALTER SYSTEM changes a run of a url target made, written to the target's folder before
//! they are made and removed once they are put back: a lab killed in between (SIGKILL, a lost
//! machine) leaves the file, and the next `lab run`, `lab resume` or `lab clean` puts them back
//! before anything else touches the server.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use stampede_base::error::Failure;
use stampede_control::postgres::system_settings::SystemChange;

pub struct PutBack {
    path: PathBuf,
    /// What the current run set, until it is put back.
    applied: RefCell<Vec<SystemChange>>,
}

impl PutBack {
    pub fn in_folder(root: &Path) -> PutBack {
        PutBack {
            path: root.join("settings-to-put-back.json"),
            applied: RefCell::new(Vec::new()),
        }
    }

    /// A run's changes: journaled, then made by `apply`.
    pub fn begin_run(
        &self,
        changes: Vec<SystemChange>,
        apply: impl FnOnce(&[SystemChange]) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        self.record(&changes)?;
        let applied = apply(&changes);
        *self.applied.borrow_mut() = changes;
        applied
    }

    /// The run's changes put back by `restore`, and the journal removed.
    pub fn end_run(
        &self,
        restore: impl FnOnce(&[SystemChange]) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let applied = std::mem::take(&mut *self.applied.borrow_mut());
        if applied.is_empty() {
            return Ok(());
        }
        restore(&applied)?;
        self.done()
    }

    /// What a killed lab left changed, put back by `restore`, and the journal removed.
    pub fn left_over(
        &self,
        restore: impl FnOnce(&[SystemChange]) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let pending = self.pending()?;
        if !pending.is_empty() {
            restore(&pending)?;
        }
        self.done()
    }

    /// The changes a stopped lab left in place, if any.
    fn pending(&self) -> Result<Vec<SystemChange>, Failure> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.failure("read", e)),
        };
        let rows: Vec<(String, String, String, bool)> = serde_json::from_str(&text)
            .map_err(|e| Failure::run(format!("{}: {e}", self.path.display())))?;
        Ok(rows
            .into_iter()
            .map(|(name, value, before, in_auto_conf)| SystemChange {
                name,
                value,
                before,
                in_auto_conf,
            })
            .collect())
    }

    /// Written (and synced) before the changes are made.
    fn record(&self, changes: &[SystemChange]) -> Result<(), Failure> {
        let rows: Vec<_> = changes
            .iter()
            .map(|c| (&c.name, &c.value, &c.before, c.in_auto_conf))
            .collect();
        let text = serde_json::to_string_pretty(&rows)
            .expect("rows of strings and booleans always serialise");
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| self.failure("create", e))?;
        }
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut file = std::fs::File::create(&self.path)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        };
        write().map_err(|e| self.failure("write", e))
    }

    fn done(&self) -> Result<(), Failure> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.failure("remove", e)),
            _ => Ok(()),
        }
    }

    fn failure(&self, verb: &str, e: std::io::Error) -> Failure {
        Failure::run(format!("could not {verb} {}: {e}", self.path.display())).caused_by(e)
    }
}
