//! Where to connect, for both engines: libpq's connection strings and `PG*` variables
//! (`postgres`, `conninfo`, `service`: pg_service.conf), libpq's TLS settings (`tls`), a MariaDB/MySQL server's address and
//! login (`mysql`), the `Endpoint` a workload is handed (`endpoint`), and the runtime control
//! work runs on (`runtime`; the control sessions themselves are `stampede-control`'s). "Where to
//! connect" is not "a server we own": servers live above, in the binary crate's `server/`.

pub mod conninfo;
pub mod endpoint;
mod error;
pub mod hosts;
pub mod mysql;
pub mod postgres;
mod runtime;
pub mod service;
pub mod tls;

pub use endpoint::{Endpoint, Engine};
pub use error::ConnSpecError;
pub use mysql::MysqlSpec;
pub use postgres::{ConnFlags, ConnSpec, ConnectError, ControlConnection};
pub use runtime::control_runtime;
