//! Where a script's driver connects: PostgreSQL (`--pgsql-*`, else the `PG*` variables, else
//! the managed default server) or MySQL/MariaDB (`--mysql-*`, its ignored errors, its dry run).

use crate::family::sysbench::sysbench_cmdline::Options;
use crate::server::resolve_target;
use stampede_conn::{ConnFlags, ConnSpec, MysqlSpec};

/// Where the driver connects.
#[derive(Debug, Clone)]
pub enum Target {
    Postgres(ConnSpec),
    Mysql {
        spec: MysqlSpec,
        /// `--mysql-ignore-errors`: error numbers, or every error.
        ignored: Ignored,
        /// `--mysql-dry-run`: every call succeeds without a server.
        dry_run: bool,
    },
}

#[derive(Debug, Clone)]
pub enum Ignored {
    All,
    Numbers(Vec<u16>),
}

impl Target {
    pub fn from_options(options: &Options) -> Result<Target, String> {
        match options.string("db_driver").as_str() {
            "pgsql" => postgres(options).map(Target::Postgres),
            "mysql" => Ok(Target::Mysql {
                spec: mysql(options),
                ignored: ignored(&options.list("mysql_ignore_errors")),
                dry_run: options.flag("mysql_dry_run"),
            }),
            other => Err(format!("invalid database driver name: '{other}'")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Target::Postgres(_) => "pgsql",
            Target::Mysql { .. } => "mysql",
        }
    }
}

fn postgres(options: &Options) -> Result<ConnSpec, String> {
    let given = |key: &str| options.given(key).then(|| options.string(key));
    let flags = ConnFlags {
        host: given("pgsql_host"),
        port: given("pgsql_port"),
        user: given("pgsql_user"),
        dbname: given("pgsql_db"),
    };
    let mut spec = resolve_target(&flags).map_err(|f| f.message().to_string())?;
    if options.given("pgsql_password") {
        spec.password = Some(options.string("pgsql_password"));
    }
    Ok(spec)
}

fn mysql(options: &Options) -> MysqlSpec {
    let first = |key: &str| options.list(key).into_iter().next();
    let socket = first("mysql_socket").filter(|s| !s.is_empty());
    MysqlSpec {
        socket: socket.map(Into::into),
        host: first("mysql_host").unwrap_or_else(|| "localhost".into()),
        port: first("mysql_port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(3306),
        user: options.string("mysql_user"),
        password: Some(options.string("mysql_password")).filter(|p| !p.is_empty()),
        database: options.string("mysql_db"),
    }
}

fn ignored(list: &[String]) -> Ignored {
    if list.iter().any(|item| item == "all") {
        return Ignored::All;
    }
    Ignored::Numbers(list.iter().filter_map(|item| item.parse().ok()).collect())
}
