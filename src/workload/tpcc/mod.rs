//! TPROC-C, HammerDB's TPC-C-derived workload: the schema of seed 001, TPC-C's data rules, a
//! parallel binary-COPY loader, the consistency conditions, and the five transactions as
//! PL/pgSQL procedures with the driver scripts that call them.

pub mod check;
pub mod copy;
pub mod load;
pub mod procedures;
pub mod random;
pub mod schema;
pub mod scripts;
