//! The build: HammerDB's tables, dbgen's rows streamed into them by parallel COPY (no file in
//! between), then HammerDB's keys and indexes, each step over several connections.
//!
//! Each loading connection has an OS thread of its own that generates its parts' rows and
//! hands them to the shared control runtime, whose threads keep writing to the server while the
//! generator makes the next chunk.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::Client;

use super::data;
use super::schema::{self, TABLES};
use stampede_base::error::Failure;
use stampede_conn::control_runtime;
use stampede_conn::{ConnSpec, Endpoint};
use stampede_control::postgres::{connect_quietly, sql_error};

/// Bytes generated before they are sent: large enough that a send costs little, small enough
/// that the server starts parsing early.
const CHUNK_BYTES: usize = 256 << 10;

/// A build's settings.
pub struct Build {
    pub endpoint: Endpoint,
    pub scale_factor: f64,
    pub connections: usize,
}

/// One part of one table, as a loading connection takes it.
#[derive(Debug, Clone, Copy)]
pub struct Piece {
    pub table: &'static str,
    pub part: i32,
    pub parts: i32,
}

/// What the loading connections share: the pieces left, the rows loaded per table and the
/// parts still loading, and whether one of them failed.
struct Progress {
    pieces: Mutex<VecDeque<Piece>>,
    tables: Mutex<Vec<(&'static str, i32, u64)>>,
    failed: AtomicBool,
}

impl Build {
    /// PostgreSQL's build: creates the tables, loads them by COPY, adds keys and indexes, and
    /// VACUUMs and ANALYZEs them, reporting each step through `say`.
    pub fn run_postgres(
        &self,
        conn: &ConnSpec,
        say: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let runtime = control_runtime();
        runtime.block_on(async {
            let client = connect_quietly(conn).await?;
            let creates: Vec<&str> = TABLES.iter().map(|t| t.create).collect();
            execute(&client, &format!("BEGIN; {}; COMMIT", creates.join("; "))).await
        })?;
        say("created the 8 tables".into());
        self.load(
            say,
            || runtime.block_on(connect_quietly(conn)),
            |client, piece| self.copy_piece(client, piece),
        )?;
        runtime.block_on(self.keys_and_indexes(conn, say))
    }

    /// Loads every table's pieces over the build's connections (`in_parallel`).
    pub fn load<C>(
        &self,
        say: &(dyn Fn(String) + Sync),
        connect: impl Fn() -> Result<C, Failure> + Sync,
        load: impl Fn(&mut C, Piece) -> Result<u64, Failure> + Sync,
    ) -> Result<(), Failure> {
        in_parallel(self.scale_factor, self.connections, say, connect, load)
    }

    /// One piece through COPY: generated here, sent by the control runtime chunk by chunk.
    fn copy_piece(&self, client: &mut Client, piece: Piece) -> Result<u64, Failure> {
        let runtime = control_runtime();
        let columns = schema::table(piece.table).columns;
        let statement = format!(
            "COPY {} ({columns}) FROM STDIN WITH (FORMAT text, DELIMITER '|')",
            piece.table
        );
        let sink = runtime
            .block_on(client.copy_in::<_, Bytes>(&statement))
            .map_err(|e| sql_error(&statement, e))?;
        let mut sink = Box::pin(sink);
        let mut flush = |out: &mut Vec<u8>| -> Result<(), Failure> {
            let chunk = Bytes::from(std::mem::replace(
                out,
                Vec::with_capacity(CHUNK_BYTES + 4096),
            ));
            runtime
                .block_on(sink.send(chunk))
                .map_err(|e| sql_error(&statement, e))
        };
        let mut out = Vec::with_capacity(CHUNK_BYTES + 4096);
        let rows = data::write_part(
            piece.table,
            self.scale_factor,
            piece.part,
            piece.parts,
            &mut out,
            CHUNK_BYTES,
            &mut flush,
        )
        .and_then(|rows| flush(&mut out).map(|()| rows))?;
        runtime
            .block_on(sink.as_mut().finish())
            .map_err(|e| sql_error(&statement, e))?;
        Ok(rows)
    }

    /// HammerDB's 24 key and index statements: the primary keys at once, the indexes at once,
    /// the foreign keys in rounds of keys on different tables; then VACUUM and ANALYZE.
    async fn keys_and_indexes(
        &self,
        conn: &ConnSpec,
        say: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let started = Instant::now();
        let elapsed = || started.elapsed().as_secs_f64();
        self.at_once(conn, &schema::PRIMARY_KEYS).await?;
        say(format!("added the primary keys ({:.1} s)", elapsed()));
        self.at_once(conn, &schema::INDEXES).await?;
        say(format!("created the indexes ({:.1} s)", elapsed()));
        for round in schema::foreign_key_rounds() {
            self.at_once(conn, &round).await?;
        }
        say(format!("added the foreign keys ({:.1} s)", elapsed()));
        let analyze: Vec<String> = TABLES
            .iter()
            .map(|t| format!("VACUUM (ANALYZE) {}", t.name))
            .collect();
        let analyze: Vec<&str> = analyze.iter().map(String::as_str).collect();
        self.at_once(conn, &analyze).await?;
        say(format!("vacuumed and analyzed ({:.1} s)", elapsed()));
        Ok(())
    }

    /// Runs `statements` over up to `connections` connections, each taking the next.
    async fn at_once(&self, conn: &ConnSpec, statements: &[&str]) -> Result<(), Failure> {
        let queue = Mutex::new(statements.iter().copied().collect::<VecDeque<&str>>());
        let workers = (0..self.connections.min(statements.len())).map(|_| async {
            let client = connect_quietly(conn).await?;
            loop {
                let Some(statement) = queue
                    .lock()
                    .expect("no loader thread panics holding the queue")
                    .pop_front()
                else {
                    return Ok::<(), Failure>(());
                };
                execute(&client, statement).await?;
            }
        });
        futures_util::future::join_all(workers)
            .await
            .into_iter()
            .collect()
    }
}

/// Every table's pieces at `scale_factor` over `workers` threads, each of which `connect`s
/// once and `load`s the pieces it takes, largest tables first; a line through `say` as each
/// table is done.
pub fn in_parallel<C>(
    scale_factor: f64,
    workers: usize,
    say: &(dyn Fn(String) + Sync),
    connect: impl Fn() -> Result<C, Failure> + Sync,
    load: impl Fn(&mut C, Piece) -> Result<u64, Failure> + Sync,
) -> Result<(), Failure> {
    let mut pieces = VecDeque::new();
    let mut tables = Vec::new();
    for table in TABLES.iter().map(|t| t.name) {
        let parts = data::part_count(table, scale_factor);
        pieces.extend((1..=parts).map(|part| Piece { table, part, parts }));
        tables.push((table, parts, 0));
    }
    let progress = Progress {
        pieces: Mutex::new(pieces),
        tables: Mutex::new(tables),
        failed: AtomicBool::new(false),
    };
    let workers = workers.min(
        progress
            .pieces
            .lock()
            .expect("no loader thread panics holding the pieces")
            .len(),
    );
    let results: Vec<Result<(), Failure>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers)
            .map(|_| scope.spawn(|| load_pieces(&progress, say, &connect, &load)))
            .collect();
        threads
            .into_iter()
            .map(|w| {
                w.join()
                    .expect("a loader thread returns its error rather than panicking")
            })
            .collect()
    });
    results.into_iter().collect()
}

/// One loading connection: takes pieces until none are left or another connection failed.
fn load_pieces<C>(
    progress: &Progress,
    say: &(dyn Fn(String) + Sync),
    connect: &(impl Fn() -> Result<C, Failure> + Sync),
    load: &(impl Fn(&mut C, Piece) -> Result<u64, Failure> + Sync),
) -> Result<(), Failure> {
    let mut conn = connect()?;
    let started = Instant::now();
    loop {
        if progress.failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let Some(piece) = progress
            .pieces
            .lock()
            .expect("no loader thread panics holding the pieces")
            .pop_front()
        else {
            return Ok(());
        };
        let rows = load(&mut conn, piece).inspect_err(|_| {
            progress.failed.store(true, Ordering::Relaxed);
        })?;
        let mut tables = progress
            .tables
            .lock()
            .expect("no loader thread panics holding the counts");
        let entry = tables
            .iter_mut()
            .find(|(name, _, _)| *name == piece.table)
            .expect("a known table");
        entry.1 -= 1;
        entry.2 += rows;
        if entry.1 == 0 {
            say(format!(
                "{}: {} rows ({:.1} s)",
                piece.table,
                entry.2,
                started.elapsed().as_secs_f64()
            ));
        }
    }
}

async fn execute(client: &Client, statement: &str) -> Result<(), Failure> {
    client
        .batch_execute(statement)
        .await
        .map_err(|e| sql_error(statement, e))
}
