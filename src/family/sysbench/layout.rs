//! sysbench's report layout, shared by the built-in tests and Lua scripts: the numbers of a
//! report (`Stat`, sysbench's `sb_stat_t`; a `Timer` per thread), the intermediate line, the
//! "SQL statistics" block, and the general statistics, latency and threads' fairness.

use std::fmt::Write as _;

/// One report's numbers: sysbench's `sb_stat_t`, as its hooks receive it.
#[derive(Debug, Clone, Default)]
pub struct Stat {
    pub threads_running: u32,
    pub time_interval: f64,
    pub time_total: f64,
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
    pub latency_pct: f64,
    pub latency_min: f64,
    pub latency_avg: f64,
    pub latency_max: f64,
    pub latency_sum: f64,
}

/// One worker's event timer: events, their summed, shortest and longest latency.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Timer {
    pub events: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Timer {
    pub fn add(&mut self, ns: u64) {
        self.min_ns = if self.events == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.events += 1;
        self.sum_ns += ns;
    }

    pub fn merge(&mut self, other: &Timer) {
        if other.events == 0 {
            return;
        }
        self.min_ns = if self.events == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.events += other.events;
        self.sum_ns += other.sum_ns;
    }
}

/// sysbench's default intermediate line: with SQL statistics when a database driver was used.
pub fn intermediate_line(stat: &Stat, percentile: u32, sql: bool) -> String {
    let seconds = stat.time_interval.max(f64::MIN_POSITIVE);
    if !sql {
        return format!(
            "[ {:.0}s ] thds: {} eps: {:.2} lat (ms,{percentile}%): {:.2}",
            stat.time_total,
            stat.threads_running,
            stat.events as f64 / seconds,
            stat.latency_pct * 1000.0
        );
    }
    let per_second = |n: u64| n as f64 / seconds;
    format!(
        "[ {:.0}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{percentile}%): {:.2} err/s: {:.2} reconn/s: {:.2}",
        stat.time_total,
        stat.threads_running,
        per_second(stat.events),
        per_second(stat.reads + stat.writes + stat.other),
        per_second(stat.reads),
        per_second(stat.writes),
        per_second(stat.other),
        stat.latency_pct * 1000.0,
        per_second(stat.errors),
        per_second(stat.reconnects)
    )
}

/// sysbench's "SQL statistics" block.
pub fn sql_statistics(stat: &Stat) -> String {
    let seconds = stat.time_interval.max(f64::MIN_POSITIVE);
    let queries = stat.reads + stat.writes + stat.other;
    let mut out = String::from("SQL statistics:\n    queries performed:\n");
    for (label, value) in [
        ("read:", stat.reads),
        ("write:", stat.writes),
        ("other:", stat.other),
        ("total:", queries),
    ] {
        let _ = writeln!(out, "        {label:<33}{value}");
    }
    for (label, value) in [
        ("transactions:", stat.events),
        ("queries:", queries),
        ("ignored errors:", stat.errors),
        ("reconnects:", stat.reconnects),
    ] {
        let _ = writeln!(
            out,
            "    {label:<37}{value:<6} ({:.2} per sec.)",
            value as f64 / seconds
        );
    }
    out
}

/// sysbench's general statistics, latency and threads' fairness, after an empty line.
pub fn general_statistics(stat: &Stat, timers: &[Timer], percentile: u32) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "\nGeneral statistics:\n    total time:                          {:.4}s\n    total number of events:              {}\n\n",
        stat.time_total, stat.events
    );
    out.push_str("Latency (ms):\n");
    let _ = writeln!(out, "         min: {:>39.2}", stat.latency_min * 1000.0);
    let _ = writeln!(out, "         avg: {:>39.2}", stat.latency_avg * 1000.0);
    let _ = writeln!(out, "         max: {:>39.2}", stat.latency_max * 1000.0);
    if percentile > 0 {
        let _ = writeln!(
            out,
            "        {percentile:>3}th percentile: {:>27.2}",
            stat.latency_pct * 1000.0
        );
    } else {
        out.push_str("         percentile stats:               disabled\n");
    }
    let _ = writeln!(out, "         sum: {:>39.2}\n", stat.latency_sum * 1000.0);
    let threads = timers.len().max(1) as f64;
    let events_avg = timers.iter().map(|t| t.events).sum::<u64>() as f64 / threads;
    let time_avg = stat.latency_sum / threads;
    let spread = |value: &dyn Fn(&Timer) -> f64, avg: f64| {
        (timers.iter().map(|t| (value(t) - avg).powi(2)).sum::<f64>() / threads).sqrt()
    };
    let events_stddev = spread(&|t| t.events as f64, events_avg);
    let time_stddev = spread(&|t| t.sum_ns as f64 / 1e9, time_avg);
    let _ = write!(
        out,
        "Threads fairness:\n    events (avg/stddev):           {events_avg:.4}/{events_stddev:3.2}\n    execution time (avg/stddev):   {time_avg:.4}/{time_stddev:3.2}\n\n"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_is_the_spread_of_events_and_time() {
        let timers = [
            Timer {
                events: 3,
                sum_ns: 3_000_000_000,
                min_ns: 1,
                max_ns: 1,
            },
            Timer {
                events: 1,
                sum_ns: 1_000_000_000,
                min_ns: 1,
                max_ns: 1,
            },
        ];
        let stat = Stat {
            latency_sum: 4.0,
            ..Stat::default()
        };
        let text = general_statistics(&stat, &timers, 95);
        assert!(
            text.contains("events (avg/stddev):           2.0000/1.00\n"),
            "{text}"
        );
        assert!(
            text.contains("execution time (avg/stddev):   2.0000/1.00\n"),
            "{text}"
        );
    }
}
