//! `stampede sysbench prepare|run|cleanup`: sysbench's tests on the driver, reported as
//! sysbench reports them, plus p50/p95/p99/max and JSON.

use crate::live::command_labels;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::driver::{
    self, DriverEvent, ErrorPolicy, MysqlRetried, Protocol, RunLimit, RunPlan, RunResult,
    WeightedScript,
};
use crate::family::common::connection::positive;
use crate::family::sysbench::catalog::{self, GeneratedTest};
use crate::family::sysbench::microbench::{self, Step};
use crate::family::sysbench::oltp_options::{OltpOptions, RandKind, RandOptions};
use crate::family::sysbench::report::{
    self as sysbench_report, IntervalLine, SuiteLine, SysbenchReport,
};
use crate::family::sysbench::subcommands::{SysbenchAction, SysbenchArgs};
use crate::family::sysbench::target::SysbenchTarget;
use crate::pods::place::Place;
use stampede_base::error::{CommandResult, Failure};
use stampede_script::{parse_script, Value, VarTable};

const DEFAULT_TIME_S: u64 = 10;

pub fn run(action: &SysbenchAction) -> CommandResult {
    if let SysbenchAction::Prepare(args)
    | SysbenchAction::Run(args)
    | SysbenchAction::Cleanup(args) = action
    {
        args.kube.check_alone()?;
    }
    match action {
        SysbenchAction::Prepare(args) if args.kube.pods.is_some() => {
            Err(super::spread::refused_with_pods("prepare"))
        }
        SysbenchAction::Cleanup(args) if args.kube.pods.is_some() => {
            Err(super::spread::refused_with_pods("cleanup"))
        }
        SysbenchAction::Prepare(args) => prepare(args),
        SysbenchAction::Run(args) => run_test(args),
        SysbenchAction::Cleanup(args) => cleanup(args),
        SysbenchAction::Relative(args) => relative(&args.files),
    }
}

/// The table and distribution options, checked.
pub fn oltp_options(args: &SysbenchArgs) -> Result<OltpOptions, Failure> {
    let tables = positive::<u32>(args.tables, "tables")?;
    let table_size = positive::<u32>(args.table_size, "table-size")?;
    let range_size = positive::<u32>(args.range_size, "range-size")?;
    let kind = RandKind::parse(&args.rand_type).map_err(Failure::input)?;
    if !(args.rand_pareto_h > 0.0 && args.rand_pareto_h < 1.0) {
        return Err(Failure::input(format!(
            "--rand-pareto-h must be between 0 and 1 (not {})",
            args.rand_pareto_h
        )));
    }
    if args.rand_zipfian_exp.is_nan() || args.rand_zipfian_exp < 0.0 {
        return Err(Failure::input(format!(
            "--rand-zipfian-exp must be at least 0 (not {})",
            args.rand_zipfian_exp
        )));
    }
    Ok(OltpOptions {
        tables,
        table_size,
        range_size,
        point_selects: args.point_selects,
        simple_ranges: args.simple_ranges,
        sum_ranges: args.sum_ranges,
        order_ranges: args.order_ranges,
        distinct_ranges: args.distinct_ranges,
        index_updates: args.index_updates,
        non_index_updates: args.non_index_updates,
        delete_inserts: args.delete_inserts,
        range_selects: args.range_selects,
        auto_inc: args.auto_inc,
        skip_trx: args.skip_trx,
        secondary: args.secondary,
        create_secondary: args.create_secondary,
        random_points: args.random_points.max(1),
        number_of_ranges: args.number_of_ranges.max(1),
        delta: args.delta,
        hot_points: args.hot_points,
        covered: args.covered,
        on_id: args.on_id,
        rand: RandOptions {
            kind,
            spec_iter: args.rand_spec_iter.max(1),
            spec_pct: args.rand_spec_pct.max(1),
            spec_res: args.rand_spec_res.min(99),
            pareto_h: args.rand_pareto_h,
            zipfian_exp: args.rand_zipfian_exp,
        },
    })
}

fn seed(args: &SysbenchArgs) -> u64 {
    if args.rand_seed != 0 {
        return args.rand_seed;
    }
    crate::family::common::measure::seed()
}

/// A test named to prepare or clean up must be one of the tests (sysbench reads the test's own
/// options), checked before any server is touched.
fn known_test(args: &SysbenchArgs) -> CommandResult {
    match args.test.as_deref() {
        Some(name) if !catalog::TESTS.contains(&name) => Err(Failure::input(format!(
            "unknown test \"{name}\"; the tests are: {}",
            catalog::TESTS.join(", ")
        ))),
        _ => Ok(()),
    }
}

fn prepare(args: &SysbenchArgs) -> CommandResult {
    known_test(args)?;
    let options = oltp_options(args)?;
    let threads = positive::<u32>(args.threads, "threads")?;
    let target = SysbenchTarget::from_args(args)?;
    if args.test.as_deref() == Some("bulk_insert") {
        let tables = target
            .create_bulk_insert_tables(threads)
            .map_err(Failure::into_input)?;
        for table in tables {
            println!("Creating table '{table}'...");
        }
        return Ok(());
    }
    let existing = target.existing_tables().map_err(Failure::into_input)?;
    if let Some(table) = (1..=options.tables).find(|t| existing.contains(t)) {
        return Err(Failure::input(format!(
            "table sbtest{table} already exists; run `stampede sysbench cleanup` first"
        )));
    }
    target.prepare(&options, threads as usize, seed(args), &|line| {
        println!("{line}")
    })
}

fn cleanup(args: &SysbenchArgs) -> CommandResult {
    known_test(args)?;
    let tables = positive::<u32>(args.tables, "tables")?;
    let target = SysbenchTarget::from_args(args)?;
    for table in target.cleanup(tables).map_err(Failure::into_input)? {
        println!("Dropping table '{table}'...");
    }
    Ok(())
}

/// sysbench's `prewarm` (oltp_common.lua's): each table's primary key and rows read into the
/// buffer pool, MySQL and MariaDB only, as sysbench's.
pub fn prewarm(args: &SysbenchArgs) -> CommandResult {
    let options = oltp_options(args)?;
    if args.db_driver != "mysql" {
        return Err(Failure::input("prewarm is currently MySQL only"));
    }
    let target = SysbenchTarget::from_args(args)?;
    target.prewarm(options.tables, options.table_size, &|line| {
        println!("{line}")
    })
}

fn protocol(mode: &str) -> Result<Protocol, Failure> {
    match mode {
        "auto" => Ok(Protocol::Prepared),
        "disable" => Ok(Protocol::Simple),
        other => Err(Failure::input(format!(
            "invalid --db-ps-mode \"{other}\"; use auto or disable"
        ))),
    }
}

/// `--max-tries` and `--mysql-ignore-errors` over the family's surviving policy.
fn error_policy(args: &SysbenchArgs) -> Result<ErrorPolicy, Failure> {
    let mut policy = ErrorPolicy::surviving(args.max_tries);
    policy.mysql_retried = mysql_ignored(&args.mysql_ignore_errors)?;
    Ok(policy)
}

/// sysbench's `--mysql-ignore-errors`: error numbers separated by commas, or all, or none.
fn mysql_ignored(list: &str) -> Result<MysqlRetried, Failure> {
    match list.trim() {
        "all" => return Ok(MysqlRetried::All),
        "none" | "" => return Ok(MysqlRetried::Listed(Vec::new())),
        _ => {}
    }
    list.split(',')
        .map(|number| {
            number.trim().parse::<u16>().map_err(|_| {
                Failure::input(format!(
                    "--mysql-ignore-errors: \"{}\" is not a MySQL error number; give numbers separated by commas, all or none",
                    number.trim()
                ))
            })
        })
        .collect::<Result<_, _>>()
        .map(MysqlRetried::Listed)
}

/// How the run ends, as sysbench's: --time (10 s by default; 0: no limit) and --events (the
/// run's events over all threads, each thread taking the next; 0: no limit), whichever comes
/// first.
fn limit(args: &SysbenchArgs) -> RunLimit {
    let time = args.time.unwrap_or(DEFAULT_TIME_S);
    match args.events {
        0 => RunLimit::Duration(Duration::from_secs(time.max(1))),
        total => RunLimit::Events {
            total,
            within: (time > 0).then(|| Duration::from_secs(time)),
        },
    }
}

/// The driver plan for a generated test.
pub struct TestPlan {
    pub test: GeneratedTest,
    pub plan: RunPlan,
}

pub fn test_plan(
    name: &str,
    options: &OltpOptions,
    target: &SysbenchTarget,
    threads: u32,
    protocol: Protocol,
    limit: RunLimit,
    seed: u64,
) -> Result<TestPlan, Failure> {
    let test = catalog::generate(name, options, threads).map_err(Failure::input)?;
    let mut variables = VarTable::default();
    let internal = |e| Failure::input(format!("internal script of {name}: {e}"));
    let mut scripts = vec![WeightedScript {
        script: parse_script(name, name, &test.script, &mut variables).map_err(internal)?,
        weight: 1,
    }];
    if let Some(closing) = &test.closing {
        scripts.push(WeightedScript {
            script: parse_script(name, name, closing, &mut variables).map_err(internal)?,
            weight: 0,
        });
    }
    // Every slot first, so that the values cover them all.
    let initial: Vec<(usize, i64)> = test
        .initial
        .iter()
        .map(|(variable, value)| (variables.slot(variable), *value))
        .collect();
    let protocol = if test.plain_queries {
        Protocol::Simple
    } else {
        protocol
    };
    let clients = threads as usize;
    let mut plan = RunPlan::for_workload(
        &target.endpoint(),
        clients,
        limit,
        protocol,
        scripts,
        variables,
        seed,
    );
    for (slot, value) in initial {
        plan.initial_values[slot] = Value::Int(value);
    }
    // sysbench's --threads are OS threads, a connection each. Measured on MariaDB
    // (oltp_read_only, 4 and 16 threads, 2 cores): one client per thread served 20-25% more
    // transactions than the clients spread over a thread per core, whose busier threads the
    // server's threads preempted (10-70x the involuntary context switches).
    plan.threads = clients;
    plan.closing_script = test.closing.as_ref().map(|_| 1);
    plan.binary_results = true;
    // sysbench restarts an event after an error it ignores (deadlocks and serialization
    // failures; on MySQL, its --mysql-ignore-errors) until it succeeds. Other errors fail the
    // event and the run goes on, and unlike sysbench a serious run survives a restart.
    plan.errors = ErrorPolicy::surviving(0);
    Ok(TestPlan { test, plan })
}

fn run_test(args: &SysbenchArgs) -> CommandResult {
    if let Some(suite) = &args.suite {
        return run_suite(args, suite);
    }
    let name = args.test.as_deref().ok_or_else(|| {
        Failure::input(format!(
            "no test given; the tests are: {}",
            catalog::TESTS.join(", ")
        ))
    })?;
    let options = oltp_options(args)?;
    if options.range_size > options.table_size {
        return Err(Failure::input(format!(
            "--range-size {} is larger than the table (--table-size {})",
            options.range_size, options.table_size
        )));
    }
    let threads = positive::<u32>(args.threads, "threads")?;
    // Everything that can be checked without a server is, before one is resolved (or started).
    catalog::generate(name, &options, threads).map_err(Failure::input)?;
    let protocol = protocol(&args.db_ps_mode)?;
    let limit = limit(args);
    let stall_timeout = driver::plan::stall_timeout_option(args.stall_timeout.as_deref(), &limit)?;
    if !(0.0..=100.0).contains(&args.percentile) {
        return Err(Failure::input(format!(
            "--percentile must be in 0..100 (not {})",
            args.percentile
        )));
    }
    if args.kube.pods.is_some() {
        return super::spread::launch(args, threads, seed(args));
    }
    let target = SysbenchTarget::from_args(args)?;
    let seed = seed(args);
    let TestPlan { test, mut plan } =
        test_plan(name, &options, &target, threads, protocol, limit, seed)?;
    plan.rate = (args.rate > 0.0).then_some(args.rate);
    plan.errors = error_policy(args)?;
    plan.stall_timeout = stall_timeout;
    // bulk_insert writes to a table per thread.
    let tables = if name == "bulk_insert" {
        threads
    } else {
        options.tables
    };
    target.check_prepared(tables).map_err(Failure::into_input)?;
    let mut intervals = IntervalLine::new(
        args.report_interval,
        limit.time_bound().map(|duration| duration.as_secs()),
        threads,
        test.queries,
        args.percentile,
    );
    // On this host, or as one pod of a spread run (pod 0 prints the merged run's lines).
    let metrics = args.metrics.start(command_labels("sysbench"))?;
    let mut place = Place::of_this_process(Box::new(move |interval| {
        if let Some(line) = intervals.add(interval) {
            println!("{line}");
        }
    }))?
    .fed(metrics.as_ref().map(|m| m.feed(None)));
    if place.leads() {
        print_run_mode(args, threads);
    }
    place.join(Ok(()), |_| {})?;
    let stop = place.stop_flag();
    plan.stop = Some(stop.clone());
    if args.warmup_time > 0 {
        // Each pod warms its own threads up; the measured run then starts together.
        let mut warmup = plan.clone();
        warmup.limit = RunLimit::Duration(Duration::from_secs(args.warmup_time));
        if place.leads() {
            println!("Warming up for {} second(s)...", args.warmup_time);
        }
        place.run_alone(warmup)?;
    }
    if place.leads() {
        println!("Initializing worker threads...\n");
        println!("Threads started!\n");
    }
    let ran = place.run(plan, &mut |event| match event {
        DriverEvent::ClientAborted(message, _) => eprintln!("stampede: error: {message}"),
        DriverEvent::ClientNotice(message) => eprintln!("stampede: {message}"),
        DriverEvent::Interval(_) | DriverEvent::WarmupEnded | DriverEvent::MeasuredEnded => {}
    })?;
    let Some(ran) = ran else {
        return Ok(());
    };
    let mut report = SysbenchReport::new(&test, threads, &ran.result);
    report.spread = ran.spread;
    print_report(args, &report, &ran.result, seed)?;
    finish(&ran.result, stop.load(Ordering::SeqCst))
}

/// sysbench's final report, stampede's lines after it, and `--json`.
fn print_report(
    args: &SysbenchArgs,
    report: &SysbenchReport,
    result: &RunResult,
    seed: u64,
) -> CommandResult {
    print!(
        "{}",
        sysbench_report::text(report, args.percentile, args.histogram, result)
    );
    print!("{}", sysbench_report::additions(report, seed));
    if let Some(path) = &args.json {
        crate::report::write_file(path, &sysbench_report::json(report))?;
    }
    Ok(())
}

/// sysbench's run mode lines: threads, rate, intervals, and the random numbers' source
/// ("from current time" unless `--rand-seed`, as sysbench says; the seed drawn for the run is
/// printed after the report).
fn print_run_mode(args: &SysbenchArgs, threads: u32) {
    println!("Running the test with following options:\nNumber of threads: {threads}");
    if args.rate > 0.0 {
        println!("Target transaction rate: {}/sec", args.rate);
    }
    if args.report_interval > 0 {
        println!(
            "Report intermediate results every {} second(s)",
            args.report_interval
        );
    }
    match args.rand_seed {
        0 => println!("Initializing random number generator from current time\n"),
        seed => println!("Initializing random number generator from seed ({seed}).\n"),
    }
    println!();
}

fn finish(result: &RunResult, interrupted: bool) -> CommandResult {
    if result.aborted_clients > 0 || interrupted {
        return Err(Failure::incomplete());
    }
    Ok(())
}

/// `--suite microbench`: every microbenchmark in Callaghan's order on the prepared tables, a
/// line each, postwrite between the writes and the reads that follow.
fn run_suite(args: &SysbenchArgs, suite: &str) -> CommandResult {
    if suite != "microbench" {
        return Err(Failure::input(format!(
            "unknown suite \"{suite}\"; the suites are: microbench"
        )));
    }
    if args.test.is_some() {
        return Err(Failure::input("give a test or --suite, not both"));
    }
    let base = oltp_options(args)?;
    let threads = positive::<u32>(args.threads, "threads")?;
    let protocol = protocol(&args.db_ps_mode)?;
    let errors = error_policy(args)?;
    let settle = args
        .postwrite_settle
        .unwrap_or_else(|| microbench::default_settle_s(base.tables, base.table_size));
    let target = SysbenchTarget::from_args(args)?;
    target
        .check_prepared(base.tables)
        .map_err(Failure::into_input)?;
    let stop = stampede_base::signals::watch_signals();
    let seed = seed(args);
    let mut results = Vec::new();
    println!("{}", sysbench_report::SUITE_HEADER);
    for step in microbench::suite() {
        if stop.load(Ordering::SeqCst) {
            return Err(Failure::interrupted("interrupted"));
        }
        let test = match step {
            Step::Postwrite => {
                let done = target.postwrite(base.tables)?;
                println!("postwrite: {done}, settle {settle} s");
                sleep_unless_stopped(Duration::from_secs(settle), &stop);
                continue;
            }
            Step::Test(test) => test,
        };
        let options = test.options(&base);
        let writes = catalog::generate(test.lua, &options, threads)
            .map_err(Failure::input)?
            .writes;
        let seconds = if writes {
            args.write_secs
        } else {
            args.read_secs
        };
        let limit = RunLimit::Duration(Duration::from_secs(seconds.max(1)));
        let TestPlan {
            test: generated,
            mut plan,
        } = test_plan(test.lua, &options, &target, threads, protocol, limit, seed)?;
        plan.stop = Some(stop.clone());
        plan.errors = errors.clone();
        let result = driver::run(plan, &mut |_| {})?;
        let line = SuiteLine::new(&test, &generated, threads, &options, &result);
        println!("{}", line.text());
        results.push(line);
    }
    if let Some(path) = &args.json {
        crate::report::write_file(path, &sysbench_report::suite_json(&results, &base, threads))?;
    }
    Ok(())
}

fn sleep_unless_stopped(duration: Duration, stop: &AtomicBool) {
    let end = std::time::Instant::now() + duration;
    while std::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `relative BASE OTHER...`: each other file's scores over the base's, per test and group.
fn relative(files: &[std::path::PathBuf]) -> CommandResult {
    let suites = files
        .iter()
        .map(|path| sysbench_report::read_suite(path).map_err(Failure::input))
        .collect::<Result<Vec<_>, _>>()?;
    print!("{}", sysbench_report::relative_table(&suites));
    Ok(())
}
