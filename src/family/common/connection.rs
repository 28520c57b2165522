//! Where a workload command connects: `-h -p -U -d` (pgbench's letters), else PG* variables,
//! else the managed default server; and the one rule for counts that must be positive.

use clap::{ArgAction, Args};

use crate::server::resolve_target;
use stampede_base::error::Failure;
use stampede_conn::Endpoint;
use stampede_conn::MysqlSpec;
use stampede_conn::{ConnFlags, ConnSpec};

/// Where the database is; unset ones follow PG* variables, or the managed default server.
/// `-h` is the host, as in pgbench and psql, so help is `-?`/`--help`: a command that
/// flattens these sets `disable_help_flag`.
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    #[arg(short = '?', long = "help", action = ArgAction::Help, help = "Print help")]
    pub help: Option<bool>,
    /// Server host or socket directory
    #[arg(short = 'h', long)]
    pub host: Option<String>,
    /// Server port
    #[arg(short = 'p', long)]
    pub port: Option<String>,
    /// User name
    #[arg(short = 'U', long)]
    pub user: Option<String>,
    /// Database name, or a postgresql:// URI
    #[arg(short = 'd', long)]
    pub dbname: Option<String>,
}

/// The connection flags of a workload that runs on either engine: `--engine mariadb` reads
/// `-h -p -U -d` as the MySQL client does (`localhost` is the server's socket).
#[derive(Debug, Args)]
pub struct EngineConnectionArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// postgres, or mariadb for a MariaDB/MySQL server (password from MYSQL_PWD)
    #[arg(long, default_value = "postgres")]
    pub engine: String,
    /// MariaDB/MySQL: the server's Unix socket file (default: localhost's, /run/mysqld/mysqld.sock)
    #[arg(long, value_name = "FILE")]
    pub socket: Option<std::path::PathBuf>,
}

/// Where a command for either engine connects.
pub fn endpoint(args: &EngineConnectionArgs) -> Result<Endpoint, Failure> {
    match args.engine.as_str() {
        "postgres" | "postgresql" => connection(&args.connection).map(Endpoint::Postgres),
        "mariadb" | "mysql" => mysql_spec(args).map(Endpoint::Mysql),
        other => Err(Failure::input(format!(
            "--engine {other}: use postgres or mariadb (MariaDB, MySQL)"
        ))),
    }
}

/// The MySQL client's defaults: localhost (its socket), port 3306, the login name.
fn mysql_spec(args: &EngineConnectionArgs) -> Result<MysqlSpec, Failure> {
    let flags = &args.connection;
    let port = match &flags.port {
        Some(text) => text
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| Failure::input(format!("invalid port number: \"{text}\"")))?,
        None => 3306,
    };
    let login = std::env::var("USER")
        .ok()
        .or_else(stampede_base::sys::effective_user_name)
        .unwrap_or_else(|| "root".into());
    let user = flags.user.clone().unwrap_or(login);
    Ok(MysqlSpec {
        socket: args.socket.clone(),
        host: flags.host.clone().unwrap_or_else(|| "localhost".into()),
        port,
        database: flags.dbname.clone().unwrap_or_else(|| user.clone()),
        user,
        password: std::env::var("MYSQL_PWD").ok().filter(|p| !p.is_empty()),
    })
}

pub fn connection(args: &ConnectionArgs) -> Result<ConnSpec, Failure> {
    resolve_target(&ConnFlags {
        host: args.host.clone(),
        port: args.port.clone(),
        user: args.user.clone(),
        dbname: args.dbname.clone(),
    })
}

/// A count option that must be at least 1 and fit `T`.
pub fn positive<T: TryFrom<i64>>(value: i64, name: &str) -> Result<T, Failure> {
    T::try_from(value)
        .ok()
        .filter(|_| value >= 1)
        .ok_or_else(|| Failure::input(format!("--{name} must be at least 1 (not {value})")))
}
