//! SIGINT and SIGTERM as a flag that runs poll, so a run ends early and cleanly.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// SIGINT and SIGTERM end the current run early (recorded as interrupted) instead of killing
/// the process, so servers stop cleanly and `resume` has an exact record.
pub fn watch_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // Registration fails only for signals that cannot be caught; these two can.
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    stop
}

/// As `watch_signals`, and a second SIGINT or SIGTERM ends the process at once (status 130 or
/// 143, as a shell reports a signal's death): for runs that hold nothing to clean up but may
/// wait for the server without end — a sysbench script's connections wait in the kernel until
/// the reply, so a statement stuck on a lock would otherwise make the run unkillable.
///
/// The handlers alone cannot count: a handler checks the flag and then sets it, and two
/// signals sent back to back (`kill -INT`, `kill -TERM`) can run their handlers at once on two
/// threads, both finding the flag unset. So one thread also takes the signals in turn and
/// ends the process at the second.
pub fn watch_signals_second_exits() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for (signal, status) in [(SIGINT, 130), (SIGTERM, 143)] {
        // The exit is registered first: it sees the flag as the earlier signal left it.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, status, stop.clone());
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    if let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) {
        std::thread::spawn(move || {
            let mut seen = 0;
            for signal in signals.forever() {
                seen += 1;
                if seen >= 2 {
                    signal_hook::low_level::exit(if signal == SIGINT { 130 } else { 143 });
                }
            }
        });
    }
    stop
}
