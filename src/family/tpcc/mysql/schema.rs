//! The TPROC-C tables as HammerDB's MariaDB build creates them (`mariaoltp.tcl`'s
//! CreateTables, InnoDB, history without a key, order_line not partitioned): the keys and the
//! two secondary indexes are declared with the tables and built as the rows arrive in key
//! order, as HammerDB's are. HammerDB creates its database in latin1; the tables say so here,
//! since stampede loads into a database it did not create.

/// Tables in the PostgreSQL schema's order, with their DDL.
pub const TABLES: [(&str, &str); 9] = [
    (
        "item",
        "CREATE TABLE item (
`i_id` INT(6) NOT NULL,
`i_im_id` INT NULL,
`i_name` VARCHAR(24) BINARY NULL,
`i_price` DECIMAL(5, 2) NULL,
`i_data` VARCHAR(50) BINARY NULL,
PRIMARY KEY (`i_id`))",
    ),
    (
        "warehouse",
        "CREATE TABLE warehouse (
`w_id` INT(6) NOT NULL,
`w_ytd` DECIMAL(12, 2) NULL,
`w_tax` DECIMAL(4, 4) NULL,
`w_name` VARCHAR(10) BINARY NULL,
`w_street_1` VARCHAR(20) BINARY NULL,
`w_street_2` VARCHAR(20) BINARY NULL,
`w_city` VARCHAR(20) BINARY NULL,
`w_state` CHAR(2) BINARY NULL,
`w_zip` CHAR(9) BINARY NULL,
PRIMARY KEY (`w_id`))",
    ),
    (
        "district",
        "CREATE TABLE district (
`d_id` INT(2) NOT NULL,
`d_w_id` INT(6) NOT NULL,
`d_ytd` DECIMAL(12, 2) NULL,
`d_tax` DECIMAL(4, 4) NULL,
`d_next_o_id` INT NULL,
`d_name` VARCHAR(10) BINARY NULL,
`d_street_1` VARCHAR(20) BINARY NULL,
`d_street_2` VARCHAR(20) BINARY NULL,
`d_city` VARCHAR(20) BINARY NULL,
`d_state` CHAR(2) BINARY NULL,
`d_zip` CHAR(9) BINARY NULL,
PRIMARY KEY (`d_w_id`,`d_id`))",
    ),
    (
        "stock",
        "CREATE TABLE stock (
`s_i_id` INT(6) NOT NULL,
`s_w_id` INT(6) NOT NULL,
`s_quantity` INT(6) NULL,
`s_dist_01` CHAR(24) BINARY NULL,
`s_dist_02` CHAR(24) BINARY NULL,
`s_dist_03` CHAR(24) BINARY NULL,
`s_dist_04` CHAR(24) BINARY NULL,
`s_dist_05` CHAR(24) BINARY NULL,
`s_dist_06` CHAR(24) BINARY NULL,
`s_dist_07` CHAR(24) BINARY NULL,
`s_dist_08` CHAR(24) BINARY NULL,
`s_dist_09` CHAR(24) BINARY NULL,
`s_dist_10` CHAR(24) BINARY NULL,
`s_ytd` BIGINT(10) NULL,
`s_order_cnt` INT(6) NULL,
`s_remote_cnt` INT(6) NULL,
`s_data` VARCHAR(50) BINARY NULL,
PRIMARY KEY (`s_w_id`,`s_i_id`))",
    ),
    (
        "customer",
        "CREATE TABLE customer (
`c_id` INT(5) NOT NULL,
`c_d_id` INT(2) NOT NULL,
`c_w_id` INT(6) NOT NULL,
`c_first` VARCHAR(16) BINARY NULL,
`c_middle` CHAR(2) BINARY NULL,
`c_last` VARCHAR(16) BINARY NULL,
`c_street_1` VARCHAR(20) BINARY NULL,
`c_street_2` VARCHAR(20) BINARY NULL,
`c_city` VARCHAR(20) BINARY NULL,
`c_state` CHAR(2) BINARY NULL,
`c_zip` CHAR(9) BINARY NULL,
`c_phone` CHAR(16) BINARY NULL,
`c_since` DATETIME NULL,
`c_credit` CHAR(2) BINARY NULL,
`c_credit_lim` DECIMAL(12, 2) NULL,
`c_discount` DECIMAL(4, 4) NULL,
`c_balance` DECIMAL(12, 2) NULL,
`c_ytd_payment` DECIMAL(12, 2) NULL,
`c_payment_cnt` INT(8) NULL,
`c_delivery_cnt` INT(8) NULL,
`c_data` VARCHAR(500) BINARY NULL,
PRIMARY KEY (`c_w_id`,`c_d_id`,`c_id`),
KEY c_w_id (`c_w_id`,`c_d_id`,`c_last`(16),`c_first`(16)))",
    ),
    (
        "history",
        "CREATE TABLE history (
`h_c_id` INT NULL,
`h_c_d_id` INT NULL,
`h_c_w_id` INT NULL,
`h_d_id` INT NULL,
`h_w_id` INT NULL,
`h_date` DATETIME NULL,
`h_amount` DECIMAL(6, 2) NULL,
`h_data` VARCHAR(24) BINARY NULL)",
    ),
    (
        "orders",
        "CREATE TABLE orders (
`o_id` INT NOT NULL,
`o_w_id` INT NOT NULL,
`o_d_id` INT NOT NULL,
`o_c_id` INT NULL,
`o_carrier_id` INT NULL,
`o_ol_cnt` INT NULL,
`o_all_local` INT NULL,
`o_entry_d` DATETIME NULL,
PRIMARY KEY (`o_w_id`,`o_d_id`,`o_id`),
KEY o_w_id (`o_w_id`,`o_d_id`,`o_c_id`,`o_id`))",
    ),
    (
        "new_order",
        "CREATE TABLE new_order (
`no_w_id` INT NOT NULL,
`no_d_id` INT NOT NULL,
`no_o_id` INT NOT NULL,
PRIMARY KEY (`no_w_id`, `no_d_id`, `no_o_id`))",
    ),
    (
        "order_line",
        "CREATE TABLE order_line (
`ol_w_id` INT NOT NULL,
`ol_d_id` INT NOT NULL,
`ol_o_id` INT NOT NULL,
`ol_number` INT NOT NULL,
`ol_i_id` INT NULL,
`ol_delivery_d` DATETIME NULL,
`ol_amount` INT NULL,
`ol_supply_w_id` INT NULL,
`ol_quantity` INT NULL,
`ol_dist_info` CHAR(24) BINARY NULL,
PRIMARY KEY (`ol_w_id`,`ol_d_id`,`ol_o_id`,`ol_number`))",
    ),
];

/// The DDL of every table, as HammerDB's (InnoDB, latin1).
pub fn create_tables() -> impl Iterator<Item = String> {
    TABLES
        .iter()
        .map(|(_, ddl)| format!("{ddl} ENGINE = InnoDB DEFAULT CHARSET = latin1"))
}

/// What `build` records, as on PostgreSQL (`super::super::schema::MARKER`).
pub fn create_marker(warehouses: i64, c_last: i64) -> String {
    format!(
        "CREATE TABLE {} AS SELECT CAST({warehouses} AS SIGNED) AS warehouses, 1 AS order_line_partitions, CAST({c_last} AS SIGNED) AS c_last_load, NOW() AS built_at",
        super::super::schema::MARKER
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader writes PostgreSQL's columns by name: MariaDB's tables have the same ones.
    #[test]
    fn the_tables_have_postgresqls_columns() {
        for (table, ddl) in TABLES {
            let mut mine: Vec<&str> = ddl
                .lines()
                .skip(1)
                .filter(|line| line.starts_with('`'))
                .map(|line| line.split('`').nth(1).expect("a quoted name"))
                .collect();
            let mut theirs = super::super::super::schema::columns(table);
            mine.sort();
            theirs.sort();
            assert_eq!(mine, theirs, "{table}");
        }
    }
}
