//! CPU time of a local PostgreSQL server's processes: the postmaster, every process it has
//! forked and still runs (backends, checkpointer, walwriter…), and the children it has reaped
//! (a backend that ended counts in its parent's cutime/cstime once the postmaster waited for
//! it). Cumulative, so the lab stores the change over a run. With the machine's CPU time and
//! the driver's own it tells how much CPU other processes took during the run.

use std::path::Path;

use stampede_store::CounterRow;

pub const SOURCE: &str = "server";

/// The server's CPU time so far; nothing when its pid file or /proc cannot be read (a server
/// on another machine, not Linux).
pub fn counters(data_dir: &Path) -> Vec<CounterRow> {
    let Some(postmaster) = postmaster_pid(data_dir) else {
        return Vec::new();
    };
    let Some(tree) = tree_ticks(postmaster) else {
        return Vec::new();
    };
    let ticks_per_second = super::os::clock_ticks_per_second();
    [("cpu_user_s", tree.user), ("cpu_system_s", tree.system)]
        .into_iter()
        .map(|(name, ticks)| CounterRow {
            source: SOURCE.into(),
            name: name.into(),
            value: ticks / ticks_per_second,
        })
        .collect()
}

/// CPU seconds of process `root` and its children so far (user and system, the reaped
/// children's included): a server's whole process tree, for any engine.
pub fn tree_seconds(root: u32) -> Option<f64> {
    let ticks = tree_ticks(root)?;
    Some((ticks.user + ticks.system) / super::os::clock_ticks_per_second())
}

/// The postmaster's pid, from its data directory's pid file.
pub fn postmaster_pid(data_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Ticks {
    user: f64,
    system: f64,
}

/// Reads of the tree before one finds no child reaped while it read.
const CONSISTENT_READ_ATTEMPTS: usize = 20;

/// The postmaster's own and reaped children's ticks, plus every live child's (with the
/// children they reaped in turn).
///
/// A child the postmaster reaps while the tree is read moves its ticks from the live children
/// into the postmaster's reaped ones: read after it was listed and before the postmaster, it
/// would count twice; reaped after the postmaster was read and before it was listed, not at
/// all — a whole step's backend, seconds of CPU, when its clients have just disconnected. So a
/// read counts only when the postmaster's reaped ticks were the same before and after it.
fn tree_ticks(postmaster: u32) -> Option<Ticks> {
    let mut last = None;
    for _ in 0..CONSISTENT_READ_ATTEMPTS {
        let before = ProcStat::read(postmaster)?;
        let total = with_children(postmaster, before.ticks_with_reaped());
        let after = ProcStat::read(postmaster)?;
        if after.reaped() == before.reaped() {
            return Some(total);
        }
        last = Some(total);
        std::thread::yield_now();
    }
    last
}

/// `own` plus every live child's ticks (a process may end between the listing and the read:
/// it is then in the postmaster's reaped ticks, which `tree_ticks` sees change).
fn with_children(postmaster: u32, own: Ticks) -> Ticks {
    let mut total = own;
    for child in stampede_base::sys::children_of(postmaster)
        .into_iter()
        .filter_map(ProcStat::read)
        .filter(|stat| stat.parent == postmaster)
    {
        let ticks = child.ticks_with_reaped();
        total.user += ticks.user;
        total.system += ticks.system;
    }
    total
}

/// The fields of /proc/<pid>/stat this module needs.
#[derive(Debug, PartialEq)]
struct ProcStat {
    parent: u32,
    user: f64,
    system: f64,
    reaped_user: f64,
    reaped_system: f64,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        ProcStat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// `pid (comm) state ppid … utime stime cutime cstime …`: the command may hold spaces and
    /// parentheses, so the fields are counted from the last `)`.
    fn parse(line: &str) -> Option<ProcStat> {
        let after_command = &line[line.rfind(')')? + 1..];
        let fields: Vec<&str> = after_command.split_whitespace().collect();
        // After the command: state is field 0, ppid 1, utime 11, stime 12, cutime 13, cstime 14.
        let number = |index: usize| fields.get(index)?.parse::<f64>().ok();
        Some(ProcStat {
            parent: fields.get(1)?.parse().ok()?,
            user: number(11)?,
            system: number(12)?,
            reaped_user: number(13)?,
            reaped_system: number(14)?,
        })
    }

    /// The ticks of the children it has reaped.
    fn reaped(&self) -> (f64, f64) {
        (self.reaped_user, self.reaped_system)
    }

    fn ticks_with_reaped(&self) -> Ticks {
        Ticks {
            user: self.user + self.reaped_user,
            system: self.system + self.reaped_system,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_may_hold_spaces_and_parentheses() {
        let line = "4242 (postgres: bench (x) idle) S 4100 4100 4100 0 -1 4194560 1034 0 0 0 \
                    125 37 9 4 20 0 1 0 5000 226000000 5000 18446744073709551615";
        assert_eq!(
            ProcStat::parse(line),
            Some(ProcStat {
                parent: 4100,
                user: 125.0,
                system: 37.0,
                reaped_user: 9.0,
                reaped_system: 4.0,
            })
        );
        assert_eq!(ProcStat::parse("4242 (cut"), None);
    }

    #[test]
    fn a_busy_child_counts_as_the_server_s_cpu() {
        // This process stands in for a postmaster: a child that spins counts while it runs
        // and, once waited for, in the reaped ticks.
        let me = std::process::id();
        let before = tree_ticks(me).unwrap();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        child.wait().unwrap();
        let after = tree_ticks(me).unwrap();
        let spent = (after.user + after.system) - (before.user + before.system);
        assert!(spent >= 5.0, "{before:?} {after:?}");
    }

    /// Children spinning and reaped one after another while the tree is read again and
    /// again: the tree's CPU only ever grows, and at the end holds every reaped child's CPU
    /// as the kernel's own account of the children (getrusage) gives it.
    #[test]
    fn a_child_reaped_while_the_tree_is_read_is_counted_once() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let me = std::process::id();
        let seconds = |t: Ticks| (t.user + t.system) / super::super::os::clock_ticks_per_second();
        let children = || {
            let usage =
                nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
                    .unwrap();
            let time = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            time(usage.user_time()) + time(usage.system_time())
        };
        let reaped_before = children();
        let start = seconds(tree_ticks(me).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::process::Command::new("sh")
                        .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"])
                        .status();
                }
            })
        };
        let mut last = start;
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        while std::time::Instant::now() < deadline {
            let now = seconds(tree_ticks(me).unwrap());
            assert!(now >= last, "the tree's CPU fell from {last} s to {now} s");
            last = now;
        }
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        let end = seconds(tree_ticks(me).unwrap());
        let reaped = children() - reaped_before;
        assert!(reaped > 0.2, "the children spun {reaped} s");
        // The tree holds them, and this process's own threads besides.
        assert!(
            end - start >= reaped * 0.98,
            "{} s of tree for {reaped} s of children",
            end - start
        );
    }
}
