//! A Prometheus of the test's own (Debian's `prometheus`, `Scraper`): scraping a node_exporter
//! of its own (`prometheus-node-exporter`) on this machine every 250 ms, the metrics source a
//! url target names (`Platform`); or scraping stampede's `--metrics-addr`. Everything stops,
//! and its folder goes, when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::{free_port, wait_until};

pub struct Platform {
    pub scraper: Scraper,
    node_exporter: Child,
    /// `http://127.0.0.1:<port>` of its Prometheus.
    pub base: String,
    /// The node_exporter's `instance` label.
    pub instance: String,
}

/// A Prometheus scraping `targets` every `interval` (a Prometheus duration: `250ms`, `1s`).
pub struct Scraper {
    prometheus: Child,
    folder: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Scraper {
    pub fn start(job: &str, targets: &[&str], interval: &str, timeout: &str) -> Scraper {
        let port = free_port();
        let folder = PathBuf::from(format!(
            "/tmp/stampede-prometheus-{port}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let config = folder.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {interval}\n  scrape_timeout: {timeout}\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        let prometheus = Command::new("prometheus")
            .args([
                &format!("--config.file={}", config.display()),
                &format!("--storage.tsdb.path={}", folder.join("data").display()),
                &format!("--web.listen-address=127.0.0.1:{port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's package; ./test installs it)");
        let scraper = Scraper {
            prometheus,
            folder,
            base: format!("http://127.0.0.1:{port}"),
        };
        // Scrapes start once it is ready: a run started before would lose its first seconds.
        wait_until("Prometheus is ready", || {
            Command::new("curl")
                .args(["-sf", &format!("{}/-/ready", scraper.base)])
                .output()
                .is_ok_and(|output| output.status.success())
        });
        scraper
    }

    /// Waits until Prometheus scrapes `job`'s targets (it takes up new targets every 5 s): a
    /// target that starts after this is read from its first second.
    pub fn wait_scraping(&self, job: &str) {
        wait_until("Prometheus scrapes the job's targets", || {
            self.query_at(&format!("up{{job=\"{job}\"}}"), None)
                .contains("\"value\"")
        });
    }

    /// Prometheus's answer to an instant query (at `time`, Unix seconds, when given), as text.
    pub fn query_at(&self, promql: &str, time: Option<f64>) -> String {
        let mut command = Command::new("curl");
        command
            .args(["-s", "--get", "--data-urlencode"])
            .arg(format!("query={promql}"));
        if let Some(time) = time {
            command.arg("--data-urlencode").arg(format!("time={time}"));
        }
        let output = command
            .arg(format!("{}/api/v1/query", self.base))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        let _ = self.prometheus.kill();
        let _ = self.prometheus.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

impl Platform {
    pub fn start() -> Platform {
        let exporter_port = free_port();
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
        let scraper = Scraper::start("node", &[&instance], "250ms", "200ms");
        let platform = Platform {
            base: scraper.base.clone(),
            scraper,
            node_exporter,
            instance,
        };
        wait_until("Prometheus has scraped the node_exporter", || {
            platform.query("node_uname_info").contains("nodename")
        });
        platform
    }

    /// Prometheus's answer to an instant query, as text.
    pub fn query(&self, promql: &str) -> String {
        self.scraper.query_at(promql, None)
    }
}

impl Drop for Platform {
    fn drop(&mut self) {
        let _ = self.node_exporter.kill();
        let _ = self.node_exporter.wait();
    }
}
