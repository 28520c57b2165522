//! The operator's exporter on each instance pod (`cnpg_*` metrics on port 9187), read through
//! the API server's pod proxy: the lab needs no path to the pods, as with the kubelet's.

use crate::launch::Cluster;
use crate::KubeError;

/// The port every instance's exporter listens on (the pod's `metrics` port).
pub const EXPORTER_PORT: u16 = 9187;

impl Cluster {
    /// The instance pod's exporter page, in Prometheus' text format.
    pub fn exporter_text(&self, namespace: &str, pod: &str) -> Result<String, KubeError> {
        self.runtime().block_on(async {
            let request = http::Request::get(format!(
                "/api/v1/namespaces/{namespace}/pods/{pod}:{EXPORTER_PORT}/proxy/metrics"
            ))
            .body(Vec::new())
            .map_err(|e| KubeError::new(format!("the exporter's page: {e}")))?;
            self.client()
                .request_text(request)
                .await
                .map_err(|e| KubeError::new(format!("could not read pod {pod}'s exporter: {e}")))
        })
    }
}
