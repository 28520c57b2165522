//! Where to connect, resolved the way libpq does: defaults < `PG*` environment < `-h -p -U -d`
//! flags < a libpq URI or `key=value` string given as the database name; passwords from the
//! connection string, `PGPASSWORD` or `.pgpass`. The password never appears in `Display`.

use crate::tls::{PgTlsConnector, PgTlsStream, SslMode, TlsSettings};
use stampede_base::error::Failure;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, PartialEq, Eq)]
pub struct ConnSpec {
    /// A host name, an IP address, or a directory holding the unix socket: what the server is
    /// called (TLS verification, `.pgpass`), and where to connect unless `hostaddr` is given.
    pub host: String,
    /// libpq's `hostaddr`: the numeric address to connect to, without a name look-up.
    pub hostaddr: Option<std::net::IpAddr>,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    pub password: Option<String>,
    pub application_name: String,
    pub connect_timeout: Option<Duration>,
    /// Server options sent at connection start, as libpq's `options` (e.g. `-c work_mem=64MB`).
    pub options: Option<String>,
    /// `sslmode` and its companions.
    pub tls: TlsSettings,
}

/// A control session's connection future, to be spawned.
pub type ControlConnection =
    tokio_postgres::Connection<tokio_postgres::Socket, PgTlsStream<tokio_postgres::Socket>>;

/// What the user gave on the command line.
#[derive(Debug, Default, Clone)]
pub struct ConnFlags {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    /// `-d` or the positional argument: a name, a `postgresql://` URI or a `key=value` string.
    pub dbname: Option<String>,
}

const CONNECTION_ENV: [&str; 7] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGSERVICE",
    "PGPASSWORD",
];

impl ConnFlags {
    /// True when neither a flag nor a `PG*` variable says where to connect: the case for the
    /// managed default server.
    pub fn is_unspecified(&self) -> bool {
        self.host.is_none()
            && self.port.is_none()
            && self.user.is_none()
            && self.dbname.is_none()
            && CONNECTION_ENV.iter().all(|name| env_value(name).is_none())
    }
}

fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn os_user_name() -> String {
    env_value("USER")
        .or_else(|| env_value("LOGNAME"))
        .or_else(stampede_base::sys::effective_user_name)
        .unwrap_or_else(|| "postgres".into())
}

fn default_socket_dir() -> String {
    ["/var/run/postgresql", "/tmp"]
        .iter()
        .find(|dir| Path::new(dir).is_dir())
        .unwrap_or(&"/tmp")
        .to_string()
}

fn looks_like_conninfo(text: &str) -> bool {
    text.starts_with("postgresql://") || text.starts_with("postgres://") || text.contains('=')
}

/// libpq's words for an address it cannot parse.
fn parse_hostaddr(text: &str) -> Result<std::net::IpAddr, Failure> {
    text.trim().parse().map_err(|_| {
        Failure::input(format!(
            "invalid connection string: could not parse network address \"{text}\""
        ))
    })
}

fn parse_port(text: &str) -> Result<u16, Failure> {
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| Failure::run(format!("invalid port number: \"{text}\"")))
}

impl ConnSpec {
    pub fn resolve(flags: &ConnFlags) -> Result<ConnSpec, Failure> {
        let mut spec = ConnSpec {
            host: env_value("PGHOST").unwrap_or_default(),
            hostaddr: env_value("PGHOSTADDR")
                .map(|addr| parse_hostaddr(&addr))
                .transpose()?,
            port: env_value("PGPORT").map_or(Ok(5432), |p| parse_port(&p))?,
            user: env_value("PGUSER").unwrap_or_else(os_user_name),
            dbname: String::new(),
            password: env_value("PGPASSWORD"),
            application_name: env_value("PGAPPNAME").unwrap_or_else(|| "stampede".into()),
            connect_timeout: env_value("PGCONNECT_TIMEOUT")
                .and_then(|t| t.parse::<u64>().ok())
                .map(Duration::from_secs),
            options: env_value("PGOPTIONS"),
            tls: TlsSettings::from_env().map_err(Failure::input)?,
        };
        let dbname_env = env_value("PGDATABASE");
        if let Some(host) = &flags.host {
            spec.host = host.clone();
        }
        if let Some(port) = &flags.port {
            spec.port = parse_port(port)?;
        }
        if let Some(user) = &flags.user {
            spec.user = user.clone();
        }
        match &flags.dbname {
            Some(conninfo) if looks_like_conninfo(conninfo) => spec.apply_conninfo(conninfo)?,
            Some(name) => spec.dbname = name.clone(),
            None => {}
        }
        if spec.dbname.is_empty() {
            spec.dbname = dbname_env.unwrap_or_else(|| spec.user.clone());
        }
        // No host: the address names the server (libpq verifies against it), else the
        // default socket directory.
        if spec.host.is_empty() {
            spec.host = match spec.hostaddr {
                Some(addr) => addr.to_string(),
                None => default_socket_dir(),
            };
        }
        if spec.password.is_none() {
            spec.password = pgpass_lookup(&spec);
        }
        // Certificate files and mode combinations are checked before anything connects.
        spec.tls.client_config().map_err(Failure::input)?;
        Ok(spec)
    }

    /// A connection string alone (a results database's URL): libpq's defaults and `PG*`
    /// variables, then the string.
    pub fn from_conninfo(conninfo: &str) -> Result<ConnSpec, Failure> {
        ConnSpec::resolve(&ConnFlags {
            dbname: Some(conninfo.to_string()),
            ..ConnFlags::default()
        })
    }

    fn apply_conninfo(&mut self, conninfo: &str) -> Result<(), Failure> {
        let invalid = |e: String| Failure::input(format!("invalid connection string: {e}"));
        for (key, value) in crate::conninfo::parse(conninfo).map_err(invalid)? {
            match key.as_str() {
                "host" => self.host = value,
                "hostaddr" if value.is_empty() => self.hostaddr = None,
                "hostaddr" => self.hostaddr = Some(parse_hostaddr(&value)?),
                "port" => self.port = parse_port(&value)?,
                "user" => self.user = value,
                "dbname" => self.dbname = value,
                "password" => self.password = Some(value),
                "application_name" => self.application_name = value,
                "connect_timeout" => {
                    let seconds = value.trim().parse::<u64>().map_err(|_| {
                        invalid(format!("invalid integer value \"{value}\" for connection option \"connect_timeout\""))
                    })?;
                    self.connect_timeout = Some(Duration::from_secs(seconds));
                }
                "options" => self.options = Some(value),
                _ => {
                    self.tls.set(&key, &value).map_err(invalid)?;
                }
            }
        }
        Ok(())
    }

    /// A socket directory as the host and no address: libpq connects to an address over TCP
    /// whatever the host says.
    pub fn is_unix_socket(&self) -> bool {
        self.hostaddr.is_none() && self.host.starts_with('/')
    }

    /// Where a TCP connection goes: the address when one is given, else the host name.
    pub fn tcp_target(&self) -> String {
        self.hostaddr
            .map_or_else(|| self.host.clone(), |addr| addr.to_string())
    }

    pub fn socket_path(&self) -> PathBuf {
        Path::new(&self.host).join(format!(".s.PGSQL.{}", self.port))
    }

    /// A tokio-postgres configuration for the control-plane connections (loader, probes).
    pub fn tokio_config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.dbname)
            .application_name(&self.application_name);
        if let Some(addr) = self.hostaddr {
            config.hostaddr(addr);
        }
        if let Some(password) = &self.password {
            config.password(password);
        }
        if let Some(timeout) = self.connect_timeout {
            config.connect_timeout(timeout);
        }
        if let Some(options) = &self.options {
            config.options(options);
        }
        // libpq never negotiates TLS over a Unix socket, whatever sslmode says.
        let mode = if self.is_unix_socket() {
            SslMode::Disable
        } else {
            self.tls.mode
        };
        config.ssl_mode(match mode {
            SslMode::Disable | SslMode::Allow => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        if self.tls.direct {
            config.ssl_negotiation(tokio_postgres::config::SslNegotiation::Direct);
        }
        config
    }

    /// A control session with the TLS `sslmode` asks for; under `allow`, a plain connection
    /// first and TLS when the server refuses it.
    pub async fn connect_control(
        &self,
    ) -> Result<(tokio_postgres::Client, ControlConnection), tokio_postgres::Error> {
        let tls_config = self.tls.client_config().unwrap_or(None);
        let connector = PgTlsConnector::new(tls_config);
        let config = self.tokio_config();
        let first = config.connect(connector.clone()).await;
        match first {
            Err(_) if self.tls.mode == SslMode::Allow && !self.is_unix_socket() => {
                let mut with_tls = config;
                with_tls.ssl_mode(tokio_postgres::config::SslMode::Require);
                with_tls.connect(connector).await
            }
            other => other,
        }
    }

    /// The same connection with its statements left out of pg_stat_statements, for control
    /// sessions beside a measured workload. Needs a superuser when the module is loaded.
    pub fn untracked(&self) -> ConnSpec {
        let untrack = "-c pg_stat_statements.track=none";
        ConnSpec {
            options: Some(match &self.options {
                Some(options) => format!("{options} {untrack}"),
                None => untrack.to_string(),
            }),
            ..self.clone()
        }
    }
}

impl fmt::Display for ConnSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host={}", self.host)?;
        if let Some(addr) = self.hostaddr {
            write!(f, " hostaddr={addr}")?;
        }
        write!(
            f,
            " port={} user={} dbname={}",
            self.port, self.user, self.dbname
        )
    }
}

impl fmt::Debug for ConnSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Looks the password up in `PGPASSFILE` or `~/.pgpass`, as libpq does (a socket connection
/// matches the host `localhost`; files readable by group or others are ignored).
fn pgpass_lookup(spec: &ConnSpec) -> Option<String> {
    let path = env_value("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| env_value("HOME").map(|home| Path::new(&home).join(".pgpass")))?;
    let metadata = std::fs::metadata(&path).ok()?;
    use std::os::unix::fs::PermissionsExt;
    if metadata.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "warning: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        );
        return None;
    }
    let content = std::fs::read_to_string(&path).ok()?;
    let host = if spec.is_unix_socket() {
        "localhost"
    } else {
        spec.host.as_str()
    };
    let port = spec.port.to_string();
    content
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass_line(line);
            let wanted = [
                host,
                port.as_str(),
                spec.dbname.as_str(),
                spec.user.as_str(),
            ];
            let matches = fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(wanted)
                    .all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        })
}

fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(escaped) = chars.next() {
                    fields.last_mut().expect("non-empty").push(escaped);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields.last_mut().expect("non-empty").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_fields_unescape() {
        assert_eq!(
            split_pgpass_line(r"localhost:5432:db:u:pa\:ss:word"),
            vec!["localhost", "5432", "db", "u", "pa:ss:word"]
        );
    }

    #[test]
    fn display_hides_the_password() {
        let spec = ConnSpec {
            host: "h".into(),
            hostaddr: None,
            port: 1,
            user: "u".into(),
            dbname: "d".into(),
            password: Some("secret".into()),
            application_name: "a".into(),
            connect_timeout: None,
            options: None,
            tls: TlsSettings::default(),
        };
        assert!(!format!("{spec} {spec:?}").contains("secret"));
    }
}
