//! Which dialect a TPROC-H session speaks: HammerDB's texts and table names differ by engine.
//! The session itself is `family::common::sql_session::Session`.

use stampede_conn::Endpoint;

/// Which dialect the engine speaks: HammerDB's texts and names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Mysql,
}

impl Dialect {
    pub fn of(endpoint: &Endpoint) -> Dialect {
        match endpoint {
            Endpoint::Postgres(_) => Dialect::Postgres,
            Endpoint::Mysql(_) => Dialect::Mysql,
        }
    }

    /// A table's name as HammerDB created it: lower case on PostgreSQL (unquoted), upper case
    /// on MariaDB (whose table names are case-sensitive on Linux).
    pub fn table(self, name: &str) -> String {
        match self {
            Dialect::Postgres => name.to_string(),
            Dialect::Mysql => name.to_uppercase(),
        }
    }
}
