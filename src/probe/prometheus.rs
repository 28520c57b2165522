//! The node a server runs on, as a Prometheus server scraping its node_exporter sees it: the
//! node's CPU time by mode and its disks' bytes over a run's window, and what the node is
//! (its name, kernel, CPUs, memory). For a server the lab did not start, /proc is not
//! reachable; its platform's metrics are.
//!
//! Prometheus holds counters as samples taken at each scrape. A window's increase is read
//! once a sample after its end exists, each interval between two samples counting in
//! proportion to its overlap with the window (as if the counter rose evenly within it), so
//! that neither edge is rounded to a scrape.

use std::time::{Duration, Instant};

use serde_json::Value;
use stampede_base::error::Failure;
pub use stampede_store::unix_now;
use stampede_store::CounterRow;

/// The counters' source in a run's record: the node, as its node_exporter reports it.
pub const SOURCE: &str = "node";

/// How long a window's end waits for the next scrape (Prometheus's default interval is a
/// minute).
const SCRAPE_WAIT: Duration = Duration::from_secs(120);

/// How far before a window's start its samples are asked for: one scrape interval at most.
const LOOKBACK_S: f64 = 65.0;

/// node_cpu_seconds_total's modes as the lab's CPU counters name them (user and system, as
/// /proc's are summed for a process; guest time is already inside user).
const CPU_MODES: [(&str, &[&str]); 5] = [
    ("cpu_user_s", &["user", "nice"]),
    ("cpu_system_s", &["system", "irq", "softirq"]),
    ("cpu_idle_s", &["idle"]),
    ("cpu_iowait_s", &["iowait"]),
    ("cpu_steal_s", &["steal"]),
];

const DISK_COUNTERS: [(&str, &str); 2] = [
    ("disk_read_bytes", "node_disk_read_bytes_total"),
    ("disk_written_bytes", "node_disk_written_bytes_total"),
];

/// A Prometheus server and the `instance` label of a node_exporter it scrapes.
#[derive(Debug, Clone, PartialEq)]
pub struct Prometheus {
    /// The server's address, without a trailing slash: `http://host:9090`.
    pub base: String,
    pub instance: String,
}

/// What the node_exporter says of its node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    /// uname's node name: the driver shares the node when it is this machine's host name.
    pub nodename: String,
    pub kernel: String,
    pub cores: usize,
    pub memory_bytes: Option<u64>,
}

/// One series' samples, oldest first: (unix seconds, value).
struct Series {
    labels: serde_json::Map<String, Value>,
    samples: Vec<(f64, f64)>,
}

impl Prometheus {
    /// The node behind `instance`; refused when Prometheus cannot be asked or holds no CPU
    /// series for it (naming the instances it has).
    pub fn node(&self) -> Result<NodeFacts, Failure> {
        let cpus = self.instant(&format!(
            "node_cpu_seconds_total{{instance={},mode=\"idle\"}}",
            quoted(&self.instance)
        ))?;
        if cpus.is_empty() {
            return Err(Failure::input(format!(
                "Prometheus at {} has no node_cpu_seconds_total for instance \"{}\"; {}",
                self.base,
                self.instance,
                self.instances_text()
            )));
        }
        let uname = self.instant(&format!(
            "node_uname_info{{instance={}}}",
            quoted(&self.instance)
        ))?;
        let label = |name: &str| {
            uname
                .first()
                .and_then(|s| s.labels.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let memory = self.instant(&format!(
            "node_memory_MemTotal_bytes{{instance={}}}",
            quoted(&self.instance)
        ))?;
        Ok(NodeFacts {
            nodename: label("nodename"),
            kernel: label("release"),
            cores: cpus.len(),
            memory_bytes: memory
                .first()
                .and_then(|s| s.samples.last())
                .map(|(_, v)| *v as u64),
        })
    }

    /// The node's CPU seconds by mode and its disks' bytes between `start` and `end` (unix
    /// seconds), once Prometheus has scraped past `end`.
    pub fn window(&self, start: f64, end: f64) -> Result<Vec<CounterRow>, Failure> {
        let series = self.samples_past(start, end)?;
        let mut rows = Vec::new();
        for (name, modes) in CPU_MODES {
            let of_modes = series.iter().filter(|s| {
                s.label("__name__") == "node_cpu_seconds_total" && modes.contains(&s.label("mode"))
            });
            rows.push(summed(name, of_modes, start, end)?);
        }
        for (name, metric) in DISK_COUNTERS {
            let of_metric = series.iter().filter(|s| s.label("__name__") == metric);
            if let Ok(row) = summed(name, of_metric, start, end) {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// The window's series, asked again until every CPU series has a sample at or after
    /// `end` (the next scrape), or until the wait runs out.
    fn samples_past(&self, start: f64, end: f64) -> Result<Vec<Series>, Failure> {
        let waited = Instant::now();
        loop {
            let now = unix_now();
            let range = (now - start + LOOKBACK_S).ceil() as u64;
            let series = self.instant(&format!(
                "{{__name__=~\"node_cpu_seconds_total|node_disk_read_bytes_total|node_disk_written_bytes_total\",instance={}}}[{range}s]",
                quoted(&self.instance)
            ))?;
            let scraped_past = |s: &Series| s.samples.last().is_some_and(|(t, _)| *t >= end);
            let cpus = series
                .iter()
                .filter(|s| s.label("__name__") == "node_cpu_seconds_total");
            if cpus.clone().count() > 0 && cpus.clone().all(scraped_past) {
                return Ok(series);
            }
            if waited.elapsed() > SCRAPE_WAIT {
                return Err(Failure::run(format!(
                    "Prometheus at {} scraped instance \"{}\" nothing after the run's end within {} s",
                    self.base,
                    self.instance,
                    SCRAPE_WAIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn instances_text(&self) -> String {
        match self.instant("count by (instance) (node_cpu_seconds_total)") {
            Ok(series) if !series.is_empty() => {
                let names: Vec<String> = series
                    .iter()
                    .map(|s| format!("\"{}\"", s.label("instance")))
                    .collect();
                format!("the instances it has: {}", names.join(", "))
            }
            _ => "it has no node_exporter's series at all".into(),
        }
    }

    /// A PromQL query evaluated now: each series' samples (one for an instant vector, the
    /// range's for a range vector).
    fn instant(&self, query: &str) -> Result<Vec<Series>, Failure> {
        let url = format!(
            "{}/api/v1/query?query={}&time={:.3}",
            self.base,
            percent_encoded(query),
            unix_now()
        );
        let body = stampede_conn::control_runtime()
            .block_on(async {
                let response = reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .timeout(Duration::from_secs(30))
                    .build()?
                    .get(&url)
                    .send()
                    .await?;
                response.bytes().await
            })
            .map_err(|e| {
                Failure::input(format!(
                    "cannot reach Prometheus at {}: {}",
                    self.base,
                    with_causes(&e)
                ))
            })?;
        parse_response(&body).map_err(|e| {
            Failure::input(format!(
                "Prometheus at {} answered `{query}` with {e}",
                self.base
            ))
        })
    }
}

impl Series {
    fn label(&self, name: &str) -> &str {
        self.labels
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// The increase of several series over the window, summed (every CPU of a mode, every disk).
fn summed<'s>(
    name: &str,
    series: impl Iterator<Item = &'s Series>,
    start: f64,
    end: f64,
) -> Result<CounterRow, Failure> {
    let mut total = 0.0;
    let mut any = false;
    for s in series {
        total += increase(&s.samples, start, end).ok_or_else(|| {
            Failure::run(format!(
                "{name}: a series has no samples on both sides of the window"
            ))
        })?;
        any = true;
    }
    if !any {
        return Err(Failure::run(format!("{name}: no series")));
    }
    Ok(CounterRow {
        source: SOURCE.into(),
        name: name.into(),
        value: total,
    })
}

/// A counter's increase over [start, end] from its samples: each interval between two
/// samples counts in proportion to its overlap with the window; a fall is a reset, after
/// which the counter counted from zero (as Prometheus's own `increase` takes it). None
/// unless the samples reach past both edges.
pub fn increase(samples: &[(f64, f64)], start: f64, end: f64) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    if first.0 > start || last.0 < end {
        return None;
    }
    let mut total = 0.0;
    for pair in samples.windows(2) {
        let ((t0, v0), (t1, v1)) = (pair[0], pair[1]);
        let overlap = t1.min(end) - t0.max(start);
        if overlap <= 0.0 || t1 <= t0 {
            continue;
        }
        let rise = if v1 >= v0 { v1 - v0 } else { v1 };
        total += rise * overlap / (t1 - t0);
    }
    Some(total)
}

/// The result of `/api/v1/query`: a vector's or a matrix's series.
fn parse_response(body: &[u8]) -> Result<Vec<Series>, String> {
    let json: Value =
        serde_json::from_slice(body).map_err(|e| format!("an answer that is not JSON ({e})"))?;
    if json["status"] != "success" {
        return Err(format!(
            "an error: {}",
            json["error"].as_str().unwrap_or("no reason given")
        ));
    }
    let sample = |pair: &Value| -> Option<(f64, f64)> {
        Some((pair[0].as_f64()?, pair[1].as_str()?.parse().ok()?))
    };
    let results = json["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Ok(results
        .into_iter()
        .map(|result| {
            let samples = match result.get("values") {
                Some(Value::Array(values)) => values.iter().filter_map(sample).collect(),
                _ => result.get("value").and_then(sample).into_iter().collect(),
            };
            Series {
                labels: result["metric"].as_object().cloned().unwrap_or_default(),
                samples,
            }
        })
        .collect())
}

/// An error and what caused it, as one line (reqwest's own message names only the URL).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let next_text = next.to_string();
        if !text.contains(&next_text) {
            text = format!("{text}: {next_text}");
        }
        cause = next.source();
    }
    text
}

/// A PromQL string literal.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `text` as a URL's query value.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_each_scrape_interval_by_its_overlap() {
        // 1 CPU-second per second, scraped every 2 s.
        let samples = [(0.0, 10.0), (2.0, 12.0), (4.0, 14.0), (6.0, 16.0)];
        assert_eq!(increase(&samples, 1.0, 5.0), Some(4.0));
        assert_eq!(increase(&samples, 0.0, 6.0), Some(6.0));
        // A busy interval inside the window counts whole; an idle one at the edge not at all.
        let busy = [(0.0, 0.0), (1.0, 0.0), (2.0, 1.0), (3.0, 2.0), (4.0, 2.0)];
        assert_eq!(increase(&busy, 1.0, 3.0), Some(2.0));
        assert_eq!(increase(&busy, 0.5, 3.5), Some(2.0));
    }

    #[test]
    fn a_counter_reset_counts_from_zero_and_missing_edges_give_nothing() {
        let reset = [(0.0, 100.0), (1.0, 101.0), (2.0, 3.0), (3.0, 4.0)];
        assert_eq!(increase(&reset, 0.0, 3.0), Some(1.0 + 3.0 + 1.0));
        assert_eq!(increase(&reset, -1.0, 3.0), None);
        assert_eq!(increase(&reset, 0.0, 3.5), None);
        assert_eq!(increase(&[], 0.0, 1.0), None);
    }

    #[test]
    fn answers_are_read_as_series_and_errors_keep_their_reason() {
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"node_cpu_seconds_total","cpu":"0","mode":"user"},
             "values":[[1700000000.5,"1.5"],[1700000001.5,"2.25"]]}]}}"#;
        let series = parse_response(matrix).unwrap();
        assert_eq!(series[0].label("mode"), "user");
        assert_eq!(
            series[0].samples,
            vec![(1700000000.5, 1.5), (1700000001.5, 2.25)]
        );
        let vector = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"instance":"db:9100"},"value":[1700000000,"8"]}]}}"#;
        assert_eq!(
            parse_response(vector).unwrap()[0].samples,
            vec![(1700000000.0, 8.0)]
        );
        let error = br#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#;
        assert_eq!(
            parse_response(error).err().unwrap(),
            "an error: parse error at char 3"
        );
        assert_eq!(
            percent_encoded("a{b=\"c d\"}[5s]"),
            "a%7Bb%3D%22c%20d%22%7D%5B5s%5D"
        );
        assert_eq!(quoted("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
