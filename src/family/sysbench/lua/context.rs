//! What the interpreters of one invocation share (`Shared`: the script, the options, the log,
//! the driver's target, the run), and what a native function finds about the interpreter that
//! calls it (`ThreadContext`).

use std::cell::RefCell;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::control::RunControl;
use super::log::Log;
use super::stats::Stats;
use super::target::Target;
use crate::family::sysbench::oltp_options::RandKind;
use crate::family::sysbench::sysbench_cmdline::{OptionDef, Options};

/// Where the script comes from.
#[derive(Debug, Clone)]
pub enum Script {
    File(String),
    /// A name `require` finds on the package path.
    Module(String),
    Stdin(String),
}

impl Script {
    /// The script a test name names: a file, else a module; standard input without one.
    pub fn locate(test: Option<&str>) -> Result<Script, String> {
        match test {
            None | Some("-") => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| format!("cannot read the script from the standard input: {e}"))?;
                Ok(Script::Stdin(text))
            }
            Some(name) if std::path::Path::new(name).is_file() => Ok(Script::File(name.into())),
            Some(name) => Ok(Script::Module(name.into())),
        }
    }

    pub fn is_stdin(&self) -> bool {
        matches!(self, Script::Stdin(_))
    }

    /// sysbench's name for the test: the file's base name, `<stdin>` for standard input.
    pub fn short_name(&self) -> String {
        match self {
            Script::File(path) | Script::Module(path) => std::path::Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.clone()),
            Script::Stdin(_) => "<stdin>".into(),
        }
    }

    pub(super) fn path(&self) -> Option<&str> {
        match self {
            Script::File(path) | Script::Module(path) => Some(path),
            Script::Stdin(_) => None,
        }
    }
}

/// What every interpreter of one invocation shares.
pub struct Shared {
    pub script: Script,
    pub log: Log,
    pub(super) options: RwLock<Options>,
    pub(super) legacy: AtomicBool,
    pub(super) declared: Mutex<Vec<OptionDef>>,
    /// Where `sysbench.sql.driver()` connects, resolved at its first use.
    pub(super) target: OnceLock<Result<Target, String>>,
    /// A database driver was created: reports carry SQL statistics.
    pub sql_used: AtomicBool,
    pub(super) unique: AtomicU32,
    pub seed: u64,
    pub run: OnceLock<Arc<RunControl>>,
}

impl Shared {
    pub fn new(script: Script, options: Options, log: Log) -> Shared {
        let seed = match options.int("rand_seed") {
            0 => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1),
            seed => seed as u64,
        };
        Shared {
            script,
            log,
            options: RwLock::new(options),
            legacy: AtomicBool::new(true),
            declared: Mutex::default(),
            target: OnceLock::new(),
            sql_used: AtomicBool::new(false),
            unique: AtomicU32::new(0),
            seed,
            run: OnceLock::new(),
        }
    }

    pub fn set_options(&self, options: Options, legacy: bool, declared: Vec<OptionDef>) {
        *self
            .options
            .write()
            .expect("no thread panics holding this lock") = options;
        self.legacy.store(legacy, Ordering::Relaxed);
        *self
            .declared
            .lock()
            .expect("no thread panics holding this lock") = declared;
    }

    pub fn options(&self) -> std::sync::RwLockReadGuard<'_, Options> {
        self.options
            .read()
            .expect("no thread panics holding this lock")
    }

    pub fn declared(&self) -> Vec<OptionDef> {
        self.declared
            .lock()
            .expect("no thread panics holding this lock")
            .clone()
    }

    pub fn target(&self) -> Result<&Target, String> {
        self.target
            .get_or_init(|| Target::from_options(&self.options()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// sysbench's `--rand-type` and its parameters.
    pub(super) fn rand_options(&self) -> RandSettings {
        let options = self.options();
        RandSettings {
            kind: RandKind::parse(&options.string("rand_type")).unwrap_or(RandKind::Special),
            spec_iter: options.int("rand_spec_iter").max(1) as u32,
            spec_pct: options.int("rand_spec_pct").max(1) as u32,
            spec_res: options.int("rand_spec_res").clamp(0, 99) as u32,
            pareto_h: options.double("rand_pareto_h"),
            zipfian_exp: Some(options.double("rand_zipfian_exp"))
                .filter(|e| *e > 0.0)
                .unwrap_or(0.8),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct RandSettings {
    pub(super) kind: RandKind,
    pub(super) spec_iter: u32,
    pub(super) spec_pct: u32,
    pub(super) spec_res: u32,
    pub(super) pareto_h: f64,
    pub(super) zipfian_exp: f64,
}

/// What a native function finds about the interpreter that calls it.
pub struct ThreadContext {
    pub shared: Arc<Shared>,
    /// The worker's number (`sysbench.tid`); 0 for the main thread.
    pub tid: usize,
    pub worker: bool,
    pub(super) runtime: OnceLock<tokio::runtime::Runtime>,
    pub(super) declared: RefCell<Option<Vec<OptionDef>>>,
    /// What the interpreter writes when it closes (`sysbench.report_json`'s closing bracket).
    pub(super) at_exit: RefCell<Vec<String>>,
}

impl ThreadContext {
    /// The thread's runtime for its connections' waits (created at the first connection).
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the thread's connections")
        })
    }

    pub fn stats(&self) -> Option<(&Stats, usize)> {
        self.shared
            .run
            .get()
            .filter(|_| self.worker)
            .map(|run| (&run.stats, self.tid))
    }
}
