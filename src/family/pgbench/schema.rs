//! pgbench's tables, exactly as `pgbench -i` creates them, so results stay comparable.

pub const ACCOUNTS_PER_BRANCH: i64 = 100_000;
pub const TELLERS_PER_BRANCH: i64 = 10;
/// From this scale on, account ids no longer fit an int and pgbench switches aid to bigint.
pub const BIGINT_SCALE: i64 = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

impl PartitionMethod {
    pub fn name(self) -> &'static str {
        match self {
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaOptions {
    pub scale: i64,
    pub fillfactor: u32,
    pub unlogged: bool,
    /// Partitions of pgbench_accounts (0 = not partitioned).
    pub partitions: u32,
    pub partition_method: PartitionMethod,
    /// `--tablespace`: where the four tables go (partitions follow their parent).
    pub tablespace: Option<String>,
    /// `--index-tablespace`: where the primary keys go.
    pub index_tablespace: Option<String>,
}

impl SchemaOptions {
    /// pgbench's defaults at `scale`: fillfactor 100, logged, not partitioned, default
    /// tablespaces (`pgbench -i -s scale`).
    pub fn at_scale(scale: i64) -> SchemaOptions {
        SchemaOptions {
            scale,
            fillfactor: 100,
            unlogged: false,
            partitions: 0,
            partition_method: PartitionMethod::Range,
            tablespace: None,
            index_tablespace: None,
        }
    }

    pub fn bigint_accounts(&self) -> bool {
        self.scale >= BIGINT_SCALE
    }

    pub fn accounts(&self) -> i64 {
        ACCOUNTS_PER_BRANCH * self.scale
    }
}

pub const DROP_TABLES: &str =
    "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

pub const TRUNCATE_TABLES: &str =
    "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// The CREATE TABLE statements (and partitions) for these options.
pub fn create_tables(options: &SchemaOptions) -> Vec<String> {
    let aid = if options.bigint_accounts() {
        "aid bigint"
    } else {
        "aid    int"
    };
    let tables = [
        (
            "pgbench_history",
            format!("tid int,bid int,{aid},delta int,mtime timestamp,filler char(22)"),
            false,
        ),
        (
            "pgbench_tellers",
            "tid int not null,bid int,tbalance int,filler char(84)".to_string(),
            true,
        ),
        (
            "pgbench_accounts",
            format!("{aid} not null,bid int,abalance int,filler char(84)"),
            true,
        ),
        (
            "pgbench_branches",
            "bid int not null,bbalance int,filler char(88)".to_string(),
            true,
        ),
    ];
    let partitioned = options.partitions > 0;
    let mut statements: Vec<String> = tables
        .iter()
        .map(|(table, columns, fillfactor)| {
            let unlogged = if options.unlogged && !partitioned {
                " unlogged"
            } else {
                ""
            };
            let mut sql = format!("create{unlogged} table {table}({columns})");
            if partitioned && *table == "pgbench_accounts" {
                sql.push_str(&format!(
                    " partition by {} (aid)",
                    options.partition_method.name()
                ));
            } else if *fillfactor {
                sql.push_str(&format!(" with (fillfactor={})", options.fillfactor));
            }
            if let Some(tablespace) = &options.tablespace {
                sql.push_str(&format!(" tablespace {}", quote_identifier(tablespace)));
            }
            sql
        })
        .collect();
    statements.extend(partitions(options));
    statements
}

fn partitions(options: &SchemaOptions) -> Vec<String> {
    let count = i64::from(options.partitions);
    let unlogged = if options.unlogged { " unlogged" } else { "" };
    let part_size = (options.accounts() + count - 1).max(1) / count.max(1);
    (1..=count)
        .map(|p| {
            let bounds = match options.partition_method {
                PartitionMethod::Range => {
                    let from = if p == 1 { "minvalue".to_string() } else { ((p - 1) * part_size + 1).to_string() };
                    let to = if p < count { (p * part_size + 1).to_string() } else { "maxvalue".to_string() };
                    format!("for values from ({from}) to ({to})")
                }
                PartitionMethod::Hash => format!("for values with (modulus {count}, remainder {})", p - 1),
            };
            format!(
                "create{unlogged} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  {bounds} with (fillfactor={})",
                options.fillfactor
            )
        })
        .collect()
}

/// Ranges of aid held by each range partition, for loading partitions in parallel.
pub fn range_partition_bounds(options: &SchemaOptions) -> Vec<(i64, i64)> {
    let count = i64::from(options.partitions);
    let part_size = (options.accounts() + count - 1) / count;
    (1..=count)
        .map(|p| {
            (
                (p - 1) * part_size + 1,
                (p * part_size).min(options.accounts()),
            )
        })
        .filter(|(low, high)| low <= high)
        .collect()
}

/// libpq's PQescapeIdentifier: always quoted, inner quotes doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The primary keys, in `--index-tablespace` when one is given.
pub fn primary_keys(options: &SchemaOptions) -> Vec<String> {
    PRIMARY_KEYS
        .iter()
        .map(|(_, sql)| match &options.index_tablespace {
            Some(tablespace) => format!(
                "{sql} using index tablespace {}",
                quote_identifier(tablespace)
            ),
            None => sql.to_string(),
        })
        .collect()
}

pub const PRIMARY_KEYS: [(&str, &str); 3] = [
    (
        "pgbench_branches",
        "alter table pgbench_branches add primary key (bid)",
    ),
    (
        "pgbench_tellers",
        "alter table pgbench_tellers add primary key (tid)",
    ),
    (
        "pgbench_accounts",
        "alter table pgbench_accounts add primary key (aid)",
    ),
];

pub const FOREIGN_KEYS: [&str; 5] = [
    "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
    "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
];

pub const VACUUM_TABLES: [&str; 4] = [
    "pgbench_branches",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_history",
];

pub fn server_side_generate(options: &SchemaOptions) -> [String; 3] {
    let scale = options.scale;
    [
        format!("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {scale}) as bid"),
        format!(
            "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {TELLERS_PER_BRANCH} + 1, 0 from generate_series(1, {}) as tid",
            TELLERS_PER_BRANCH * scale
        ),
        format!(
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {ACCOUNTS_PER_BRANCH} + 1, 0, '' from generate_series(1, {}) as aid",
            options.accounts()
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(partitions: u32) -> SchemaOptions {
        SchemaOptions {
            scale: 3,
            fillfactor: 90,
            unlogged: false,
            partitions,
            partition_method: PartitionMethod::Range,
            tablespace: None,
            index_tablespace: None,
        }
    }

    #[test]
    fn range_bounds_cover_every_account_once() {
        let bounds = range_partition_bounds(&options(4));
        assert_eq!(bounds.first().unwrap().0, 1);
        assert_eq!(bounds.last().unwrap().1, 300_000);
        for pair in bounds.windows(2) {
            assert_eq!(pair[0].1 + 1, pair[1].0);
        }
    }

    #[test]
    fn ddl_matches_pgbench() {
        let ddl = create_tables(&options(0));
        assert_eq!(ddl[2], "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=90)");
        let partitioned = create_tables(&options(2));
        assert!(partitioned[2].ends_with("partition by range (aid)"));
        assert!(partitioned[5].contains("for values from (150001) to (maxvalue)"));
    }
}
