//! `pgbench -i`: the same tables, rows, value ranges and filler as pgbench, loaded faster —
//! binary COPY, FREEZE wherever the table was created or truncated in the loading transaction,
//! independent tables and partitions over several connections, keys built after the data.

use stampede_base::error::Failure;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::Client;

use stampede_control::postgres::{connect_quietly, sql_error};

use super::schema::{
    self, PartitionMethod, SchemaOptions, ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH,
};
use crate::family::pgbench::analytics;
use stampede_conn::ConnSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitStep {
    DropTables,
    CreateTables,
    ClientGenerate,
    ServerGenerate,
    Vacuum,
    PrimaryKeys,
    ForeignKeys,
    /// Study 002's four extra indexes (`--extra-indexes`; no step letter, pgbench has none).
    ExtraIndexes,
}

impl InitStep {
    pub const ALL: &'static str = "dtgGvpf";
    pub const DEFAULT: &'static str = "dtgvp";

    pub fn from_char(c: char) -> Option<InitStep> {
        Some(match c {
            'd' => InitStep::DropTables,
            't' => InitStep::CreateTables,
            'g' => InitStep::ClientGenerate,
            'G' => InitStep::ServerGenerate,
            'v' => InitStep::Vacuum,
            'p' => InitStep::PrimaryKeys,
            'f' => InitStep::ForeignKeys,
            _ => return None,
        })
    }

    /// The name pgbench uses in its closing `done in ... (...)` line.
    pub fn label(self) -> &'static str {
        match self {
            InitStep::DropTables => "drop tables",
            InitStep::CreateTables => "create tables",
            InitStep::ClientGenerate => "client-side generate",
            InitStep::ServerGenerate => "server-side generate",
            InitStep::Vacuum => "vacuum",
            InitStep::PrimaryKeys => "primary keys",
            InitStep::ForeignKeys => "foreign keys",
            InitStep::ExtraIndexes => "extra indexes",
        }
    }

    /// The line pgbench prints when the step starts.
    pub fn announcement(self) -> &'static str {
        match self {
            InitStep::DropTables => "dropping old tables...",
            InitStep::CreateTables => "creating tables...",
            InitStep::ClientGenerate => "generating data (client-side)...",
            InitStep::ServerGenerate => "generating data (server-side)...",
            InitStep::Vacuum => "vacuuming...",
            InitStep::PrimaryKeys => "creating primary keys...",
            InitStep::ForeignKeys => "creating foreign keys...",
            InitStep::ExtraIndexes => "creating extra indexes (seed 002's four)...",
        }
    }
}

/// Parses an `-I` string: pgbench's step letters, spaces ignored.
pub fn parse_steps(text: &str) -> Result<Vec<InitStep>, Failure> {
    if text.is_empty() {
        return Err(Failure::input("no initialization steps specified"));
    }
    text.chars()
        .filter(|c| *c != ' ')
        .map(|c| {
            InitStep::from_char(c).ok_or_else(|| {
                Failure::input(format!(
                    "unrecognized initialization step \"{c}\"\ndetail: Allowed step characters are: \"{}\".",
                    InitStep::ALL
                ))
            })
        })
        .collect()
}

pub struct Loader {
    pub spec: ConnSpec,
    pub options: SchemaOptions,
    /// Connections used for the steps that can run in parallel.
    pub connections: usize,
    /// Rows written so far by the current generate step (read by the caller for progress).
    pub rows_loaded: Arc<AtomicU64>,
}

const COPY_CHUNK_ROWS: i64 = 50_000;
/// Sort memory for building the primary keys, set per session: an in-memory sort instead of
/// spilling 5M+ keys to disk at the default 64MB. Server configuration is left untouched.
const INDEX_BUILD_MEMORY: &str = "SET maintenance_work_mem = '1GB'";

pub type LoadResult = Result<(), Failure>;

impl Loader {
    pub fn total_rows(&self) -> u64 {
        (self.options.scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH)) as u64
    }

    pub async fn connect(&self) -> Result<Client, Failure> {
        connect_quietly(&self.spec).await
    }

    /// Refuses what the server's version cannot build, before any step touches it: partitioned
    /// pgbench_accounts needs PostgreSQL 11 (a primary key on a partitioned table, hash
    /// partitioning).
    pub async fn check_server(&self, client: &Client) -> LoadResult {
        if self.options.partitions == 0 {
            return Ok(());
        }
        let row = client
            .query_one(
                "SELECT current_setting('server_version_num')::integer, current_setting('server_version')",
                &[],
            )
            .await
            .map_err(|e| sql_error("reading the server version", e))?;
        let (version_num, version): (i32, String) = (row.get(0), row.get(1));
        if version_num < 110000 {
            return Err(Failure::input(format!(
                "--partitions needs PostgreSQL 11 or later (primary keys on partitioned tables); the server is PostgreSQL {version}"
            )));
        }
        Ok(())
    }

    pub async fn run_step(&self, step: InitStep) -> LoadResult {
        let client = self.connect().await?;
        match step {
            InitStep::DropTables => execute(&client, schema::DROP_TABLES).await,
            InitStep::CreateTables => {
                for statement in schema::create_tables(&self.options) {
                    execute(&client, &statement).await?;
                }
                Ok(())
            }
            InitStep::ClientGenerate => self.generate_client_side(client).await,
            InitStep::ServerGenerate => self.generate_server_side(&client).await,
            InitStep::Vacuum => {
                let statements = schema::VACUUM_TABLES.map(|t| format!("vacuum analyze {t}"));
                self.in_parallel(statements.to_vec(), None).await
            }
            InitStep::PrimaryKeys => {
                let statements = schema::primary_keys(&self.options);
                self.in_parallel(statements, Some(INDEX_BUILD_MEMORY)).await
            }
            InitStep::ForeignKeys => {
                for statement in schema::FOREIGN_KEYS {
                    execute(&client, statement).await?;
                }
                Ok(())
            }
            InitStep::ExtraIndexes => {
                let statements = analytics::EXTRA_INDEXES.map(str::to_string);
                self.in_parallel(statements.to_vec(), Some(INDEX_BUILD_MEMORY))
                    .await
            }
        }
    }

    /// Runs independent statements, each on its own connection, at most `connections` at once.
    async fn in_parallel(
        &self,
        statements: Vec<String>,
        session_setup: Option<&str>,
    ) -> LoadResult {
        let queue = Arc::new(std::sync::Mutex::new(statements.into_iter()));
        let workers = (0..self.connections.max(1)).map(|_| {
            let queue = queue.clone();
            async move {
                let client = self.connect().await?;
                if let Some(setup) = session_setup {
                    execute(&client, setup).await?;
                }
                loop {
                    let next = queue
                        .lock()
                        .expect("no thread panics holding this lock")
                        .next();
                    let Some(statement) = next else { return Ok(()) };
                    execute(&client, &statement).await?;
                }
            }
        });
        let results: Vec<LoadResult> = futures_util::future::join_all(workers).await;
        results.into_iter().collect()
    }

    async fn generate_server_side(&self, client: &Client) -> LoadResult {
        execute(client, "begin").await?;
        execute(client, schema::TRUNCATE_TABLES).await?;
        for statement in schema::server_side_generate(&self.options) {
            execute(client, &statement).await?;
        }
        execute(client, "commit").await
    }

    /// Branches and tellers in the truncating transaction (FREEZE); accounts as one FREEZE COPY,
    /// or per range partition on parallel connections (each truncates its partition, so each
    /// can FREEZE), or split over connections into a hash-partitioned parent.
    async fn generate_client_side(&self, client: Client) -> LoadResult {
        self.rows_loaded.store(0, Ordering::Relaxed);
        let freeze = server_supports_freeze(&client).await?;
        let partitioned = self.options.partitions > 0;
        execute(&client, "begin").await?;
        execute(&client, schema::TRUNCATE_TABLES).await?;
        let scale = self.options.scale;
        self.copy_rows(&client, "pgbench_branches", freeze, 1, scale, branch_row)
            .await?;
        let tellers = scale * TELLERS_PER_BRANCH;
        self.copy_rows(&client, "pgbench_tellers", freeze, 1, tellers, teller_row)
            .await?;
        if !partitioned {
            let accounts = self.options.accounts();
            let wide = self.options.bigint_accounts();
            self.copy_accounts(&client, "pgbench_accounts", freeze, 1, accounts, wide)
                .await?;
            return execute(&client, "commit").await;
        }
        execute(&client, "commit").await?;
        match self.options.partition_method {
            PartitionMethod::Range => self.load_range_partitions(freeze).await,
            PartitionMethod::Hash => self.load_hash_partitioned().await,
        }
    }

    async fn load_range_partitions(&self, freeze: bool) -> LoadResult {
        let bounds = schema::range_partition_bounds(&self.options);
        let queue = Arc::new(std::sync::Mutex::new(bounds.into_iter().enumerate()));
        let workers = (0..self.connections.max(1)).map(|_| {
            let queue = queue.clone();
            async move {
                let client = self.connect().await?;
                loop {
                    let next = queue
                        .lock()
                        .expect("no thread panics holding this lock")
                        .next();
                    let Some((index, (low, high))) = next else {
                        return Ok(());
                    };
                    let table = format!("pgbench_accounts_{}", index + 1);
                    execute(&client, "begin").await?;
                    execute(&client, &format!("truncate table {table}")).await?;
                    let wide = self.options.bigint_accounts();
                    self.copy_accounts(&client, &table, freeze, low, high, wide)
                        .await?;
                    execute(&client, "commit").await?;
                }
            }
        });
        let results: Vec<LoadResult> = futures_util::future::join_all(workers).await;
        results.into_iter().collect()
    }

    async fn load_hash_partitioned(&self) -> LoadResult {
        let accounts = self.options.accounts();
        let workers = self.connections.max(1) as i64;
        let slice = (accounts + workers - 1) / workers;
        let loads = (0..workers).map(|w| async move {
            let (low, high) = (w * slice + 1, ((w + 1) * slice).min(accounts));
            if low > high {
                return Ok(());
            }
            let client = self.connect().await?;
            let wide = self.options.bigint_accounts();
            self.copy_accounts(&client, "pgbench_accounts", false, low, high, wide)
                .await
        });
        let results: Vec<LoadResult> = futures_util::future::join_all(loads).await;
        results.into_iter().collect()
    }

    async fn copy_accounts(
        &self,
        client: &Client,
        table: &str,
        freeze: bool,
        low: i64,
        high: i64,
        wide: bool,
    ) -> LoadResult {
        let row = if wide {
            account_row_bigint
        } else {
            account_row
        };
        self.copy_rows(client, table, freeze, low, high, row).await
    }

    /// Streams rows `low..=high` through one binary COPY.
    async fn copy_rows(
        &self,
        client: &Client,
        table: &str,
        freeze: bool,
        low: i64,
        high: i64,
        write_row: fn(&mut BytesMut, i64),
    ) -> LoadResult {
        let options = if freeze {
            "(format binary, freeze on)"
        } else {
            "(format binary)"
        };
        let sink = client
            .copy_in::<_, Bytes>(&format!("copy {table} from stdin with {options}"))
            .await
            .map_err(|e| sql_error(table, e))?;
        futures_util::pin_mut!(sink);
        let mut buffer = BytesMut::with_capacity(4 << 20);
        buffer.put_slice(b"PGCOPY\n\xff\r\n\0");
        buffer.put_i32(0);
        buffer.put_i32(0);
        let mut id = low;
        while id <= high {
            let chunk_end = (id + COPY_CHUNK_ROWS - 1).min(high);
            for row_id in id..=chunk_end {
                write_row(&mut buffer, row_id);
            }
            if chunk_end == high {
                buffer.put_i16(-1);
            }
            sink.send(buffer.split().freeze())
                .await
                .map_err(|e| sql_error(table, e))?;
            self.rows_loaded
                .fetch_add((chunk_end - id + 1) as u64, Ordering::Relaxed);
            id = chunk_end + 1;
        }
        if low > high {
            buffer.put_i16(-1);
            sink.send(buffer.split().freeze())
                .await
                .map_err(|e| sql_error(table, e))?;
        }
        sink.finish().await.map_err(|e| sql_error(table, e))?;
        Ok(())
    }
}

/// `bid, bbalance = 0, filler NULL` — as pgbench.
fn branch_row(buf: &mut BytesMut, bid: i64) {
    buf.put_i16(3);
    put_int4(buf, bid as i32);
    put_int4(buf, 0);
    buf.put_i32(-1);
}

/// `tid, bid = (tid - 1) / 10 + 1, tbalance = 0, filler NULL`.
fn teller_row(buf: &mut BytesMut, tid: i64) {
    buf.put_i16(4);
    put_int4(buf, tid as i32);
    put_int4(buf, ((tid - 1) / TELLERS_PER_BRANCH + 1) as i32);
    put_int4(buf, 0);
    buf.put_i32(-1);
}

/// `aid, bid = (aid - 1) / 100000 + 1, abalance = 0, filler ''` (blank-padded by the server).
fn account_row(buf: &mut BytesMut, aid: i64) {
    buf.put_i16(4);
    put_int4(buf, aid as i32);
    put_int4(buf, ((aid - 1) / ACCOUNTS_PER_BRANCH + 1) as i32);
    put_int4(buf, 0);
    buf.put_i32(0);
}

fn account_row_bigint(buf: &mut BytesMut, aid: i64) {
    buf.put_i16(4);
    buf.put_i32(8);
    buf.put_i64(aid);
    put_int4(buf, ((aid - 1) / ACCOUNTS_PER_BRANCH + 1) as i32);
    put_int4(buf, 0);
    buf.put_i32(0);
}

fn put_int4(buf: &mut BytesMut, value: i32) {
    buf.put_i32(4);
    buf.put_i32(value);
}

/// COPY FREEZE exists since 9.3, but pgbench uses it from 14 on (when it also sets the
/// visibility map); follow pgbench so the loaded state matches.
async fn server_supports_freeze(client: &Client) -> Result<bool, Failure> {
    let row = client
        .query_one("select current_setting('server_version_num')::int", &[])
        .await
        .map_err(|e| sql_error("version check", e))?;
    Ok(row.get::<_, i32>(0) >= 140000)
}

async fn execute(client: &Client, sql: &str) -> LoadResult {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| sql_error(sql, e))
}

/// A loader's connection: NOTICEs (e.g. of DROP ... IF EXISTS) are not printed.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_like_pgbench() {
        assert_eq!(parse_steps("dtgvp").unwrap().len(), 5);
        assert_eq!(parse_steps("d t").unwrap().len(), 2);
        assert!(parse_steps("dx")
            .unwrap_err()
            .message()
            .contains("unrecognized initialization step \"x\""));
        assert_eq!(
            parse_steps("").unwrap_err(),
            Failure::input("no initialization steps specified")
        );
    }

    #[test]
    fn account_rows_are_thirty_bytes() {
        let mut buf = BytesMut::new();
        account_row(&mut buf, 100_001);
        assert_eq!(buf.len(), 30);
        assert_eq!(&buf[14..18], &2i32.to_be_bytes());
    }
}
