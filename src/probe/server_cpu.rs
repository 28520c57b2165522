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

/// The postmaster's own and reaped children's ticks, plus every live child's (with the
/// children they reaped in turn).
fn tree_ticks(postmaster: u32) -> Option<Ticks> {
    let own = ProcStat::read(postmaster)?;
    let mut total = own.ticks_with_reaped();
    // A process may end between the listing and the read: it is then in the postmaster's
    // reaped ticks, or about to be.
    for child in stampede_base::sys::children_of(postmaster)
        .into_iter()
        .filter_map(ProcStat::read)
        .filter(|stat| stat.parent == postmaster)
    {
        let ticks = child.ticks_with_reaped();
        total.user += ticks.user;
        total.system += ticks.system;
    }
    Some(total)
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
}
