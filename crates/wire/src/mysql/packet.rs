//! The MySQL client protocol's framing and field encodings: a 3-byte length and a sequence
//! number before every packet, length-encoded integers and strings inside.

use bytes::{BufMut, BytesMut};

/// A payload this long continues in the next packet.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Appends one packet (or several, for a payload of 16 MiB or more) to `out`.
pub fn put_packet(out: &mut BytesMut, sequence: &mut u8, payload: &[u8]) {
    let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
    if payload.is_empty() {
        put_header(out, 0, sequence);
        return;
    }
    while let Some(chunk) = chunks.next() {
        put_header(out, chunk.len(), sequence);
        out.put_slice(chunk);
        // A payload of an exact multiple of the maximum ends with an empty packet.
        if chunks.peek().is_none() && chunk.len() == MAX_PAYLOAD {
            put_header(out, 0, sequence);
        }
    }
}

fn put_header(out: &mut BytesMut, length: usize, sequence: &mut u8) {
    out.put_uint_le(length as u64, 3);
    out.put_u8(*sequence);
    *sequence = sequence.wrapping_add(1);
}

/// Writes a length-encoded integer.
pub fn put_lenenc_int(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=250 => out.push(value as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(value as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

pub fn put_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads fields off the front of a payload; every read fails cleanly on a short payload.
pub struct Reader<'a> {
    pub rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(payload: &'a [u8]) -> Reader<'a> {
        Reader { rest: payload }
    }

    pub fn bytes(&mut self, count: usize) -> Option<&'a [u8]> {
        if self.rest.len() < count {
            return None;
        }
        let (taken, rest) = self.rest.split_at(count);
        self.rest = rest;
        Some(taken)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.bytes(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("bytes(8) gives eight bytes")))
    }

    /// A string up to (and without) its terminating NUL; the rest of the payload if none.
    pub fn null_terminated(&mut self) -> &'a [u8] {
        let end = self
            .rest
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.rest.len());
        let taken = &self.rest[..end];
        self.rest = &self.rest[(end + 1).min(self.rest.len())..];
        taken
    }

    /// A length-encoded integer; `Some(None)` for the NULL marker (0xFB) of text rows.
    pub fn lenenc_int(&mut self) -> Option<Option<u64>> {
        let first = self.u8()?;
        Some(Some(match first {
            0..=250 => first as u64,
            0xFB => return Some(None),
            0xFC => self.u16()? as u64,
            0xFD => {
                let b = self.bytes(3)?;
                u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64
            }
            0xFE => self.u64()?,
            _ => return None,
        }))
    }

    /// A length-encoded string; `Some(None)` for NULL.
    pub fn lenenc_bytes(&mut self) -> Option<Option<&'a [u8]>> {
        match self.lenenc_int()? {
            None => Some(None),
            Some(length) => self.bytes(usize::try_from(length).ok()?).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_integers_round_trip_at_every_width() {
        for value in [
            0,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc_int(&mut out, value);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.lenenc_int(), Some(Some(value)), "{value}");
            assert!(reader.rest.is_empty());
        }
        assert_eq!(Reader::new(&[0xFB]).lenenc_int(), Some(None));
        assert_eq!(Reader::new(&[0xFC, 1]).lenenc_int(), None);
    }

    #[test]
    fn packets_carry_length_and_sequence() {
        let mut out = BytesMut::new();
        let mut sequence = 0;
        put_packet(&mut out, &mut sequence, b"\x03SELECT 1");
        assert_eq!(&out[..4], &[9, 0, 0, 0]);
        assert_eq!(sequence, 1);
        let mut big = BytesMut::new();
        let mut sequence = 0;
        put_packet(&mut big, &mut sequence, &vec![0; MAX_PAYLOAD]);
        // A full packet, then the empty one that ends the payload.
        assert_eq!(big.len(), 4 + MAX_PAYLOAD + 4);
        assert_eq!(sequence, 2);
    }

    #[test]
    fn null_terminated_strings_stop_at_nul() {
        let mut reader = Reader::new(b"10.11.6-MariaDB\0rest");
        assert_eq!(reader.null_terminated(), b"10.11.6-MariaDB");
        assert_eq!(reader.rest, b"rest");
        assert_eq!(reader.null_terminated(), b"rest");
        assert!(reader.rest.is_empty());
    }
}
