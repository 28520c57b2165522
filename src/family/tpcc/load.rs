//! `tpcc build`'s loader: the tables of schema.rs filled by TPC-C's rules (clause 4.3.3.1) —
//! item once, then per warehouse its district, stock, customer, history, orders, new_order and
//! order_line rows — by binary COPY, warehouses spread over several connections, keys and
//! indexes built after the data, also in parallel, then the transactions' procedures.

use crate::error::Failure;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::{Client, CopyInSink};

use super::copy::BinaryRows;
use super::random::{NurandConstants, TpccRandom};
use super::{procedures, schema};
use crate::conn::ConnSpec;
use crate::pg::{connect_quietly, sql_error};
use crate::script::extensions::tpcc_names::last_name;

pub const ITEMS: i64 = 100_000;
pub const DISTRICTS: i64 = 10;
pub const CUSTOMERS_PER_DISTRICT: i64 = 3_000;
pub const ORDERS_PER_DISTRICT: i64 = 3_000;
/// Orders from this id on are undelivered: in new_order, without carrier or delivery date.
pub const FIRST_NEW_ORDER: i64 = 2_101;

/// Send a COPY chunk when the buffer holds this much.
const CHUNK_BYTES: usize = 1 << 20;

pub struct Loader {
    pub conn: ConnSpec,
    pub warehouses: i64,
    pub connections: usize,
    pub seed: u64,
    /// order_line partitions (1: not partitioned).
    pub partitions: i64,
    /// The load's "now": c_since, h_date, o_entry_d, microseconds since the Unix epoch.
    pub now_unix_us: i64,
    /// Rows written so far, for progress.
    pub rows_loaded: Arc<AtomicU64>,
}

impl Loader {
    /// Creates the tables, loads them and builds their keys and indexes; `announce` hears of
    /// each step.
    pub async fn build(&self, announce: &(dyn Fn(String) + Sync)) -> Result<(), Failure> {
        let client = connect_quietly(&self.conn).await?;
        for (table, _) in schema::TABLES {
            for statement in schema::create_table(table, self.partitions) {
                execute(&client, &statement).await?;
            }
        }
        let constants = NurandConstants::draw(&mut TpccRandom::seeded(self.seed).prng);
        let connections = self.connections.clamp(1, self.warehouses as usize);
        let mut workers = Vec::new();
        for worker in 0..connections {
            let warehouses: Vec<i64> = (1..=self.warehouses)
                .filter(|w| (*w as usize - 1) % connections == worker)
                .collect();
            workers.push(async move {
                let client = connect_quietly(&self.conn).await?;
                if worker == 0 {
                    self.load_items(&client).await?;
                    announce(format!("loaded item ({ITEMS} rows)"));
                }
                for warehouse in warehouses {
                    self.load_warehouse(&client, warehouse, constants).await?;
                    announce(format!("loaded warehouse {warehouse}"));
                }
                Ok::<(), Failure>(())
            });
        }
        for result in futures_util::future::join_all(workers).await {
            result?;
        }
        announce("building keys and indexes".into());
        self.build_indexes(connections).await?;
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

    async fn build_indexes(&self, connections: usize) -> Result<(), Failure> {
        let mut workers = Vec::new();
        for worker in 0..connections {
            workers.push(async move {
                let client = connect_quietly(&self.conn).await?;
                for (i, (_, statement)) in schema::INDEXES.iter().enumerate() {
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

    fn random_for(&self, warehouse: i64) -> TpccRandom {
        TpccRandom::seeded(self.seed ^ (warehouse as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    async fn load_items(&self, client: &Client) -> Result<(), Failure> {
        let mut random = self.random_for(0);
        let mut copy = Copy::start(client, "item", &self.rows_loaded).await?;
        for id in 1..=ITEMS {
            let rows = copy.row(5);
            rows.int4(id);
            rows.int4(random.uniform(1, 10_000));
            alphanumeric(rows, &mut random, 14, 24);
            rows.numeric(random.amount(100, 10_000), 2);
            data_with_original(rows, &mut random);
            copy.sent_row().await?;
        }
        copy.finish().await
    }

    async fn load_warehouse(
        &self,
        client: &Client,
        warehouse: i64,
        constants: NurandConstants,
    ) -> Result<(), Failure> {
        let mut random = self.random_for(warehouse);
        let mut copy = Copy::start(client, "warehouse", &self.rows_loaded).await?;
        let rows = copy.row(9);
        rows.int4(warehouse);
        alphanumeric(rows, &mut random, 6, 10);
        address(rows, &mut random);
        rows.numeric(random.amount(0, 2_000), 4);
        rows.numeric(30_000_000, 2);
        copy.sent_row().await?;
        copy.finish().await?;
        self.load_districts(client, warehouse, &mut random).await?;
        self.load_stock(client, warehouse, &mut random).await?;
        self.load_customers(client, warehouse, &mut random, constants)
            .await?;
        self.load_history(client, warehouse, &mut random).await?;
        self.load_orders(client, warehouse, &mut random).await
    }

    async fn load_districts(
        &self,
        client: &Client,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut copy = Copy::start(client, "district", &self.rows_loaded).await?;
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
        copy.finish().await
    }

    async fn load_stock(
        &self,
        client: &Client,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut copy = Copy::start(client, "stock", &self.rows_loaded).await?;
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
        copy.finish().await
    }

    async fn load_customers(
        &self,
        client: &Client,
        warehouse: i64,
        random: &mut TpccRandom,
        constants: NurandConstants,
    ) -> Result<(), Failure> {
        let mut copy = Copy::start(client, "customer", &self.rows_loaded).await?;
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
                rows.text(&last_name(last).expect("0..999"));
                alphanumeric(rows, random, 10, 20);
                alphanumeric(rows, random, 10, 20);
                alphanumeric(rows, random, 10, 20);
                rows.text(&random.state());
                rows.text(&random.zip());
                rows.text_with(16, |out| random.fill_digits(out));
                rows.text(if random.uniform(1, 10) == 1 {
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
        copy.finish().await
    }

    async fn load_history(
        &self,
        client: &Client,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut copy = Copy::start(client, "history", &self.rows_loaded).await?;
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
        copy.finish().await
    }

    /// orders, then new_order, then order_line, whose counts follow each order's o_ol_cnt.
    async fn load_orders(
        &self,
        client: &Client,
        warehouse: i64,
        random: &mut TpccRandom,
    ) -> Result<(), Failure> {
        let mut line_counts = Vec::with_capacity((DISTRICTS * ORDERS_PER_DISTRICT) as usize);
        let mut copy = Copy::start(client, "orders", &self.rows_loaded).await?;
        for district in 1..=DISTRICTS {
            let customers = permutation(random, CUSTOMERS_PER_DISTRICT);
            for order in 1..=ORDERS_PER_DISTRICT {
                let lines = random.uniform(5, 15);
                line_counts.push(lines);
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
                rows.int2(lines);
                rows.int2(1);
                copy.sent_row().await?;
            }
        }
        copy.finish().await?;
        let mut copy = Copy::start(client, "new_order", &self.rows_loaded).await?;
        for district in 1..=DISTRICTS {
            for order in FIRST_NEW_ORDER..=ORDERS_PER_DISTRICT {
                let rows = copy.row(3);
                rows.int4(warehouse);
                rows.int4(order);
                rows.int2(district);
                copy.sent_row().await?;
            }
        }
        copy.finish().await?;
        let mut copy = Copy::start(client, "order_line", &self.rows_loaded).await?;
        let mut counts = line_counts.into_iter();
        for district in 1..=DISTRICTS {
            for order in 1..=ORDERS_PER_DISTRICT {
                let delivered = order < FIRST_NEW_ORDER;
                for number in 1..=counts.next().expect("one count per order") {
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
        copy.finish().await
    }
}

/// An a-string of random(min, max) letters and digits, written in place.
fn alphanumeric(rows: &mut BinaryRows, random: &mut TpccRandom, min: usize, max: usize) {
    let length = random.length(min, max);
    rows.text_with(length, |out| random.fill_alphanumeric(out));
}

/// I_DATA / S_DATA, written in place.
fn data_with_original(rows: &mut BinaryRows, random: &mut TpccRandom) {
    let length = random.length(26, 50);
    rows.text_with(length, |out| random.fill_data_with_original(out));
}

/// street 1, street 2, city, state, zip.
fn address(rows: &mut BinaryRows, random: &mut TpccRandom) {
    for _ in 0..3 {
        alphanumeric(rows, random, 10, 20);
    }
    rows.text(&random.state());
    rows.text(&random.zip());
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

/// One table's binary COPY, sent in chunks as rows are written.
struct Copy<'a> {
    table: &'static str,
    sink: Pin<Box<CopyInSink<Bytes>>>,
    rows: BinaryRows,
    pending_rows: u64,
    rows_loaded: &'a AtomicU64,
}

impl<'a> Copy<'a> {
    async fn start(
        client: &Client,
        table: &'static str,
        rows_loaded: &'a AtomicU64,
    ) -> Result<Copy<'a>, Failure> {
        let statement = format!("COPY {table} FROM STDIN WITH (FORMAT binary)");
        let sink = client
            .copy_in::<_, Bytes>(&statement)
            .await
            .map_err(|e| sql_error(&statement, e))?;
        Ok(Copy {
            table,
            sink: Box::pin(sink),
            rows: BinaryRows::new(),
            pending_rows: 0,
            rows_loaded,
        })
    }

    /// Starts a row of `columns` values, to be written into the returned buffer.
    fn row(&mut self, columns: i16) -> &mut BinaryRows {
        self.rows.row(columns);
        &mut self.rows
    }

    /// Counts the row just written and sends the buffer once it is large enough.
    async fn sent_row(&mut self) -> Result<(), Failure> {
        self.pending_rows += 1;
        if self.rows.len() >= CHUNK_BYTES {
            self.send().await?;
        }
        Ok(())
    }

    async fn send(&mut self) -> Result<(), Failure> {
        let chunk = self.rows.take();
        self.sink
            .send(chunk)
            .await
            .map_err(|e| sql_error(&format!("COPY {}", self.table), e))?;
        self.rows_loaded
            .fetch_add(self.pending_rows, Ordering::Relaxed);
        self.pending_rows = 0;
        Ok(())
    }

    async fn finish(mut self) -> Result<(), Failure> {
        self.rows.finish();
        self.send().await?;
        self.sink
            .as_mut()
            .finish()
            .await
            .map_err(|e| sql_error(&format!("COPY {}", self.table), e))?;
        Ok(())
    }
}

/// Procedures or functions, by the server's version.
pub async fn server_routines(
    client: &tokio_postgres::Client,
) -> Result<procedures::Routines, Failure> {
    let row = client
        .query_one("SELECT current_setting('server_version_num')::integer", &[])
        .await
        .map_err(|e| crate::pg::sql_error("reading server_version_num", e))?;
    Ok(procedures::Routines::for_server(
        row.get::<_, i32>(0).into(),
    ))
}
