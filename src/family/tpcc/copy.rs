//! Rows in COPY's binary format, for the types of the TPC-C tables: the server reads them
//! without parsing text (numeric in base-10000 digits, timestamps in microseconds).

use bytes::{BufMut, Bytes, BytesMut};

use super::rows::RowWriter;

/// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01 00:00:00 UTC.
const POSTGRES_EPOCH_US: i64 = 946_684_800_000_000;

pub struct BinaryRows {
    buffer: BytesMut,
}

impl Default for BinaryRows {
    fn default() -> Self {
        Self::new()
    }
}

impl BinaryRows {
    /// A buffer that starts with COPY's binary header.
    pub fn new() -> BinaryRows {
        let mut buffer = BytesMut::with_capacity(1 << 20);
        buffer.put_slice(b"PGCOPY\n\xff\r\n\0");
        buffer.put_i32(0);
        buffer.put_i32(0);
        BinaryRows { buffer }
    }

    pub fn row(&mut self, columns: i16) {
        self.buffer.put_i16(columns);
    }

    /// COPY's end-of-data marker.
    pub fn finish(&mut self) {
        self.buffer.put_i16(-1);
    }

    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// What was written since the last call.
    pub fn take(&mut self) -> Bytes {
        self.buffer.split().freeze()
    }
}

impl RowWriter for BinaryRows {
    fn int2(&mut self, value: i64) {
        self.buffer.put_i32(2);
        self.buffer.put_i16(value as i16);
    }

    fn int4(&mut self, value: i64) {
        self.buffer.put_i32(4);
        self.buffer.put_i32(value as i32);
    }

    fn text(&mut self, value: &str) {
        self.buffer.put_i32(value.len() as i32);
        self.buffer.put_slice(value.as_bytes());
    }

    fn text_with(&mut self, length: usize, fill: impl FnOnce(&mut [u8])) {
        self.buffer.put_i32(length as i32);
        let start = self.buffer.len();
        self.buffer.resize(start + length, 0);
        fill(&mut self.buffer[start..]);
    }

    fn null(&mut self) {
        self.buffer.put_i32(-1);
    }

    fn timestamptz(&mut self, unix_us: i64) {
        self.buffer.put_i32(8);
        self.buffer.put_i64(unix_us - POSTGRES_EPOCH_US);
    }

    fn numeric(&mut self, unscaled: i64, scale: u32) {
        let (weight, digits) = base_10000(unscaled.unsigned_abs(), scale);
        self.buffer.put_i32(8 + 2 * digits.len() as i32);
        self.buffer.put_i16(digits.len() as i16);
        self.buffer.put_i16(weight);
        self.buffer.put_u16(if unscaled < 0 { 0x4000 } else { 0 });
        self.buffer.put_i16(scale as i16);
        for digit in digits {
            self.buffer.put_i16(digit);
        }
    }
}

/// The base-10000 digits of `magnitude` × 10^-scale with the weight of the first, without
/// leading or trailing zero digits (as PostgreSQL stores numerics).
fn base_10000(magnitude: u64, scale: u32) -> (i16, Vec<i16>) {
    assert!(scale <= 4, "scales above 4 are not needed by TPC-C");
    let integer = magnitude / 10u64.pow(scale);
    let fraction = (magnitude % 10u64.pow(scale)) * 10u64.pow(4 - scale);
    let mut groups = Vec::new();
    let mut rest = integer;
    while rest > 0 {
        groups.push((rest % 10_000) as i16);
        rest /= 10_000;
    }
    groups.reverse();
    let mut weight = groups.len() as i16 - 1;
    groups.push(fraction as i16);
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    (weight, groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_split_into_base_10000_digits() {
        assert_eq!(base_10000(30_000_000, 2), (1, vec![30]));
        assert_eq!(base_10000(1234, 2), (0, vec![12, 3400]));
        assert_eq!(base_10000(5, 4), (-1, vec![5]));
        assert_eq!(base_10000(1000, 2), (0, vec![10]));
        assert_eq!(base_10000(0, 2), (0, vec![]));
        assert_eq!(base_10000(123_456_789, 2), (1, vec![123, 4567, 8900]));
    }
}
