//! TPROC-H's build on MariaDB/MySQL: HammerDB's tables with their keys (foreign key checks off
//! while loading, as HammerDB loads), dbgen's rows as multi-row INSERTs of about a megabyte over
//! the build's connections (HammerDB sends 1,000 rows per INSERT), then HammerDB's statistics:
//! `ANALYZE TABLE … PERSISTENT FOR ALL`, or a plain ANALYZE where the server has no engine-
//! independent statistics.

use super::data;
use super::load::{Build, Piece};
use super::schema::{self, TABLES};
use crate::family::common::sql_session::{connect_mysql as connect, Session};
use stampede_base::error::Failure;
use stampede_conn::control_runtime;
use stampede_conn::MysqlSpec;
use stampede_wire::mysql::push_quoted;

/// Send an INSERT when its values reach this many bytes (MariaDB's max_allowed_packet is
/// 16 MiB by default, MySQL's 64 MiB).
const INSERT_BYTES: usize = 1 << 20;

/// HammerDB's MariaDB tables (`mariaolap.tcl`'s GenerateTableQueries, InnoDB), in its order:
/// keys, indexes and foreign keys declared in the CREATE (the load runs with foreign key checks
/// off). `PS_SUPPLYCOST` is an INT there, as HammerDB has it: dbgen's cents are rounded.
pub const CREATE_TABLES: [&str; 8] = [
    "CREATE TABLE `ORDERS` (`O_ORDERDATE` DATE NULL, `O_ORDERKEY` BIGINT NOT NULL, `O_CUSTKEY` INT NOT NULL, `O_ORDERPRIORITY` CHAR(15) BINARY NULL, `O_SHIPPRIORITY` INT NULL, `O_CLERK` CHAR(15) BINARY NULL, `O_ORDERSTATUS` CHAR(1) BINARY NULL, `O_TOTALPRICE` DECIMAL(10,2) NULL, `O_COMMENT` VARCHAR(79) BINARY NULL, PRIMARY KEY (`O_ORDERKEY`), FOREIGN KEY ORDERS_FK1(`O_CUSTKEY`) REFERENCES CUSTOMER(`C_CUSTKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `PARTSUPP` (PS_PARTKEY INT NOT NULL, PS_SUPPKEY INT NOT NULL, PS_SUPPLYCOST INT NOT NULL, PS_AVAILQTY INT NULL, PS_COMMENT VARCHAR(199) BINARY NULL, PRIMARY KEY (`PS_PARTKEY`,`PS_SUPPKEY`), INDEX PARTSUPP_PART_FKIDX (`PS_PARTKEY`), INDEX PARTSUPP_SUPPLIER_FKIDX (`PS_SUPPKEY`), FOREIGN KEY PARTSUPP_FK1(`PS_PARTKEY`) REFERENCES PART(`P_PARTKEY`), FOREIGN KEY PARTSUPP_FK2(`PS_SUPPKEY`) REFERENCES SUPPLIER(`S_SUPPKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `CUSTOMER` (C_CUSTKEY INT NOT NULL, C_MKTSEGMENT CHAR(10) BINARY NULL, C_NATIONKEY INT NULL, C_NAME VARCHAR(25) BINARY NULL, C_ADDRESS VARCHAR(40) BINARY NULL, C_PHONE CHAR(15) BINARY NULL, C_ACCTBAL DECIMAL(10,2) NULL, C_COMMENT VARCHAR(118) BINARY NULL, PRIMARY KEY (`C_CUSTKEY`), INDEX CUSTOMER_NATION_FKIDX (`C_NATIONKEY`), FOREIGN KEY CUSTOMER_FK1(`C_NATIONKEY`) REFERENCES NATION(`N_NATIONKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `PART` (P_PARTKEY INT NOT NULL, P_TYPE VARCHAR(25) BINARY NULL, P_SIZE INT NULL, P_BRAND CHAR(10) BINARY NULL, P_NAME VARCHAR(55) BINARY NULL, P_CONTAINER CHAR(10) BINARY NULL, P_MFGR CHAR(25) BINARY NULL, P_RETAILPRICE DECIMAL(10,2) NULL, P_COMMENT VARCHAR(23) BINARY NULL, PRIMARY KEY (`P_PARTKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `SUPPLIER` (S_SUPPKEY INT NOT NULL, S_NATIONKEY INT NULL, S_COMMENT VARCHAR(102) BINARY NULL, S_NAME CHAR(25) BINARY NULL, S_ADDRESS VARCHAR(40) BINARY NULL, S_PHONE CHAR(15) BINARY NULL, S_ACCTBAL DECIMAL(10,2) NULL, PRIMARY KEY (`S_SUPPKEY`), INDEX SUPPLIER_NATION_FKIDX (`S_NATIONKEY`), FOREIGN KEY SUPPLIER_FK1(`S_NATIONKEY`) REFERENCES NATION(`N_NATIONKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `NATION` (N_NATIONKEY INT NOT NULL, N_NAME CHAR(25) BINARY NULL, N_REGIONKEY INT NULL, N_COMMENT VARCHAR(152) BINARY NULL, PRIMARY KEY (`N_NATIONKEY`), INDEX NATION_REGIONKEY_FKIDX (`N_REGIONKEY`), FOREIGN KEY NATION_FK1(`N_REGIONKEY`) REFERENCES REGION(`R_REGIONKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `REGION` (R_REGIONKEY INT NOT NULL, R_NAME CHAR(25) BINARY NULL, R_COMMENT VARCHAR(152) BINARY NULL, PRIMARY KEY (`R_REGIONKEY`)) ENGINE = InnoDB",
    "CREATE TABLE `LINEITEM` (L_SHIPDATE DATE NULL, L_ORDERKEY BIGINT NOT NULL, L_DISCOUNT DECIMAL(10,2) NOT NULL, L_EXTENDEDPRICE DECIMAL(10,2) NOT NULL, L_SUPPKEY INT NOT NULL, L_QUANTITY INT NOT NULL, L_RETURNFLAG CHAR(1) BINARY NULL, L_PARTKEY INT NOT NULL, L_LINESTATUS CHAR(1) BINARY NULL, L_TAX DECIMAL(10,2) NOT NULL, L_COMMITDATE DATE NULL, L_RECEIPTDATE DATE NULL, L_SHIPMODE CHAR(10) BINARY NULL, L_LINENUMBER INT NOT NULL, L_SHIPINSTRUCT CHAR(25) BINARY NULL, L_COMMENT VARCHAR(44) BINARY NULL, PRIMARY KEY (`L_ORDERKEY`, `L_LINENUMBER`), INDEX LINEITEM_PART_SUPP_FKIDX (`L_PARTKEY`,`L_SUPPKEY`), INDEX IDX_LINEITEM_ORDERKEY_FKIDX (`L_ORDERKEY`), FOREIGN KEY LINEITEM_FK1(`L_ORDERKEY`) REFERENCES ORDERS(`O_ORDERKEY`), FOREIGN KEY LINEITEM_FK2(`L_PARTKEY`, `L_SUPPKEY`) REFERENCES PARTSUPP(`PS_PARTKEY`, `PS_SUPPKEY`)) ENGINE = InnoDB",
];

/// The columns of a table's dbgen line that are numbers (unquoted in the INSERT, so that
/// MariaDB rounds PS_SUPPLYCOST's cents into its INT as HammerDB's literals are).
fn numeric_columns(table: &str) -> &'static [usize] {
    match table {
        "lineitem" => &[0, 1, 2, 3, 4, 5, 6, 7],
        "orders" => &[0, 1, 3, 7],
        "partsupp" => &[0, 1, 2, 3],
        "part" => &[0, 5, 7],
        "customer" | "supplier" => &[0, 3, 5],
        "nation" => &[0, 2],
        "region" => &[0],
        other => unreachable!("not a TPC-H table: {other}"),
    }
}

pub fn build(
    build: &Build,
    spec: &MysqlSpec,
    say: &(dyn Fn(String) + Sync),
) -> Result<(), Failure> {
    let runtime = control_runtime();
    let mut session = Session::Mysql(runtime.block_on(connect(spec))?);
    runtime.block_on(session.execute("SET FOREIGN_KEY_CHECKS = 0"))?;
    for create in CREATE_TABLES {
        runtime.block_on(session.execute(create))?;
    }
    say("created the 8 tables with their keys".into());
    build.load(
        say,
        || {
            let mut conn = Session::Mysql(runtime.block_on(connect(spec))?);
            runtime.block_on(conn.execute("SET FOREIGN_KEY_CHECKS = 0"))?;
            Ok(conn)
        },
        |conn, piece| insert_piece(conn, piece, build.scale_factor),
    )?;
    let tables: Vec<String> = TABLES.iter().map(|t| t.name.to_uppercase()).collect();
    let analyze = format!("ANALYZE TABLE {} PERSISTENT FOR ALL", tables.join(", "));
    if runtime.block_on(session.execute(&analyze)).is_err() {
        let standard = format!("ANALYZE TABLE {}", tables.join(", "));
        runtime.block_on(session.execute(&standard))?;
    }
    say("analyzed the tables".into());
    Ok(())
}

/// One piece as INSERTs of about a megabyte each, committed one by one (autocommit).
fn insert_piece(conn: &mut Session, piece: Piece, scale_factor: f64) -> Result<u64, Failure> {
    let runtime = control_runtime();
    let columns = schema::table(piece.table).columns;
    let head = format!(
        "INSERT INTO {} ({columns}) VALUES ",
        piece.table.to_uppercase()
    );
    let numeric = numeric_columns(piece.table);
    let mut statement = String::with_capacity(INSERT_BYTES + 4096);
    let mut send = |lines: &mut Vec<u8>| -> Result<(), Failure> {
        statement.clear();
        statement.push_str(&head);
        let text = std::str::from_utf8(lines).map_err(|e| Failure::run(e.to_string()))?;
        for (row, line) in text.lines().enumerate() {
            if row > 0 {
                statement.push(',');
            }
            push_values(&mut statement, line, numeric);
        }
        lines.clear();
        if statement.len() == head.len() {
            return Ok(());
        }
        runtime
            .block_on(conn.execute(&statement))
            .map_err(|e| Failure::run(e.into_message()))
    };
    let mut lines = Vec::with_capacity(INSERT_BYTES + 4096);
    data::write_part(
        piece.table,
        scale_factor,
        piece.part,
        piece.parts,
        &mut lines,
        INSERT_BYTES,
        &mut send,
    )
    .and_then(|rows| send(&mut lines).map(|()| rows))
}

/// `(v1, 'v2', …)` from a dbgen line without its last bar.
fn push_values(out: &mut String, line: &str, numeric: &[usize]) {
    out.push('(');
    for (column, value) in line.split('|').enumerate() {
        if column > 0 {
            out.push(',');
        }
        if numeric.contains(&column) {
            out.push_str(value);
        } else {
            push_quoted(out, value);
        }
    }
    out.push(')');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_go_bare_and_text_quoted() {
        let mut out = String::new();
        push_values(&mut out, "1|155190|Clerk#1|it's", &[0, 1]);
        assert_eq!(out, r"(1,155190,'Clerk#1','it\'s')");
    }

    #[test]
    fn every_table_is_created_once_with_its_keys() {
        for table in TABLES {
            let create = CREATE_TABLES
                .iter()
                .filter(|c| c.starts_with(&format!("CREATE TABLE `{}`", table.name.to_uppercase())))
                .count();
            assert_eq!(create, 1, "{}", table.name);
        }
        assert!(CREATE_TABLES.iter().all(|c| c.contains("PRIMARY KEY")));
    }
}
