//! Why a connection's description was refused or its TLS could not be set up, before any
//! server is asked: each in libpq's words (what psql would have said), with the parts a
//! caller may need to act on — the keyword and value, the file — kept apart.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnSpecError {
    /// Text that is no connection string, URL or service file libpq would read: its words
    /// (`missing "=" after "x" in connection info string`).
    Syntax(String),
    /// A keyword libpq does not know.
    UnknownKeyword(String),
    /// A keyword's value libpq refuses.
    Value {
        keyword: &'static str,
        value: String,
    },
    /// Settings that cannot go together: lists that do not match up, a weak sslmode with
    /// direct negotiation.
    Conflict(String),
    /// A file the connection needs, missing, unreadable or open to others; the message names
    /// the file as libpq does.
    File { path: PathBuf, message: String },
    /// `service=` names no section of any service file.
    UnknownService(String),
    /// The TLS library refused the configuration.
    Tls(String),
}

impl ConnSpecError {
    pub fn file(path: impl Into<PathBuf>, message: String) -> ConnSpecError {
        ConnSpecError::File {
            path: path.into(),
            message,
        }
    }
}

impl fmt::Display for ConnSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnSpecError::Syntax(message)
            | ConnSpecError::Conflict(message)
            | ConnSpecError::File { message, .. }
            | ConnSpecError::Tls(message) => f.write_str(message),
            ConnSpecError::UnknownKeyword(keyword) => {
                write!(f, "invalid connection option \"{keyword}\"")
            }
            ConnSpecError::Value { keyword, value } => match *keyword {
                "port" => write!(f, "invalid port number: \"{value}\""),
                "connect_timeout" => write!(
                    f,
                    "invalid integer value \"{value}\" for connection option \"connect_timeout\""
                ),
                "hostaddr" => write!(
                    f,
                    "invalid connection string: could not parse network address \"{value}\""
                ),
                keyword => write!(f, "invalid {keyword} value: \"{value}\""),
            },
            ConnSpecError::UnknownService(name) => {
                write!(f, "definition of service \"{name}\" not found")
            }
        }
    }
}

impl std::error::Error for ConnSpecError {}

impl From<ConnSpecError> for stampede_base::error::Failure {
    /// Every refusal is the user's input to fix.
    fn from(error: ConnSpecError) -> stampede_base::error::Failure {
        stampede_base::error::Failure::input(error.to_string())
    }
}
