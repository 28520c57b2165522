//! The second engine: MariaDB and MySQL servers, given or managed. Knows nothing about
//! workloads; the driver's `mysql` module speaks the protocol.

pub mod managed;
pub mod maven;
pub mod profile;
pub mod release;
