//! `stampede pgbench -i` against a real server: the same tables and rows as `pgbench -i`, and
//! each tool can run against the other's database.

mod common;

use common::{server, stampede, stderr};

fn init_with_stampede(db: &str, extra: &[&str]) {
    let server = server();
    let mut args = vec!["pgbench", "-i"];
    args.extend_from_slice(extra);
    let flags = server.flags(db);
    args.extend(flags.iter().map(String::as_str));
    let output = stampede(&args);
    assert!(output.status.success(), "init failed: {}", stderr(&output));
    let log = stderr(&output);
    assert!(log.contains("creating primary keys..."), "{log}");
    assert!(log.contains("done in "), "{log}");
}

#[test]
fn init_creates_pgbench_rows_keys_and_values() {
    let server = server();
    let db = server.create_database("init_rows");
    init_with_stampede(&db, &["-s", "2"]);
    assert_eq!(
        server.psql(&db, "select count(*), min(aid), max(aid), min(bid), max(bid), sum(abalance), min(octet_length(filler)), max(octet_length(filler)) from pgbench_accounts"),
        "200000|1|200000|1|2|0|84|84"
    );
    assert_eq!(
        server.psql(&db, "select count(*), min(tid), max(tid), min(bid), max(bid), sum(tbalance), count(filler) from pgbench_tellers"),
        "20|1|20|1|2|0|0"
    );
    assert_eq!(
        server.psql(&db, "select count(*), min(bid), max(bid), sum(bbalance), count(filler) from pgbench_branches"),
        "2|1|2|0|0"
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_history"),
        "0"
    );
    // Accounts 1..100000 belong to branch 1, as pgbench lays them out.
    assert_eq!(
        server.psql(
            &db,
            "select bid from pgbench_accounts where aid in (100000, 100001) order by aid"
        ),
        "1\n2"
    );
    assert_eq!(
        server.psql(&db, "select string_agg(conrelid::regclass::text || ':' || contype::text, ',' order by conrelid::regclass::text) from pg_constraint where conrelid::regclass::text like 'pgbench_%'"),
        "pgbench_accounts:p,pgbench_branches:p,pgbench_tellers:p"
    );
    // Same column types as pgbench creates.
    assert_eq!(
        server.psql(&db, "select string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' order by attnum) from pg_attribute where attrelid = 'pgbench_history'::regclass and attnum > 0"),
        "tid integer, bid integer, aid integer, delta integer, mtime timestamp without time zone, filler character(22)"
    );
    // Loaded with FREEZE and vacuumed: every page all-visible, as after pgbench -i.
    assert_eq!(
        server.psql(
            &db,
            "select relallvisible = relpages from pg_class where relname = 'pgbench_accounts'"
        ),
        "t"
    );
    let pgbench = server.pgbench(&db, &["-S", "-t", "20", "-c", "2"]);
    assert!(
        pgbench.status.success(),
        "pgbench on a stampede database: {}",
        String::from_utf8_lossy(&pgbench.stderr)
    );
    assert!(String::from_utf8_lossy(&pgbench.stdout)
        .contains("number of transactions actually processed: 40/40"));
}

#[test]
fn init_options_partitions_fillfactor_foreign_keys_unlogged() {
    let server = server();
    let db = server.create_database("init_options");
    init_with_stampede(
        &db,
        &[
            "-s",
            "1",
            "-F",
            "80",
            "--partitions",
            "3",
            "--foreign-keys",
            "--unlogged-tables",
        ],
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_accounts"),
        "100000"
    );
    assert_eq!(
        server.psql(
            &db,
            "select count(*) from pg_inherits where inhparent = 'pgbench_accounts'::regclass"
        ),
        "3"
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_accounts_1"),
        "33334"
    );
    assert_eq!(
        server.psql(
            &db,
            "select reloptions::text from pg_class where relname = 'pgbench_tellers'"
        ),
        "{fillfactor=80}"
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pg_constraint where contype = 'f' and conparentid = 0 and conname like 'pgbench_%'"),
        "5"
    );
    assert_eq!(
        server.psql(
            &db,
            "select relpersistence from pg_class where relname = 'pgbench_accounts_2'"
        ),
        "u"
    );
}

#[test]
fn init_hash_partitions_and_server_side_generation() {
    let server = server();
    let db = server.create_database("init_hash");
    init_with_stampede(
        &db,
        &[
            "-s",
            "1",
            "--partitions",
            "2",
            "--partition-method",
            "hash",
            "-I",
            "dtGvp",
        ],
    );
    assert_eq!(
        server.psql(&db, "select count(*), sum(aid) from pgbench_accounts"),
        "100000|5000050000"
    );
    assert_eq!(
        server.psql(&db, "select count(*) > 40000 from pgbench_accounts_1"),
        "t"
    );
}

#[test]
fn stampede_runs_on_a_pgbench_initialized_database() {
    let server = server();
    let db = server.create_database("init_by_pgbench");
    let init = server.pgbench(&db, &["-i", "-s", "1", "-q"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let mut args = vec!["pgbench", "-c", "2", "-t", "25", "-M", "extended"];
    let flags = server.flags(&db);
    args.extend(flags.iter().map(String::as_str));
    let run = stampede(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let out = common::stdout(&run);
    assert!(
        out.contains("number of transactions actually processed: 50/50"),
        "{out}"
    );
    assert_eq!(
        server.psql(&db, "select count(*) from pgbench_history"),
        "50"
    );
}
