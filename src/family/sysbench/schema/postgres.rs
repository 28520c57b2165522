//! sysbench's tables on PostgreSQL: the columns without keys, the rows by binary COPY, then the
//! primary key on id (or a plain index with `--secondary`) and the index on k — a faster
//! equivalent of sysbench's keyed inserts — tables in parallel over `--threads` connections.

use stampede_base::error::Failure;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::Client;

use super::{
    bulk_insert_table, loading_connections, table_name, table_number, tables_of, tables_to_drop,
    Row, TableRows,
};
use crate::family::sysbench::oltp_options::OltpOptions;
use stampede_conn::ConnSpec;
use stampede_control::postgres::{connect_quietly, sql_error, visible_tables};

const COPY_CHUNK_ROWS: usize = 20_000;

pub struct Preparer {
    pub conn: ConnSpec,
    pub options: OltpOptions,
    pub connections: usize,
    pub seed: u64,
    /// Rows written so far (read by the caller for progress).
    pub rows_loaded: Arc<AtomicU64>,
}

pub async fn connect(conn: &ConnSpec) -> Result<Client, Failure> {
    connect_quietly(conn).await
}

/// The sbtest tables that exist, by number.
pub async fn existing_tables(client: &Client) -> Result<Vec<u32>, Failure> {
    let mut numbers: Vec<u32> = visible_tables(client, "^sbtest[0-9]+$")
        .await?
        .iter()
        .filter_map(|name| table_number(name))
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}
/// bulk_insert's tables, one per thread, as its Lua `prepare` creates them.
pub async fn create_bulk_insert_tables(
    client: &Client,
    threads: u32,
) -> Result<Vec<String>, Failure> {
    let mut created = Vec::new();
    for t in 1..=threads {
        let create = bulk_insert_table(t);
        client
            .batch_execute(&create)
            .await
            .map_err(|e| sql_error(&create, e))?;
        created.push(table_name(t));
    }
    Ok(created)
}

/// Callaghan's "postwrite" step, so that reads after the writes see a vacuumed database (the
/// visibility map matters for index-only scans): VACUUM (ANALYZE, INDEX_CLEANUP ON) every
/// table (before 12, which has no INDEX_CLEANUP, VACUUM (ANALYZE): it always cleans the
/// indexes of a table with dead rows), then CHECKPOINT. Returns the VACUUM it ran.
pub async fn postwrite(client: &Client, tables: u32) -> Result<&'static str, Failure> {
    let version: i64 = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .map_err(|e| sql_error("SHOW server_version_num", e))?
        .get::<_, i32>(0)
        .into();
    let vacuum = if version >= 120000 {
        "VACUUM (ANALYZE, INDEX_CLEANUP ON)"
    } else {
        "VACUUM (ANALYZE)"
    };
    for t in 1..=tables {
        let statement = format!("{vacuum} sbtest{t}");
        client
            .batch_execute(&statement)
            .await
            .map_err(|e| sql_error(&statement, e))?;
    }
    client
        .batch_execute("CHECKPOINT")
        .await
        .map_err(|e| sql_error("CHECKPOINT", e))?;
    Ok(vacuum)
}

/// Drops `sbtest1..tables` (sysbench's cleanup), and any further sbtest tables left behind.
pub async fn cleanup(client: &Client, tables: u32) -> Result<Vec<String>, Failure> {
    let existing = existing_tables(client).await?;
    let mut dropped = Vec::new();
    for t in tables_to_drop(tables, &existing) {
        let name = table_name(t);
        client
            .batch_execute(&format!("DROP TABLE IF EXISTS {name}"))
            .await
            .map_err(|e| sql_error(&format!("DROP TABLE {name}"), e))?;
        dropped.push(name);
    }
    Ok(dropped)
}

impl Preparer {
    pub fn total_rows(&self) -> u64 {
        self.options.tables as u64 * self.options.table_size as u64
    }

    /// Creates and loads every table, `connections` tables at a time.
    pub async fn prepare(&self, announce: &(dyn Fn(String) + Sync)) -> Result<(), Failure> {
        let connections = loading_connections(self.connections, self.options.tables);
        let mut workers = Vec::new();
        for worker in 0..connections {
            let tables: Vec<u32> = tables_of(worker, connections, self.options.tables).collect();
            workers.push(async move {
                let client = connect(&self.conn).await?;
                for table in tables {
                    self.create_table(&client, table, announce).await?;
                }
                Ok::<(), Failure>(())
            });
        }
        for result in futures_util::future::join_all(workers).await {
            result?;
        }
        Ok(())
    }

    async fn create_table(
        &self,
        client: &Client,
        table: u32,
        announce: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let o = &self.options;
        let name = table_name(table);
        announce(format!("Creating table '{name}'..."));
        let id_type = if o.auto_inc {
            "SERIAL"
        } else {
            "INTEGER NOT NULL"
        };
        client
            .batch_execute(&format!(
                "CREATE TABLE {name}(\n  id {id_type},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL\n)"
            ))
            .await
            .map_err(|e| sql_error(&format!("CREATE TABLE {name}"), e))?;
        if o.table_size > 0 {
            announce(format!("Inserting {} records into '{name}'", o.table_size));
            self.copy_rows(client, &name, table).await?;
            if o.auto_inc {
                client
                    .query(
                        &format!("SELECT setval(pg_get_serial_sequence('{name}', 'id'), $1)"),
                        &[&(o.table_size as i64)],
                    )
                    .await
                    .map_err(|e| sql_error(&format!("setval for {name}"), e))?;
            }
        }
        // Keys after the data, as a faster equivalent of sysbench's keyed inserts.
        let id_index = if o.secondary {
            format!("CREATE INDEX xid_{table} ON {name}(id)")
        } else {
            format!("ALTER TABLE {name} ADD PRIMARY KEY (id)")
        };
        client
            .batch_execute(&id_index)
            .await
            .map_err(|e| sql_error(&id_index, e))?;
        if o.create_secondary {
            announce(format!("Creating a secondary index on '{name}'..."));
            let k_index = format!("CREATE INDEX k_{table} ON {name}(k)");
            client
                .batch_execute(&k_index)
                .await
                .map_err(|e| sql_error(&k_index, e))?;
        }
        Ok(())
    }

    async fn copy_rows(&self, client: &Client, name: &str, table: u32) -> Result<(), Failure> {
        let sink = client
            .copy_in::<_, Bytes>(&format!(
                "COPY {name} (id, k, c, pad) FROM STDIN WITH (FORMAT binary)"
            ))
            .await
            .map_err(|e| sql_error(&format!("COPY {name}"), e))?;
        futures_util::pin_mut!(sink);
        let mut buffer = BytesMut::with_capacity(4 << 20);
        buffer.put_slice(b"PGCOPY\n\xff\r\n\0");
        buffer.put_i32(0);
        buffer.put_i32(0);
        let mut rows = TableRows::new(&self.options, self.seed, table).peekable();
        while rows.peek().is_some() {
            let chunk = rows.by_ref().take(COPY_CHUNK_ROWS);
            let written = chunk.map(|row| write_row(&mut buffer, &row)).count();
            if rows.peek().is_none() {
                buffer.put_i16(-1);
            }
            sink.send(buffer.split().freeze())
                .await
                .map_err(|e| sql_error(&format!("COPY {name}"), e))?;
            self.rows_loaded
                .fetch_add(written as u64, Ordering::Relaxed);
        }
        sink.finish()
            .await
            .map_err(|e| sql_error(&format!("COPY {name}"), e))?;
        Ok(())
    }
}

/// One row in binary COPY's format: four fields, each its length and its bytes.
fn write_row(buffer: &mut BytesMut, row: &Row) {
    buffer.put_i16(4);
    buffer.put_i32(4);
    buffer.put_i32(row.id as i32);
    buffer.put_i32(4);
    buffer.put_i32(row.k as i32);
    for text in [&row.c, &row.pad] {
        buffer.put_i32(text.len() as i32);
        buffer.put_slice(text.as_bytes());
    }
}
