//! `url = "…"`: a server the lab never starts or stops, reached by a connection string: a
//! `postgresql://` URI, a libpq `key=value` string or `service=NAME` (with `PG*` variables and
//! `.pgpass` as libpq reads them), or a `mysql://`/`mariadb://` URL. The lab works in
//! databases of its own there (`names.rs`), applies the target's settings the least invasive
//! way that takes effect and puts them back (`access.rs`, `put_back.rs`), and reads what the
//! server itself says over each run's window.

mod access;
mod metrics;
mod mysql;
mod names;
pub(in crate::lab::targets) mod postgres;
mod put_back;

use std::sync::Arc;

use super::api::{LabPlace, LabServer, ResolvedTarget, TargetKind, TargetSource};
use super::table::TargetTable;
use crate::lab::spec_text::SpecError;
use crate::lab::targets::api::TargetSpec;
use crate::probe::prometheus::Prometheus;
use crate::server::profile::Profile;
use crate::server::setup::SetupEvent;
use metrics::NodeMetrics;
use stampede_base::error::Failure;
use stampede_conn::{ConnSpec, ConnSpecError, Engine};

pub struct Kind;

impl TargetKind for Kind {
    fn key(&self) -> &'static str {
        "url"
    }

    fn own_keys(&self) -> &'static [&'static str] {
        &[metrics::KEY]
    }

    fn parse(&self, table: &TargetTable<'_>) -> Result<Arc<dyn TargetSource>, SpecError> {
        let value = table.value.expect("the kind's key names it");
        let Some(text) = value.get_ref().as_str().map(str::trim) else {
            return Err(table.at(value, URL_FORMS));
        };
        let mut target = match UrlTarget::parse(text) {
            Ok(Some(target)) => target,
            Ok(None) => return Err(table.at(value, URL_FORMS)),
            Err(e) => {
                let libpq = engine_of(text) == Engine::Postgres;
                let what = if libpq {
                    "invalid connection string: "
                } else {
                    ""
                };
                return Err(table.at(value, format!("url: {what}{e}")));
            }
        };
        target.metrics = metrics::parse(table)?;
        Ok(Arc::new(target))
    }
}

const URL_FORMS: &str = "url: give a postgresql:// URI, a libpq key=value string, service=NAME, or a mysql:// (mariadb://) URL";

/// A server named by a connection string. Its text is kept whole (libpq reads it again where
/// it connects), but only ever shown masked.
pub struct UrlTarget {
    given: String,
    masked: String,
    secret: Option<String>,
    engine: Engine,
    /// Where the server's CPU and disks are read (none: the server's own views alone).
    metrics: Option<Prometheus>,
}

impl std::fmt::Debug for UrlTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UrlTarget({})", self.masked)
    }
}

/// The engine a url names: MariaDB's (and MySQL's) by its scheme, else libpq's forms.
fn engine_of(text: &str) -> Engine {
    if text.starts_with("mysql://") || text.starts_with("mariadb://") {
        Engine::Mysql
    } else {
        Engine::Postgres
    }
}

impl UrlTarget {
    /// The url as given, checked as its client would read it; `None` when it is empty (the
    /// caller says which forms a url takes).
    fn parse(text: &str) -> Result<Option<UrlTarget>, ConnSpecError> {
        if text.is_empty() {
            return Ok(None);
        }
        let (masked, secret) = stampede_conn::conninfo::masked(text);
        let engine = engine_of(text);
        // Read only to refuse what its client would: it is read again where it connects.
        match engine {
            Engine::Mysql => {
                stampede_conn::MysqlSpec::from_url(text)?;
            }
            Engine::Postgres => {
                stampede_conn::conninfo::parse(text)?;
            }
        }
        Ok(Some(UrlTarget {
            given: text.to_string(),
            masked,
            secret,
            engine,
            metrics: None,
        }))
    }

    /// Where to connect, as libpq would: the string over `PG*` variables, `.pgpass`, a service.
    fn conn(&self) -> Result<ConnSpec, Failure> {
        ConnSpec::from_conninfo(&self.given).map_err(|e| {
            e.into_input()
                .map_message(|text| format!("url {}: {text}", self.masked))
        })
    }

    /// What only a server the lab starts can take.
    fn check_managed_only(&self, target: &TargetSpec) -> Result<(), Failure> {
        if target.profile != Profile::Untuned {
            return Err(Failure::input(format!(
                "profile = \"{}\": a url target is measured as its server is configured; give the settings to change as settings = {{ … }}",
                target.profile.name()
            )));
        }
        if target.cpus.is_some() {
            return Err(Failure::input(
                "cpus pins the processes of a server the lab starts; a url target's server runs where it runs",
            ));
        }
        Ok(())
    }

    fn reach(&self, target: &TargetSpec) -> Result<Reached, Failure> {
        self.check_managed_only(target)?;
        let server = match self.engine {
            Engine::Postgres => ReachedServer::Postgres(Box::new(postgres::Reached::reach(
                self.conn()?,
                &self.masked,
                target,
            )?)),
            Engine::Mysql => {
                let account = stampede_conn::MysqlSpec::from_url(&self.given)
                    .map_err(|e| Failure::input(format!("url {}: {e}", self.masked)))?;
                ReachedServer::Mysql(Box::new(mysql::Reached::reach(
                    account,
                    &self.masked,
                    target,
                )?))
            }
        };
        let metrics = self.metrics.as_ref().map(NodeMetrics::reach).transpose()?;
        Ok(Reached { server, metrics })
    }
}

impl TargetSource for UrlTarget {
    fn engine(&self) -> Engine {
        self.engine
    }

    fn spec_text(&self) -> String {
        self.masked.clone()
    }

    fn secret(&self) -> Option<String> {
        self.secret.clone()
    }

    fn is_managed(&self) -> bool {
        false
    }

    fn pods_use_password_secret(&self) -> bool {
        true
    }

    fn measures_server_cpu(&self) -> bool {
        self.metrics.is_some()
    }

    fn check(&self, target: &TargetSpec) -> Result<(), Failure> {
        self.check_managed_only(target)
    }

    fn check_at_plan(&self, target: &TargetSpec, _dry_run: bool) -> Result<Vec<String>, Failure> {
        Ok(self.reach(target)?.plan_lines())
    }

    fn resolve(
        &self,
        target: &TargetSpec,
        _events: &mut dyn FnMut(SetupEvent<'_>),
    ) -> Result<Arc<dyn ResolvedTarget>, Failure> {
        Ok(Arc::new(self.reach(target)?))
    }
}

/// A server a url target reached, and its metrics source.
struct Reached {
    server: ReachedServer,
    metrics: Option<NodeMetrics>,
}

/// The server, of either engine.
enum ReachedServer {
    Postgres(Box<postgres::Reached>),
    Mysql(Box<mysql::Reached>),
}

impl Reached {
    fn plan_lines(&self) -> Vec<String> {
        let mut lines = match &self.server {
            ReachedServer::Postgres(reached) => reached.plan_lines(),
            ReachedServer::Mysql(reached) => reached.plan_lines(),
        };
        lines.push(match &self.metrics {
            Some(metrics) => metrics.described(),
            None => metrics::WITHOUT.into(),
        });
        lines
    }
}

impl ResolvedTarget for Reached {
    fn version(&self) -> String {
        match &self.server {
            ReachedServer::Postgres(reached) => reached.version(),
            ReachedServer::Mysql(reached) => reached.version(),
        }
    }

    fn provision(
        &self,
        target: &TargetSpec,
        place: &LabPlace<'_>,
    ) -> Result<Box<dyn LabServer>, Failure> {
        let metrics = self.metrics.clone();
        Ok(match &self.server {
            ReachedServer::Postgres(reached) => Box::new(postgres::RemotePostgres::connect(
                reached, target, place, metrics,
            )?),
            ReachedServer::Mysql(reached) => Box::new(mysql::RemoteMysql::connect(
                reached, target, place, metrics,
            )?),
        })
    }
}
