//! The one entry point of a TPROC-H build, above both engines' loaders.

use super::load::Build;
use super::mysql;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;

/// Creates the tables, loads dbgen's rows, adds HammerDB's keys and indexes and gathers
/// statistics on the build's server, reporting each step through `say`.
pub fn build(build: &Build, say: &(dyn Fn(String) + Sync)) -> Result<(), Failure> {
    match &build.endpoint {
        Endpoint::Postgres(conn) => build.run_postgres(conn, say),
        Endpoint::Mysql(spec) => mysql::build(build, spec, say),
    }
}
