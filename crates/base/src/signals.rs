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

/// As `watch_signals`, and a second SIGINT or SIGTERM ends the process at once (status 130 or
/// 143, as a shell reports a signal's death): for runs that hold nothing to clean up but may
/// wait for the server without end — a sysbench script's connections wait in the kernel until
/// the reply, so a statement stuck on a lock would otherwise make the run unkillable.
pub fn watch_signals_second_exits() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for (signal, status) in [
        (signal_hook::consts::SIGINT, 130),
        (signal_hook::consts::SIGTERM, 143),
    ] {
        // The exit is registered first: it sees the flag as the earlier signal left it.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, status, stop.clone());
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    stop
}
