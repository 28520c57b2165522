//! HammerDB's job report (`hammerdb-job-report-v1`, the `summaryjson` of HammerDB 6's jobs and
//! the files of its public results repository) for a TPROC-C run that stampede measured: the
//! schema's required fields, HammerDB's units (NOPM and TPM per minute, milliseconds), its
//! names (`tproc_c_result`, `transaction_count`, `response_times`), and where the repository
//! keeps such a file (results/tproc-c/DATABASE/YYYY/MM/JOBID.json). What stampede
//! did not measure as HammerDB does is left out or named as its own: the transaction count is
//! the driver's commits, the response times are the whole mix's (HammerDB times each stored
//! procedure apart).

use std::path::PathBuf;

use serde_json::{json, Value};

use stampede_base::calendar::UtcTime;

pub const SCHEMA: &str = "hammerdb-job-report-v1";

/// HammerDB samples its transaction count every 10 seconds.
const SAMPLE_S: usize = 10;

/// One TPROC-C run as a HammerDB job.
pub struct TpccJob {
    /// 24 hexadecimal digits, as HammerDB's job ids.
    pub jobid: String,
    /// The run's start (its ramp-up's), Unix seconds.
    pub started_unix_s: f64,
    /// The server's `version()`.
    pub version: Option<String>,
    pub target: String,
    pub cell: String,
    pub warehouses: String,
    pub virtual_users: i64,
    pub rampup_s: f64,
    pub duration_s: f64,
    pub nopm: f64,
    pub tpm: f64,
    /// The driver's committed transactions, and their latency (ms).
    pub transactions: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Committed transactions per second from the ramp-up's end.
    pub series: Vec<(u64, f64)>,
    /// `Machine::key` and the kernel of the machine the driver ran on.
    pub machine: Option<(String, String)>,
    pub stampede_version: &'static str,
}

impl TpccJob {
    /// HammerDB's database name and the release, from `version()`: "PostgreSQL 17.2 (…)",
    /// "11.4.2-MariaDB-…", "8.4.3".
    pub fn database(&self) -> (&'static str, Option<String>) {
        let version = self.version.as_deref().unwrap_or("");
        if let Some(rest) = version.strip_prefix("PostgreSQL ") {
            let release = rest.split_whitespace().next().map(str::to_string);
            return ("PostgreSQL", release);
        }
        let release = version
            .split(['-', ' '])
            .next()
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        if version.contains("MariaDB") {
            ("MariaDB", release)
        } else if version.is_empty() {
            ("PostgreSQL", None)
        } else {
            ("MySQL", release)
        }
    }

    /// Where HammerDB's results repository keeps this job's file.
    pub fn canonical_path(&self) -> PathBuf {
        let time = UtcTime::from_unix(self.started_unix_s as i64);
        PathBuf::from(format!(
            "results/tproc-c/{}/{:04}/{:02}/{}.json",
            self.database().0.to_ascii_lowercase(),
            time.year,
            time.month,
            self.jobid
        ))
    }
}

fn timestamp(unix_s: f64) -> String {
    UtcTime::from_unix(unix_s as i64).second_text()
}

pub fn render(job: &TpccJob) -> String {
    let (database, release) = job.database();
    let mut report = json!({
        "schema": SCHEMA,
        "description": format!(
            "A TPROC-C run measured by stampede {} (not by HammerDB), in HammerDB's job report format.",
            job.stampede_version
        ),
        "artifact": {
            "type": "hammerdb-result-json",
            "schema": SCHEMA,
            "source": "stampede",
            "generated_by": "stampede export --format hammerdb-job-report-v1",
            "stampede_cell": job.cell,
            "stampede_target": job.target,
        },
        "disclaimer": {
            "result_type": "stampede result in HammerDB's result artifact format",
            "audited": false,
            "text": "TPROC-C is HammerDB's workload derived from the TPC-C specification; this result is not audited by the TPC and is not a TPC result.",
        },
        "job": {
            "jobid": job.jobid,
            "hdb_version": format!("stampede {}", job.stampede_version),
            "database": database,
            "database_display": database,
            "benchmark": "TPROC-C",
            "timestamp": timestamp(job.started_unix_s),
        },
        "benchmark_config": {
            "warehouses": job.warehouses.parse::<i64>().map_or(Value::from(job.warehouses.clone()), Value::from),
            "virtual_users": job.virtual_users,
            "rampup_minutes": job.rampup_s / 60.0,
            "duration_minutes": job.duration_s / 60.0,
        },
        "result": {
            "type": "tproc_c_result",
            "database_display": database,
            "active_virtual_users": job.virtual_users,
            "nopm": job.nopm.round() as i64,
            "tpm": job.tpm.round() as i64,
            "chart_data": [
                { "metric": "NOPM", "value": job.nopm.round() as i64 },
                { "metric": "TPM", "value": job.tpm.round() as i64 },
            ],
        },
        "transaction_count": transaction_count(job, database),
        "response_times": response_times(job),
    });
    if let Some(release) = release {
        report["job"]["release"] = Value::from(release);
    }
    if let Some((key, kernel)) = &job.machine {
        report["system"] = json!({ "available": true, "stampede_machine": key, "kernel": kernel });
    }
    let mut text = serde_json::to_string_pretty(&report).expect("numbers and strings");
    text.push('\n');
    text
}

/// The driver's commits per minute in 10-second samples from the ramp-up's end, as
/// HammerDB's transaction counter samples the server's.
fn transaction_count(job: &TpccJob, database: &str) -> Value {
    let measured_from = job.started_unix_s + job.rampup_s;
    let points: Vec<Value> = job
        .series
        .chunks(SAMPLE_S)
        .filter(|chunk| chunk.len() == SAMPLE_S)
        .map(|chunk| {
            let (last_second, _) = chunk[SAMPLE_S - 1];
            let committed: f64 = chunk.iter().map(|(_, tps)| tps).sum();
            json!({
                "timestamp": timestamp(measured_from + last_second as f64 + 1.0),
                "value": (committed * 60.0 / SAMPLE_S as f64).round() as i64,
            })
        })
        .collect();
    json!({
        "available": !points.is_empty(),
        "series": [{
            "name": format!("{database} tpm (stampede's driver: its committed transactions)"),
            "database": database,
            "database_display": database,
            "metric": "tpm",
            "points": points,
        }],
    })
}

/// The whole mix's response times: stampede stores a run's latency over all its transactions.
fn response_times(job: &TpccJob) -> Value {
    let mut row = json!({
        "name": "ALL",
        "elapsed_ms": job.duration_s * 1000.0,
        "calls": job.transactions.round() as i64,
    });
    for (key, value) in [
        ("p99_ms", job.p99_ms),
        ("p95_ms", job.p95_ms),
        ("p50_ms", job.p50_ms),
    ] {
        if let Some(value) = value {
            row[key] = Value::from(value);
        }
    }
    json!({ "type": "boxplot", "unit": "milliseconds", "rows": [row] })
}

/// A job id from the invocation, the run and its start: 24 hexadecimal digits, unique per run
/// of a results database.
pub fn jobid(started_unix_s: f64, lab: i64, run: i64) -> String {
    format!(
        "{:08X}{:08X}{:08X}",
        started_unix_s as u32, lab as u32, run as u32
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(version: Option<&str>, series: Vec<(u64, f64)>) -> TpccJob {
        TpccJob {
            jobid: jobid(1_796_000_000.0, 3, 41),
            started_unix_s: 1_796_000_000.0,
            version: version.map(str::to_string),
            target: "t".into(),
            cell: "t/tpcc/server/1/2".into(),
            warehouses: "1".into(),
            virtual_users: 2,
            rampup_s: 30.0,
            duration_s: 60.0,
            nopm: 1000.4,
            tpm: 2300.6,
            transactions: 1200.0,
            p50_ms: Some(1.5),
            p95_ms: None,
            p99_ms: Some(4.0),
            series,
            machine: None,
            stampede_version: "0.1.0",
        }
    }

    #[test]
    fn the_database_and_release_come_from_version() {
        let of = |v: &str| job(Some(v), Vec::new()).database();
        assert_eq!(
            of("PostgreSQL 17.2 (Debian 17.2-1) on x86_64-pc-linux-gnu"),
            ("PostgreSQL", Some("17.2".into()))
        );
        assert_eq!(
            of("11.4.2-MariaDB-1:11.4.2+maria~deb12"),
            ("MariaDB", Some("11.4.2".into()))
        );
        assert_eq!(of("8.4.3"), ("MySQL", Some("8.4.3".into())));
        let path = job(Some("11.4.2-MariaDB"), Vec::new()).canonical_path();
        // 1796000000 is 2026-11-30 00:53:20 UTC, 0x6B0CC900.
        assert_eq!(
            path,
            PathBuf::from("results/tproc-c/mariadb/2026/11/6B0CC9000000000300000029.json")
        );
    }

    #[test]
    fn transactions_are_counted_per_minute_in_whole_ten_second_samples() {
        // 25 seconds at 10 tps: two whole samples of 600 per minute; the last 5 s are dropped.
        let series = (0..25).map(|s| (s, 10.0)).collect();
        let report: Value = serde_json::from_str(&render(&job(None, series))).unwrap();
        let points = &report["transaction_count"]["series"][0]["points"];
        assert_eq!(points.as_array().unwrap().len(), 2);
        assert_eq!(points[0]["value"], 600);
        // The ramp-up ends at 30 s: the first sample's end is 40 s after the start.
        assert_eq!(points[0]["timestamp"], timestamp(1_796_000_040.0));
        assert_eq!(report["result"]["nopm"], 1000);
        assert_eq!(report["result"]["tpm"], 2301);
        assert_eq!(report["response_times"]["rows"][0]["calls"], 1200);
        assert!(report["response_times"]["rows"][0].get("p95_ms").is_none());
    }
}
