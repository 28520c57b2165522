//! iibench.py's rows: cashregisterid, productid, customerid and price drawn uniformly from their
//! ranges, and a data column of a drawn length whose first part is 'a's and whose rest (a
//! data_random_pct share, times 0.75 for base64's overhead) is a slice of a large random base64
//! text — so the column compresses as iibench.py's does. The random numbers are stampede's
//! (pg_prng), not Python's: the same distributions, not the same values.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use stampede_base::calendar::UtcTime;
use stampede_script::prng::PgPrng;

use super::options::DataShape;
use super::sql::INSERT_COLUMNS;

/// iibench.py's random text: base64 of 4 MiB of random bytes.
const RANDOM_BYTES: usize = 4 * 1024 * 1024;

/// The random base64 text the data columns take their random part from, shared by a run's
/// connections.
pub fn random_text(seed: u64) -> Arc<str> {
    let mut prng = PgPrng::seeded(seed ^ 0x5eed_da7a);
    let mut bytes = Vec::with_capacity(RANDOM_BYTES);
    while bytes.len() < RANDOM_BYTES {
        bytes.extend_from_slice(&prng.next_u64().to_le_bytes());
    }
    bytes.truncate(RANDOM_BYTES);
    base64(&bytes).into()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                text.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Makes the rows of INSERT statements.
pub struct RowMaker {
    prng: PgPrng,
    shape: DataShape,
    random: Arc<str>,
}

/// One row's drawn values.
struct Row<'a> {
    cashregisterid: u64,
    productid: u64,
    customerid: u64,
    price: u64,
    /// 'a's before the random part.
    plain: usize,
    random: &'a str,
}

impl RowMaker {
    pub fn new(seed: u64, shape: DataShape, random: Arc<str>) -> RowMaker {
        RowMaker {
            prng: PgPrng::seeded(seed),
            shape,
            random,
        }
    }

    /// Uniform in [0, n), as Python's randrange(0, n).
    fn below(&mut self, n: u64) -> u64 {
        self.prng.u64_in_range(0, n.saturating_sub(1))
    }

    /// The values in iibench.py's order of draws.
    fn draw(&mut self) -> Row<'_> {
        let cashregisterid = self.below(self.shape.cashregisters);
        let productid = self.below(self.shape.products);
        let customerid = self.below(self.shape.customers);
        let price = self.below(self.shape.max_price);
        let length = self
            .prng
            .u64_in_range(self.shape.length_min, self.shape.length_max);
        let random_length =
            (length as f64 * 0.75 * (self.shape.random_pct as f64 / 100.0)) as usize;
        let offset = self.below((self.random.len() - random_length) as u64) as usize;
        Row {
            cashregisterid,
            productid,
            customerid,
            price,
            plain: length as usize - random_length,
            random: &self.random[offset..offset + random_length],
        }
    }

    /// The INSERT of `rows` rows, their values as literals, stamped `when`.
    pub fn insert(&mut self, table: &str, rows: u64, when: &str) -> String {
        let mut text = format!("insert into {table} {INSERT_COLUMNS} values ");
        self.push_values(&mut text, rows, when, Form::Literal);
        text
    }

    /// The EXECUTE of the prepared INSERT of `rows` rows (`--use_prepared_insert`), the values as
    /// psycopg2 puts them into the text.
    pub fn execute_insert(&mut self, rows: u64, when: &str) -> String {
        let mut text = "execute insert_ps (".to_string();
        self.push_values(&mut text, rows, when, Form::Parameters);
        text.push(')');
        text
    }

    /// `rows` rows' values: each row parenthesized, a line apart, its price as iibench.py's
    /// `%.2f` prints it; or as one flat list of EXECUTE's parameters.
    fn push_values(&mut self, text: &mut String, rows: u64, when: &str, form: Form) {
        let (separator, open, cents, close) = match form {
            Form::Literal => (",\n", "(", ".00", ")"),
            Form::Parameters => (",", "", "", ""),
        };
        for i in 0..rows {
            if i > 0 {
                text.push_str(separator);
            }
            let row = self.draw();
            text.push_str(&format!(
                "{open}'{when}',{},{},{},{}{cents},'{}{}'{close}",
                row.cashregisterid,
                row.customerid,
                row.productid,
                row.price,
                "a".repeat(row.plain),
                row.random
            ));
        }
    }
}

/// How an INSERT's values are written.
#[derive(Clone, Copy)]
enum Form {
    /// `('…',1,2,3,4.00,'…'),\n(…)`: a multi-row INSERT's literals.
    Literal,
    /// `'…',1,2,3,4,'…',…`: EXECUTE's parameters, all rows in one list.
    Parameters,
}

/// Now as `YYYY-MM-DD hh:mm:ss` in UTC (iibench.py stamps rows with local time).
pub fn timestamp_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    UtcTime::from_unix(seconds as i64).second_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(base64(b"any carnal pleas"), "YW55IGNhcm5hbCBwbGVhcw==");
        assert_eq!(base64(b"any carnal pleasu"), "YW55IGNhcm5hbCBwbGVhc3U=");
        assert_eq!(base64(b"any carnal pleasur"), "YW55IGNhcm5hbCBwbGVhc3Vy");
    }

    #[test]
    fn rows_have_iibench_s_shape() {
        let shape = DataShape {
            length_min: 10,
            length_max: 20,
            ..DataShape::default()
        };
        let mut maker = RowMaker::new(7, shape.clone(), random_text(7));
        let text = maker.insert("pi1", 200, "2026-11-29 00:00:00");
        let rows: Vec<&str> = text
            .strip_prefix("insert into pi1 (dateandtime,cashregisterid,customerid,productid,price,data) values ")
            .unwrap()
            .split(",\n")
            .collect();
        assert_eq!(rows.len(), 200);
        for row in rows {
            let fields: Vec<&str> = row
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .collect();
            assert_eq!(fields[0], "'2026-11-29 00:00:00'");
            assert!(fields[1].parse::<u64>().unwrap() < 1000);
            assert!(fields[2].parse::<u64>().unwrap() < 100_000);
            assert!(fields[3].parse::<u64>().unwrap() < 10_000);
            assert!(fields[4].ends_with(".00"));
            let data = fields[5].trim_matches('\'');
            assert!((10..=20).contains(&data.len()), "{data}");
            // Half the column times 0.75 is random, the rest 'a's.
            let random = (data.len() as f64 * 0.75 * 0.5) as usize;
            assert!(data[..data.len() - random].bytes().all(|b| b == b'a'));
        }
    }
}
