//! What can go wrong with the results database, as its callers need to tell it apart: the
//! server refused the login, the database could not be reached or opened, a statement named a
//! table the database does not have (a database that is not stampede's), another statement the
//! database refused, a value that does not fit its column. Each keeps the database's own words;
//! `Store` turns them into the top-level `Failure` with what it was doing.

use std::fmt;

use stampede_base::error::Failure;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The server refused the login: a wrong password, no such role, pg_hba.conf.
    Refused(String),
    /// No database there: a server that cannot be reached, a file that cannot be opened.
    Unreachable(String),
    /// A statement named a table the database does not have.
    MissingTable(String),
    /// Another statement the database refused (a lost connection included).
    Statement(String),
    /// A value that cannot be bound to its column or read from it.
    Value(String),
}

impl StoreError {
    pub fn message(&self) -> &str {
        match self {
            StoreError::Refused(message)
            | StoreError::Unreachable(message)
            | StoreError::MissingTable(message)
            | StoreError::Statement(message)
            | StoreError::Value(message) => message,
        }
    }

    /// The same kind, its message said in `words` (what was being done, and the message).
    pub fn map_message(self, words: impl FnOnce(&str) -> String) -> StoreError {
        match self {
            StoreError::Refused(m) => StoreError::Refused(words(&m)),
            StoreError::Unreachable(m) => StoreError::Unreachable(words(&m)),
            StoreError::MissingTable(m) => StoreError::MissingTable(words(&m)),
            StoreError::Statement(m) => StoreError::Statement(words(&m)),
            StoreError::Value(m) => StoreError::Value(words(&m)),
        }
    }

    /// A database that could not be opened is the user's input (exit 1): nothing ran yet.
    /// Anything later is the run's (exit 2).
    pub fn into_failure(self) -> Failure {
        match self {
            StoreError::Refused(m) | StoreError::Unreachable(m) => Failure::input(m),
            other => Failure::run(other.message()),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}
