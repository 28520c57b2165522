//! `tpcc build`'s loader: the tables of schema.rs filled by TPC-C's rules (clause 4.3.3.1, or
//! HammerDB's where rules.rs says they differ) in HammerDB's physical order — each table
//! written by one connection, warehouse by warehouse, district by district, order by order, as
//! HammerDB's single loader writes it — by binary COPY, the tables loaded in parallel over
//! several connections. stock's key is declared before its rows, as HammerDB does (inserted
//! warehouse after warehouse, its leaf pages split as HammerDB's do); the other keys and
//! indexes are built after the data (the same size as HammerDB's, whose keys arrive in order).

use stampede_base::error::Failure;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::{Client, CopyInSink};

use super::copy::BinaryRows;
use super::random::{NurandConstants, TpccRandom};
use super::rows::{RowWriter, TableSink};
use super::rules::Rules;
use super::{procedures, schema};
use stampede_conn::{ConnSpec, Endpoint};
use stampede_control::postgres::{connect_quietly, sql_error};
use stampede_script::extensions::tpcc_names::last_name;

pub const ITEMS: i64 = 100_000;
pub const DISTRICTS: i64 = 10;
pub const CUSTOMERS_PER_DISTRICT: i64 = 3_000;
pub const ORDERS_PER_DISTRICT: i64 = 3_000;
/// Orders from this id on are undelivered: in new_order, without carrier or delivery date.
pub const FIRST_NEW_ORDER: i64 = 2_101;

/// Send a COPY chunk when the buffer holds this much.
const CHUNK_BYTES: usize = 1 << 20;

/// One table's rows for every warehouse, written by one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Item,
    /// warehouse, then district: a few rows each.
    Warehouses,
    Stock,
    Customer,
    History,
    Orders,
    NewOrder,
    OrderLine,
}

/// How many connections can load at once: one per stream.
pub const STREAM_COUNT: usize = STREAMS.len();

/// Largest first, so that the connections finish together.
const STREAMS: [Stream; 8] = [
    Stream::Stock,
    Stream::OrderLine,
    Stream::Customer,
    Stream::Orders,
    Stream::History,
    Stream::Item,
    Stream::NewOrder,
    Stream::Warehouses,
];

/// The table whose key is built row by row during its load, as HammerDB builds it.
const KEYED_DURING_LOAD: &str = "stock";

pub struct Loader {
    pub conn: Endpoint,
    pub warehouses: i64,
    pub connections: usize,
    pub seed: u64,
    /// order_line partitions (1: not partitioned).
    pub partitions: i64,
    /// Whose value rules where HammerDB's and TPC-C's differ.
    pub rules: Rules,
    /// The load's "now": c_since, h_date, o_entry_d, microseconds since the Unix epoch.
    pub now_unix_us: i64,
    /// Rows written so far, for progress.
    pub rows_loaded: Arc<AtomicU64>,
}

impl Loader {
    /// On PostgreSQL: creates the tables, loads them and builds their keys and indexes;
    /// `announce` hears of each step.
    pub(super) async fn build_postgres(
        &self,
        conn: &ConnSpec,
        announce: &(dyn Fn(String) + Sync),
    ) -> Result<(), Failure> {
        let client = connect_quietly(conn).await?;
        for (table, _) in schema::TABLES {
            for statement in schema::create_table(table, self.partitions) {
                execute(&client, &statement).await?;
            }
        }
        for (_, statement) in indexes(|table| table == KEYED_DURING_LOAD) {
            execute(&client, statement).await?;
        }
        let constants = self.constants();
        let open = || async {
            let client = connect_quietly(conn).await?;
            Ok(PgCopy::new(client, self.rows_loaded.clone()))
        };
        let connections = self.load_streams(open, constants, announce).await?;
        announce("building keys and indexes".into());
        self.build_indexes(conn, connections).await?;
        announce("creating the transactions' procedures".into());
        for statement in server_routines(&client).await?.definitions() {
            execute(&client, &statement).await?;
        }
        execute(
            &client,
            &schema::create_marker(self.warehouses, self.partitions, constants.c_last),
        )
        .await
    }

    /// The load's NURand constants (C_LAST is recorded with the build).
    pub(super) fn constants(&self) -> NurandConstants {
        NurandConstants::draw(&mut TpccRandom::seeded(self.seed).prng)
    }

    /// Every table's rows over up to `connections` sinks that `open` makes, each loading one
    /// stream after another, at once; how many sinks there were.
    pub(super) async fn load_streams<S: TableSink, F: Future<Output = Result<S, Failure>>>(
        &self,
        open: impl Fn() -> F,
        constants: NurandConstants,
        announce: &(dyn Fn(String) + Sync),
    ) -> Result<usize, Failure> {
        let next_stream = AtomicUsize::new(0);
        let workers: Vec<_> = (0..self.connections.clamp(1, STREAMS.len()))
            .map(|_| async {
                let mut sink = open().await?;
                while let Some(stream) = STREAMS.get(next_stream.fetch_add(1, Ordering::Relaxed)) {
                    let rows = self.load_stream(&mut sink, *stream, constants).await?;
                    announce(format!("loaded {} ({rows} rows)", stream.tables()));
                }
                Ok::<(), Failure>(())
            })
            .collect();
        let connections = workers.len();
        for result in futures_util::future::join_all(workers).await {
            result?;
        }
        Ok(connections)
    }

    async fn build_indexes(&self, conn: &ConnSpec, connections: usize) -> Result<(), Failure> {
        let after_load: Vec<_> = indexes(|table| table != KEYED_DURING_LOAD).collect();
        let mut workers = Vec::new();
        for worker in 0..connections {
            let after_load = &after_load;
            workers.push(async move {
                let client = connect_quietly(conn).await?;
                for (i, (_, statement)) in after_load.iter().enumerate() {
                    if i % connections == worker {
                        execute(&client, statement).await?;
                    }
                }
                Ok::<(), Failure>(())
            });
        }
        for result in futures_util::future::join_all(workers).await {
            result?;
        }
        Ok(())
    }

    /// The random source of one table's rows of one warehouse (0: item).
    fn random_for(&self, source: u64, warehouse: i64) -> TpccRandom {
        let key = (warehouse as u64) << 8 | source;
        TpccRandom::seeded(self.seed ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// Loads one stream through `sink`; the rows written.
    async fn load_stream<S: TableSink>(
        &self,
        sink: &mut S,
        stream: Stream,
        constants: NurandConstants,
    ) -> Result<u64, Failure> {
        let first_table = match stream {
            Stream::Warehouses => "warehouse",
            other => other.tables(),
        };
        sink.start(first_table).await?;
        if stream == Stream::Item {
            self.item_rows(sink).await?;
            return sink.finish().await;
        }
        let mut rows = 0;
        if stream == Stream::Warehouses {
            for warehouse in 1..=self.warehouses {
                self.warehouse_row(sink, warehouse).await?;
            }
            rows += sink.finish().await?;
            sink.start("district").await?;
        }
        for warehouse in 1..=self.warehouses {
            let mut random = self.random_for(stream as u64, warehouse);
            let random = &mut random;
            match stream {
                Stream::Warehouses => self.district_rows(sink, warehouse, random).await?,
                Stream::Stock => self.stock_rows(sink, warehouse, random).await?,
                Stream::Customer => {
                    self.customer_rows(sink, warehouse, random, constants)
                        .await?
                }
                Stream::History => self.history_rows(sink, warehouse, random).await?,
                Stream::Orders => self.order_rows(sink, warehouse, random).await?,
                Stream::NewOrder => self.new_order_rows(sink, warehouse).await?,
                Stream::OrderLine => self.order_line_rows(sink, warehouse, random).await?,
                Stream::Item => unreachable!("loaded above"),
            }
        }
        Ok(rows + sink.finish().await?)
    }

    async fn item_rows<S: TableSink>(&self, copy: &mut S) -> Result<(), Failure> {
        let mut random = self.random_for(Stream::Item as u64, 0);
        for id in 1..=ITEMS {
            let rows = copy.row(5);
            rows.int4(id);
            rows.int4(random.uniform(1, 10_000));
            alphanumeric(rows, &mut random, 14, 24);
            rows.numeric(random.amount(100, 10_000), 2);
            data_with_original(rows, &mut random);
            copy.sent_row().await?;
        }
        Ok(())
    }

    async fn warehouse_row<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
    ) -> Result<(), Failure> {
        let mut random = self.random_for(WAREHOUSE_ROW, warehouse);
        let rows = copy.row(9);
        rows.int4(warehouse);
        alphanumeric(rows, &mut random, 6, 10);
        address(rows, &mut random);
        rows.numeric(random.amount(0, 2_000), 4);
        rows.numeric(30_000_000, 2);
        copy.sent_row().await
    }

    async fn district_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        for district in 1..=DISTRICTS {
            let rows = copy.row(11);
            rows.int4(warehouse);
            rows.int4(ORDERS_PER_DISTRICT + 1);
            rows.int2(district);
            rows.numeric(3_000_000, 2);
            rows.numeric(random.amount(0, 2_000), 4);
            alphanumeric(rows, random, 6, 10);
            address(rows, random);
            copy.sent_row().await?;
        }
        Ok(())
    }

    async fn stock_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        for item in 1..=ITEMS {
            let rows = copy.row(17);
            rows.int4(item);
            rows.int4(warehouse);
            rows.int4(0);
            rows.int2(random.uniform(10, 100));
            rows.int2(0);
            rows.int2(0);
            for _ in 0..10 {
                alphanumeric(rows, random, 24, 24);
            }
            data_with_original(rows, random);
            copy.sent_row().await?;
        }
        Ok(())
    }

    async fn customer_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
        constants: NurandConstants,
    ) -> Result<(), Failure> {
        // HammerDB gives half its customers bad credit; TPC-C a tenth.
        let bad_credit_in_ten = match self.rules {
            Rules::HammerDb => 5,
            Rules::TpcC => 1,
        };
        for district in 1..=DISTRICTS {
            for customer in 1..=CUSTOMERS_PER_DISTRICT {
                let rows = copy.row(21);
                rows.timestamptz(self.now_unix_us);
                rows.int4(customer);
                rows.int4(warehouse);
                rows.int2(district);
                rows.int2(1);
                rows.int2(0);
                alphanumeric(rows, random, 8, 16);
                rows.text("OE");
                let last = if customer <= 1_000 {
                    customer - 1
                } else {
                    random.nurand(255, 0, 999, constants.c_last)
                };
                rows.text(&last_name(last).expect("NURand(255, 0, 999) draws in 0..=999"));
                alphanumeric(rows, random, 10, 20);
                alphanumeric(rows, random, 10, 20);
                alphanumeric(rows, random, 10, 20);
                rows.text(&random.state());
                rows.text(&random.zip());
                rows.text_with(16, |out| random.fill_digits(out));
                rows.text(if random.uniform(1, 10) <= bad_credit_in_ten {
                    "BC"
                } else {
                    "GC"
                });
                rows.numeric(5_000_000, 2);
                rows.numeric(random.amount(0, 5_000), 4);
                rows.numeric(-1_000, 2);
                rows.numeric(1_000, 2);
                alphanumeric(rows, random, 300, 500);
                copy.sent_row().await?;
            }
        }
        Ok(())
    }

    async fn history_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        for district in 1..=DISTRICTS {
            for customer in 1..=CUSTOMERS_PER_DISTRICT {
                let rows = copy.row(8);
                rows.timestamptz(self.now_unix_us);
                rows.int4(customer);
                rows.int4(warehouse);
                rows.int4(warehouse);
                rows.int2(district);
                rows.int2(district);
                rows.numeric(1_000, 2);
                alphanumeric(rows, random, 12, 24);
                copy.sent_row().await?;
            }
        }
        Ok(())
    }

    /// Each order's o_ol_cnt, by district then order: drawn alike by orders and order_line.
    fn line_counts(&self, warehouse: i64) -> Vec<i64> {
        let mut random = self.random_for(LINE_COUNTS, warehouse);
        (0..DISTRICTS * ORDERS_PER_DISTRICT)
            .map(|_| random.uniform(5, 15))
            .collect()
    }

    async fn order_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut line_counts = self.line_counts(warehouse).into_iter();
        for district in 1..=DISTRICTS {
            let customers = match self.rules {
                Rules::HammerDb => hammerdb_customers(random, ORDERS_PER_DISTRICT),
                Rules::TpcC => permutation(random, CUSTOMERS_PER_DISTRICT),
            };
            for order in 1..=ORDERS_PER_DISTRICT {
                let rows = copy.row(8);
                rows.timestamptz(self.now_unix_us);
                rows.int4(order);
                rows.int4(warehouse);
                rows.int4(customers[order as usize - 1]);
                rows.int2(district);
                if order < FIRST_NEW_ORDER {
                    rows.int2(random.uniform(1, 10));
                } else {
                    rows.null();
                }
                rows.int2(line_counts.next().expect("one count per order"));
                rows.int2(1);
                copy.sent_row().await?;
            }
        }
        Ok(())
    }

    async fn new_order_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
    ) -> Result<(), Failure> {
        for district in 1..=DISTRICTS {
            for order in FIRST_NEW_ORDER..=ORDERS_PER_DISTRICT {
                let rows = copy.row(3);
                rows.int4(warehouse);
                rows.int4(order);
                rows.int2(district);
                copy.sent_row().await?;
            }
        }
        Ok(())
    }

    async fn order_line_rows<S: TableSink>(
        &self,
        copy: &mut S,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut line_counts = self.line_counts(warehouse).into_iter();
        for district in 1..=DISTRICTS {
            for order in 1..=ORDERS_PER_DISTRICT {
                let delivered = order < FIRST_NEW_ORDER;
                for number in 1..=line_counts.next().expect("one count per order") {
                    let rows = copy.row(10);
                    if delivered {
                        rows.timestamptz(self.now_unix_us);
                    } else {
                        rows.null();
                    }
                    rows.int4(order);
                    rows.int4(warehouse);
                    rows.int4(random.uniform(1, ITEMS));
                    rows.int4(warehouse);
                    rows.int2(district);
                    rows.int2(number);
                    rows.int2(5);
                    rows.numeric(
                        if delivered {
                            0
                        } else {
                            random.amount(1, 999_999)
                        },
                        2,
                    );
                    alphanumeric(rows, random, 24, 24);
                    copy.sent_row().await?;
                }
            }
        }
        Ok(())
    }
}

/// Random sources beyond the streams': the warehouse rows, and the orders' line counts that
/// orders and order_line draw alike.
const WAREHOUSE_ROW: u64 = 8;
const LINE_COUNTS: u64 = 9;

impl Stream {
    fn tables(self) -> &'static str {
        match self {
            Stream::Item => "item",
            Stream::Warehouses => "warehouse, district",
            Stream::Stock => "stock",
            Stream::Customer => "customer",
            Stream::History => "history",
            Stream::Orders => "orders",
            Stream::NewOrder => "new_order",
            Stream::OrderLine => "order_line",
        }
    }
}

/// The keys and indexes of the tables `which` picks.
fn indexes(
    which: impl Fn(&str) -> bool,
) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    schema::INDEXES
        .iter()
        .filter(move |(table, _)| which(table))
}

/// An a-string of random(min, max) letters and digits, written in place.
fn alphanumeric(rows: &mut impl RowWriter, random: &mut TpccRandom, min: usize, max: usize) {
    let length = random.length(min, max);
    rows.text_with(length, |out| random.fill_alphanumeric(out));
}

/// I_DATA / S_DATA, written in place.
fn data_with_original(rows: &mut impl RowWriter, random: &mut TpccRandom) {
    let length = random.length(26, 50);
    rows.text_with(length, |out| random.fill_data_with_original(out));
}

/// street 1, street 2, city, state, zip.
fn address(rows: &mut impl RowWriter, random: &mut TpccRandom) {
    for _ in 0..3 {
        alphanumeric(rows, random, 10, 20);
    }
    rows.text(&random.state());
    rows.text(&random.zip());
}

/// HammerDB's O_C_IDs: its loader swaps order i's customer with a random later one's but
/// writes the swap's second half to a variable named by the value, so order i gets a
/// customer uniform in [i, n]: about half the customers have no order.
fn hammerdb_customers(random: &mut TpccRandom, n: i64) -> Vec<i64> {
    (1..=n).map(|order| random.uniform(order, n)).collect()
}

/// 1..=n in a random order (O_C_ID: each customer places exactly one of a district's orders).
fn permutation(random: &mut TpccRandom, n: i64) -> Vec<i64> {
    let mut values: Vec<i64> = (1..=n).collect();
    for i in (1..values.len()).rev() {
        let j = random.uniform(0, i as i64) as usize;
        values.swap(i, j);
    }
    values
}

async fn execute(client: &Client, statement: &str) -> Result<(), Failure> {
    client
        .batch_execute(statement)
        .await
        .map_err(|e| sql_error(statement, e))
}

/// Binary COPY, one table at a time, sent in chunks as rows are written.
struct PgCopy {
    client: Client,
    table: &'static str,
    sink: Option<Pin<Box<CopyInSink<Bytes>>>>,
    rows: BinaryRows,
    pending_rows: u64,
    /// Rows sent so far by this COPY.
    sent_rows: u64,
    rows_loaded: Arc<AtomicU64>,
}

impl PgCopy {
    fn new(client: Client, rows_loaded: Arc<AtomicU64>) -> PgCopy {
        PgCopy {
            client,
            table: "",
            sink: None,
            rows: BinaryRows::new(),
            pending_rows: 0,
            sent_rows: 0,
            rows_loaded,
        }
    }

    async fn send(&mut self) -> Result<(), Failure> {
        let chunk = self.rows.take();
        let sink = self.sink.as_mut().expect("a COPY started");
        sink.send(chunk)
            .await
            .map_err(|e| sql_error(&format!("COPY {}", self.table), e))?;
        self.rows_loaded
            .fetch_add(self.pending_rows, Ordering::Relaxed);
        self.sent_rows += self.pending_rows;
        self.pending_rows = 0;
        Ok(())
    }
}

impl TableSink for PgCopy {
    type Rows = BinaryRows;

    async fn start(&mut self, table: &'static str) -> Result<(), Failure> {
        let statement = format!("COPY {table} FROM STDIN WITH (FORMAT binary)");
        let sink = self
            .client
            .copy_in::<_, Bytes>(&statement)
            .await
            .map_err(|e| sql_error(&statement, e))?;
        self.table = table;
        self.sink = Some(Box::pin(sink));
        self.rows = BinaryRows::new();
        self.sent_rows = 0;
        Ok(())
    }

    fn row(&mut self, columns: i16) -> &mut BinaryRows {
        self.rows.row(columns);
        &mut self.rows
    }

    async fn sent_row(&mut self) -> Result<(), Failure> {
        self.pending_rows += 1;
        if self.rows.len() >= CHUNK_BYTES {
            self.send().await?;
        }
        Ok(())
    }

    async fn finish(&mut self) -> Result<u64, Failure> {
        self.rows.finish();
        self.send().await?;
        let mut sink = self.sink.take().expect("a COPY started");
        sink.as_mut()
            .finish()
            .await
            .map_err(|e| sql_error(&format!("COPY {}", self.table), e))?;
        Ok(self.sent_rows)
    }
}

/// Procedures or functions, by the server's version.
pub async fn server_routines(
    client: &tokio_postgres::Client,
) -> Result<procedures::Routines, Failure> {
    let row = client
        .query_one("SELECT current_setting('server_version_num')::integer", &[])
        .await
        .map_err(|e| stampede_control::postgres::sql_error("reading server_version_num", e))?;
    Ok(procedures::Routines::for_server(
        row.get::<_, i32>(0).into(),
    ))
}
