//! What a Cluster's runs are measured by besides the server's own views, read at the window's
//! edges through the API server:
//! - the server's CPU from where it runs: the primary's pod as its node's kubelet samples it.
//!   The kubelet samples every few seconds, so the window's CPU is the rate between its two
//!   samples over the window (the samples' span is recorded beside it); the kubelet does not
//!   split user and system time, so the server's CPU is one counter, `cpu_s`;
//! - the operator's exporter on the primary (`cnpg_*`): every counter that moved over the
//!   window, by its series as exposed (`cnpg_pg_stat_database_xact_commit{datname="…"}`) —
//!   a second reading of the server's statistics, by the operator's own queries. Only when the
//!   exporter runs them at each scrape (`metricsQueriesTTL` zero, as on the Clusters the lab
//!   creates): by default it serves what it read up to 30 s before.
//!
//! How long the reads took is recorded too (`read_s`): they are the metrics' cost per run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lab::window::{OpenWindow, RunProbes};
use crate::probe::exposition::{self, Sample};
use crate::probe::server_cpu;
use stampede_base::error::Failure;
use stampede_kube::cloudnativepg::PostgresCluster;
use stampede_kube::kubelet::{window_cpu_s, PodUsage};
use stampede_kube::Cluster;
use stampede_store::{CounterRow, RunRecord};

/// The counters' source for what the kubelet said.
pub const SOURCE: &str = "kubelet";
/// The counters' source for what the operator's exporter said.
pub const EXPORTER_SOURCE: &str = "cnpg";

/// The probes of a run on a Cluster: the server's own views (`inner`), its primary's pod and
/// the primary's exporter.
pub struct PrimaryProbes {
    pub inner: Box<dyn RunProbes>,
    pub cluster: Arc<Cluster>,
    pub namespace: String,
    pub name: String,
    /// How long the run is measured: the CPU rate is taken over it (the window may close
    /// later, once a run's pods are gone).
    pub run_duration: Duration,
}

struct PrimaryWindow {
    inner: Box<dyn OpenWindow>,
    cluster: Arc<Cluster>,
    namespace: String,
    /// The primary's pod as the window opened.
    primary: Option<String>,
    /// Its kubelet sample then.
    usage: Option<PodUsage>,
    /// Its exporter's page then.
    exported: Option<Vec<Sample>>,
    run_duration: Duration,
    /// How long the readings at the window's opening took.
    read: Readings,
}

/// Seconds spent reading each source.
#[derive(Default, Clone, Copy)]
struct Readings {
    kubelet_s: f64,
    exporter_s: f64,
}

impl PrimaryWindow {
    fn usage(&mut self, pod: &str) -> Option<PodUsage> {
        let started = Instant::now();
        let usage = self.cluster.pod_usage(&self.namespace, pod).ok();
        self.read.kubelet_s += started.elapsed().as_secs_f64();
        usage
    }

    fn exported(&mut self, pod: &str) -> Option<Vec<Sample>> {
        let started = Instant::now();
        let text = self.cluster.exporter_text(&self.namespace, pod).ok();
        self.read.exporter_s += started.elapsed().as_secs_f64();
        text.map(|text| exposition::samples(&text))
    }
}

impl RunProbes for PrimaryProbes {
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure> {
        let inner = self.inner.open()?;
        // Without a reading the numbers stay absent, never 0.
        let found = self
            .cluster
            .postgres_cluster(&self.namespace, &self.name)
            .ok()
            .flatten();
        let uncached = found.as_ref().is_some_and(queries_uncached);
        let primary = found.and_then(|c| c.status?.current_primary);
        let mut window = PrimaryWindow {
            inner,
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            primary: primary.clone(),
            usage: None,
            exported: None,
            run_duration: self.run_duration,
            read: Readings::default(),
        };
        if let Some(pod) = &primary {
            window.usage = window.usage(pod);
            if uncached {
                window.exported = window.exported(pod);
            }
        }
        Ok(Box::new(window))
    }
}

impl OpenWindow for PrimaryWindow {
    fn close(mut self: Box<Self>, record: &mut RunRecord) {
        let window_s = self.run_duration.as_secs_f64();
        let Some(pod) = self.primary.clone() else {
            self.inner.close(record);
            return;
        };
        // Read before the server's own views, which take a while on a loaded machine: the
        // exporter's counters then end nearer the window's end.
        let usage = self
            .usage
            .and_then(|before| Some((before, self.usage(&pod)?)));
        let exported = match self.exported.take() {
            Some(before) => self.exported(&pod).map(|after| (before, after)),
            None => None,
        };
        let read = self.read;
        self.inner.close(record);
        if let Some((before, after)) = usage {
            record.counters.extend(counters(&before, &after, window_s));
            record.counters.push(row(SOURCE, "read_s", read.kubelet_s));
        }
        if let Some((before, after)) = exported {
            record.counters.extend(exporter_counters(&before, &after));
            record
                .counters
                .push(row(EXPORTER_SOURCE, "read_s", read.exporter_s));
        }
    }
}

/// Whether the Cluster's exporter runs its queries at every scrape (`metricsQueriesTTL` of
/// zero, as the lab's own Clusters have it): a cached page's counters are not the window's.
fn queries_uncached(cluster: &PostgresCluster) -> bool {
    cluster
        .spec
        .other
        .get("monitoring")
        .and_then(|m| m.get("metricsQueriesTTL"))
        .and_then(|ttl| ttl.as_str())
        .is_some_and(|ttl| {
            // A Go duration of zero: "0", "0s", "0m0s", "0.0s".
            ttl.chars().any(|c| c == '0')
                && ttl
                    .chars()
                    .all(|c| c == '0' || c == '.' || c.is_ascii_alphabetic())
        })
}

fn row(source: &str, name: &str, value: f64) -> CounterRow {
    CounterRow {
        source: source.into(),
        name: name.into(),
        value,
    }
}

/// Every `cnpg_*` counter that moved between the two pages; a series new at the end counts
/// from zero (a database made during the window).
fn exporter_counters(before: &[Sample], after: &[Sample]) -> Vec<CounterRow> {
    after
        .iter()
        .filter(|s| s.kind == "counter" && s.series.starts_with("cnpg_") && s.value.is_finite())
        .filter_map(|s| {
            let start = before
                .iter()
                .find(|b| b.series == s.series)
                .map_or(0.0, |b| b.value);
            let moved = s.value - start;
            (moved != 0.0).then(|| row(EXPORTER_SOURCE, &s.series, moved))
        })
        .collect()
}

/// What a window's two samples give: the kubelet's own numbers, and the server's CPU over the
/// window when the kubelet sampled in between.
fn counters(before: &PodUsage, after: &PodUsage, window_s: f64) -> Vec<CounterRow> {
    let mut rows = vec![
        row(SOURCE, "cpu_s", (after.cpu_s - before.cpu_s).max(0.0)),
        row(
            SOURCE,
            "sample_span_s",
            after.sampled_unix_s - before.sampled_unix_s,
        ),
        row(SOURCE, "window_s", window_s),
    ];
    if let Some(bytes) = after.memory_bytes {
        rows.push(row(SOURCE, "memory_bytes", bytes as f64));
    }
    if let Some(cpu_s) = window_cpu_s(before, after, window_s) {
        rows.push(row(server_cpu::SOURCE, "cpu_s", cpu_s));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(cpu_s: f64, sampled_unix_s: f64) -> PodUsage {
        PodUsage {
            cpu_s,
            sampled_unix_s,
            memory_bytes: Some(1 << 30),
        }
    }

    fn value(rows: &[CounterRow], source: &str, name: &str) -> Option<f64> {
        rows.iter()
            .find(|r| r.source == source && r.name == name)
            .map(|r| r.value)
    }

    #[test]
    fn the_server_s_cpu_is_the_primary_s_rate_over_the_window() {
        // 4.5 CPU seconds between samples 15 s apart, over a 30 s window: 9 s.
        let rows = counters(&at(100.0, 1000.0), &at(104.5, 1015.0), 30.0);
        assert_eq!(value(&rows, "server", "cpu_s"), Some(9.0));
        assert_eq!(value(&rows, "kubelet", "cpu_s"), Some(4.5));
        assert_eq!(value(&rows, "kubelet", "sample_span_s"), Some(15.0));
        assert_eq!(value(&rows, "kubelet", "memory_bytes"), Some(1073741824.0));
    }

    #[test]
    fn the_exporter_s_counters_that_moved_are_kept_by_series() {
        let page = |commits: u32, backends: u32, new_db: bool| {
            let mut text = format!(
                "# TYPE cnpg_pg_stat_database_xact_commit counter\n\
                 cnpg_pg_stat_database_xact_commit{{datname=\"app\"}} {commits}\n\
                 cnpg_pg_stat_database_xact_commit{{datname=\"idle\"}} 7\n\
                 # TYPE cnpg_backends_total gauge\ncnpg_backends_total {backends}\n\
                 # TYPE go_gc_duration_seconds_count counter\ngo_gc_duration_seconds_count {commits}\n"
            );
            if new_db {
                text += "cnpg_pg_stat_database_xact_commit{datname=\"run\"} 40\n";
            }
            exposition::samples(&text)
        };
        let rows = exporter_counters(&page(100, 2, false), &page(1100, 9, true));
        let moved: Vec<_> = rows.iter().map(|r| (r.name.as_str(), r.value)).collect();
        assert_eq!(
            moved,
            [
                ("cnpg_pg_stat_database_xact_commit{datname=\"app\"}", 1000.0),
                ("cnpg_pg_stat_database_xact_commit{datname=\"run\"}", 40.0),
            ]
        );
        assert!(rows.iter().all(|r| r.source == "cnpg"));
    }

    #[test]
    fn only_an_exporter_that_queries_at_each_scrape_is_read() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        use stampede_kube::cloudnativepg::ClusterSpec;
        let with = |ttl: Option<&str>| {
            let mut spec = ClusterSpec::default();
            if let Some(ttl) = ttl {
                spec.other.insert(
                    "monitoring".into(),
                    serde_json::json!({ "metricsQueriesTTL": ttl }),
                );
            }
            PostgresCluster::new(ObjectMeta::default(), spec)
        };
        for zero in ["0s", "0", "0m0s", "0.0s"] {
            assert!(queries_uncached(&with(Some(zero))), "{zero}");
        }
        for cached in [None, Some("30s"), Some("1m0s"), Some("")] {
            assert!(!queries_uncached(&with(cached)), "{cached:?}");
        }
    }

    #[test]
    fn without_a_new_sample_the_server_s_cpu_is_absent() {
        let rows = counters(&at(100.0, 1000.0), &at(100.0, 1000.0), 2.0);
        assert_eq!(value(&rows, "server", "cpu_s"), None);
        assert_eq!(value(&rows, "kubelet", "sample_span_s"), Some(0.0));
    }
}
