//! A Cluster's server CPU, from where it runs: the primary's pod as its node's kubelet samples
//! it, read at the window's edges through the API server. The kubelet samples every few
//! seconds, so the window's CPU is the rate between its two samples over the window (the
//! samples' span is recorded beside it); the kubelet does not split user and system time, so
//! the server's CPU is one counter, `cpu_s`.

use std::sync::Arc;
use std::time::Duration;

use crate::lab::window::{OpenWindow, RunProbes};
use crate::probe::server_cpu;
use stampede_base::error::Failure;
use stampede_kube::kubelet::{window_cpu_s, PodUsage};
use stampede_kube::Cluster;
use stampede_store::{CounterRow, RunRecord};

/// The counters' source for what the kubelet said.
pub const SOURCE: &str = "kubelet";

/// The probes of a run on a Cluster: the server's own views (`inner`) and its primary's pod.
pub struct PrimaryCpuProbes {
    pub inner: Box<dyn RunProbes>,
    pub cluster: Arc<Cluster>,
    pub namespace: String,
    pub name: String,
    /// How long the run is measured: the CPU rate is taken over it (the window may close
    /// later, once a run's pods are gone).
    pub run_duration: Duration,
}

struct PrimaryCpuWindow {
    inner: Box<dyn OpenWindow>,
    cluster: Arc<Cluster>,
    namespace: String,
    /// The primary's pod as the window opened, and its sample then.
    primary: Option<(String, PodUsage)>,
    run_duration: Duration,
}

impl RunProbes for PrimaryCpuProbes {
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure> {
        let inner = self.inner.open()?;
        // Without the kubelet's sample the server's CPU stays absent, never 0.
        let primary = self
            .cluster
            .postgres_cluster(&self.namespace, &self.name)
            .ok()
            .flatten()
            .and_then(|c| c.status?.current_primary)
            .and_then(|pod| {
                let usage = self.cluster.pod_usage(&self.namespace, &pod).ok()?;
                Some((pod, usage))
            });
        Ok(Box::new(PrimaryCpuWindow {
            inner,
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            primary,
            run_duration: self.run_duration,
        }))
    }
}

impl OpenWindow for PrimaryCpuWindow {
    fn close(self: Box<Self>, record: &mut RunRecord) {
        self.inner.close(record);
        let window_s = self.run_duration.as_secs_f64();
        let Some((pod, before)) = &self.primary else {
            return;
        };
        let Ok(after) = self.cluster.pod_usage(&self.namespace, pod) else {
            return;
        };
        record
            .counters
            .extend(counters(&before.clone(), &after, window_s));
    }
}

/// What a window's two samples give: the kubelet's own numbers, and the server's CPU over the
/// window when the kubelet sampled in between.
fn counters(before: &PodUsage, after: &PodUsage, window_s: f64) -> Vec<CounterRow> {
    let row = |source: &str, name: &str, value: f64| CounterRow {
        source: source.into(),
        name: name.into(),
        value,
    };
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
    fn without_a_new_sample_the_server_s_cpu_is_absent() {
        let rows = counters(&at(100.0, 1000.0), &at(100.0, 1000.0), 2.0);
        assert_eq!(value(&rows, "server", "cpu_s"), None);
        assert_eq!(value(&rows, "kubelet", "sample_span_s"), Some(0.0));
    }
}
