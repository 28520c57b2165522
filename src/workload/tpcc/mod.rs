//! TPROC-C, HammerDB's TPC-C-derived workload: the schema of seed 001, TPC-C's data rules, a
//! parallel binary-COPY loader and the consistency conditions.

pub mod check;
pub mod copy;
pub mod load;
pub mod random;
pub mod schema;
