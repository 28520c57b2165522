//! sysbench's `bulk_insert` buffer (db_driver.c `db_bulk_insert_next`): rows `(n,n)` joined by
//! commas after `INSERT INTO sbtestN VALUES`, sent as one query when the next row would not
//! fit in 512 KiB (the terminating NUL included).

use crate::error::EvalError;

/// sysbench's BULK_PACKET_SIZE.
const BULK_PACKET_SIZE: usize = 512 * 1024;

/// Rows one flush may carry: far above what fits, so a bad argument cannot build a huge text.
const MOST_ROWS: i64 = BULK_PACKET_SIZE as i64 / 4;

fn digits(n: i64) -> usize {
    n.unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1)
        + usize::from(n < 0)
}

/// `(n,n)`'s length.
fn row_len(n: i64) -> usize {
    3 + 2 * digits(n)
}

/// How many rows from `first` on one buffer for table `sbtest<table>` holds.
pub fn rows_fitting(first: i64, table: i64) -> i64 {
    let header = "INSERT INTO sbtest".len() + digits(table) + " VALUES".len();
    let mut used = header;
    let mut rows = 0;
    loop {
        let row = first + rows;
        let comma = usize::from(rows > 0);
        if used + row_len(row) + 1 + comma > BULK_PACKET_SIZE {
            return rows;
        }
        used += row_len(row) + comma;
        rows += 1;
    }
}

/// The VALUES list of rows `first..=last`.
pub fn values(first: i64, last: i64) -> Result<String, EvalError> {
    if last < first || last - first >= MOST_ROWS {
        return Err(EvalError::Argument(format!(
            "sb_bulk_values: {first}..{last} is not a range of 1 to {MOST_ROWS} rows"
        )));
    }
    let mut text = String::with_capacity((last - first + 1) as usize * (row_len(last) + 1));
    for n in first..=last {
        if n > first {
            text.push(',');
        }
        text.push_str(&format!("({n},{n})"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_fills_to_sysbenchs_packet_size() {
        let rows = rows_fitting(1, 1);
        let header = "INSERT INTO sbtest1 VALUES".len();
        let query = header + values(1, rows).unwrap().len();
        // The NUL fits, the next row and its comma would not.
        assert!(query < BULK_PACKET_SIZE);
        assert!(query + 1 + row_len(rows + 1) + 1 > BULK_PACKET_SIZE);
        assert_eq!(values(9, 11).unwrap(), "(9,9),(10,10),(11,11)");
        assert!(values(5, 4).is_err());
        assert!(rows_fitting(1, 10) <= rows);
    }
}
