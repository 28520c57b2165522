//! Where and as whom to connect to a MariaDB/MySQL server.

use std::path::PathBuf;

/// Where and as whom to connect to a MariaDB/MySQL server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlSpec {
    /// The server's Unix socket; when set, host and port are not used.
    pub socket: Option<PathBuf>,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    /// The default schema; empty for none.
    pub database: String,
}

impl MysqlSpec {
    /// sysbench's and the mysql client's defaults: localhost:3306 as the user `sbtest`.
    pub fn localhost(user: &str, database: &str) -> MysqlSpec {
        MysqlSpec {
            socket: None,
            host: "localhost".to_string(),
            port: 3306,
            user: user.to_string(),
            password: None,
            database: database.to_string(),
        }
    }

    /// Where the server is, for messages and results: never the password.
    pub fn describe(&self) -> String {
        match &self.socket {
            Some(socket) => format!("{}@{} (socket)", self.user, socket.display()),
            None => format!("{}@{}:{}", self.user, self.host, self.port),
        }
    }

    /// The same server with another default schema.
    pub fn with_database(&self, database: &str) -> MysqlSpec {
        MysqlSpec {
            database: database.to_string(),
            ..self.clone()
        }
    }
}
