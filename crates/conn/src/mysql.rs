//! Where and as whom to connect to a MariaDB/MySQL server.

use std::path::PathBuf;

use crate::ConnSpecError;

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

    /// A `mysql://` or `mariadb://` URL: `user:password@host:port/database`, each part
    /// percent-encoded as in a URI; `?socket=PATH` connects on a Unix socket. The port defaults
    /// to 3306 and the user to `root`, as the mysql client's.
    pub fn from_url(text: &str) -> Result<MysqlSpec, ConnSpecError> {
        let rest = text
            .strip_prefix("mysql://")
            .or_else(|| text.strip_prefix("mariadb://"))
            .ok_or_else(|| {
                ConnSpecError::Syntax(format!(
                    "\"{}\" is not a mysql:// or mariadb:// URL",
                    crate::conninfo::masked(text).0
                ))
            })?;
        let decode = |part: &str| crate::conninfo::decode(part, &crate::conninfo::masked(text).0);
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, database) = before_query.split_once('/').unwrap_or((before_query, ""));
        let (userinfo, address) = authority.rsplit_once('@').unwrap_or(("", authority));
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user, Some(decode(password)?)),
            None => (userinfo, None),
        };
        let (host, port) = match address.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse::<u16>().map_err(|_| ConnSpecError::Value {
                    keyword: "port",
                    value: port.into(),
                })?,
            ),
            None => (address, 3306),
        };
        let mut spec = MysqlSpec {
            socket: None,
            host: if host.is_empty() {
                "localhost".into()
            } else {
                decode(host)?
            },
            port,
            user: if user.is_empty() {
                "root".into()
            } else {
                decode(user)?
            },
            password,
            database: decode(database)?,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("socket", path)) => spec.socket = Some(PathBuf::from(decode(path)?)),
                _ => {
                    return Err(ConnSpecError::Syntax(format!(
                        "unknown URL parameter \"{pair}\" (mysql:// takes socket=PATH)"
                    )))
                }
            }
        }
        Ok(spec)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_account_address_and_schema() {
        let spec = MysqlSpec::from_url("mysql://bench:p%40ss@db.example:3307/sbtest").unwrap();
        assert_eq!(
            (
                spec.user.as_str(),
                spec.password.as_deref(),
                spec.host.as_str(),
                spec.port
            ),
            ("bench", Some("p@ss"), "db.example", 3307)
        );
        assert_eq!(spec.database, "sbtest");
        let spec = MysqlSpec::from_url("mariadb://127.0.0.1").unwrap();
        assert_eq!(
            (spec.user.as_str(), spec.port, spec.database.as_str()),
            ("root", 3306, "")
        );
        let spec = MysqlSpec::from_url("mariadb://u@localhost/x?socket=%2Frun%2Fm.sock").unwrap();
        assert_eq!(spec.socket, Some(PathBuf::from("/run/m.sock")));
        assert_eq!(
            MysqlSpec::from_url("mysql://u:pw@h:port/x")
                .unwrap_err()
                .to_string(),
            "invalid port number: \"port\""
        );
    }
}
