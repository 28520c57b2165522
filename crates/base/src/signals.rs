//! SIGINT and SIGTERM as a flag that runs poll, so a run ends early and cleanly.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// SIGINT and SIGTERM end the current run early (recorded as interrupted) instead of killing
/// the process, so servers stop cleanly and `resume` has an exact record.
pub fn watch_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registration fails only for signals that cannot be caught; these two can.
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    stop
}
