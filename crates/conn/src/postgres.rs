//! Where to connect, resolved the way libpq does: defaults < `PG*` environment < `-h -p -U -d`
//! flags < a libpq URI or `key=value` string given as the database name; passwords from the
//! connection string, `PGPASSWORD` or `.pgpass`. The password never appears in `Display`.

use crate::hosts::{
    match_lists, parse_load_balance, shuffled_order, AddressLists, Failover, HostEntry,
    ServerState, SessionAttrs, SERVER_STATE_QUERY,
};
use crate::tls::{PgTlsConnector, PgTlsStream, SslMode, TlsSettings};
use crate::ConnSpecError;
use stampede_base::error::Failure;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `application_name` stampede's sessions carry unless told otherwise; every name it gives
/// its own sessions begins with it (`stampede-lab`, `stampede-capture`, …), which is how a
/// capture of a server's log tells them from the application's.
pub const APPLICATION_NAME: &str = "stampede";

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
    /// The further hosts of a comma-separated list, `target_session_attrs`, `load_balance_hosts`.
    pub failover: Failover,
    /// Whether the role may keep a session's statements out of pg_stat_statements (a
    /// superuser may); when not, `untracked` leaves the connection as it is rather than have
    /// the server refuse it.
    pub may_untrack: bool,
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

/// The service a connection string names, else `PGSERVICE`.
fn service_name(conninfo: Option<&str>) -> Result<Option<String>, Failure> {
    let given = match conninfo {
        Some(text) => crate::conninfo::parse(text)
            .map_err(|e| Failure::input(format!("invalid connection string: {e}")))?
            .into_iter()
            .find(|(key, _)| key == "service")
            .map(|(_, value)| value),
        None => None,
    };
    Ok(given.or_else(|| env_value("PGSERVICE")))
}

fn looks_like_conninfo(text: &str) -> bool {
    text.starts_with("postgresql://") || text.starts_with("postgres://") || text.contains('=')
}

impl ConnSpec {
    /// A server of our own on its unix socket: no password file, no TLS, one host.
    pub fn on_socket(socket_dir: &Path, port: u16, user: &str, dbname: &str) -> ConnSpec {
        ConnSpec {
            host: socket_dir.display().to_string(),
            hostaddr: None,
            port,
            user: user.to_string(),
            dbname: dbname.to_string(),
            password: None,
            application_name: APPLICATION_NAME.into(),
            connect_timeout: None,
            options: None,
            tls: TlsSettings::default(),
            failover: Failover::default(),
            may_untrack: true,
        }
    }

    pub fn resolve(flags: &ConnFlags) -> Result<ConnSpec, Failure> {
        let mut lists = AddressLists {
            host: env_value("PGHOST").unwrap_or_default(),
            hostaddr: env_value("PGHOSTADDR").unwrap_or_default(),
            port: env_value("PGPORT").unwrap_or_default(),
        };
        let mut spec = ConnSpec {
            host: String::new(),
            hostaddr: None,
            port: 0,
            user: env_value("PGUSER").unwrap_or_else(os_user_name),
            dbname: String::new(),
            password: env_value("PGPASSWORD"),
            application_name: env_value("PGAPPNAME").unwrap_or_else(|| APPLICATION_NAME.into()),
            connect_timeout: env_value("PGCONNECT_TIMEOUT")
                .and_then(|t| t.parse::<u64>().ok())
                .map(Duration::from_secs),
            options: env_value("PGOPTIONS"),
            tls: TlsSettings::from_env()?,
            failover: Failover::default(),
            may_untrack: true,
        };
        if let Some(attrs) = env_value("PGTARGETSESSIONATTRS") {
            spec.failover.target_session_attrs = SessionAttrs::parse(&attrs)?;
        }
        if let Some(balance) = env_value("PGLOADBALANCEHOSTS") {
            spec.failover.load_balance = parse_load_balance(&balance)?;
        }
        let dbname_env = env_value("PGDATABASE");
        // A service's keywords come under the connection string's own, over the environment.
        let conninfo = flags.dbname.as_deref().filter(|c| looks_like_conninfo(c));
        if let Some(service) = service_name(conninfo)? {
            let pairs = crate::service::lookup(&service)?;
            spec.apply_pairs(pairs, &mut lists)?;
        }
        if let Some(host) = &flags.host {
            lists.host = host.clone();
        }
        if let Some(port) = &flags.port {
            lists.port = port.clone();
        }
        if let Some(user) = &flags.user {
            spec.user = user.clone();
        }
        match &flags.dbname {
            Some(conninfo) if looks_like_conninfo(conninfo) => {
                spec.apply_conninfo(conninfo, &mut lists)?
            }
            Some(name) => spec.dbname = name.clone(),
            None => {}
        }
        if spec.dbname.is_empty() {
            spec.dbname = dbname_env.unwrap_or_else(|| spec.user.clone());
        }
        spec.set_hosts(&lists)?;
        // Certificate files and mode combinations are checked before anything connects.
        spec.tls.client_config()?;
        Ok(spec)
    }

    /// The first host goes into `host`/`hostaddr`/`port`, the rest into the failover list;
    /// each with its `.pgpass` password unless one was given.
    fn set_hosts(&mut self, lists: &AddressLists) -> Result<(), Failure> {
        // libpq refuses a bad port when it connects, not when it reads the string.
        let matched = match_lists(lists).map_err(|error| match error {
            ConnSpecError::Value {
                keyword: "port", ..
            } => Failure::run(error.to_string()),
            error => Failure::from(error),
        })?;
        let explicit_password = self.password.clone();
        let mut entries = matched.into_iter().map(|(host, hostaddr, port)| {
            // No host: the address names the server (libpq verifies against it), else the
            // default socket directory.
            let host = match (host.is_empty(), hostaddr) {
                (false, _) => host,
                (true, Some(addr)) => addr.to_string(),
                (true, None) => default_socket_dir(),
            };
            let mut entry = HostEntry {
                host,
                hostaddr,
                port,
                password: None,
            };
            entry.password = explicit_password
                .clone()
                .or_else(|| pgpass_lookup(&entry, &self.dbname, &self.user));
            entry
        });
        let first = entries.next().expect("at least one host");
        self.failover.more_hosts = entries.collect();
        self.set_host(first);
        Ok(())
    }

    fn set_host(&mut self, entry: HostEntry) {
        self.host = entry.host;
        self.hostaddr = entry.hostaddr;
        self.port = entry.port;
        self.password = entry.password;
    }

    /// A connection string alone (a results database's URL): libpq's defaults and `PG*`
    /// variables, then the string.
    pub fn from_conninfo(conninfo: &str) -> Result<ConnSpec, Failure> {
        ConnSpec::resolve(&ConnFlags {
            dbname: Some(conninfo.to_string()),
            ..ConnFlags::default()
        })
    }

    fn apply_conninfo(&mut self, conninfo: &str, lists: &mut AddressLists) -> Result<(), Failure> {
        let invalid = |e: ConnSpecError| Failure::input(format!("invalid connection string: {e}"));
        self.apply_pairs(crate::conninfo::parse(conninfo).map_err(invalid)?, lists)
    }

    fn apply_pairs(
        &mut self,
        pairs: Vec<(String, String)>,
        lists: &mut AddressLists,
    ) -> Result<(), Failure> {
        let invalid = |e: ConnSpecError| Failure::input(format!("invalid connection string: {e}"));
        for (key, value) in pairs {
            match key.as_str() {
                "host" => lists.host = value,
                "hostaddr" => lists.hostaddr = value,
                "port" => lists.port = value,
                "user" => self.user = value,
                "dbname" => self.dbname = value,
                "password" => self.password = Some(value),
                "application_name" => self.application_name = value,
                "connect_timeout" => {
                    let seconds = value.trim().parse::<u64>().map_err(|_| {
                        invalid(ConnSpecError::Value {
                            keyword: "connect_timeout",
                            value: value.clone(),
                        })
                    })?;
                    self.connect_timeout = Some(Duration::from_secs(seconds));
                }
                "options" => self.options = Some(value),
                "target_session_attrs" => {
                    self.failover.target_session_attrs = SessionAttrs::parse(&value)?
                }
                "load_balance_hosts" => self.failover.load_balance = parse_load_balance(&value)?,
                _ => {
                    self.tls.set(&key, &value).map_err(invalid)?;
                }
            }
        }
        Ok(())
    }

    /// Every host to try for one connection, in the order to try them (shuffled per call under
    /// `load_balance_hosts=random`), each a one-host spec of its own.
    pub fn candidates(&self) -> Vec<ConnSpec> {
        let first = HostEntry {
            host: self.host.clone(),
            hostaddr: self.hostaddr,
            port: self.port,
            password: self.password.clone(),
        };
        let entries: Vec<HostEntry> = std::iter::once(first)
            .chain(self.failover.more_hosts.iter().cloned())
            .collect();
        let order: Vec<usize> = if self.failover.load_balance {
            shuffled_order(entries.len())
        } else {
            (0..entries.len()).collect()
        };
        order
            .into_iter()
            .map(|index| {
                let mut one = ConnSpec {
                    failover: Failover::default(),
                    ..self.clone()
                };
                one.set_host(entries[index].clone());
                one
            })
            .collect()
    }

    /// Whether connecting means more than reaching the one host: a list to go through, or a
    /// server to be asked what it is.
    pub fn has_failover(&self) -> bool {
        !self.failover.more_hosts.is_empty()
            || self.failover.target_session_attrs.needs_server_state()
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

    /// A control session on the first host that answers and is the kind of server
    /// `target_session_attrs` asks for, as libpq goes through its host list.
    pub async fn connect_control(
        &self,
    ) -> Result<(tokio_postgres::Client, ControlConnection), ConnectError> {
        if !self.has_failover() {
            return self.connect_control_to_host().await;
        }
        let mut reasons = Vec::new();
        for attrs in self.failover.target_session_attrs.passes() {
            for candidate in self.candidates() {
                match candidate.connect_control_as(attrs).await {
                    Ok(connected) => return Ok(connected),
                    Err(reason) => reasons.push(format!(
                        "connection to server ({candidate}) failed: {reason}"
                    )),
                }
            }
        }
        Err(ConnectError::NoHost(reasons))
    }

    /// One host: connected and, when `attrs` asks, the server's state checked.
    async fn connect_control_as(
        &self,
        attrs: SessionAttrs,
    ) -> Result<(tokio_postgres::Client, ControlConnection), String> {
        let (client, mut connection) =
            self.connect_control_to_host().await.map_err(|e| match e {
                ConnectError::Server(e) => connect_error_detail(&e),
                other => other.to_string(),
            })?;
        if !attrs.needs_server_state() {
            return Ok((client, connection));
        }
        // The connection must be driven while the question is asked; the caller spawns it
        // afterwards, as for any control session.
        let state = tokio::select! {
            state = server_state(&client) => state.map_err(|e| connect_error_detail(&e))?,
            _ = &mut connection => return Err("server closed the connection".into()),
        };
        match attrs.rejects(state) {
            None => Ok((client, connection)),
            Some(reason) => Err(reason.to_string()),
        }
    }

    /// A control session to this spec's one host within `connect_timeout`, which bounds the
    /// whole start-up as libpq's does (tokio-postgres bounds the socket's connect only, and a
    /// server that accepts the socket but never answers would hold the caller forever).
    async fn connect_control_to_host(
        &self,
    ) -> Result<(tokio_postgres::Client, ControlConnection), ConnectError> {
        let attempt = self.connect_control_to_host_unbounded();
        let connected = match self.connect_control_timeout() {
            Some(limit) => tokio::time::timeout(limit, attempt)
                .await
                .map_err(|_| ConnectError::TimedOut)?,
            None => attempt.await,
        };
        connected.map_err(ConnectError::Server)
    }

    /// libpq ignores a timeout under 2 s (it rounds it up to 2).
    fn connect_control_timeout(&self) -> Option<Duration> {
        self.connect_timeout
            .filter(|t| !t.is_zero())
            .map(|t| t.max(Duration::from_secs(2)))
    }

    /// With the TLS `sslmode` asks for; under `allow`, a plain connection first and TLS when
    /// the server refuses it.
    async fn connect_control_to_host_unbounded(
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
        if !self.may_untrack {
            return self.clone();
        }
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

async fn server_state(
    client: &tokio_postgres::Client,
) -> Result<ServerState, tokio_postgres::Error> {
    let row = client.query_one(SERVER_STATE_QUERY, &[]).await?;
    let in_recovery: bool = row.get(0);
    let read_only: String = row.get(1);
    Ok(ServerState::from_columns(
        if in_recovery { "t" } else { "f" },
        &read_only,
    ))
}

/// Why a control connection failed, as libpq words it: a server's refusal as
/// "FATAL:  database \"x\" does not exist", anything else with its causes.
pub fn connect_error_detail(error: &tokio_postgres::Error) -> String {
    error
        .as_db_error()
        .map(|db| format!("{}:  {}", db.severity(), db.message()))
        .unwrap_or_else(|| {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            text
        })
}

/// A control connection that could not be made.
#[derive(Debug)]
pub enum ConnectError {
    /// The one host refused or could not be reached.
    Server(tokio_postgres::Error),
    /// No host of a list would do: libpq's one line per host tried, with its reason.
    NoHost(Vec<String>),
    /// `connect_timeout` passed before the server finished the start-up.
    TimedOut,
}

impl ConnectError {
    pub fn as_db_error(&self) -> Option<&tokio_postgres::error::DbError> {
        match self {
            ConnectError::Server(e) => e.as_db_error(),
            ConnectError::NoHost(_) | ConnectError::TimedOut => None,
        }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Server(e) => write!(f, "{e}"),
            ConnectError::NoHost(reasons) => write!(f, "{}", reasons.join("\n")),
            // libpq's words.
            ConnectError::TimedOut => write!(f, "timeout expired"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Server(e) => Some(e),
            ConnectError::NoHost(_) | ConnectError::TimedOut => None,
        }
    }
}

impl fmt::Display for ConnSpec {
    /// As libpq's keywords; several hosts as its comma-separated lists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = &self.failover.more_hosts;
        let join = |first: String, rest: &dyn Fn(&HostEntry) -> String| {
            std::iter::once(first)
                .chain(more.iter().map(rest))
                .collect::<Vec<_>>()
                .join(",")
        };
        let address =
            |addr: Option<std::net::IpAddr>| addr.map_or(String::new(), |a| a.to_string());
        write!(f, "host={}", join(self.host.clone(), &|h| h.host.clone()))?;
        if self.hostaddr.is_some() || more.iter().any(|h| h.hostaddr.is_some()) {
            let addresses = join(address(self.hostaddr), &|h| address(h.hostaddr));
            write!(f, " hostaddr={addresses}")?;
        }
        let ports = join(self.port.to_string(), &|h| h.port.to_string());
        write!(f, " port={ports} user={} dbname={}", self.user, self.dbname)
    }
}

impl fmt::Debug for ConnSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Looks the password up in `PGPASSFILE` or `~/.pgpass`, as libpq does (a socket connection
/// matches the host `localhost`; files readable by group or others are ignored).
fn pgpass_lookup(entry: &HostEntry, dbname: &str, user: &str) -> Option<String> {
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
    let host = if entry.hostaddr.is_none() && entry.host.starts_with('/') {
        "localhost"
    } else {
        entry.host.as_str()
    };
    let port = entry.port.to_string();
    content
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass_line(line);
            let wanted = [host, port.as_str(), dbname, user];
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
                    fields
                        .last_mut()
                        .expect("fields starts with one field")
                        .push(escaped);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields
                .last_mut()
                .expect("fields starts with one field")
                .push(c),
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
            password: Some("secret".into()),
            ..ConnSpec::on_socket(Path::new("h"), 1, "u", "d")
        };
        assert!(!format!("{spec} {spec:?}").contains("secret"));
    }
}
