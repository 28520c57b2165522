//! `stampede ibench step|run|cleanup`.

use std::sync::{Arc, Mutex};

use super::args::{CleanupArgs, EngineConnectionArgs, IbenchAction, IibenchArgs};
use super::instance::{runtime, Instance, Output};
use super::options;
use super::rows::random_text;
use super::sql::{self, Dbms};
use super::steps;
use crate::family::common::connection::{endpoint, positive, ConnectionArgs};
use crate::family::common::sql_session::Session;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::Endpoint;

pub fn run(action: &IbenchAction) -> CommandResult {
    match action {
        IbenchAction::Step(args) => step(args),
        IbenchAction::Run(args) => steps::run(args),
        IbenchAction::Cleanup(args) => cleanup(args),
    }
}

fn step(args: &IibenchArgs) -> CommandResult {
    let postgres = match args.dbms.as_str() {
        "postgres" => true,
        "mysql" => false,
        other => {
            return Err(Failure::input(format!(
                "--dbms {other}: one of postgres, mysql (MariaDB, MySQL); stampede does not run MongoDB"
            )))
        }
    };
    if !args.db_config_file.is_empty() {
        return Err(Failure::input(
            "--db_config_file: stampede does not read MySQL option files; give --db_socket, --db_host, --db_user, MYSQL_PWD",
        ));
    }
    let options = options::from_args(args, postgres)?;
    let endpoint = iibench_endpoint(args, postgres)?;
    let instance = Arc::new(Instance {
        dbms: Dbms::of(&endpoint),
        random: random_text(options.seed),
        endpoint,
        options,
        seconds: None,
    });
    let stop = stampede_base::signals::watch_signals();
    let out: Output = Arc::new(Mutex::new(Box::new(std::io::stdout())));
    let result = runtime()?.block_on(instance.run(out, stop))?;
    if result.interrupted {
        return Err(Failure::interrupted(
            "stopped by a signal before the inserts were done",
        ));
    }
    Ok(())
}

/// Where iibench.py's flags point: PostgreSQL through the usual resolution (unset ones follow
/// PG* variables, or the managed server when none is given), MySQL by socket or host.
fn iibench_endpoint(args: &IibenchArgs, postgres: bool) -> Result<Endpoint, Failure> {
    let flags = EngineConnectionArgs {
        connection: ConnectionArgs {
            help: None,
            host: args.db_host.clone(),
            port: args.db_port.clone(),
            user: args.db_user.clone(),
            dbname: args.db_name.clone(),
        },
        engine: if postgres { "postgres" } else { "mariadb" }.into(),
        socket: args.db_socket.clone(),
    };
    let mut endpoint = endpoint(&flags)?;
    if let Some(password) = &args.db_password {
        match &mut endpoint {
            Endpoint::Postgres(spec) => spec.password = Some(password.clone()),
            Endpoint::Mysql(spec) => spec.password = Some(password.clone()),
        }
    }
    Ok(endpoint)
}

fn cleanup(args: &CleanupArgs) -> CommandResult {
    let clients = positive::<u64>(args.clients, "clients")?;
    let endpoint = endpoint(&args.connection)?;
    stampede_conn::control_runtime().block_on(drop_tables(&endpoint, clients))
}

/// Drops pi1 … pi`clients`.
pub async fn drop_tables(endpoint: &Endpoint, clients: u64) -> Result<(), Failure> {
    let mut session = Session::connect(endpoint).await?;
    for n in 1..=clients {
        session.execute(&sql::drop_table(&format!("pi{n}"))).await?;
    }
    Ok(())
}
