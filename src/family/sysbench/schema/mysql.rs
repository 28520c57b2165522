//! sysbench's tables on MySQL/MariaDB, as its `oltp_common.lua` creates them for the mysql
//! driver: `id INTEGER NOT NULL AUTO_INCREMENT` (without with `--auto-inc=off`), the key
//! declared in the CREATE TABLE, `/*! ENGINE = innodb */`, rows by multi-row INSERTs, then
//! the secondary index on k.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{
    bulk_insert_table, loading_connections, table_name, table_number, tables_of, tables_to_drop,
    TableRows,
};
use crate::family::sysbench::oltp_options::OltpOptions;
use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_control::mysql::ControlSession;

/// Rows per INSERT: about 200 KB of VALUES, well under any max_allowed_packet.
const ROWS_PER_INSERT: usize = 1000;

pub struct MysqlPreparer {
    pub spec: MysqlSpec,
    pub options: OltpOptions,
    pub storage_engine: String,
    pub connections: usize,
    pub seed: u64,
    pub rows_loaded: Arc<AtomicU64>,
}

/// The sbtest tables of the spec's database, by number.
pub fn existing_tables(session: &mut ControlSession) -> Result<Vec<u32>, Failure> {
    let rows = session.rows("SHOW TABLES LIKE 'sbtest%'")?;
    let mut numbers: Vec<u32> = rows
        .rows
        .iter()
        .filter_map(|row| table_number(row.first()?.as_deref()?))
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// Drops `sbtest1..tables` and any further sbtest tables left behind.
pub fn cleanup(session: &mut ControlSession, tables: u32) -> Result<Vec<String>, Failure> {
    let existing = existing_tables(session)?;
    let mut dropped = Vec::new();
    for t in tables_to_drop(tables, &existing) {
        let name = table_name(t);
        session.execute(&format!("DROP TABLE IF EXISTS {name}"))?;
        dropped.push(name);
    }
    Ok(dropped)
}

/// bulk_insert's tables, one per thread.
pub fn create_bulk_insert_tables(
    session: &mut ControlSession,
    threads: u32,
) -> Result<Vec<String>, Failure> {
    (1..=threads)
        .map(|t| {
            session.execute(&bulk_insert_table(t))?;
            Ok(table_name(t))
        })
        .collect()
}

/// Callaghan's postwrite on MySQL: `ANALYZE TABLE` refreshes the statistics; `OPTIMIZE
/// TABLE` (a rebuild under InnoDB) removes what the writes left, as VACUUM does.
pub fn postwrite(session: &mut ControlSession, tables: u32) -> Result<&'static str, Failure> {
    for t in 1..=tables {
        maintain(session, &format!("ANALYZE TABLE sbtest{t}"))?;
        maintain(session, &format!("OPTIMIZE TABLE sbtest{t}"))?;
    }
    Ok("ANALYZE TABLE + OPTIMIZE TABLE")
}

/// A table maintenance statement reports a failure as a row (Table, Op, Msg_type, Msg_text)
/// with Msg_type "error", not as an error packet: such a row fails the step.
fn maintain(session: &mut ControlSession, sql: &str) -> Result<(), Failure> {
    let result = session.rows(sql)?;
    let column = |name: &str| {
        result
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
    };
    let (Some(kind), Some(text)) = (column("Msg_type"), column("Msg_text")) else {
        return Ok(());
    };
    let errors: Vec<&str> = result
        .rows
        .iter()
        .filter(|row| {
            row[kind]
                .as_deref()
                .is_some_and(|k| k.eq_ignore_ascii_case("error"))
        })
        .filter_map(|row| row[text].as_deref())
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(Failure::run(format!("{sql}: {}", errors.join("; "))))
}

impl MysqlPreparer {
    /// Creates and loads every table, `connections` tables at a time.
    pub fn prepare(&self, announce: &(dyn Fn(String) + Sync)) -> Result<(), Failure> {
        let connections = loading_connections(self.connections, self.options.tables);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..connections)
                .map(|worker| {
                    scope.spawn(move || {
                        let mut session = ControlSession::connect(&self.spec)?;
                        for table in tables_of(worker, connections, self.options.tables) {
                            self.create_table(&mut session, table, announce)?;
                        }
                        Ok::<(), Failure>(())
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|worker| {
                worker
                    .join()
                    .expect("a loader thread returns its error rather than panicking")
            })
        })
    }

    fn create_table(
        &self,
        session: &mut ControlSession,
        table: u32,
        announce: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let o = &self.options;
        let name = table_name(table);
        announce(format!("Creating table '{name}'..."));
        let id_def = if o.auto_inc {
            "INTEGER NOT NULL AUTO_INCREMENT"
        } else {
            "INTEGER NOT NULL"
        };
        let id_index = if o.secondary {
            "KEY xid"
        } else {
            "PRIMARY KEY"
        };
        session.execute(&format!(
            "CREATE TABLE {name}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {id_index} (id)\n) /*! ENGINE = {} */ ",
            self.storage_engine
        ))?;
        if o.table_size > 0 {
            announce(format!("Inserting {} records into '{name}'", o.table_size));
            self.insert_rows(session, &name, table)?;
        }
        if o.create_secondary {
            announce(format!("Creating a secondary index on '{name}'..."));
            session.execute(&format!("CREATE INDEX k_{table} ON {name}(k)"))?;
        }
        Ok(())
    }

    fn insert_rows(
        &self,
        session: &mut ControlSession,
        name: &str,
        table: u32,
    ) -> Result<(), Failure> {
        let mut rows = TableRows::new(&self.options, self.seed, table).peekable();
        while rows.peek().is_some() {
            let mut sql = format!("INSERT INTO {name}(id, k, c, pad) VALUES");
            let mut inserted = 0;
            for row in rows.by_ref().take(ROWS_PER_INSERT) {
                let separator = if inserted == 0 { "" } else { "," };
                let (id, k, c, pad) = (row.id, row.k, row.c, row.pad);
                sql.push_str(&format!("{separator}({id}, {k}, '{c}', '{pad}')"));
                inserted += 1;
            }
            session.execute(&sql)?;
            self.rows_loaded.fetch_add(inserted, Ordering::Relaxed);
        }
        Ok(())
    }
}
