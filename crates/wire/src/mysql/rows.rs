//! Column definitions, text and binary rows, and the values bound to a prepared statement.

use super::packet::Reader;
use stampede_script::Value;

/// A text result: column names and every row (None = NULL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// Keep the rows as the server sent them (`raw`), turned into values only when read
    /// (`row`): for scripts that rarely read theirs.
    pub lazy: bool,
    raw: Vec<u8>,
    ends: Vec<usize>,
    kinds: Vec<ColumnKind>,
    binary: bool,
}

impl Rows {
    /// Rows kept as sent (`lazy`).
    pub fn lazy() -> Rows {
        Rows {
            lazy: true,
            ..Rows::default()
        }
    }

    /// A new result's, keeping the choice of laziness and the buffers.
    pub(crate) fn restart(&mut self) {
        self.columns.clear();
        self.rows.clear();
        self.raw.clear();
        self.ends.clear();
        self.kinds.clear();
        self.binary = false;
    }

    /// The result's columns (also when their names were not kept).
    pub fn fields(&self) -> usize {
        self.kinds.len().max(self.columns.len())
    }

    pub(crate) fn describe(&mut self, columns: Vec<String>, kinds: &[ColumnKind], binary: bool) {
        self.columns = columns;
        self.kinds = kinds.to_vec();
        self.binary = binary;
    }

    pub(crate) fn push_raw(&mut self, packet: &[u8]) {
        self.raw.extend_from_slice(packet);
        self.ends.push(self.raw.len());
    }

    pub fn len(&self) -> usize {
        if self.lazy {
            self.ends.len()
        } else {
            self.rows.len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `index`'s values, None past the last (or for a malformed one).
    pub fn row(&self, index: usize) -> Option<Vec<Option<String>>> {
        if !self.lazy {
            return self.rows.get(index).cloned();
        }
        let end = *self.ends.get(index)?;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        let packet = &self.raw[start..end];
        if self.binary {
            binary_row(packet, &self.kinds)
        } else {
            text_row(packet, self.kinds.len())
        }
    }
}

const TYPE_TINY: u8 = 0x01;
const TYPE_SHORT: u8 = 0x02;
const TYPE_LONG: u8 = 0x03;
const TYPE_FLOAT: u8 = 0x04;
const TYPE_DOUBLE: u8 = 0x05;
const TYPE_NULL: u8 = 0x06;
const TYPE_TIMESTAMP: u8 = 0x07;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_INT24: u8 = 0x09;
const TYPE_DATE: u8 = 0x0A;
const TYPE_TIME: u8 = 0x0B;
const TYPE_DATETIME: u8 = 0x0C;
const TYPE_YEAR: u8 = 0x0D;
const TYPE_STRING: u8 = 0xFE;
const UNSIGNED_FLAG: u16 = 0x20;

/// What a binary row's decoding needs of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnKind {
    pub type_code: u8,
    pub unsigned: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
}

/// A Protocol::ColumnDefinition41 packet.
pub fn parse_column(packet: &[u8]) -> Option<Column> {
    let mut reader = Reader::new(packet);
    for _ in 0..4 {
        reader.lenenc_bytes()?; // catalog, schema, table, original table
    }
    let name = String::from_utf8_lossy(reader.lenenc_bytes()??).into_owned();
    reader.lenenc_bytes()?; // original name
    reader.lenenc_int()?; // length of the fixed fields
    let _charset = reader.u16()?;
    let _length = reader.u32()?;
    let type_code = reader.u8()?;
    let flags = reader.u16()?;
    Some(Column {
        name,
        kind: ColumnKind {
            type_code,
            unsigned: flags & UNSIGNED_FLAG != 0,
        },
    })
}

/// A text-protocol row: each value a length-encoded string or the NULL marker.
pub fn text_row(packet: &[u8], columns: usize) -> Option<Vec<Option<String>>> {
    let mut reader = Reader::new(packet);
    (0..columns)
        .map(|_| {
            reader
                .lenenc_bytes()
                .map(|value| value.map(|v| String::from_utf8_lossy(v).into_owned()))
        })
        .collect()
}

/// A binary-protocol row: a header byte, a NULL bitmap offset by two bits, then each non-NULL
/// value in its type's encoding, turned into the text the text protocol would have sent.
pub fn binary_row(packet: &[u8], columns: &[ColumnKind]) -> Option<Vec<Option<String>>> {
    let mut reader = Reader::new(packet);
    reader.u8()?;
    let bitmap = reader.bytes((columns.len() + 7 + 2) / 8)?;
    columns
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            let bit = i + 2;
            if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
                return Some(None);
            }
            binary_value(&mut reader, *kind).map(Some)
        })
        .collect()
}

fn binary_value(reader: &mut Reader, kind: ColumnKind) -> Option<String> {
    let integer = |value: i64, unsigned_value: u64| {
        if kind.unsigned {
            unsigned_value.to_string()
        } else {
            value.to_string()
        }
    };
    Some(match kind.type_code {
        TYPE_TINY => {
            let b = reader.u8()?;
            integer(b as i8 as i64, b as u64)
        }
        TYPE_SHORT | TYPE_YEAR => {
            let v = reader.u16()?;
            integer(v as i16 as i64, v as u64)
        }
        TYPE_LONG | TYPE_INT24 => {
            let v = reader.u32()?;
            integer(v as i32 as i64, v as u64)
        }
        TYPE_LONGLONG => {
            let v = reader.u64()?;
            integer(v as i64, v)
        }
        TYPE_FLOAT => f32::from_le_bytes(reader.bytes(4)?.try_into().ok()?).to_string(),
        TYPE_DOUBLE => f64::from_le_bytes(reader.bytes(8)?.try_into().ok()?).to_string(),
        TYPE_DATE | TYPE_DATETIME | TYPE_TIMESTAMP => date_time(reader, kind.type_code)?,
        TYPE_TIME => time_of_day(reader)?,
        _ => String::from_utf8_lossy(reader.lenenc_bytes()??).into_owned(),
    })
}

/// DATE, DATETIME, TIMESTAMP: a length (0, 4, 7 or 11), then year, month, day, hour, minute,
/// second, microseconds.
fn date_time(reader: &mut Reader, type_code: u8) -> Option<String> {
    let length = reader.u8()? as usize;
    let body = reader.bytes(length)?;
    let mut fields = Reader::new(body);
    let year = fields.u16().unwrap_or(0);
    let month = fields.u8().unwrap_or(0);
    let day = fields.u8().unwrap_or(0);
    let date = format!("{year:04}-{month:02}-{day:02}");
    if type_code == TYPE_DATE {
        return Some(date);
    }
    let (hour, minute, second) = (
        fields.u8().unwrap_or(0),
        fields.u8().unwrap_or(0),
        fields.u8().unwrap_or(0),
    );
    let mut text = format!("{date} {hour:02}:{minute:02}:{second:02}");
    if let Some(micros) = fields.u32() {
        text.push_str(&format!(".{micros:06}"));
    }
    Some(text)
}

/// TIME: a length (0, 8 or 12), sign, days, hours, minutes, seconds, microseconds.
fn time_of_day(reader: &mut Reader) -> Option<String> {
    let length = reader.u8()? as usize;
    let body = reader.bytes(length)?;
    let mut fields = Reader::new(body);
    let negative = fields.u8().unwrap_or(0) == 1;
    // In u64: a server's days (at most 34 for MySQL's TIME range) cannot overflow the hours.
    let days = u64::from(fields.u32().unwrap_or(0));
    let hours = days * 24 + u64::from(fields.u8().unwrap_or(0));
    let (minute, second) = (fields.u8().unwrap_or(0), fields.u8().unwrap_or(0));
    let sign = if negative { "-" } else { "" };
    let mut text = format!("{sign}{hours:02}:{minute:02}:{second:02}");
    if let Some(micros) = fields.u32() {
        text.push_str(&format!(".{micros:06}"));
    }
    Some(text)
}

/// COM_STMT_EXECUTE's parameter block: NULL bitmap, "types follow", the types (only when they
/// differ from `last_types`, the ones the server has; updated), the values.
pub fn put_bound_values<'v>(
    payload: &mut Vec<u8>,
    values: impl ExactSizeIterator<Item = &'v Value> + Clone,
    last_types: &mut Vec<u8>,
) {
    let bitmap_start = payload.len();
    payload.resize(bitmap_start + values.len().div_ceil(8), 0);
    for (i, value) in values.clone().enumerate() {
        if matches!(value, Value::Null | Value::Unset) {
            payload[bitmap_start + i / 8] |= 1 << (i % 8);
        }
    }
    let types = values.clone().map(bound_type);
    if types.clone().eq(last_types.iter().copied()) {
        payload.push(0);
    } else {
        payload.push(1);
        last_types.clear();
        for type_code in types {
            payload.push(type_code);
            payload.push(0);
            last_types.push(type_code);
        }
    }
    for value in values {
        match value {
            Value::Null | Value::Unset => {}
            Value::Bool(b) => payload.push(*b as u8),
            Value::Int(i) => payload.extend_from_slice(&i.to_le_bytes()),
            Value::Double(d) => payload.extend_from_slice(&d.to_le_bytes()),
            Value::Text(text) => super::packet::put_lenenc_bytes(payload, text.as_bytes()),
        }
    }
}

fn bound_type(value: &Value) -> u8 {
    match value {
        Value::Null | Value::Unset => TYPE_NULL,
        Value::Bool(_) => TYPE_TINY,
        Value::Int(_) => TYPE_LONGLONG,
        Value::Double(_) => TYPE_DOUBLE,
        Value::Text(_) => TYPE_STRING,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn binary_rows_decode_nulls_integers_and_strings() {
        let kinds = [
            ColumnKind {
                type_code: TYPE_LONG,
                unsigned: false,
            },
            ColumnKind {
                type_code: TYPE_STRING,
                unsigned: false,
            },
            ColumnKind {
                type_code: TYPE_LONGLONG,
                unsigned: true,
            },
            ColumnKind {
                type_code: TYPE_DATETIME,
                unsigned: false,
            },
        ];
        let mut row = vec![0x00, 0b0000_1000]; // column 1 (bit 3) is NULL
        row.extend_from_slice(&(-5i32).to_le_bytes());
        row.extend_from_slice(&u64::MAX.to_le_bytes());
        row.extend_from_slice(&[7, 0xE8, 0x07, 11, 25, 13, 5, 9]);
        assert_eq!(
            binary_row(&row, &kinds).unwrap(),
            vec![
                Some("-5".to_string()),
                None,
                Some(u64::MAX.to_string()),
                Some("2024-11-25 13:05:09".to_string())
            ]
        );
    }

    /// TIME's days times 24 in u64: a (broken) server's 4-byte day count does not overflow
    /// (found by fuzz/mysql_reply).
    #[test]
    fn a_time_with_any_day_count_is_read() {
        let body = [8, 0, 0xff, 0xff, 0xff, 0xff, 23, 59, 58];
        assert_eq!(
            time_of_day(&mut Reader::new(&body)).as_deref(),
            Some("103079215103:59:58")
        );
        let minus_one_day = [8, 1, 1, 0, 0, 0, 2, 3, 4];
        assert_eq!(
            time_of_day(&mut Reader::new(&minus_one_day)).as_deref(),
            Some("-26:03:04")
        );
    }

    #[test]
    fn bound_values_mark_nulls_and_carry_their_types() {
        let text = Value::Text(Arc::new("ab".into()));
        let values = [Value::Int(7), Value::Null, text];
        let mut payload = Vec::new();
        let mut sent_types = Vec::new();
        put_bound_values(&mut payload, values.iter(), &mut sent_types);
        let mut expected = vec![0b010, 1, TYPE_LONGLONG, 0, TYPE_NULL, 0, TYPE_STRING, 0];
        expected.extend_from_slice(&7i64.to_le_bytes());
        expected.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(payload, expected);

        // The same types again: "types follow" is 0 and none are sent.
        payload.clear();
        put_bound_values(&mut payload, values.iter(), &mut sent_types);
        let mut expected = vec![0b010, 0];
        expected.extend_from_slice(&7i64.to_le_bytes());
        expected.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(payload, expected);

        // A value of another type: all of them again.
        let values = [
            Value::Int(7),
            Value::Int(8),
            Value::Text(Arc::new("ab".into())),
        ];
        payload.clear();
        put_bound_values(&mut payload, values.iter(), &mut sent_types);
        assert_eq!(
            &payload[..8],
            &[0, 1, TYPE_LONGLONG, 0, TYPE_LONGLONG, 0, TYPE_STRING, 0]
        );
        assert_eq!(sent_types, vec![TYPE_LONGLONG, TYPE_LONGLONG, TYPE_STRING]);
    }
}
