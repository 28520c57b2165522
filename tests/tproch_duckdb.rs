//! TPROC-H's answers against an independent engine on the same rows: at SF 0.01, each of the
//! 22 queries with TPC-H's qualification values answers on PostgreSQL (HammerDB's texts) and
//! on MariaDB (HammerDB's MariaDB texts, its INT supply costs) as DuckDB answers TPC-H's
//! standard texts over dbgen's rows (tests/support/duckdb_tpch.py; DuckDB from PyPI, which
//! ./test installs into /var/cache/stampede/duckdb).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::mariadb;
use common::{server, stampede, stampede_on, stderr, LabDir};
use stampede::family::tproch::session::Dialect;
use stampede::family::tproch::{data, params, queries, schema};

/// The queries HammerDB's MariaDB texts end with `limit N` (TPC-H's "first N rows").
const MARIADB_LIMITS: [(usize, usize); 5] = [(2, 100), (3, 10), (10, 20), (18, 100), (21, 100)];

#[test]
fn every_query_answers_on_postgresql_and_mariadb_as_duckdb_does_on_the_same_rows() {
    let dir = LabDir::new("tproch-duckdb");
    write_tables(&dir);
    let standard = standard_queries();
    let duckdb_answers = duckdb(&dir, &standard, false);
    let duckdb_int_costs = duckdb(&dir, &standard, true);

    let pg = server();
    let db = pg.create_database("tproch_duckdb");
    let built = stampede_on(
        "tproch",
        &db,
        &["build", "--scale-factor", "0.01", "--threads", "2"],
    );
    assert!(built.status.success(), "{}", stderr(&built));
    let maria_db = mariadb::create_database("tproch_duckdb");
    let socket = mariadb::socket();
    let built = stampede(&[
        "tproch",
        "build",
        "--engine",
        "mariadb",
        "--socket",
        &socket,
        "-U",
        "root",
        "-d",
        &maria_db,
        "--scale-factor",
        "0.01",
        "--threads",
        "2",
    ]);
    assert!(built.status.success(), "{}", stderr(&built));

    let mut wrong = Vec::new();
    for number in 1..=22 {
        let values = params::qualification(number);
        let pg_text = values
            .substitute(queries::text(Dialect::Postgres, number))
            .replace("{stream}", "0");
        let pg_rows = rows_of(&pg.psql_statements(&db, &pg_text), '|');
        compare(
            &mut wrong,
            "PostgreSQL",
            number,
            &pg_rows,
            &duckdb_answers[number - 1],
            None,
        );
        let maria_text = values
            .substitute(queries::text(Dialect::Mysql, number))
            .replace("{stream}", "0");
        let maria_rows = rows_of(&mariadb::sql(&maria_db, &maria_text), '\t');
        let limit = MARIADB_LIMITS
            .iter()
            .find(|(q, _)| *q == number)
            .map(|l| l.1);
        compare(
            &mut wrong,
            "MariaDB",
            number,
            &maria_rows,
            &duckdb_int_costs[number - 1],
            limit,
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// dbgen's SF 0.01 rows as `.tbl` files without their last bar, as the loader sends them.
fn write_tables(dir: &Path) {
    for table in schema::TABLES.iter().map(|t| t.name) {
        let mut out = Vec::new();
        let mut file = std::fs::File::create(dir.join(format!("{table}.tbl"))).unwrap();
        data::write_part(table, 0.01, 1, 1, &mut out, 1 << 20, &mut |chunk| {
            file.write_all(chunk)?;
            chunk.clear();
            Ok::<(), std::io::Error>(())
        })
        .unwrap();
        file.write_all(&out).unwrap();
    }
}

/// TPC-H's standard texts (the kit's query templates, as the `tpchgen` crate carries them)
/// with the qualification values, each split into its statements.
fn standard_queries() -> Vec<(usize, Vec<String>)> {
    (1..=22)
        .map(|number| {
            let template = tpchgen::q_and_a::queries::query(number as i32).unwrap();
            let text = params::qualification(number)
                .substitute(template)
                .replace("day (3)", "day")
                .replace("revenue:s", "revenue0");
            let statements = text
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            (number, statements)
        })
        .collect()
}

fn duckdb(dir: &Path, queries: &[(usize, Vec<String>)], int_costs: bool) -> Vec<Vec<Vec<String>>> {
    let cache =
        std::env::var("STAMPEDE_DUCKDB").unwrap_or_else(|_| "/var/cache/stampede/duckdb".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/duckdb_tpch.py");
    let mut command = Command::new("python3");
    command.arg(script).arg(dir).env("PYTHONPATH", cache);
    if int_costs {
        command.arg("--supplycost-int");
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let input = serde_json::to_string(queries).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "DuckDB: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<(usize, Vec<Vec<Option<String>>>)> =
        serde_json::from_slice(&output.stdout).unwrap();
    answers
        .into_iter()
        .map(|(_, rows)| {
            rows.into_iter()
                .map(|row| {
                    row.into_iter()
                        .map(|v| v.unwrap_or_else(|| "NULL".into()))
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn rows_of(text: &str, separator: char) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(separator).map(str::to_string).collect())
        .collect()
}

fn compare(
    wrong: &mut Vec<String>,
    engine: &str,
    number: usize,
    rows: &[Vec<String>],
    expected: &[Vec<String>],
    limit: Option<usize>,
) {
    let expected = &expected[..limit.map_or(expected.len(), |n| n.min(expected.len()))];
    if rows.len() != expected.len() {
        wrong.push(format!(
            "{engine} Q{number}: {} rows, DuckDB's {}",
            rows.len(),
            expected.len()
        ));
        return;
    }
    for (at, (row, duck)) in rows.iter().zip(expected).enumerate() {
        let same = row.len() == duck.len() && row.iter().zip(duck).all(|(a, b)| same_value(a, b));
        if !same {
            wrong.push(format!(
                "{engine} Q{number} row {}: {row:?}, DuckDB's {duck:?}",
                at + 1
            ));
            return;
        }
    }
}

/// Text trimmed of CHAR padding, dates by their day, numbers to 1e-6 of their size or to the
/// 1e-4 MariaDB rounds divisions to.
fn same_value(got: &str, expected: &str) -> bool {
    let got = got.trim().trim_end_matches(" 00:00:00");
    let expected = expected.trim();
    if got == expected {
        return true;
    }
    match (got.parse::<f64>(), expected.parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= (1e-6 * b.abs()).max(1e-4),
        _ => false,
    }
}
