//! iibench.py's statements, word for word per engine: its table and indexes, the multi-row
//! INSERT, the DELETE of the oldest rows, min/max(transactionid), and the four queries (three
//! ranges on the secondary indexes, one by primary key), as literals or, on PostgreSQL,
//! PREPARE and EXECUTE as its `--use_prepared_query` sends them.

use super::options::Options;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dbms {
    Postgres,
    Mysql,
}

impl Dbms {
    /// The engine an endpoint speaks, as the statements need it.
    pub fn of(endpoint: &stampede_conn::Endpoint) -> Dbms {
        match endpoint {
            stampede_conn::Endpoint::Postgres(_) => Dbms::Postgres,
            stampede_conn::Endpoint::Mysql(_) => Dbms::Mysql,
        }
    }
}

/// The columns an INSERT names, in iibench.py's order.
pub const INSERT_COLUMNS: &str = "(dateandtime,cashregisterid,customerid,productid,price,data)";

/// The secondary indexes, in the order iibench.py creates them: name suffix and columns.
pub const SECONDARY_INDEXES: [(&str, &str); 3] = [
    ("marketsegment", "productid, customerid, price"),
    ("registersegment", "cashregisterid, customerid, price"),
    ("pdc", "price, dateandtime, customerid"),
];

pub fn drop_table(table: &str) -> String {
    format!("drop table if exists {table}")
}

/// The statements that create the table (PostgreSQL: its partitions and the sequence's cache
/// too).
pub fn create_table(dbms: Dbms, options: &Options) -> Vec<String> {
    match dbms {
        Dbms::Postgres => create_table_postgres(options),
        Dbms::Mysql => vec![create_table_mysql(options)],
    }
}

fn create_table_postgres(options: &Options) -> Vec<String> {
    let table = &options.table;
    let part = if options.partitions.count > 0 {
        "partition by range( transactionid )"
    } else {
        ""
    };
    let columns = "transactionid bigserial primary key, dateandtime timestamp without time zone, \
                   cashregisterid int not null, customerid int not null, productid int not null, \
                   price int not null, data varchar(4000) ";
    let mut statements = vec![format!(
        "create table {table} ( {columns} ) {part} {}",
        options.engine_options
    )];
    let bounds = partition_bounds(options, Dbms::Postgres);
    for (i, low) in bounds.iter().enumerate() {
        let range = match bounds.get(i + 1) {
            Some(high) => format!("for values from ({low}) to ({high})"),
            None => format!("for values from ({low}) to (MAXVALUE)"),
        };
        statements.push(format!(
            "create table {table}_p{i} partition of {table} {range} "
        ));
    }
    statements.push(format!(
        "alter sequence {table}_transactionid_seq cache 1000"
    ));
    statements
}

fn create_table_mysql(options: &Options) -> String {
    let columns = "transactionid bigint not null auto_increment, dateandtime datetime, \
                   cashregisterid int not null, customerid int not null, productid int not null, \
                   price int not null, data varchar(4000), primary key (transactionid) ";
    let bounds = partition_bounds(options, Dbms::Mysql);
    let part = if bounds.is_empty() {
        String::new()
    } else {
        let mut text = "partition by range( transactionid ) (".to_string();
        for (i, high) in bounds.iter().skip(1).enumerate() {
            text.push_str(&format!(" partition p{i} values less than ({high}),\n"));
        }
        text.push_str(&format!(
            " partition p{} values less than (MAXVALUE)\n)",
            bounds.len() - 1
        ));
        text
    };
    format!(
        "create table {} ( {columns} ) engine={} {} {part}",
        options.table, options.storage_engine, options.engine_options
    )
}

/// Each partition's lower bound, as iibench.py computes them: rows per partition is
/// max_rows / num_partitions as a fraction, each bound truncated; PostgreSQL's bounds are sums
/// of it, MySQL's products.
fn partition_bounds(options: &Options, dbms: Dbms) -> Vec<u64> {
    let count = options.partitions.count;
    if count == 0 {
        return Vec::new();
    }
    let each = if options.partitions.rows_each > 0 {
        options.partitions.rows_each as f64
    } else {
        options.max_rows as f64 / count as f64
    };
    let mut sum = 0.0;
    (0..count)
        .map(|i| {
            let bound = match dbms {
                Dbms::Postgres => sum,
                Dbms::Mysql => i as f64 * each,
            };
            sum += each;
            bound as u64
        })
        .collect()
}

/// The secondary indexes' DDL: PostgreSQL one CREATE INDEX each, MySQL one ALTER TABLE for all.
pub fn create_indexes(dbms: Dbms, table: &str, count: u8) -> Vec<String> {
    let chosen = &SECONDARY_INDEXES[..count as usize];
    match dbms {
        Dbms::Postgres => chosen
            .iter()
            .map(|(suffix, columns)| {
                format!("create index {table}_{suffix} on {table} ({columns}) ")
            })
            .collect(),
        Dbms::Mysql if chosen.is_empty() => Vec::new(),
        Dbms::Mysql => {
            let adds: Vec<String> = chosen
                .iter()
                .map(|(suffix, columns)| format!("add index {table}_{suffix} ({columns}) "))
                .collect();
            vec![format!("alter table {table} {}", adds.join(", "))]
        }
    }
}

/// The DELETE of the `rows` oldest rows from `min` on.
pub fn delete(dbms: Dbms, table: &str, min: i64, rows: u64) -> String {
    match dbms {
        Dbms::Postgres => format!(
            "delete from {table} where transactionid in (select transactionid from {table} where transactionid >= {min} order by transactionid asc limit {rows})"
        ),
        Dbms::Mysql => format!(
            "delete from {table} where transactionid >= {min} order by transactionid asc limit {rows}"
        ),
    }
}

pub fn min_transactionid(table: &str) -> String {
    format!("select min(transactionid) from {table}")
}

pub fn max_transactionid(table: &str) -> String {
    format!("select max(transactionid) from {table}")
}

/// The queries a query connection picks from at random.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// productid >= x on the marketsegment index.
    Market,
    /// cashregisterid > x on the registersegment index.
    Register,
    /// price >= x on the pdc index.
    Pdc,
    /// rows_per_query transactionids by primary key.
    PrimaryKey,
}

impl QueryKind {
    /// As iibench.py chooses: by primary key only, or the range queries of the indexes there are.
    pub fn chosen(options: &Options) -> Vec<QueryKind> {
        if options.query_pk_only {
            return vec![QueryKind::PrimaryKey];
        }
        let mut kinds = vec![QueryKind::Market];
        if options.secondary_indexes >= 2 {
            kinds.push(QueryKind::Register);
        }
        if options.secondary_indexes >= 3 {
            kinds.push(QueryKind::Pdc);
        }
        kinds
    }

    fn prepared_name(self) -> &'static str {
        match self {
            QueryKind::Market => "market_query_ps",
            QueryKind::Register => "register_query_ps",
            QueryKind::Pdc => "pdc_query_ps",
            QueryKind::PrimaryKey => "pk_query_ps",
        }
    }

    fn index_suffix(self) -> &'static str {
        match self {
            QueryKind::Market => "marketsegment",
            QueryKind::Register => "registersegment",
            QueryKind::Pdc | QueryKind::PrimaryKey => "pdc",
        }
    }
}

/// A range query with its literal; MySQL's forces the index as iibench.py does.
pub fn range_query(dbms: Dbms, kind: QueryKind, table: &str, value: u64, limit: u64) -> String {
    let force = match dbms {
        Dbms::Mysql => format!("FORCE INDEX ({table}_{})", kind.index_suffix()),
        Dbms::Postgres => String::new(),
    };
    match kind {
        QueryKind::Market => format!(
            "SELECT productid, customerid, price FROM {table} {force} WHERE (productid >= {value}) ORDER BY productid, customerid, price LIMIT {limit}"
        ),
        QueryKind::Register => format!(
            "SELECT cashregisterid,customerid,price FROM {table} {force} WHERE (cashregisterid > {value}) ORDER BY cashregisterid, customerid, price LIMIT {limit}"
        ),
        QueryKind::Pdc => format!(
            "SELECT price,dateandtime,customerid FROM {table} {force} WHERE (price >= {value}) ORDER BY price, dateandtime, customerid LIMIT {limit}"
        ),
        QueryKind::PrimaryKey => unreachable!("the primary-key query takes ids"),
    }
}

/// The primary-key query with its ids as literals.
pub fn pk_query(table: &str, ids: &[i64]) -> String {
    format!(
        "SELECT transactionid, productid, data FROM {table} WHERE transactionid in ({})",
        join(ids)
    )
}

/// PostgreSQL's PREPARE of a query, as `--use_prepared_query` sends it once per connection.
pub fn prepare_query(kind: QueryKind, table: &str, limit: u64) -> String {
    let name = kind.prepared_name();
    match kind {
        QueryKind::Market => format!(
            "PREPARE {name} (int) as SELECT productid, customerid, price FROM {table} WHERE (productid >= $1) ORDER BY productid, customerid, price LIMIT {limit}"
        ),
        QueryKind::Register => format!(
            "PREPARE {name} (int) as SELECT cashregisterid, customerid, price FROM {table} WHERE (cashregisterid > $1) ORDER BY cashregisterid, customerid, price LIMIT {limit}"
        ),
        QueryKind::Pdc => format!(
            "PREPARE {name} (int) as SELECT price, dateandtime, customerid FROM {table} WHERE (price >= $1) ORDER BY price, dateandtime, customerid LIMIT {limit}"
        ),
        QueryKind::PrimaryKey => {
            let types = vec!["int"; limit as usize].join(",");
            let params: Vec<String> = (1..=limit).map(|i| format!("${i}")).collect();
            format!(
                "PREPARE {name} ({types}) as SELECT transactionid, productid, data FROM {table} WHERE transactionid in ({})",
                params.join(",")
            )
        }
    }
}

/// The EXECUTE of a prepared query, its values as psycopg2 puts them into the text.
pub fn execute_query(kind: QueryKind, values: &[i64]) -> String {
    format!("execute {} ({})", kind.prepared_name(), join(values))
}

/// PostgreSQL's PREPARE of the INSERT of `rows` rows (`--use_prepared_insert`).
pub fn prepare_insert(table: &str, rows: u64) -> String {
    let types = vec!["timestamp, int, int, int, real, varchar"; rows as usize].join(",");
    let placeholders: Vec<String> = (0..rows)
        .map(|r| {
            let x = r * 6 + 1;
            format!(
                "(${}, ${}, ${}, ${}, ${}, ${})",
                x,
                x + 1,
                x + 2,
                x + 3,
                x + 4,
                x + 5
            )
        })
        .collect();
    format!(
        "PREPARE insert_ps ({types}) as INSERT INTO {table} {INSERT_COLUMNS} VALUES {}",
        placeholders.join(",")
    )
}

fn join(values: &[i64]) -> String {
    let texts: Vec<String> = values.iter().map(i64::to_string).collect();
    texts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::ibench::options::Partitions;

    #[test]
    fn the_queries_are_iibench_s_texts() {
        assert_eq!(
            range_query(Dbms::Postgres, QueryKind::Market, "pi1", 12, 10),
            "SELECT productid, customerid, price FROM pi1  WHERE (productid >= 12) ORDER BY productid, customerid, price LIMIT 10"
        );
        assert_eq!(
            range_query(Dbms::Mysql, QueryKind::Pdc, "pi1", 7, 10),
            "SELECT price,dateandtime,customerid FROM pi1 FORCE INDEX (pi1_pdc) WHERE (price >= 7) ORDER BY price, dateandtime, customerid LIMIT 10"
        );
        assert_eq!(
            pk_query("pi1", &[3, 5]),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid in (3,5)"
        );
        assert_eq!(
            prepare_query(QueryKind::PrimaryKey, "pi1", 2),
            "PREPARE pk_query_ps (int,int) as SELECT transactionid, productid, data FROM pi1 WHERE transactionid in ($1,$2)"
        );
        assert_eq!(
            execute_query(QueryKind::Register, &[9]),
            "execute register_query_ps (9)"
        );
    }

    #[test]
    fn the_indexes_come_in_one_alter_on_mysql_and_one_each_on_postgres() {
        assert_eq!(
            create_indexes(Dbms::Mysql, "pi1", 2),
            ["alter table pi1 add index pi1_marketsegment (productid, customerid, price) , add index pi1_registersegment (cashregisterid, customerid, price) "]
        );
        let pg = create_indexes(Dbms::Postgres, "pi1", 3);
        assert_eq!(pg.len(), 3);
        assert_eq!(
            pg[2],
            "create index pi1_pdc on pi1 (price, dateandtime, customerid) "
        );
        assert!(create_indexes(Dbms::Mysql, "pi1", 0).is_empty());
    }

    #[test]
    fn partitions_split_max_rows_as_iibench_does() {
        let options = Options {
            table: "pi1".into(),
            max_rows: 1000,
            partitions: Partitions {
                count: 3,
                rows_each: 0,
            },
            ..Options::default()
        };
        let pg = create_table(Dbms::Postgres, &options);
        assert_eq!(
            &pg[1..4],
            [
                "create table pi1_p0 partition of pi1 for values from (0) to (333) ",
                "create table pi1_p1 partition of pi1 for values from (333) to (666) ",
                "create table pi1_p2 partition of pi1 for values from (666) to (MAXVALUE) ",
            ]
        );
        assert_eq!(pg[4], "alter sequence pi1_transactionid_seq cache 1000");
        let my = create_table(Dbms::Mysql, &options);
        assert!(my[0].ends_with(
            "partition by range( transactionid ) ( partition p0 values less than (333),\n partition p1 values less than (666),\n partition p2 values less than (MAXVALUE)\n)"
        ));
    }

    #[test]
    fn deletes_take_the_oldest_rows() {
        assert_eq!(
            delete(Dbms::Postgres, "pi1", 100, 50),
            "delete from pi1 where transactionid in (select transactionid from pi1 where transactionid >= 100 order by transactionid asc limit 50)"
        );
        assert_eq!(
            delete(Dbms::Mysql, "pi1", 100, 50),
            "delete from pi1 where transactionid >= 100 order by transactionid asc limit 50"
        );
    }
}
