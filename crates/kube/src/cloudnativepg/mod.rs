//! CloudNativePG's Cluster as a lab's target: the typed resource (`resource`), what a lab
//! does with one through the API server (`lifecycle`) and its instances' exporter
//! (`exporter`). The operator provisions, fails over and
//! applies settings; the lab asks it and waits.

pub mod exporter;
pub mod lifecycle;
pub mod resource;

pub use lifecycle::{ClusterPlacement, HealthWait, InstancePlacement};
pub use resource::{
    AffinityConfiguration, ClusterSpec, ClusterStatus, PostgresCluster, PostgresConfiguration,
    StorageConfiguration, SynchronousConfiguration, CLUSTER_LABEL, HEALTHY_PHASE,
};
