//! Machine-wide operating-system counters from /proc: CPU time by state, context switches, and
//! the I/O of the disk that holds a data directory. Cumulative values; the lab stores their
//! change over a run and per second.

use std::path::Path;

use stampede_store::CounterRow as Counter;

pub const SOURCE: &str = "os";

/// The counters now. Missing /proc files (not Linux) give no counters rather than an error.
pub fn counters(data_dir: &Path) -> Vec<Counter> {
    let mut all = cpu_and_switches();
    all.extend(disk(data_dir));
    all
}

fn counter(name: &str, value: f64) -> Counter {
    Counter {
        source: SOURCE.to_string(),
        name: name.to_string(),
        value,
    }
}

pub(crate) fn clock_ticks_per_second() -> f64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => ticks as f64,
        _ => 100.0,
    }
}

/// CPU seconds of this process's live threads whose name `keep` accepts, from
/// /proc/self/task: their time on a CPU in nanoseconds (`schedstat`), or where the kernel keeps
/// none their user + system clock ticks (`stat`, 10 ms steps: a thread that works a little
/// shows none); 0 where /proc cannot be read.
pub fn threads_cpu_s(keep: impl Fn(&str) -> bool) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| keep(name.trim_end()))
        })
        .filter_map(|task| task_cpu_s(&task.path()))
        .sum()
}

fn task_cpu_s(task: &std::path::Path) -> Option<f64> {
    let on_cpu_ns = std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok());
    if let Some(ns) = on_cpu_ns {
        return Some(ns as f64 / 1e9);
    }
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // After the command's ")": utime and stime are the 12th and 13th fields.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / clock_ticks_per_second())
}

fn cpu_and_switches() -> Vec<Counter> {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    parse_stat(&text, clock_ticks_per_second())
}

/// The aggregate `cpu` line (user nice system idle iowait irq softirq steal, in clock ticks)
/// and `ctxt`.
fn parse_stat(text: &str, ticks_per_second: f64) -> Vec<Counter> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("cpu") => {
                let ticks: Vec<f64> = fields.filter_map(|f| f.parse().ok()).collect();
                let seconds = |fields: &[usize]| {
                    let sum: f64 = fields.iter().filter_map(|&i| ticks.get(i)).sum();
                    sum / ticks_per_second
                };
                out.push(counter("cpu_user_s", seconds(&[0, 1])));
                out.push(counter("cpu_system_s", seconds(&[2, 5, 6])));
                out.push(counter("cpu_idle_s", seconds(&[3])));
                out.push(counter("cpu_iowait_s", seconds(&[4])));
                out.push(counter("cpu_steal_s", seconds(&[7])));
            }
            Some("ctxt") => {
                if let Some(n) = fields.next().and_then(|f| f.parse().ok()) {
                    out.push(counter("context_switches", n));
                }
            }
            _ => {}
        }
    }
    out
}

/// Reads, writes and kilobytes of the block device holding `data_dir`; when that device is
/// not a disk (overlay, tmpfs), of all physical disks together.
fn disk(data_dir: &Path) -> Vec<Counter> {
    let Ok(text) = std::fs::read_to_string("/proc/diskstats") else {
        return Vec::new();
    };
    let device = device_of(data_dir);
    let lines: Vec<DiskLine> = text.lines().filter_map(DiskLine::parse).collect();
    let chosen: Vec<&DiskLine> = match lines.iter().find(|l| Some((l.major, l.minor)) == device) {
        Some(line) => vec![line],
        None => lines
            .iter()
            .filter(|l| {
                Path::new("/sys/block")
                    .join(&l.name)
                    .join("device")
                    .exists()
            })
            .collect(),
    };
    let sum = |f: fn(&DiskLine) -> f64| chosen.iter().map(|l| f(l)).sum::<f64>();
    vec![
        counter("disk_reads", sum(|l| l.reads)),
        counter("disk_read_kb", sum(|l| l.sectors_read / 2.0)),
        counter("disk_writes", sum(|l| l.writes)),
        counter("disk_write_kb", sum(|l| l.sectors_written / 2.0)),
    ]
}

fn device_of(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    // Linux device numbers are 12 + 20 bits; the conversions cannot fail there.
    (major != 0).then_some((u32::try_from(major).ok()?, u32::try_from(minor).ok()?))
}

/// One /proc/diskstats line; sectors are always 512 bytes there.
struct DiskLine {
    major: u32,
    minor: u32,
    name: String,
    reads: f64,
    sectors_read: f64,
    writes: f64,
    sectors_written: f64,
}

impl DiskLine {
    fn parse(line: &str) -> Option<DiskLine> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| f.get(i)?.parse::<f64>().ok();
        Some(DiskLine {
            major: f.first()?.parse().ok()?,
            minor: f.get(1)?.parse().ok()?,
            name: f.get(2)?.to_string(),
            reads: number(3)?,
            sectors_read: number(5)?,
            writes: number(7)?,
            sectors_written: number(9)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_threads_work_is_counted_to_below_a_clock_tick() {
        use nix::time::{clock_gettime, ClockId};
        let own_cpu_s = || {
            let now = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
            now.tv_sec() as f64 + now.tv_nsec() as f64 / 1e9
        };
        let (done, finished) = std::sync::mpsc::channel();
        let (go, measured) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("probe-busy".into())
            .spawn(move || {
                // Half a clock tick of the thread's own CPU, however busy the machine is.
                let mut x = 0u64;
                while own_cpu_s() < 0.005 {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                done.send((x, own_cpu_s())).unwrap();
                // Alive while it is measured: only live threads are read.
                let _ = measured.recv();
            })
            .unwrap();
        let (_, used_s) = finished.recv().unwrap();
        let read_s = threads_cpu_s(|name| name == "probe-busy");
        go.send(()).unwrap();
        worker.join().unwrap();
        // schedstat's nanoseconds agree with the thread's own clock (a tick-based reading of
        // 5 ms would be 0 or 10 ms).
        assert!((read_s - used_s).abs() < 0.002, "{read_s} against {used_s}");
        assert_eq!(threads_cpu_s(|name| name == "no-such-thread"), 0.0);
    }

    fn value(counters: &[Counter], name: &str) -> f64 {
        counters.iter().find(|c| c.name == name).unwrap().value
    }

    #[test]
    fn stat_lines_become_seconds_and_switches() {
        let text = "cpu  200 100 50 1000 30 5 15 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nctxt 12345\n";
        let counters = parse_stat(text, 100.0);
        assert_eq!(value(&counters, "cpu_user_s"), 3.0);
        assert_eq!(value(&counters, "cpu_system_s"), 0.7);
        assert_eq!(value(&counters, "cpu_idle_s"), 10.0);
        assert_eq!(value(&counters, "cpu_iowait_s"), 0.3);
        assert_eq!(value(&counters, "cpu_steal_s"), 0.07);
        assert_eq!(value(&counters, "context_switches"), 12345.0);
    }

    #[test]
    fn diskstats_line_fields() {
        let line = DiskLine::parse(" 254 0 vda 893654 23116 30792538 915105 3590825 178160 117334160 1104249 0 462536 2297005").unwrap();
        assert_eq!(
            (line.major, line.minor, line.name.as_str()),
            (254, 0, "vda")
        );
        assert_eq!(line.reads, 893654.0);
        assert_eq!(line.sectors_written, 117334160.0);
    }

    #[test]
    fn this_machine_has_counters() {
        let counters = counters(Path::new("/tmp"));
        assert!(value(&counters, "context_switches") > 0.0);
        assert!(value(&counters, "disk_read_kb") >= 0.0);
    }
}
