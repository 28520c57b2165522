//! A pod's output, framed for the launcher (`stampede_kube::frame`): standard output and standard
//! error are pipes read by two threads that write each line, framed, to the container's log;
//! at the end the run's `--json` document and the exit code follow.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use stampede_kube::frame::{encode, Frame};

/// Where a pod writes its `--json` document, for `finish` to frame (named by the launcher).
pub const JSON_ENV: &str = "STAMPEDE_JSON_FRAME";

/// A pod's stampede is its container's PID 1, which the kernel spares the default action of
/// SIGTERM: without a handler, deleting the Job would wait out the grace period. So SIGTERM
/// and SIGINT end the process (143 and 130, as a shell reports a signal's death).
pub fn exit_when_terminated() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                eprintln!("stampede: stopped by a signal (the Job was deleted?)");
                std::process::exit(if signal == SIGINT { 130 } else { 143 });
            }
        });
    }
}

/// The container's log, for frames a pod writes itself (`metrics_frame`).
static LOG: std::sync::OnceLock<Arc<Mutex<std::fs::File>>> = std::sync::OnceLock::new();

/// Writes a line of live numbers as an `M` frame; nothing when the output is not framed.
pub fn metrics_frame(json: &str) {
    if let Some(log) = LOG.get() {
        let mut log = log.lock().expect("no thread panics holding this lock");
        let _ = log.write_all(encode(&Frame::Metrics(json)).as_bytes());
        let _ = log.flush();
    }
}

pub struct FramedOutput {
    log: Arc<Mutex<std::fs::File>>,
    readers: Vec<JoinHandle<()>>,
}

impl FramedOutput {
    /// Puts pipes in place of standard output and error; None when that fails (the output
    /// then goes unframed, which the launcher shows as standard error).
    pub fn install() -> Option<FramedOutput> {
        let original = nix::unistd::dup(std::io::stdout()).ok()?;
        let log = Arc::new(Mutex::new(std::fs::File::from(original)));
        let (out_read, out_write) = nix::unistd::pipe().ok()?;
        let (err_read, err_write) = nix::unistd::pipe().ok()?;
        nix::unistd::dup2_stdout(&out_write).ok()?;
        nix::unistd::dup2_stderr(&err_write).ok()?;
        // fds 1 and 2 now hold the write ends; these copies close here.
        drop((out_write, err_write));
        let readers = vec![
            relay(out_read, log.clone(), |line| Frame::Stdout(line)),
            relay(err_read, log.clone(), |line| Frame::Stderr(line)),
        ];
        let _ = LOG.set(log.clone());
        Some(FramedOutput { log, readers })
    }

    /// Closes the pipes, waits for every line to be written, then frames the `--json` document
    /// (if the run wrote one) and the exit code.
    pub fn finish(self, code: i32) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // Point fds 1 and 2 back at the log: the pipes' last write ends close, the readers end.
        let log_fd = self
            .log
            .lock()
            .ok()
            .and_then(|log| log.try_clone().ok())
            .map(OwnedFd::from);
        if let Some(fd) = log_fd {
            let _ = nix::unistd::dup2_stdout(&fd);
            let _ = nix::unistd::dup2_stderr(&fd);
        }
        self.readers.into_iter().for_each(|r| {
            let _ = r.join();
        });
        let mut log = self.log.lock().expect("no thread panics holding this lock");
        if let Some(text) = std::env::var_os(JSON_ENV).and_then(|p| std::fs::read_to_string(p).ok())
        {
            for line in text.lines() {
                let _ = log.write_all(encode(&Frame::Json(line)).as_bytes());
            }
        }
        let _ = log.write_all(encode(&Frame::Exit(code)).as_bytes());
        let _ = log.flush();
    }
}

fn relay(
    pipe: OwnedFd,
    log: Arc<Mutex<std::fs::File>>,
    frame: fn(&str) -> Frame<'_>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(std::fs::File::from(pipe));
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.strip_suffix('\n').unwrap_or(&text);
                    let mut log = log.lock().expect("no thread panics holding this lock");
                    let _ = log.write_all(encode(&frame(text)).as_bytes());
                    let _ = log.flush();
                }
            }
        }
    })
}
