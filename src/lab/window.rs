//! The probes around a run's measured window. Opening it (after the warmup's sessions have
//! ended and flushed their statistics) resets pg_stat_statements, snapshots every counter and
//! starts the sampler; closing it (after the run's sessions have ended) takes the counters'
//! change, the statements, the per-second series and the wait-event samples. Probe failures
//! leave the run's own numbers intact and its probe rows empty.

use crate::error::Failure;
use std::path::PathBuf;
use std::time::Duration;

use crate::probe::sampler::Sampler;
use crate::probe::{cluster_stats, cpu, delta, os, run_stats};
use crate::server::target::ConnSpec;
use crate::store::{CounterRow, RunRecord};

/// Where the probes look.
pub struct WindowProbes {
    /// The run's database: its counters and statements.
    pub run: ConnSpec,
    /// Another database of the same server, for cluster-wide views and the sampler, so that
    /// their queries are not counted as the run's transactions.
    pub admin: ConnSpec,
    pub data_dir: PathBuf,
    pub server_version_num: i64,
}

pub struct OpenWindow {
    before: Vec<CounterRow>,
    sampler: Sampler,
}

const SETTLE_LIMIT: Duration = Duration::from_secs(5);

impl WindowProbes {
    pub fn open(&self) -> Result<OpenWindow, Failure> {
        run_stats::wait_for_sessions_to_end(&self.run, SETTLE_LIMIT);
        run_stats::reset_statements(&self.run)?;
        let before = self.counters()?;
        let sampler = Sampler::start(
            self.admin.clone(),
            self.run.dbname.clone(),
            self.data_dir.clone(),
            self.server_version_num,
        );
        Ok(OpenWindow { before, sampler })
    }

    /// Every cumulative counter now: the run database's, the cluster's, the machine's and the
    /// driver's own CPU.
    fn counters(&self) -> Result<Vec<CounterRow>, Failure> {
        let mut all = run_stats::database_counters(&self.run)?;
        all.extend(cluster_stats::counters(
            &self.admin,
            self.server_version_num,
        )?);
        all.extend(os::counters(&self.data_dir));
        let driver = cpu::process_cpu();
        for (name, time) in [("cpu_user_s", driver.user), ("cpu_system_s", driver.system)] {
            all.push(CounterRow {
                source: "driver".into(),
                name: name.into(),
                value: time.as_secs_f64(),
            });
        }
        Ok(all)
    }
}

impl OpenWindow {
    /// Fills the record's probe fields.
    pub fn close(self, probes: &WindowProbes, record: &mut RunRecord) {
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
