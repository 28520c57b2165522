//! `stampede tpcc build|run|check|drop`.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use crate::family::common::connection::{endpoint, positive};
use crate::family::tpcc::args::{BuildArgs, CheckArgs, EngineConnectionArgs, TpccAction};
use crate::family::tpcc::built::{checked_warehouses, existing_tables, same_warehouses};
use crate::family::tpcc::check::{self, SHOWN};
use crate::family::tpcc::load::{self, Loader};
use crate::family::tpcc::mysql;
use crate::family::tpcc::rules::Rules;
use crate::family::tpcc::schema;
use stampede_base::error::{CommandResult, Failure};
use stampede_conn::control_runtime;
use stampede_conn::Endpoint;
use stampede_control::mysql::ControlSession;
use stampede_control::postgres::{connect_quietly, sql_error};

pub fn run(action: &TpccAction) -> CommandResult {
    match action {
        TpccAction::Build(args) => build(args),
        TpccAction::Run(args) => {
            args.kube.check_alone()?;
            if args.kube.wanted() {
                return super::spread::launch(args);
            }
            super::run::run(args)
        }
        TpccAction::Check(args) => check(args),
        TpccAction::Drop(args) => drop_tables(args),
    }
}

fn build(args: &BuildArgs) -> CommandResult {
    let warehouses = positive::<i64>(args.warehouses, "warehouses")?;
    let threads = match args.threads {
        Some(t) => positive::<usize>(t, "threads")?,
        None => stampede_base::cpu::cores(),
    };
    let rules = Rules::parse(&args.rules, "--rules")?;
    let endpoint = endpoint(&args.connection)?;
    if let Endpoint::Mysql(_) = endpoint {
        refuse_on_mysql(args, rules)?;
    }
    let partitions = if args.partition {
        schema::partitions_for(warehouses)
    } else {
        1
    };
    if args.partition && partitions == 1 {
        println!(
            "order_line is not partitioned below {} warehouses (as HammerDB)",
            schema::PARTITION_FROM_WAREHOUSES
        );
    }
    let existing = match &endpoint {
        Endpoint::Postgres(conn) => control_runtime().block_on(async {
            let client = connect_quietly(conn).await.map_err(Failure::into_input)?;
            existing_tables(&client).await
        })?,
        Endpoint::Mysql(spec) => {
            let mut session = ControlSession::connect(spec).map_err(Failure::into_input)?;
            mysql::built::existing_tables(&mut session)?
        }
    };
    if let Some(table) = existing.first() {
        return Err(Failure::input(format!(
            "table {table} already exists; run `stampede tpcc drop` first"
        )));
    }
    let seed = args
        .seed
        .unwrap_or_else(crate::family::common::measure::seed);
    let loader = Loader {
        conn: endpoint.clone(),
        warehouses,
        connections: threads,
        seed,
        partitions,
        rules,
        now_unix_us: (stampede_store::unix_now() * 1e6) as i64,
        rows_loaded: Arc::new(AtomicU64::new(0)),
    };
    println!(
        "building TPROC-C: {warehouses} warehouse(s) over {} connection(s), seed {seed}, {} rules",
        threads.min(load::STREAM_COUNT),
        rules.name()
    );
    let started = Instant::now();
    let runtime = control_runtime();
    runtime.block_on(super::build::build(&loader, &|line| {
        println!("{line} ({:.1} s)", started.elapsed().as_secs_f64())
    }))?;
    let loaded = started.elapsed().as_secs_f64();
    if let Endpoint::Postgres(conn) = &endpoint {
        runtime.block_on(async {
            let client = connect_quietly(conn).await?;
            finish(&client, args.cluster, &started).await
        })?;
    }
    let total = started.elapsed().as_secs_f64();
    println!(
        "built {warehouses} warehouse(s) in {total:.1} s (load and indexes {loaded:.1} s): {:.1} warehouses per minute",
        warehouses as f64 * 60.0 / total
    );
    Ok(())
}

/// What HammerDB's MariaDB build does not have.
fn refuse_on_mysql(args: &BuildArgs, rules: Rules) -> Result<(), Failure> {
    let refused = if args.partition {
        "--partition"
    } else if args.cluster {
        "--cluster"
    } else if rules != Rules::HammerDb {
        "--rules tpc-c"
    } else {
        return Ok(());
    };
    Err(Failure::input(format!(
        "{refused} builds on PostgreSQL only: on MariaDB/MySQL, TPROC-C is HammerDB's MariaDB schema and procedures"
    )))
}

/// CLUSTER (optional), then ANALYZE, as HammerDB's build ends, and VACUUM, as autovacuum
/// does to HammerDB's freshly loaded tables in the first minute after its build (their
/// visibility map set, as a run a minute later finds them); not FREEZE, which HammerDB's never
/// are.
async fn finish(
    client: &tokio_postgres::Client,
    cluster: bool,
    started: &Instant,
) -> Result<(), Failure> {
    let mut statements = Vec::new();
    if cluster {
        statements.extend(
            schema::CLUSTER_ON
                .iter()
                .map(|(table, index)| format!("CLUSTER {table} USING {index}")),
        );
    }
    statements.push("ANALYZE".to_string());
    statements.push("VACUUM".to_string());
    for statement in statements {
        client
            .batch_execute(&statement)
            .await
            .map_err(|e| sql_error(&statement, e))?;
        println!("{statement} ({:.1} s)", started.elapsed().as_secs_f64());
    }
    Ok(())
}

fn check(args: &CheckArgs) -> CommandResult {
    let (built, outcomes) = match endpoint(&args.connection)? {
        Endpoint::Postgres(conn) => control_runtime().block_on(async {
            let client = connect_quietly(&conn).await.map_err(Failure::into_input)?;
            let built = checked_warehouses(&client, args.warehouses).await?;
            Ok::<_, Failure>((built, check::check(&client, args.all).await?))
        })?,
        Endpoint::Mysql(spec) => {
            let mut session = ControlSession::connect(&spec).map_err(Failure::into_input)?;
            let (built, _) = mysql::built::marker(&mut session)?;
            let built = same_warehouses(built, args.warehouses)?;
            (built, mysql::check::check(&mut session, args.all)?)
        }
    };
    let mut failed = Vec::new();
    for outcome in &outcomes {
        let c = outcome.condition;
        if outcome.total == 0 {
            println!("{} {}: ok", c.clause, c.rule);
            continue;
        }
        failed.push(c.clause);
        println!(
            "{} {}: FAILED for {} key(s){}",
            c.clause,
            c.rule,
            outcome.total,
            if outcome.total > SHOWN {
                format!(", the first {SHOWN}:")
            } else {
                ":".into()
            }
        );
        for (key, found) in &outcome.offenders {
            println!("    {key}: {found}");
        }
    }
    if failed.is_empty() {
        println!(
            "{built} warehouse(s): all {} conditions hold",
            outcomes.len()
        );
        return Ok(());
    }
    Err(Failure::run(format!(
        "consistency check failed: {}",
        failed.join(", ")
    )))
}

fn drop_tables(args: &EngineConnectionArgs) -> CommandResult {
    let conn = match endpoint(args)? {
        Endpoint::Postgres(conn) => conn,
        Endpoint::Mysql(spec) => {
            let mut session = ControlSession::connect(&spec).map_err(Failure::into_input)?;
            for table in mysql::built::drop_all(&mut session)? {
                println!("dropped {table}");
            }
            return Ok(());
        }
    };
    control_runtime().block_on(async {
        let client = connect_quietly(&conn).await.map_err(Failure::into_input)?;
        for table in existing_tables(&client).await? {
            let statement = format!("DROP TABLE {table}");
            client
                .batch_execute(&statement)
                .await
                .map_err(|e| sql_error(&statement, e))?;
            println!("dropped {table}");
        }
        let routines = crate::family::tpcc::load::server_routines(&client).await?;
        client
            .batch_execute(&routines.drop())
            .await
            .map_err(|e| sql_error("dropping the procedures", e))
    })
}
