//! The TPROC-C tables exactly as study 001's Appendix A defines them (HammerDB's model with
//! PostgreSQL types and columns ordered for alignment), their keys and the two secondary
//! indexes, order_line hash-partitioned by warehouse as HammerDB does at 200 warehouses and
//! more, and a marker recording what was built.

/// Tables in load order, with their DDL.
pub const TABLES: [(&str, &str); 9] = [
    (
        "item",
        "CREATE TABLE item (
    i_id integer NOT NULL,
    i_im_id integer NOT NULL,
    i_name character varying(24) NOT NULL,
    i_price numeric(5,2) NOT NULL,
    i_data character varying(50) NOT NULL)",
    ),
    (
        "warehouse",
        "CREATE TABLE warehouse (
    w_id integer NOT NULL,
    w_name character varying(10) NOT NULL,
    w_street_1 character varying(20) NOT NULL,
    w_street_2 character varying(20) NOT NULL,
    w_city character varying(20) NOT NULL,
    w_state character(2) NOT NULL,
    w_zip character(9) NOT NULL,
    w_tax numeric(4,4) NOT NULL,
    w_ytd numeric(16,2) NOT NULL)",
    ),
    (
        "district",
        "CREATE TABLE district (
    d_w_id integer NOT NULL,
    d_next_o_id integer NOT NULL,
    d_id smallint NOT NULL,
    d_ytd numeric(12,2) NOT NULL,
    d_tax numeric(4,4) NOT NULL,
    d_name character varying(10) NOT NULL,
    d_street_1 character varying(20) NOT NULL,
    d_street_2 character varying(20) NOT NULL,
    d_city character varying(20) NOT NULL,
    d_state character(2) NOT NULL,
    d_zip character(9) NOT NULL)",
    ),
    (
        "stock",
        "CREATE TABLE stock (
    s_i_id integer NOT NULL,
    s_w_id integer NOT NULL,
    s_ytd integer NOT NULL,
    s_quantity smallint NOT NULL,
    s_order_cnt smallint NOT NULL,
    s_remote_cnt smallint NOT NULL,
    s_dist_01 character(24) NOT NULL,
    s_dist_02 character(24) NOT NULL,
    s_dist_03 character(24) NOT NULL,
    s_dist_04 character(24) NOT NULL,
    s_dist_05 character(24) NOT NULL,
    s_dist_06 character(24) NOT NULL,
    s_dist_07 character(24) NOT NULL,
    s_dist_08 character(24) NOT NULL,
    s_dist_09 character(24) NOT NULL,
    s_dist_10 character(24) NOT NULL,
    s_data character varying(50) NOT NULL)",
    ),
    (
        "customer",
        "CREATE TABLE customer (
    c_since timestamp with time zone NOT NULL,
    c_id integer NOT NULL,
    c_w_id integer NOT NULL,
    c_d_id smallint NOT NULL,
    c_payment_cnt smallint NOT NULL,
    c_delivery_cnt smallint NOT NULL,
    c_first character varying(16) NOT NULL,
    c_middle character(2) NOT NULL,
    c_last character varying(16) NOT NULL,
    c_street_1 character varying(20) NOT NULL,
    c_street_2 character varying(20) NOT NULL,
    c_city character varying(20) NOT NULL,
    c_state character(2) NOT NULL,
    c_zip character(9) NOT NULL,
    c_phone character(16) NOT NULL,
    c_credit character(2) NOT NULL,
    c_credit_lim numeric(12,2) NOT NULL,
    c_discount numeric(4,4) NOT NULL,
    c_balance numeric(12,2) NOT NULL,
    c_ytd_payment numeric(12,2) NOT NULL,
    c_data character varying(500) NOT NULL)",
    ),
    (
        "history",
        "CREATE TABLE history (
    h_date timestamp with time zone NOT NULL,
    h_c_id integer,
    h_c_w_id integer NOT NULL,
    h_w_id integer NOT NULL,
    h_c_d_id smallint NOT NULL,
    h_d_id smallint NOT NULL,
    h_amount numeric(6,2) NOT NULL,
    h_data character varying(24) NOT NULL)",
    ),
    (
        "orders",
        "CREATE TABLE orders (
    o_entry_d timestamp with time zone NOT NULL,
    o_id integer NOT NULL,
    o_w_id integer NOT NULL,
    o_c_id integer NOT NULL,
    o_d_id smallint NOT NULL,
    o_carrier_id smallint,
    o_ol_cnt smallint NOT NULL,
    o_all_local smallint NOT NULL)",
    ),
    (
        "new_order",
        "CREATE TABLE new_order (
    no_w_id integer NOT NULL,
    no_o_id integer NOT NULL,
    no_d_id smallint NOT NULL)",
    ),
    (
        "order_line",
        "CREATE TABLE order_line (
    ol_delivery_d timestamp with time zone,
    ol_o_id integer NOT NULL,
    ol_w_id integer NOT NULL,
    ol_i_id integer NOT NULL,
    ol_supply_w_id integer NOT NULL,
    ol_d_id smallint NOT NULL,
    ol_number smallint NOT NULL,
    ol_quantity smallint NOT NULL,
    ol_amount numeric(6,2),
    ol_dist_info character(24))",
    ),
];

/// Keys and indexes, built after the data: (table, statement).
pub const INDEXES: [(&str, &str); 10] = [
    ("item", "ALTER TABLE item ADD CONSTRAINT item_i1 PRIMARY KEY (i_id)"),
    ("warehouse", "ALTER TABLE warehouse ADD CONSTRAINT warehouse_i1 PRIMARY KEY (w_id)"),
    ("district", "ALTER TABLE district ADD CONSTRAINT district_i1 PRIMARY KEY (d_w_id, d_id)"),
    ("stock", "ALTER TABLE stock ADD CONSTRAINT stock_i1 PRIMARY KEY (s_i_id, s_w_id)"),
    (
        "customer",
        "ALTER TABLE customer ADD CONSTRAINT customer_i1 PRIMARY KEY (c_w_id, c_d_id, c_id)",
    ),
    (
        "customer",
        "CREATE UNIQUE INDEX customer_i2 ON customer USING btree (c_w_id, c_d_id, c_last, c_first, c_id)",
    ),
    (
        "orders",
        "ALTER TABLE orders ADD CONSTRAINT orders_i1 PRIMARY KEY (o_w_id, o_d_id, o_id)",
    ),
    (
        "orders",
        "CREATE UNIQUE INDEX orders_i2 ON orders USING btree (o_w_id, o_d_id, o_c_id, o_id)",
    ),
    (
        "new_order",
        "ALTER TABLE new_order ADD CONSTRAINT new_order_i1 PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
    ),
    (
        "order_line",
        "ALTER TABLE order_line ADD CONSTRAINT order_line_i1 PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    ),
];

/// The index each table is CLUSTERed on with `--cluster` (history has none).
pub const CLUSTER_ON: [(&str, &str); 8] = [
    ("item", "item_i1"),
    ("warehouse", "warehouse_i1"),
    ("district", "district_i1"),
    ("stock", "stock_i1"),
    ("customer", "customer_i1"),
    ("orders", "orders_i1"),
    ("new_order", "new_order_i1"),
    ("order_line", "order_line_i1"),
];

/// `table`'s column names in its DDL's order: the order the loader writes a row's values in.
pub fn columns(table: &str) -> Vec<&'static str> {
    let ddl = TABLES
        .iter()
        .find(|(name, _)| *name == table)
        .map(|(_, ddl)| *ddl)
        .expect("a TPC-C table");
    ddl.lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

/// HammerDB partitions order_line from this many warehouses on.
pub const PARTITION_FROM_WAREHOUSES: i64 = 200;

/// The DDL of `table`, order_line hash-partitioned into `partitions` when more than one.
pub fn create_table(table: &str, partitions: i64) -> Vec<String> {
    let ddl = TABLES
        .iter()
        .find(|(name, _)| *name == table)
        .map(|(_, ddl)| ddl.to_string())
        .expect("a TPC-C table");
    if table != "order_line" || partitions <= 1 {
        return vec![ddl];
    }
    let mut statements = vec![format!("{ddl} PARTITION BY HASH (ol_w_id)")];
    for remainder in 0..partitions {
        statements.push(format!(
            "CREATE TABLE order_line_p{} PARTITION OF order_line FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})",
            remainder + 1
        ));
    }
    statements
}

/// How many order_line partitions HammerDB makes: round(W / 100) from 200 warehouses on.
pub fn partitions_for(warehouses: i64) -> i64 {
    if warehouses < PARTITION_FROM_WAREHOUSES {
        1
    } else {
        (warehouses + 50) / 100
    }
}

/// What `build` records, so that later commands know the warehouse count.
pub const MARKER: &str = "stampede_tpcc";

/// The load's C_LAST constant is kept too: the run's must differ from it by a set amount.
pub fn create_marker(warehouses: i64, partitions: i64, c_last: i64) -> String {
    format!(
        "CREATE TABLE {MARKER} AS SELECT {warehouses}::integer AS warehouses, {partitions}::integer AS order_line_partitions, {c_last}::integer AS c_last_load, now() AS built_at"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_line_partitions_as_hammerdb() {
        assert_eq!(partitions_for(10), 1);
        assert_eq!(partitions_for(200), 2);
        assert_eq!(partitions_for(2000), 20);
        let ddl = create_table("order_line", 3);
        assert_eq!(ddl.len(), 4);
        assert!(ddl[0].ends_with("ol_dist_info character(24)) PARTITION BY HASH (ol_w_id)"));
        assert!(ddl[3].ends_with("FOR VALUES WITH (MODULUS 3, REMAINDER 2)"));
        assert_eq!(create_table("item", 3).len(), 1);
    }

    #[test]
    fn columns_follow_the_ddl() {
        assert_eq!(columns("new_order"), ["no_w_id", "no_o_id", "no_d_id"]);
        assert_eq!(columns("customer").len(), 21);
        assert_eq!(columns("stock").len(), 17);
    }
}
