//! What getting a server's binaries reports while it works — a download or a build from source
//! takes minutes — and how stderr shows it. The lab relays these events through its own; the
//! single commands show them directly.

use std::io::IsTerminal;
use std::time::Instant;

/// One thing getting binaries has to say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SetupEvent<'a> {
    /// A line for the user ("build: make done in 132.1 s").
    Note(&'a str),
    /// A download's bytes so far. It starts at 0 and ends with `done` equal to `total`.
    Download {
        what: &'a str,
        done: u64,
        total: Option<u64>,
    },
}

/// Shows setup events on stderr: notes as lines; a download as one line a terminal updates in
/// place, and elsewhere (a log, CI) a line when it starts and one when it ends.
pub struct SetupLine {
    terminal: bool,
    /// A terminal download line is open (not yet ended by a newline).
    open: bool,
    download_started: Option<Instant>,
}

impl SetupLine {
    pub fn on_stderr() -> SetupLine {
        SetupLine {
            terminal: std::io::stderr().is_terminal(),
            open: false,
            download_started: None,
        }
    }

    pub fn show(&mut self, event: SetupEvent<'_>) {
        match event {
            SetupEvent::Note(note) => {
                self.end_open_line();
                eprintln!("{note}");
            }
            SetupEvent::Download { what, done, total } => self.download(what, done, total),
        }
    }

    fn download(&mut self, what: &str, done: u64, total: Option<u64>) {
        if done == 0 {
            self.download_started = Some(Instant::now());
        }
        let finished = total.is_some_and(|total| done >= total);
        let size = match total {
            Some(total) => format!("{} of {}", mebibytes(done), mebibytes(total)),
            None => mebibytes(done),
        };
        if self.terminal {
            eprint!("\r\x1b[K{what}: {size}");
            self.open = !finished;
            if finished {
                eprintln!("{}", self.elapsed());
            }
        } else if done == 0 {
            let total = total.map_or(String::new(), |t| format!(" ({})", mebibytes(t)));
            eprintln!("{what}{total}...");
        } else if finished {
            eprintln!("{what}: {}{}", mebibytes(done), self.elapsed());
        }
    }

    fn elapsed(&self) -> String {
        self.download_started
            .map_or(String::new(), |started| took(started.elapsed()))
    }

    /// Ends an open download line before a caller prints its own.
    pub fn end_open_line(&mut self) {
        if self.open {
            eprintln!();
            self.open = false;
        }
    }
}

/// " in 2.3 s", or " in 43 ms" under a second: a download from a registry's cache nearby takes
/// milliseconds, which "0.0 s" would hide.
fn took(elapsed: std::time::Duration) -> String {
    if elapsed.as_secs_f64() < 1.0 {
        format!(" in {} ms", elapsed.as_millis().max(1))
    } else {
        format!(" in {:.1} s", elapsed.as_secs_f64())
    }
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_quick_download_says_its_milliseconds() {
        assert_eq!(took(Duration::from_millis(43)), " in 43 ms");
        assert_eq!(took(Duration::from_micros(200)), " in 1 ms");
        assert_eq!(took(Duration::from_millis(2345)), " in 2.3 s");
    }
}
