//! `tpcc build` on either engine: the shared loader's rows into PostgreSQL's schema (binary
//! COPY) or HammerDB's MariaDB schema (multi-row INSERTs).

use super::load::Loader;
use super::mysql;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;

/// Creates the tables, loads them and builds their keys, indexes and procedures at the
/// loader's endpoint; `announce` hears of each step.
pub async fn build(loader: &Loader, announce: &(dyn Fn(String) + Sync)) -> Result<(), Failure> {
    match &loader.conn {
        Endpoint::Postgres(conn) => loader.build_postgres(conn, announce).await,
        Endpoint::Mysql(spec) => mysql::load::build(loader, spec, announce).await,
    }
}
