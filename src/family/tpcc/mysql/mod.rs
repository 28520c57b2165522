//! TPROC-C on MariaDB/MySQL as HammerDB's MariaDB build and timed driver have it: its tables
//! and procedures, the shared loader's rows as multi-row INSERTs, its CALLs, its counters, and
//! TPC-C's consistency conditions in MariaDB's SQL.

pub mod built;
pub mod check;
pub mod load;
pub mod procedures;
pub mod schema;
pub mod scripts;
