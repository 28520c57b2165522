//! PostgreSQL's probes: the cumulative statistics views (`pgstat`, `cluster_stats`), a run's
//! counters (`run_stats`), pg_stat_statements over a window (`statement_window`), plans
//! (`plans`) and the wait-event sampler (`sampler`), all over control sessions.

pub mod cluster_stats;
pub mod pgstat;
pub mod plans;
pub mod run_stats;
pub mod sampler;
pub mod statement_window;
