//! A pod's CPU and memory as its node's kubelet reports them: the summary API
//! (`/stats/summary`) through the API server's node proxy, so the lab needs no path to the
//! node. The kubelet samples its containers every few seconds (cAdvisor's housekeeping, 10 s
//! by default): each reading carries the time of its sample, and a window's CPU is taken
//! between two samples' times, not the window's edges.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use serde::Deserialize;

use crate::launch::Cluster;
use crate::KubeError;

/// One sample of a pod's usage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodUsage {
    /// CPU time of every container of the pod since it started, in seconds.
    pub cpu_s: f64,
    /// When the kubelet sampled it (Unix seconds).
    pub sampled_unix_s: f64,
    /// The pod's working set, in bytes.
    pub memory_bytes: Option<u64>,
}

#[derive(Deserialize)]
struct Summary {
    #[serde(default)]
    pods: Vec<PodStats>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodStats {
    pod_ref: PodRef,
    cpu: Option<CpuStats>,
    memory: Option<MemoryStats>,
}

#[derive(Deserialize)]
struct PodRef {
    name: String,
    namespace: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CpuStats {
    time: Time,
    usage_core_nano_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemoryStats {
    working_set_bytes: Option<u64>,
}

impl Cluster {
    /// The pod's usage as its node's kubelet last sampled it.
    pub fn pod_usage(&self, namespace: &str, pod: &str) -> Result<PodUsage, KubeError> {
        self.runtime().block_on(async {
            let found = Api::<Pod>::namespaced(self.client(), namespace)
                .get(pod)
                .await
                .map_err(|e| KubeError::new(format!("could not read pod {pod}: {e}")))?;
            let node = found
                .spec
                .and_then(|spec| spec.node_name)
                .ok_or_else(|| KubeError::new(format!("pod {pod} is on no node yet")))?;
            let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
                .body(Vec::new())
                .map_err(|e| KubeError::new(format!("the kubelet's summary: {e}")))?;
            let text = self.client().request_text(request).await.map_err(|e| {
                KubeError::new(format!("could not read node {node}'s kubelet summary: {e}"))
            })?;
            usage_in(&text, namespace, pod)
        })
    }
}

/// The pod's sample in a kubelet summary.
fn usage_in(summary: &str, namespace: &str, pod: &str) -> Result<PodUsage, KubeError> {
    let summary: Summary = serde_json::from_str(summary)
        .map_err(|e| KubeError::new(format!("a kubelet summary that does not parse: {e}")))?;
    let stats = summary
        .pods
        .into_iter()
        .find(|p| p.pod_ref.name == pod && p.pod_ref.namespace == namespace)
        .ok_or_else(|| KubeError::new(format!("the kubelet reports no pod {pod} (yet)")))?;
    let cpu = stats
        .cpu
        .ok_or_else(|| KubeError::new(format!("the kubelet reports no CPU for pod {pod}")))?;
    let usage = cpu
        .usage_core_nano_seconds
        .ok_or_else(|| KubeError::new(format!("the kubelet reports no CPU time for pod {pod}")))?;
    let sampled = cpu.time.0;
    Ok(PodUsage {
        cpu_s: usage as f64 / 1e9,
        sampled_unix_s: sampled.as_second() as f64 + f64::from(sampled.subsec_nanosecond()) / 1e9,
        memory_bytes: stats.memory.and_then(|m| m.working_set_bytes),
    })
}

/// The CPU seconds a pod used over a window of `window_s`, from a sample before it and one
/// after: the rate between the two samples, over the window. None when the kubelet took no
/// new sample in between.
pub fn window_cpu_s(before: &PodUsage, after: &PodUsage, window_s: f64) -> Option<f64> {
    let between = after.sampled_unix_s - before.sampled_unix_s;
    (between > 0.0).then(|| (after.cpu_s - before.cpu_s).max(0.0) / between * window_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = r#"{"node": {"nodeName": "n1"}, "pods": [
        {"podRef": {"name": "other", "namespace": "bench"}, "cpu": {"time": "2026-12-06T10:00:00Z", "usageCoreNanoSeconds": 1}},
        {"podRef": {"name": "db-1", "namespace": "bench"},
         "cpu": {"time": "2026-12-06T10:00:05.5Z", "usageNanoCores": 900000000, "usageCoreNanoSeconds": 12500000000},
         "memory": {"time": "2026-12-06T10:00:05.5Z", "workingSetBytes": 104857600}}]}"#;

    #[test]
    fn a_pod_s_sample_is_read_with_its_time() {
        let usage = usage_in(SUMMARY, "bench", "db-1").unwrap();
        assert_eq!(usage.cpu_s, 12.5);
        assert_eq!(usage.sampled_unix_s, 1_796_551_205.5);
        assert_eq!(usage.memory_bytes, Some(104_857_600));
        let missing = usage_in(SUMMARY, "other-ns", "db-1").unwrap_err();
        assert_eq!(missing.0, "the kubelet reports no pod db-1 (yet)");
    }

    #[test]
    fn a_window_s_cpu_is_the_rate_between_samples() {
        let at = |cpu_s, sampled_unix_s| PodUsage {
            cpu_s,
            sampled_unix_s,
            memory_bytes: None,
        };
        // 3 CPU seconds over 10 s of samples: 0.3 cores, 18 s over a 60 s window.
        let cpu = window_cpu_s(&at(10.0, 100.0), &at(13.0, 110.0), 60.0).unwrap();
        assert!((cpu - 18.0).abs() < 1e-9);
        assert_eq!(window_cpu_s(&at(10.0, 100.0), &at(10.0, 100.0), 60.0), None);
    }
}
