//! How a failed statement counts, by the engine that reported it: PostgreSQL's SQLSTATEs
//! (40001, 40P01) and MySQL's error numbers (its module lists them).

use crate::mysql;
use crate::reply::{DbError, FailureKind};

impl DbError {
    /// Serialization failure or deadlock (on MySQL also a lock wait timeout and a changed
    /// record, which sysbench treats alike): the failures counted and tried again instead of
    /// aborting. A run may choose other MySQL errors (`ErrorPolicy::retries`).
    pub fn is_retryable(&self) -> bool {
        match self.mysql_errno {
            Some(number) => mysql::RETRIED_BY_DEFAULT.contains(&number),
            None => FailureKind::of_sqlstate(&self.code) != FailureKind::Other,
        }
    }

    /// How a retryable failure is counted: a lock wait timeout and a changed record count with
    /// serialization failures, as each is a conflict that a later try may not meet.
    pub fn failure_kind(&self) -> FailureKind {
        match self.mysql_errno {
            Some(number) => mysql::failure_kind(number),
            None => FailureKind::of_sqlstate(&self.code),
        }
    }
}
