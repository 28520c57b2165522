//! A PostgreSQL cluster of one test's own (beside the suite's shared server): initialised
//! with the test's settings on a free port, started, stopped and removed when dropped.

use std::path::PathBuf;

use stampede::server::host::OsUser;
use stampede::server::postgres::binaries::Binaries;
use stampede::server::postgres::cluster::Cluster;

use super::{free_port, PASSWORD};

pub struct OwnCluster {
    pub cluster: Cluster,
    pub user: String,
}

impl OwnCluster {
    /// `binaries`' cluster named `name` (its folder under /tmp), with `settings`.
    pub fn start(name: &str, binaries: Binaries, settings: &[(&str, String)]) -> OwnCluster {
        OwnCluster::start_on(name, binaries, settings, free_port())
    }

    /// The same on a given port (a server made anew where another was).
    pub fn start_on(
        name: &str,
        binaries: Binaries,
        settings: &[(&str, String)],
        port: u16,
    ) -> OwnCluster {
        let (cluster, user) = start_cluster_on(name, binaries, settings, port);
        OwnCluster { cluster, user }
    }

    /// A libpq URI over TCP with the user's password in it.
    pub fn url(&self) -> String {
        format!(
            "postgresql://{}:{PASSWORD}@127.0.0.1:{}/postgres",
            self.user, self.cluster.port
        )
    }

    /// A libpq key=value string on the cluster's unix socket.
    pub fn socket_conninfo(&self) -> String {
        format!(
            "host={} port={} user={} password={PASSWORD} dbname=postgres",
            self.cluster.socket_dir().display(),
            self.cluster.port,
            self.user
        )
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.cluster.root);
    }
}

/// A cluster initialised and started (its owner's drop or exit hook stops it), with the user
/// it was initialised for.
pub fn start_cluster(
    name: &str,
    binaries: Binaries,
    settings: &[(&str, String)],
) -> (Cluster, String) {
    start_cluster_on(name, binaries, settings, free_port())
}

fn start_cluster_on(
    name: &str,
    binaries: Binaries,
    settings: &[(&str, String)],
    port: u16,
) -> (Cluster, String) {
    let run_as = OsUser::for_server().expect("a user to run the server as");
    let user = run_as
        .as_ref()
        .map(|u| u.name.clone())
        .unwrap_or_else(|| std::env::var("USER").unwrap_or_else(|_| "postgres".into()));
    let root = PathBuf::from(format!(
        "/tmp/stampede-{name}-{port}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let cluster = Cluster {
        binaries,
        root,
        port,
        run_as,
        cpus: None,
    };
    cluster.init(&user, PASSWORD, settings).expect("initdb");
    cluster.start().expect("server start");
    (cluster, user)
}
