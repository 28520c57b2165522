//! `--metrics-addr`: the registry served at `/metrics` for the life of the command, and what a
//! run command's `Place` feeds it (`RunFeed`).

use std::sync::Arc;
use std::time::Duration;

use super::metrics::{LiveMetrics, RunStart};
use super::openmetrics::{Labels, CONTENT_TYPE};
use crate::driver::{IntervalReport, RunPlan};
use stampede_base::error::Failure;
use stampede_web::{listen, parse_listen_address, Access, Handler, Listening, Request, Response};

/// The options every run command and the lab take.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve the run's numbers as OpenMetrics at http://ADDR/metrics for Prometheus (HOST:PORT,
    /// or a port alone: loopback)
    #[arg(long = "metrics-addr", value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    #[command(flatten)]
    pub token: TokenArgs,
}

/// `--serve-token`, which the metrics and the live page (`lab run --serve`, `serve`) share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TokenArgs {
    /// A bearer token the metrics and the live page ask for (needed to serve the page beyond
    /// this machine)
    #[arg(
        long = "serve-token",
        value_name = "TOKEN",
        env = "STAMPEDE_SERVE_TOKEN",
        hide_env_values = true
    )]
    pub serve_token: Option<String>,
}

impl TokenArgs {
    /// Open without a token, a bearer token with one; an empty token is refused.
    pub fn access(&self) -> Result<Access, Failure> {
        match self.serve_token.as_deref() {
            Some("") => Err(Failure::input("--serve-token: the token is empty")),
            Some(token) => Ok(Access::Bearer(token.to_string())),
            None => Ok(Access::Open),
        }
    }
}

impl MetricsArgs {
    /// Starts serving when `--metrics-addr` was given, with the process's labels; says where on
    /// standard error.
    pub fn start(&self, labels: Labels) -> Result<Option<MetricsEndpoint>, Failure> {
        let Some(text) = &self.metrics_addr else {
            return Ok(None);
        };
        let address = parse_listen_address(text)
            .map_err(|e| Failure::input(format!("--metrics-addr {e}")))?;
        let access = self.token.access()?;
        let metrics = Arc::new(LiveMetrics::new(labels));
        let handler = Arc::new(MetricsHandler(metrics.clone()));
        let listening = listen(address, access, handler).map_err(Failure::input)?;
        eprintln!("stampede: metrics at http://{}/metrics", listening.address);
        Ok(Some(MetricsEndpoint {
            metrics,
            _listening: listening,
        }))
    }
}

/// A serving registry; serving stops when it is dropped.
pub struct MetricsEndpoint {
    pub metrics: Arc<LiveMetrics>,
    _listening: Listening,
}

impl MetricsEndpoint {
    /// What a `Place` feeds.
    pub fn feed(&self, new_order_script: Option<&str>) -> RunFeed {
        RunFeed {
            metrics: self.metrics.clone(),
            labels: Vec::new(),
            new_order_script: new_order_script.map(str::to_string),
        }
    }
}

impl Drop for MetricsEndpoint {
    /// The last numbers reach the scraper before the process goes.
    fn drop(&mut self) {
        self.metrics.wait_for_final_scrape(Duration::from_secs(10));
    }
}

struct MetricsHandler(Arc<LiveMetrics>);

impl Handler for MetricsHandler {
    fn handle(&self, request: &Request) -> Response {
        match request.path.as_str() {
            "/metrics" => Response::new(200, CONTENT_TYPE, self.0.render()),
            "/" => Response::new(
                200,
                "text/html; charset=utf-8",
                "<!doctype html><title>stampede</title><p><a href=\"metrics\">metrics</a></p>\n",
            ),
            _ => Response::text(404, "not found: the metrics are at /metrics\n"),
        }
    }
}

/// A run's way into the registry: the run's labels and, for TPC-C, the New-Order script.
#[derive(Clone)]
pub struct RunFeed {
    metrics: Arc<LiveMetrics>,
    labels: Labels,
    new_order_script: Option<String>,
}

impl RunFeed {
    pub fn with_labels(mut self, labels: Labels) -> RunFeed {
        self.labels = labels;
        self
    }

    /// The run's series start at zero, described by its plan.
    pub fn start(&self, plan: &RunPlan) {
        let scripts = RunFeed::script_names(plan);
        self.start_described(scripts, plan.clients, plan.rate.is_some());
    }

    /// The names the series give the plan's scripts (pgbench's `transaction type`).
    pub fn script_names(plan: &RunPlan) -> Vec<String> {
        plan.scripts
            .iter()
            .map(|s| s.script.description.clone())
            .collect()
    }

    /// `start` from a run's description (a spread run's, sent by its pod 0).
    pub fn start_described(&self, scripts: Vec<String>, clients: usize, rate_limited: bool) {
        let new_order_script = self
            .new_order_script
            .as_ref()
            .and_then(|name| scripts.iter().position(|s| s == name));
        self.metrics.start_run(RunStart {
            labels: self.labels.clone(),
            scripts,
            clients,
            rate_limited,
            new_order_script,
        });
    }

    pub fn interval(&self, interval: &IntervalReport) {
        self.metrics.observe(interval);
    }

    /// Rows by script, from a run the driver does not run.
    pub fn rows(&self, rows: &[u64]) {
        self.metrics.observe_rows(rows);
    }

    pub fn client_aborted(&self) {
        self.metrics.client_aborted();
    }

    pub fn end(&self, failed: bool) {
        self.metrics.end_run(failed);
    }
}
