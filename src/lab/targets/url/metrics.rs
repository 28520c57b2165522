//! `metrics = { prometheus = "http://…", instance = "…" }`: where a url target's server CPU and
//! disks are read, since its /proc is not the lab's. The node_exporter behind `instance`
//! reports the node's CPU time by mode; the server's CPU is the node's, less stampede's own
//! when stampede runs on that node too (its node name is this machine's host name).

use crate::lab::spec_text::SpecError;
use crate::lab::targets::table::TargetTable;
use crate::lab::window::{NodeMetricsProbes, RunProbes};
use crate::probe::prometheus::{NodeFacts, Prometheus};
use stampede_base::error::Failure;

pub const KEY: &str = "metrics";

const FORM: &str =
    "metrics: give { prometheus = \"http://host:9090\", instance = \"node_exporter's instance label\" }";

/// The `metrics` table, when the target has one.
pub fn parse(table: &TargetTable<'_>) -> Result<Option<Prometheus>, SpecError> {
    let Some(value) = table.own(KEY) else {
        return Ok(None);
    };
    let Some(fields) = value.get_ref().as_table() else {
        return Err(table.at(value, FORM));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["prometheus", "instance"].contains(&k.as_str()))
    {
        return Err(table.at(
            value,
            format!("metrics: unknown key `{unknown}`; it takes prometheus and instance"),
        ));
    }
    let text = |key: &str| fields.get(key).and_then(|v| v.as_str()).map(str::trim);
    let (Some(base), Some(instance)) = (text("prometheus"), text("instance")) else {
        return Err(table.at(value, FORM));
    };
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(table.at(
            value,
            format!("metrics.prometheus \"{base}\": give Prometheus's http:// or https:// address"),
        ));
    }
    if base.split("://").nth(1).is_some_and(|rest| {
        rest.split('/')
            .next()
            .is_some_and(|host| host.contains('@'))
    }) {
        return Err(table.at(
            value,
            "metrics.prometheus: credentials in the address would be stored with the spec; stampede reads Prometheus's query API without them",
        ));
    }
    if instance.is_empty() {
        return Err(table.at(value, FORM));
    }
    Ok(Some(Prometheus {
        base: base.trim_end_matches('/').to_string(),
        instance: instance.to_string(),
    }))
}

/// A metrics source the lab reached, with what its node_exporter says of the node.
#[derive(Debug, Clone)]
pub struct NodeMetrics {
    prometheus: Prometheus,
    node: NodeFacts,
}

impl NodeMetrics {
    /// Asks Prometheus about the node; refused when it cannot be asked or lacks the node.
    pub fn reach(prometheus: &Prometheus) -> Result<NodeMetrics, Failure> {
        Ok(NodeMetrics {
            node: prometheus.node()?,
            prometheus: prometheus.clone(),
        })
    }

    /// Whether stampede runs on the server's node, so that its own CPU is there too.
    fn driver_on_node(&self) -> bool {
        self.node.nodename == stampede_base::sys::Machine::this().host
    }

    /// The server's probes with the node's counters around them.
    pub fn around(&self, inner: Box<dyn RunProbes>) -> Box<dyn RunProbes> {
        Box::new(NodeMetricsProbes {
            inner,
            prometheus: self.prometheus.clone(),
            driver_on_node: self.driver_on_node(),
        })
    }

    /// The server's machine as the node_exporter describes it, for the target's record.
    pub fn machine(&self) -> String {
        let node = &self.node;
        let memory = node
            .memory_bytes
            .map_or(String::new(), |bytes| format!(", {} MiB", bytes >> 20));
        format!(
            "node \"{}\": {} CPUs{memory}, kernel {} (node_exporter {})",
            node.nodename, node.cores, node.kernel, self.prometheus.instance
        )
    }

    /// What the server's CPU per transaction is, for `lab plan` and the target's record.
    pub fn described(&self) -> String {
        let node = &self.node;
        let memory = node
            .memory_bytes
            .map_or(String::new(), |bytes| format!(", {} MiB", bytes >> 20));
        let less = if self.driver_on_node() {
            "; stampede runs on that node: its own CPU is taken out"
        } else {
            ""
        };
        format!(
            "server CPU and disks: node \"{}\" ({} CPUs{memory}, kernel {}) by node_exporter's node_cpu_seconds_total for instance \"{}\" through Prometheus at {}{less}; whatever else runs there counts as the server's",
            node.nodename, node.cores, node.kernel, self.prometheus.instance, self.prometheus.base
        )
    }
}

/// What a target's record says of a server the lab did not start.
pub struct ServerIdentity {
    /// Everything known of it, as one line.
    pub described: String,
    /// What its series are keyed by (`TargetRecord::server_key`).
    pub key: String,
    /// Its machine, where a metrics source describes it.
    pub machine: Option<String>,
}

/// `lab plan`'s line for a target without a metrics source.
pub const WITHOUT: &str = "no server CPU or disk counters: the server is not on this machine and the target names no metrics source (what the server's own views say is recorded)";
