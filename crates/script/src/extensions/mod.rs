//! The functions stampede's script language adds to pgbench's, so that the scripts the
//! families generate do their peers' work per statement: sysbench's random distributions and
//! bulk-insert rows (`sb_rand_*`, `sb_bulk_*`) and TPC-C's last names (`tpcc_last_name`). They
//! belong to the language, not to a family: a family's loader draws from the same functions as
//! its scripts, so data and lookups agree.

pub mod sysbench_bulk;
pub mod sysbench_random;
pub mod tpcc_names;
