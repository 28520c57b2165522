//! The lab's progress on stderr: one line per run, notes between them.

use std::io::IsTerminal;

use crate::lab::executor::LabEvent;
use crate::server::setup::SetupLine;
use stampede_base::duration::human;
use stampede_store::RunStatus;

/// The progress line on stderr: one line per run, ended by its result. On a terminal the
/// line also shows each measured second's tps as it comes.
pub struct Progress {
    terminal: bool,
    /// The current run's line, until its result is printed.
    open_line: Option<String>,
    /// Whether that line is the last thing on stderr (no note has been printed since).
    line_shown: bool,
    setup: SetupLine,
}

impl Progress {
    pub fn on_stderr() -> Progress {
        Progress {
            terminal: std::io::stderr().is_terminal(),
            open_line: None,
            line_shown: false,
            setup: SetupLine::on_stderr(),
        }
    }

    pub fn show(&mut self, event: LabEvent<'_>) {
        match event {
            LabEvent::Note(note) => {
                self.end_open_line();
                eprintln!("{note}");
            }
            LabEvent::Setup(event) => {
                if self.line_shown {
                    eprintln!();
                    self.line_shown = false;
                }
                self.setup.show(event);
            }
            LabEvent::RunStarting {
                position,
                total,
                cell,
                repetition,
                eta,
                eta_at_most,
            } => {
                let line = format!(
                    "run {position}/{total}: {} rep {}{}",
                    cell.key,
                    repetition + 1,
                    eta.map_or(String::new(), |d| format!(
                        " (ETA {}{})",
                        if eta_at_most { "≤ " } else { "" },
                        human(d)
                    ))
                );
                eprint!("{line} ... ");
                self.open_line = Some(line);
                self.line_shown = true;
            }
            LabEvent::Second { index, tps } => {
                if let (true, Some(line)) = (self.terminal, &self.open_line) {
                    eprint!("\r\x1b[K{line} ... {}s: {tps:.0} tps", index + 1);
                    self.line_shown = true;
                }
            }
            LabEvent::Interval(_) => {}
            LabEvent::RunEnded { status, tps, error } => {
                let result = match (status, tps, error) {
                    (RunStatus::Completed, Some(tps), _) => format!("{tps:.0} tps"),
                    (RunStatus::Interrupted, _, _) => "interrupted".into(),
                    (_, _, error) => format!("failed: {}", error.unwrap_or("unknown error")),
                };
                match self.open_line.take() {
                    Some(line) if self.terminal => eprintln!("\r\x1b[K{line} ... {result}"),
                    Some(line) if !self.line_shown => eprintln!("{line} ... {result}"),
                    _ => eprintln!("{result}"),
                }
                self.line_shown = false;
            }
        }
    }

    /// Ends a run's line, or a download's, before another line is printed.
    fn end_open_line(&mut self) {
        if self.line_shown {
            eprintln!();
            self.line_shown = false;
        }
        self.setup.end_open_line();
    }
}
