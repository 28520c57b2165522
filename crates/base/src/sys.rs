//! The few operating-system facts and settings stampede needs beyond std, through nix's safe
//! wrappers (no `unsafe` in the crate's own code).

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::{geteuid, Pid};

/// Root must hand the server to an unprivileged user and keeps its caches system-wide.
pub fn is_root() -> bool {
    geteuid().is_root()
}

/// Pins the calling thread (and whatever it spawns afterwards, which inherits the mask).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).map_err(std::io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

/// The login name of the effective user, when the password database knows it.
pub fn effective_user_name() -> Option<String> {
    nix::unistd::User::from_uid(geteuid())
        .ok()
        .flatten()
        .map(|user| user.name)
}
