//! A Prometheus of the test's own (Debian's `prometheus`) scraping a node_exporter of its own
//! (`prometheus-node-exporter`) on this machine every 250 ms: the metrics source a url target
//! names. Both stop, and their folder goes, when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::{free_port, wait_until};

pub struct Platform {
    prometheus: Child,
    node_exporter: Child,
    folder: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The node_exporter's `instance` label.
    pub instance: String,
}

impl Platform {
    pub fn start() -> Platform {
        let exporter_port = free_port();
        let prometheus_port = free_port();
        let folder = PathBuf::from(format!(
            "/tmp/stampede-prometheus-{prometheus_port}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let instance = format!("127.0.0.1:{exporter_port}");
        // Only the collectors a lab reads: each scrape costs the node (and so the server's
        // measured CPU) as little as it can.
        let node_exporter = Command::new("prometheus-node-exporter")
            .args([
                &format!("--web.listen-address={instance}"),
                "--collector.disable-defaults",
                "--collector.cpu",
                "--collector.diskstats",
                "--collector.meminfo",
                "--collector.uname",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus-node-exporter (Debian's package; ./test installs it)");
        let config = folder.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [\"{instance}\"]\n"
            ),
        )
        .unwrap();
        let prometheus = Command::new("prometheus")
            .args([
                &format!("--config.file={}", config.display()),
                &format!("--storage.tsdb.path={}", folder.join("data").display()),
                &format!("--web.listen-address=127.0.0.1:{prometheus_port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's package; ./test installs it)");
        let platform = Platform {
            prometheus,
            node_exporter,
            folder,
            base: format!("http://127.0.0.1:{prometheus_port}"),
            instance,
        };
        wait_until("Prometheus has scraped the node_exporter", || {
            platform.query("node_uname_info").contains("nodename")
        });
        platform
    }

    /// Prometheus's answer to an instant query, as text.
    pub fn query(&self, promql: &str) -> String {
        let output = Command::new("curl")
            .args(["-s", "--get", "--data-urlencode"])
            .arg(format!("query={promql}"))
            .arg(format!("{}/api/v1/query", self.base))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Platform {
    fn drop(&mut self) {
        for child in [&mut self.prometheus, &mut self.node_exporter] {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}
