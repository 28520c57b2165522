//! `tpcc build` on MariaDB/MySQL: HammerDB's tables (keys declared first, filled in key
//! order), the loader's rows sent as multi-row INSERTs of about a megabyte each (HammerDB
//! sends 1,000 rows per INSERT and commits each), the tables loaded in parallel over several
//! connections, then HammerDB's procedures, `ANALYZE TABLE` and the marker.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{procedures, schema};
use crate::family::tpcc::load::Loader;
use crate::family::tpcc::rows::{RowWriter, TableSink};
use crate::family::tpcc::schema::columns;
use stampede_base::error::Failure;
use stampede_conn::MysqlSpec;
use stampede_control::mysql::sql_failure;
use stampede_wire::mysql::MyConn;

/// Send an INSERT when its values reach this many bytes (MariaDB's max_allowed_packet is
/// 16 MiB by default, MySQL's 64 MiB).
const INSERT_BYTES: usize = 1 << 20;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn build(
    loader: &Loader,
    spec: &MysqlSpec,
    announce: &(dyn Fn(String) + Sync),
) -> Result<(), Failure> {
    let mut session = connect(spec).await?;
    for statement in schema::create_tables() {
        execute(&mut session, &statement).await?;
    }
    let constants = loader.constants();
    let open = || async {
        Ok(Inserts {
            conn: connect(spec).await?,
            statement: String::new(),
            values: ValuesRows::default(),
            pending_rows: 0,
            sent_rows: 0,
            rows_loaded: loader.rows_loaded.clone(),
        })
    };
    loader.load_streams(open, constants, announce).await?;
    announce("creating the transactions' procedures".into());
    for (_, statement) in procedures::PROCEDURES {
        execute(&mut session, statement).await?;
    }
    let tables: Vec<&str> = schema::TABLES.iter().map(|(name, _)| *name).collect();
    execute(
        &mut session,
        &format!("ANALYZE TABLE {}", tables.join(", ")),
    )
    .await?;
    execute(
        &mut session,
        &schema::create_marker(loader.warehouses, constants.c_last),
    )
    .await
}

async fn connect(spec: &MysqlSpec) -> Result<MyConn, Failure> {
    MyConn::connect(spec, CONNECT_TIMEOUT).await.map_err(|e| {
        Failure::input(format!(
            "could not connect to MySQL/MariaDB at {}: {e}",
            spec.describe()
        ))
    })
}

async fn execute(conn: &mut MyConn, sql: &str) -> Result<(), Failure> {
    match conn.query_all(sql).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(sql_failure(sql, &error)),
        Err(error) => Err(Failure::run(format!("lost the connection: {error}"))),
    }
}

/// One table's rows as `INSERT INTO t (columns) VALUES (…), (…)`, sent in chunks.
struct Inserts {
    conn: MyConn,
    /// `INSERT INTO t (columns) VALUES ` of the table being loaded.
    statement: String,
    values: ValuesRows,
    pending_rows: u64,
    sent_rows: u64,
    rows_loaded: Arc<AtomicU64>,
}

impl Inserts {
    async fn send(&mut self) -> Result<(), Failure> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let values = std::mem::take(&mut self.values.buffer);
        let mut sql = String::with_capacity(self.statement.len() + values.len());
        sql.push_str(&self.statement);
        // The values are ASCII: digits, letters and the quotes and commas written here.
        sql.push_str(std::str::from_utf8(&values).expect("the values are ASCII, as said above"));
        execute(&mut self.conn, &sql).await?;
        self.rows_loaded
            .fetch_add(self.pending_rows, Ordering::Relaxed);
        self.sent_rows += self.pending_rows;
        self.pending_rows = 0;
        self.values.buffer = values;
        self.values.buffer.clear();
        Ok(())
    }
}

impl TableSink for Inserts {
    type Rows = ValuesRows;

    async fn start(&mut self, table: &'static str) -> Result<(), Failure> {
        self.statement = format!(
            "INSERT INTO {table} ({}) VALUES ",
            columns(table).join(", ")
        );
        self.values.buffer.clear();
        self.pending_rows = 0;
        self.sent_rows = 0;
        Ok(())
    }

    fn row(&mut self, _columns: i16) -> &mut ValuesRows {
        self.values.start_row();
        &mut self.values
    }

    async fn sent_row(&mut self) -> Result<(), Failure> {
        self.values.buffer.push(b')');
        self.pending_rows += 1;
        if self.values.buffer.len() >= INSERT_BYTES {
            self.send().await?;
        }
        Ok(())
    }

    async fn finish(&mut self) -> Result<u64, Failure> {
        self.send().await?;
        Ok(self.sent_rows)
    }
}

/// Rows as SQL literals: `(1,'abc',12.34,FROM_UNIXTIME(1764374400),NULL),(…`.
#[derive(Default)]
pub struct ValuesRows {
    buffer: Vec<u8>,
    /// No value written yet in the current row.
    row_empty: bool,
}

impl ValuesRows {
    fn start_row(&mut self) {
        if !self.buffer.is_empty() {
            self.buffer.push(b',');
        }
        self.buffer.push(b'(');
        self.row_empty = true;
    }

    fn separate(&mut self) {
        if !self.row_empty {
            self.buffer.push(b',');
        }
        self.row_empty = false;
    }

    fn integer(&mut self, value: i64) {
        self.separate();
        let mut digits = String::new();
        let _ = write!(digits, "{value}");
        self.buffer.extend_from_slice(digits.as_bytes());
    }
}

impl RowWriter for ValuesRows {
    fn int2(&mut self, value: i64) {
        self.integer(value);
    }

    fn int4(&mut self, value: i64) {
        self.integer(value);
    }

    fn numeric(&mut self, unscaled: i64, scale: u32) {
        self.separate();
        let text = decimal(unscaled, scale);
        self.buffer.extend_from_slice(text.as_bytes());
    }

    fn text(&mut self, value: &str) {
        self.separate();
        let mut quoted = String::with_capacity(value.len() + 2);
        stampede_wire::mysql::push_quoted(&mut quoted, value);
        self.buffer.extend_from_slice(quoted.as_bytes());
    }

    fn text_with(&mut self, length: usize, fill: impl FnOnce(&mut [u8])) {
        self.separate();
        self.buffer.push(b'\'');
        let start = self.buffer.len();
        self.buffer.resize(start + length, 0);
        fill(&mut self.buffer[start..]);
        debug_assert!(self.buffer[start..].iter().all(u8::is_ascii_alphanumeric));
        self.buffer.push(b'\'');
    }

    /// The session's local time of that instant, as the procedures' `NOW()` is.
    fn timestamptz(&mut self, unix_us: i64) {
        self.separate();
        let text = format!("FROM_UNIXTIME({})", unix_us.div_euclid(1_000_000));
        self.buffer.extend_from_slice(text.as_bytes());
    }

    fn null(&mut self) {
        self.separate();
        self.buffer.extend_from_slice(b"NULL");
    }
}

/// `unscaled` × 10^-scale as a decimal literal: (1234, 2) is 12.34, (-1000, 2) is -10.00.
fn decimal(unscaled: i64, scale: u32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let magnitude = unscaled.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{magnitude}");
    }
    let unit = 10u64.pow(scale);
    format!(
        "{sign}{}.{:0width$}",
        magnitude / unit,
        magnitude % unit,
        width = scale as usize
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_sql_literals() {
        let mut rows = ValuesRows::default();
        rows.start_row();
        rows.int4(7);
        rows.numeric(-1_000, 2);
        rows.numeric(5, 4);
        rows.text("O'E");
        rows.text_with(3, |out| out.copy_from_slice(b"aB1"));
        rows.timestamptz(1_764_374_400_123_456);
        rows.null();
        rows.buffer.push(b')');
        rows.start_row();
        rows.int2(1);
        rows.buffer.push(b')');
        assert_eq!(
            String::from_utf8(rows.buffer).unwrap(),
            "(7,-10.00,0.0005,'O\\'E','aB1',FROM_UNIXTIME(1764374400),NULL),(1)"
        );
        assert_eq!(decimal(30_000_000, 2), "300000.00");
        assert_eq!(decimal(12, 0), "12");
    }
}
