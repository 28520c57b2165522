//! The probes around a run's measured window. Opening it (after the warmup's sessions have
//! ended and flushed their statistics) resets the statement statistics, snapshots every
//! counter and starts the sampler; closing it (after the run's sessions have ended) takes the
//! counters' change, the statements, the per-second series and the wait-event samples. Probe
//! failures leave the run's own numbers intact and its probe rows empty. Each engine has its
//! probes (PostgreSQL's views, MariaDB's status and performance_schema); the lab sees these
//! traits.

use stampede_base::error::Failure;
use std::path::PathBuf;
use std::time::Duration;

use crate::probe::mysql as mysql_probe;
use crate::probe::postgres::sampler;
use crate::probe::postgres::{cluster_stats, run_stats};
use crate::probe::prometheus::{self, Prometheus};
use crate::probe::sampler::Sampler;
use crate::probe::{delta, os, server_cpu};
use stampede_base::cpu;
use stampede_conn::ConnSpec;
use stampede_conn::MysqlSpec;
use stampede_store::{CounterRow, RunRecord};

/// A server's probes for one run.
pub trait RunProbes {
    /// Opens the measured window: statistics reset, counters read, sampler started.
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure>;
}

/// A measured window being watched.
pub trait OpenWindow {
    /// Fills the record's probe fields.
    fn close(self: Box<Self>, record: &mut RunRecord);
}

/// Where PostgreSQL's probes look.
#[derive(Clone)]
pub struct WindowProbes {
    /// The run's database: its counters and statements.
    pub run: ConnSpec,
    /// Another database of the same server, for cluster-wide views and the sampler, so that
    /// their queries are not counted as the run's transactions.
    pub admin: ConnSpec,
    /// The data directory of a server on this machine: the disk's and the server processes'
    /// counters (none for a server elsewhere).
    pub data_dir: Option<PathBuf>,
    pub server_version_num: i64,
}

struct PostgresWindow {
    probes: WindowProbes,
    before: Vec<CounterRow>,
    sampler: Sampler,
}

const SETTLE_LIMIT: Duration = Duration::from_secs(5);

impl RunProbes for WindowProbes {
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure> {
        run_stats::wait_for_sessions_to_end(&self.run, SETTLE_LIMIT);
        run_stats::reset_statements(&self.run)?;
        let before = self.counters()?;
        let sampler = sampler::start(
            self.admin.clone(),
            self.run.dbname.clone(),
            self.data_dir.clone(),
            self.server_version_num,
        );
        Ok(Box::new(PostgresWindow {
            probes: self.clone(),
            before,
            sampler,
        }))
    }
}

impl WindowProbes {
    /// Every cumulative counter now: the run database's, the cluster's, the machine's, the
    /// server processes' CPU and the driver's own.
    fn counters(&self) -> Result<Vec<CounterRow>, Failure> {
        let mut all = run_stats::database_counters(&self.run)?;
        all.extend(cluster_stats::counters(
            &self.admin,
            self.server_version_num,
        )?);
        if let Some(data_dir) = &self.data_dir {
            all.extend(os::counters(data_dir));
            all.extend(server_cpu::counters(data_dir));
        }
        all.extend(driver_cpu());
        Ok(all)
    }
}

/// The driver's own CPU time so far.
fn driver_cpu() -> Vec<CounterRow> {
    let driver = cpu::process_cpu();
    [("cpu_user_s", driver.user), ("cpu_system_s", driver.system)]
        .into_iter()
        .map(|(name, time)| CounterRow {
            source: "driver".into(),
            name: name.into(),
            value: time.as_secs_f64(),
        })
        .collect()
}

impl OpenWindow for PostgresWindow {
    fn close(self: Box<Self>, record: &mut RunRecord) {
        let probes = &self.probes;
        let samples = self.sampler.finish();
        record.wait_events = samples.wait_events;
        record.counter_series = samples.counter_series;
        run_stats::wait_for_sessions_to_end(&probes.run, SETTLE_LIMIT);
        if let Ok(after) = probes.counters() {
            record.counters = delta(&self.before, &after)
                .into_iter()
                // pg_stat_io has hundreds of rows, mostly still.
                .filter(|c| c.value != 0.0 || c.source != "pg_stat_io")
                .collect();
        }
        record.counters.extend(samples.own_cost);
        record.statements = run_stats::statements(&probes.run).unwrap_or_default();
    }
}

/// Where a MariaDB/MySQL server's probes look.
#[derive(Clone)]
pub struct MysqlProbes {
    /// A control session's account on the server, with the run's database.
    pub run: MysqlSpec,
    /// The data directory of a server on this machine (none for a server elsewhere).
    pub data_dir: Option<PathBuf>,
}

struct MysqlWindow {
    probes: MysqlProbes,
    before: Vec<CounterRow>,
    sampler: Sampler,
}

impl RunProbes for MysqlProbes {
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure> {
        mysql_probe::wait_for_sessions_to_end(&self.run, SETTLE_LIMIT);
        mysql_probe::reset_statements(&self.run)?;
        let before = self.counters()?;
        let sampler = mysql_probe::start_sampler(self.run.clone(), self.data_dir.clone());
        Ok(Box::new(MysqlWindow {
            probes: self.clone(),
            before,
            sampler,
        }))
    }
}

impl MysqlProbes {
    /// The server's status counters, the machine's and the driver's own CPU.
    fn counters(&self) -> Result<Vec<CounterRow>, Failure> {
        let mut all = mysql_probe::global_status(&self.run)?;
        if let Some(data_dir) = &self.data_dir {
            all.extend(os::counters(data_dir));
        }
        all.extend(driver_cpu());
        Ok(all)
    }
}

impl OpenWindow for MysqlWindow {
    fn close(self: Box<Self>, record: &mut RunRecord) {
        let probes = &self.probes;
        let samples = self.sampler.finish();
        record.wait_events = samples.wait_events;
        record.counter_series = samples.counter_series;
        mysql_probe::wait_for_sessions_to_end(&probes.run, SETTLE_LIMIT);
        if let Ok(after) = probes.counters() {
            record.counters = delta(&self.before, &after)
                .into_iter()
                .filter(|c| c.value != 0.0)
                .collect();
        }
        record.counters.extend(samples.own_cost);
        record.statements = mysql_probe::statements(&probes.run).unwrap_or_default();
    }
}

/// A server's probes with its node's CPU and disks from Prometheus (`metrics = { prometheus,
/// instance }`): the node's counters over the window, and as the server's CPU the node's
/// less the driver's own when the driver runs on that node (stampede's whole process: the
/// clients, the probes and the lab). Whatever else runs on the node counts as the server's.
pub struct NodeMetricsProbes {
    pub inner: Box<dyn RunProbes>,
    pub prometheus: Prometheus,
    pub driver_on_node: bool,
}

struct NodeMetricsWindow {
    inner: Box<dyn OpenWindow>,
    prometheus: Prometheus,
    driver_on_node: bool,
    start_unix_s: f64,
    driver_before: Vec<CounterRow>,
}

impl RunProbes for NodeMetricsProbes {
    fn open(&self) -> Result<Box<dyn OpenWindow>, Failure> {
        let inner = self.inner.open()?;
        Ok(Box::new(NodeMetricsWindow {
            inner,
            prometheus: self.prometheus.clone(),
            driver_on_node: self.driver_on_node,
            start_unix_s: prometheus::unix_now(),
            driver_before: driver_cpu(),
        }))
    }
}

impl OpenWindow for NodeMetricsWindow {
    fn close(self: Box<Self>, record: &mut RunRecord) {
        self.inner.close(record);
        let end = prometheus::unix_now();
        let driver = delta(&self.driver_before, &driver_cpu());
        // Without the node's counters the server's CPU stays absent, never 0.
        let Ok(node) = self.prometheus.window(self.start_unix_s, end) else {
            return;
        };
        let server = node
            .iter()
            .filter(|c| c.name == "cpu_user_s" || c.name == "cpu_system_s")
            .map(|c| {
                let own = driver
                    .iter()
                    .find(|d| self.driver_on_node && d.name == c.name)
                    .map_or(0.0, |d| d.value);
                CounterRow {
                    source: server_cpu::SOURCE.into(),
                    name: c.name.clone(),
                    value: (c.value - own).max(0.0),
                }
            })
            .collect::<Vec<_>>();
        record.counters.extend(node);
        record.counters.extend(server);
    }
}
