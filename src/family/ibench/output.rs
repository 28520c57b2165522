//! iibench.py's output, byte for byte where it prints numbers: the header, a tab-separated line
//! per report interval (interval and total seconds, inserts/deletes/queries per second in the
//! interval and since the start, the interval's longest insert/delete/query in µs, the totals
//! and the retries), each operation's response-time histogram, and the closing Totals line — so
//! the scripts that parse his output parse stampede's.

use std::time::Duration;

/// The header line.
pub const HEADER: &str = "i_sec\tt_sec\ti_ips\tt_ips\ti_dps\tt_dps\ti_qps\tt_qps\tmax_i\tmax_d\tmax_q\tt_ins\tt_del\tt_query\tretry_i\tretry_d\tretry_q";

/// Upper bounds of iibench.py's response-time buckets, in seconds; a tenth bucket holds the rest.
const BUCKET_BOUNDS_S: [f64; 9] = [0.000256, 0.001, 0.004, 0.016, 0.064, 0.256, 1.0, 4.0, 16.0];
const BUCKET_LABELS: [&str; 10] = [
    "256us", "1ms", "4ms", "16ms", "64ms", "256ms", "1s", "4s", "16s", "gt",
];

/// iibench.py's response-time histogram of one operation: ten buckets and the longest.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtHistogram {
    pub counts: [u64; 10],
    pub max_s: f64,
}

impl RtHistogram {
    pub fn record(&mut self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        self.max_s = self.max_s.max(seconds);
        let bucket = BUCKET_BOUNDS_S
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(9);
        self.counts[bucket] += 1;
    }

    pub fn merge(&mut self, other: &RtHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
        self.max_s = self.max_s.max(other.max_s);
    }

    /// Its two lines as iibench.py prints them, under `prefix` ("Insert rt:").
    pub fn lines(&self, prefix: &str) -> String {
        let mut labels = format!("{prefix:>10}");
        let mut counts = format!("{prefix:>10}");
        for (label, count) in BUCKET_LABELS.iter().zip(self.counts) {
            labels.push_str(&format!(" {label:>9}"));
            counts.push_str(&format!(" {count:>9}"));
        }
        labels.push_str(&format!(" {:>11}", "max"));
        counts.push_str(&format!(" {:>11.6}", self.max_s));
        format!("{labels}\n{counts}")
    }
}

/// The counts a report line is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub inserted: u64,
    pub deleted: u64,
    pub queries: u64,
}

/// One interval's line. `max_us` are the interval's longest insert, delete and query (0 when
/// none finished); `retries` are iibench.py's error counts.
pub fn interval_line(
    interval_s: f64,
    total_s: f64,
    now: Totals,
    before: Totals,
    max_us: [i64; 3],
    retries: [u64; 3],
) -> String {
    let rate = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    format!(
        "{interval_s:.1}\t{total_s:.1}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        rate(now.inserted - before.inserted, interval_s),
        rate(now.inserted, total_s),
        rate(now.deleted - before.deleted, interval_s),
        rate(now.deleted, total_s),
        rate(now.queries - before.queries, interval_s),
        rate(now.queries, total_s),
        max_us[0].max(0),
        max_us[1].max(0),
        max_us[2].max(0),
        now.inserted,
        now.deleted,
        now.queries,
        retries[0],
        retries[1],
        retries[2],
    )
}

/// The query connections' closing line.
pub fn query_thread_line(queries: u64, rows_per_query: u64, rows_fetched: u64) -> String {
    let per_query = if queries > 0 {
        rows_fetched as f64 / queries as f64
    } else {
        0.0
    };
    format!(
        "Query thread: {queries} queries, fetched/query(expected, actual) = ( {rows_per_query} , {per_query:.3} )"
    )
}

/// The min(transactionid) reads' line.
pub fn get_min_line(queries: u64, total: Duration) -> String {
    let queries = queries.max(1);
    format!(
        "getmin {queries} queries, {:.3} total secs, {:.6} secs/query\n",
        total.as_secs_f64(),
        total.as_secs_f64() / queries as f64
    )
}

/// The closing line.
pub fn totals_line(seconds: f64, inserted: u64, retries: [u64; 3]) -> String {
    let rate = if seconds > 0.0 {
        inserted as f64 / seconds
    } else {
        0.0
    };
    format!(
        "Totals: {seconds:.1} secs, {rate:.1} rows/sec, {inserted} rows, {} {} {} insert-delete-query retry",
        retries[0], retries[1], retries[2]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_prints_as_iibench_s() {
        let mut histogram = RtHistogram::default();
        histogram.record(Duration::from_micros(200));
        histogram.record(Duration::from_micros(256));
        histogram.record(Duration::from_millis(3));
        histogram.record(Duration::from_secs(20));
        assert_eq!(histogram.counts, [2, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            histogram.lines("Insert rt:"),
            "Insert rt:     256us       1ms       4ms      16ms      64ms     256ms        1s        4s       16s        gt         max\n\
             Insert rt:         2         0         1         0         0         0         0         0         0         1   20.000000"
        );
    }

    #[test]
    fn interval_lines_have_iibench_s_seventeen_columns() {
        let line = interval_line(
            1.0,
            2.0,
            Totals {
                inserted: 3000,
                deleted: 2000,
                queries: 10,
            },
            Totals {
                inserted: 1000,
                deleted: 1000,
                queries: 4,
            },
            [1500, -1, 300],
            [0, 0, 0],
        );
        assert_eq!(
            line,
            "1.0\t2.0\t2000\t1500\t1000\t1000\t6\t5\t1500\t0\t300\t3000\t2000\t10\t0\t0\t0"
        );
        assert_eq!(line.split('\t').count(), HEADER.split('\t').count());
    }

    #[test]
    fn the_closing_lines_read_as_iibench_s() {
        assert_eq!(
            totals_line(10.0, 5000, [0, 1, 2]),
            "Totals: 10.0 secs, 500.0 rows/sec, 5000 rows, 0 1 2 insert-delete-query retry"
        );
        assert_eq!(
            query_thread_line(4, 10, 38),
            "Query thread: 4 queries, fetched/query(expected, actual) = ( 10 , 9.500 )"
        );
        assert_eq!(
            get_min_line(0, Duration::ZERO),
            "getmin 1 queries, 0.000 total secs, 0.000000 secs/query\n"
        );
    }
}
