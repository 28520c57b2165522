//! HammerDB's TPROC-H schema for PostgreSQL (`pgolap.tcl`'s CreateTables and CreateIndexes):
//! every number NUMERIC, every date TIMESTAMP, the keys added after the load. The statements
//! are HammerDB's; the order they run in (keys, then indexes, then foreign keys, each step
//! over several connections) is stampede's.

/// One TPROC-H table: its name, HammerDB's CREATE TABLE, the column whose presence marks it as
/// TPROC-H's (TPROC-C also has `customer` and `orders`), and its columns in dbgen's order (the
/// order the loader writes them in).
pub struct Table {
    pub name: &'static str,
    pub create: &'static str,
    pub key_column: &'static str,
    pub columns: &'static str,
}

/// The eight tables, largest first (the loader hands out their parts in this order).
pub const TABLES: [Table; 8] = [
    Table {
        name: "lineitem",
        create: "CREATE TABLE LINEITEM(L_SHIPDATE TIMESTAMP, L_ORDERKEY NUMERIC NOT NULL, L_DISCOUNT NUMERIC NOT NULL, L_EXTENDEDPRICE NUMERIC NOT NULL, L_SUPPKEY NUMERIC NOT NULL, L_QUANTITY NUMERIC NOT NULL, L_RETURNFLAG CHAR(1), L_PARTKEY NUMERIC NOT NULL, L_LINESTATUS CHAR(1), L_TAX NUMERIC NOT NULL, L_COMMITDATE TIMESTAMP, L_RECEIPTDATE TIMESTAMP, L_SHIPMODE CHAR(10), L_LINENUMBER NUMERIC NOT NULL, L_SHIPINSTRUCT CHAR(25), L_COMMENT VARCHAR(44))",
        key_column: "l_orderkey",
        columns: "l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment",
    },
    Table {
        name: "orders",
        create: "CREATE TABLE ORDERS (O_ORDERDATE TIMESTAMP, O_ORDERKEY NUMERIC NOT NULL, O_CUSTKEY NUMERIC NOT NULL, O_ORDERPRIORITY CHAR(15), O_SHIPPRIORITY NUMERIC, O_CLERK CHAR(15), O_ORDERSTATUS CHAR(1), O_TOTALPRICE NUMERIC, O_COMMENT VARCHAR(79))",
        key_column: "o_orderkey",
        columns: "o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment",
    },
    Table {
        name: "partsupp",
        create: "CREATE TABLE PARTSUPP (PS_PARTKEY NUMERIC NOT NULL, PS_SUPPKEY NUMERIC NOT NULL, PS_SUPPLYCOST NUMERIC NOT NULL, PS_AVAILQTY NUMERIC, PS_COMMENT VARCHAR(199))",
        key_column: "ps_partkey",
        columns: "ps_partkey, ps_suppkey, ps_availqty, ps_supplycost, ps_comment",
    },
    Table {
        name: "part",
        create: "CREATE TABLE PART(P_PARTKEY NUMERIC NOT NULL, P_TYPE VARCHAR(25), P_SIZE NUMERIC, P_BRAND CHAR(10), P_NAME VARCHAR(55), P_CONTAINER CHAR(10), P_MFGR CHAR(25), P_RETAILPRICE NUMERIC, P_COMMENT VARCHAR(23))",
        key_column: "p_partkey",
        columns: "p_partkey, p_name, p_mfgr, p_brand, p_type, p_size, p_container, p_retailprice, p_comment",
    },
    Table {
        name: "customer",
        create: "CREATE TABLE CUSTOMER(C_CUSTKEY NUMERIC NOT NULL, C_MKTSEGMENT CHAR(10), C_NATIONKEY NUMERIC, C_NAME VARCHAR(25), C_ADDRESS VARCHAR(40), C_PHONE CHAR(15), C_ACCTBAL NUMERIC, C_COMMENT VARCHAR(118))",
        key_column: "c_custkey",
        columns: "c_custkey, c_name, c_address, c_nationkey, c_phone, c_acctbal, c_mktsegment, c_comment",
    },
    Table {
        name: "supplier",
        create: "CREATE TABLE SUPPLIER(S_SUPPKEY NUMERIC NOT NULL, S_NATIONKEY NUMERIC, S_COMMENT VARCHAR(102), S_NAME CHAR(25), S_ADDRESS VARCHAR(40), S_PHONE CHAR(15), S_ACCTBAL NUMERIC)",
        key_column: "s_suppkey",
        columns: "s_suppkey, s_name, s_address, s_nationkey, s_phone, s_acctbal, s_comment",
    },
    Table {
        name: "nation",
        create: "CREATE TABLE NATION(N_NATIONKEY NUMERIC NOT NULL, N_NAME CHAR(25), N_REGIONKEY NUMERIC, N_COMMENT VARCHAR(152))",
        key_column: "n_nationkey",
        columns: "n_nationkey, n_name, n_regionkey, n_comment",
    },
    Table {
        name: "region",
        create: "CREATE TABLE REGION(R_REGIONKEY NUMERIC, R_NAME CHAR(25), R_COMMENT VARCHAR(152))",
        key_column: "r_regionkey",
        columns: "r_regionkey, r_name, r_comment",
    },
];

/// The table of that name.
pub fn table(name: &str) -> &'static Table {
    TABLES
        .iter()
        .find(|t| t.name == name)
        .expect("a TPC-H table")
}

/// HammerDB's primary keys: each on its own table, so they build at once.
pub const PRIMARY_KEYS: [&str; 8] = [
    "ALTER TABLE REGION ADD CONSTRAINT REGION_PK PRIMARY KEY (R_REGIONKEY)",
    "ALTER TABLE NATION ADD CONSTRAINT NATION_PK PRIMARY KEY (N_NATIONKEY)",
    "ALTER TABLE SUPPLIER ADD CONSTRAINT SUPPLIER_PK PRIMARY KEY (S_SUPPKEY)",
    "ALTER TABLE PARTSUPP ADD CONSTRAINT PARTSUPP_PK PRIMARY KEY (PS_PARTKEY,PS_SUPPKEY)",
    "ALTER TABLE PART ADD CONSTRAINT PART_PK PRIMARY KEY (P_PARTKEY)",
    "ALTER TABLE ORDERS ADD CONSTRAINT ORDERS_PK PRIMARY KEY (O_ORDERKEY)",
    "ALTER TABLE LINEITEM ADD CONSTRAINT LINEITEM_PK PRIMARY KEY (L_LINENUMBER, L_ORDERKEY)",
    "ALTER TABLE CUSTOMER ADD CONSTRAINT CUSTOMER_PK PRIMARY KEY (C_CUSTKEY)",
];

/// HammerDB's indexes on the foreign keys' columns: CREATE INDEX takes a SHARE lock, which
/// another CREATE INDEX does not wait for, so they build at once too.
pub const INDEXES: [&str; 8] = [
    "CREATE INDEX LINEITEM_PART_SUPP_FKIDX ON LINEITEM (L_PARTKEY,L_SUPPKEY)",
    "CREATE INDEX ORDER_CUSTOMER_FKIDX ON ORDERS (O_CUSTKEY)",
    "CREATE INDEX PARTSUPP_PART_FKIDX ON PARTSUPP (PS_PARTKEY)",
    "CREATE INDEX PARTSUPP_SUPPLIER_FKIDX ON PARTSUPP (PS_SUPPKEY)",
    "CREATE INDEX SUPPLIER_NATION_FKIDX ON SUPPLIER (S_NATIONKEY)",
    "CREATE INDEX CUSTOMER_NATION_FKIDX ON CUSTOMER (C_NATIONKEY)",
    "CREATE INDEX NATION_REGIONKEY_FKIDX ON NATION (N_REGIONKEY)",
    "CREATE INDEX IDX_LINEITEM_ORDERKEY_FKIDX ON LINEITEM (L_ORDERKEY)",
];

/// HammerDB's foreign keys with the two tables each locks (SHARE ROW EXCLUSIVE, which
/// conflicts with itself): only keys on different tables validate at once.
pub const FOREIGN_KEYS: [(&str, [&str; 2]); 8] = [
    ("ALTER TABLE LINEITEM ADD CONSTRAINT LINEITEM_PARTSUPP_FK FOREIGN KEY (L_PARTKEY, L_SUPPKEY) REFERENCES PARTSUPP(PS_PARTKEY, PS_SUPPKEY) NOT DEFERRABLE", ["lineitem", "partsupp"]),
    ("ALTER TABLE ORDERS ADD CONSTRAINT ORDER_CUSTOMER_FK FOREIGN KEY (O_CUSTKEY) REFERENCES CUSTOMER (C_CUSTKEY) NOT DEFERRABLE", ["orders", "customer"]),
    ("ALTER TABLE PARTSUPP ADD CONSTRAINT PARTSUPP_PART_FK FOREIGN KEY (PS_PARTKEY) REFERENCES PART (P_PARTKEY) NOT DEFERRABLE", ["partsupp", "part"]),
    ("ALTER TABLE PARTSUPP ADD CONSTRAINT PARTSUPP_SUPPLIER_FK FOREIGN KEY (PS_SUPPKEY) REFERENCES SUPPLIER (S_SUPPKEY) NOT DEFERRABLE", ["partsupp", "supplier"]),
    ("ALTER TABLE SUPPLIER ADD CONSTRAINT SUPPLIER_NATION_FK FOREIGN KEY (S_NATIONKEY) REFERENCES NATION (N_NATIONKEY) NOT DEFERRABLE", ["supplier", "nation"]),
    ("ALTER TABLE CUSTOMER ADD CONSTRAINT CUSTOMER_NATION_FK FOREIGN KEY (C_NATIONKEY) REFERENCES NATION (N_NATIONKEY) NOT DEFERRABLE", ["customer", "nation"]),
    ("ALTER TABLE NATION ADD CONSTRAINT NATION_REGION_FK FOREIGN KEY (N_REGIONKEY) REFERENCES REGION (R_REGIONKEY) NOT DEFERRABLE", ["nation", "region"]),
    ("ALTER TABLE LINEITEM ADD CONSTRAINT LINEITEM_ORDER_FK FOREIGN KEY (L_ORDERKEY) REFERENCES ORDERS (O_ORDERKEY) DEFERRABLE", ["lineitem", "orders"]),
];

/// The foreign keys in rounds: within a round no two share a table, so a round's keys
/// validate at once without waiting for each other's locks.
pub fn foreign_key_rounds() -> Vec<Vec<&'static str>> {
    let mut left: Vec<&(&str, [&str; 2])> = FOREIGN_KEYS.iter().collect();
    let mut rounds = Vec::new();
    while !left.is_empty() {
        let mut locked: Vec<&str> = Vec::new();
        let mut round = Vec::new();
        left.retain(|(statement, tables)| {
            if tables.iter().any(|table| locked.contains(table)) {
                return true;
            }
            locked.extend(tables);
            round.push(*statement);
            false
        });
        rounds.push(round);
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_foreign_key_runs_once_and_no_round_locks_a_table_twice() {
        let rounds = foreign_key_rounds();
        let all: Vec<&str> = rounds.iter().flatten().copied().collect();
        assert_eq!(all.len(), FOREIGN_KEYS.len());
        for round in &rounds {
            let mut tables: Vec<&str> = round
                .iter()
                .flat_map(|s| FOREIGN_KEYS.iter().find(|(k, _)| k == s).unwrap().1)
                .collect();
            let count = tables.len();
            tables.sort();
            tables.dedup();
            assert_eq!(tables.len(), count, "{round:?}");
        }
        // lineitem's two keys cannot share a round: three rounds, the heavy keys apart.
        assert_eq!(rounds.len(), 3);
        assert!(rounds[0][0].contains("LINEITEM_PARTSUPP_FK"));
        assert!(rounds[1].iter().any(|s| s.contains("LINEITEM_ORDER_FK")));
    }
}
