//! sysbench's log: messages at a level (0 fatal … 5 debug) printed when `--verbosity` lets
//! them through, on standard output as sysbench prints them, with its prefixes.

use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Log {
    verbosity: i64,
    /// The last message printed and how often it came again since (sysbench prints a repeat
    /// once, as "(last message repeated N times)", when another message comes).
    last: Arc<Mutex<(String, u32)>>,
}

pub const FATAL: i64 = 0;
pub const ALERT: i64 = 1;
pub const WARNING: i64 = 2;
pub const NOTICE: i64 = 3;
pub const INFO: i64 = 4;
pub const DEBUG: i64 = 5;

impl Log {
    pub fn new(verbosity: i64) -> Log {
        Log {
            verbosity,
            last: Arc::default(),
        }
    }

    pub fn enabled(&self, level: i64) -> bool {
        level <= self.verbosity
    }

    /// One message at `level`, each of its lines with the level's prefix.
    pub fn text(&self, level: i64, message: &str) {
        if !self.enabled(level) {
            return;
        }
        let prefix = match level {
            FATAL => "FATAL: ",
            ALERT => "ALERT: ",
            WARNING => "WARNING: ",
            DEBUG => "DEBUG: ",
            _ => "",
        };
        let line = format!("{prefix}{message}");
        let mut last = self.last.lock().expect("the last message");
        let mut out = std::io::stdout().lock();
        if !line.is_empty() && last.0 == line {
            last.1 += 1;
            return;
        }
        if last.1 > 0 {
            let _ = writeln!(out, "(last message repeated {} times)", last.1);
        }
        *last = (line.clone(), 0);
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    pub fn fatal(&self, message: &str) {
        self.text(FATAL, message);
    }

    pub fn alert(&self, message: &str) {
        self.text(ALERT, message);
    }

    pub fn notice(&self, message: &str) {
        self.text(NOTICE, message);
    }
}
