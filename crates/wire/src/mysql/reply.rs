//! A command's reply, parsed from what the socket has delivered so far: every complete packet
//! is consumed from the buffer at once, and the caller reads more only when a packet is cut
//! off. A point select's reply arrives in one read, so it is parsed without a single await
//! between its packets (an await per packet cost several hundred instructions).

use std::borrow::Cow;

use bytes::{Buf, BytesMut};

use super::packet::{Reader, MAX_PAYLOAD};
use super::rows::Rows;
use super::{end_status, malformed, ok_status, rows, server_error, LOCAL_INFILE_UNSUPPORTED};
use crate::reply::{ConnError, QueryResult, Reply};

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x8;

/// Where in a reply the next packet falls.
enum Phase {
    /// An OK, an error, or a result set's column count.
    Start,
    /// Column definitions still to come.
    Columns {
        left: u64,
    },
    /// The EOF packet after the column definitions (when EOF packets were not negotiated away).
    ColumnsEof,
    Rows,
}

/// How the server frames this connection's replies.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// Binary rows (an execute's) rather than text rows.
    pub binary: bool,
    /// No EOF packet after column definitions; an OK packet ends the rows.
    pub deprecates_eof: bool,
    /// MARIADB_CLIENT_CACHE_METADATA: a column count is followed by a "metadata follows" byte.
    pub metadata_flag: bool,
}

pub struct ReplyParser<'a> {
    capture: bool,
    format: Format,
    /// Control work: every row of the last result.
    all: Option<&'a mut Rows>,
    /// An execute's: the statement's columns as last described, replaced by a new
    /// description, and used when the server skips it.
    statement_columns: Option<&'a mut Vec<rows::Column>>,
    phase: Phase,
    reply: Reply,
    result: QueryResult,
    column_types: Vec<rows::ColumnKind>,
    /// The status flags of the last result that ended without an error.
    pub last_status: Option<u16>,
}

impl<'a> ReplyParser<'a> {
    pub fn new(
        capture: bool,
        format: Format,
        all: Option<&'a mut Rows>,
        statement_columns: Option<&'a mut Vec<rows::Column>>,
    ) -> ReplyParser<'a> {
        ReplyParser {
            capture,
            format,
            all,
            statement_columns,
            phase: Phase::Start,
            reply: Reply::default(),
            result: QueryResult::default(),
            column_types: Vec::new(),
            last_status: None,
        }
    }

    /// Consumes every complete packet in `buf`; true when the reply is complete. The buffer
    /// advances once, past all of them (a dbSTRESS transaction's replies hold some 40 packets).
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<bool, ConnError> {
        let mut consumed = 0;
        let outcome = loop {
            let Some((payload, length)) = peek_payload(&buf[consumed..]) else {
                break Ok(false);
            };
            match self.step(&payload) {
                Ok(done) => {
                    consumed += length;
                    if done {
                        break Ok(true);
                    }
                }
                Err(e) => break Err(e),
            }
        };
        buf.advance(consumed);
        outcome
    }

    pub fn into_reply(self) -> Reply {
        self.reply
    }

    /// One packet; true when it ends the reply.
    fn step(&mut self, packet: &[u8]) -> Result<bool, ConnError> {
        match self.phase {
            Phase::Start => self.start(packet),
            Phase::Columns { left } => {
                if self.capture || self.statement_columns.is_some() || self.all.is_some() {
                    let column = rows::parse_column(packet).ok_or_else(malformed)?;
                    if let Some(described) = self.statement_columns.as_deref_mut() {
                        described.push(column.clone());
                    }
                    if self.capture || self.all.is_some() {
                        self.column_types.push(column.kind);
                    }
                    if self.capture {
                        self.result.columns.push(column.name);
                    }
                }
                self.after_column(left - 1);
                Ok(false)
            }
            Phase::ColumnsEof => {
                self.phase = Phase::Rows;
                Ok(false)
            }
            Phase::Rows => self.row(packet),
        }
    }

    fn start(&mut self, packet: &[u8]) -> Result<bool, ConnError> {
        match packet.first() {
            Some(0x00) => {
                if self.capture {
                    self.reply.results.push(QueryResult::default());
                }
                let mut reader = Reader::new(&packet[1..]);
                self.reply.affected += reader.lenenc_int().flatten().unwrap_or(0);
                let status = ok_status(&packet[1..]).ok_or_else(malformed)?;
                Ok(self.result_ended(status))
            }
            Some(0xFF) => {
                self.reply.error = Some(server_error(packet));
                Ok(true)
            }
            Some(0xFB) => Err(ConnError::Unsupported(LOCAL_INFILE_UNSUPPORTED)),
            _ => {
                let mut reader = Reader::new(packet);
                let columns = reader.lenenc_int().flatten().ok_or_else(malformed)?;
                let described = !self.format.metadata_flag || reader.u8() != Some(0);
                self.result = QueryResult::default();
                self.column_types.clear();
                if let Some(all) = self.all.as_deref_mut() {
                    all.restart();
                }
                if described {
                    if let Some(statement_columns) = self.statement_columns.as_deref_mut() {
                        statement_columns.clear();
                    }
                    self.after_column(columns);
                } else {
                    self.reuse_statement_columns(columns)?;
                }
                Ok(false)
            }
        }
    }

    /// The server skipped the column definitions: they are the statement's last ones.
    fn reuse_statement_columns(&mut self, count: u64) -> Result<(), ConnError> {
        let known = self.statement_columns.as_deref().ok_or_else(malformed)?;
        if known.len() as u64 != count {
            return Err(malformed());
        }
        for column in known {
            if self.capture || self.all.is_some() {
                self.column_types.push(column.kind);
            }
            if self.capture {
                self.result.columns.push(column.name.clone());
            }
        }
        self.after_column(0);
        Ok(())
    }

    /// With `left` column definitions still to come, what comes next.
    fn after_column(&mut self, left: u64) {
        if left > 0 {
            self.phase = Phase::Columns { left };
            return;
        }
        if let Some(all) = self.all.as_deref_mut() {
            let columns = self.result.columns.clone();
            all.describe(columns, &self.column_types, self.format.binary);
        }
        self.phase = if self.format.deprecates_eof {
            Phase::Rows
        } else {
            Phase::ColumnsEof
        };
    }

    fn row(&mut self, row: &[u8]) -> Result<bool, ConnError> {
        match row.first() {
            Some(0xFE) if row.len() < MAX_PAYLOAD => {
                let status = end_status(row, self.format.deprecates_eof).ok_or_else(malformed)?;
                self.keep_result();
                return Ok(self.result_ended(status));
            }
            Some(0xFF) => {
                self.keep_result();
                self.reply.error = Some(server_error(row));
                return Ok(true);
            }
            _ => {}
        }
        self.result.rows += 1;
        if let Some(all) = self.all.as_deref_mut().filter(|all| all.lazy) {
            all.push_raw(row);
            return Ok(false);
        }
        if self.capture {
            let values = if self.format.binary {
                rows::binary_row(row, &self.column_types)
            } else {
                rows::text_row(row, self.column_types.len())
            };
            let values = values.ok_or_else(malformed)?;
            match self.all.as_deref_mut() {
                Some(all) => all.rows.push(values),
                None => self.result.last_row = Some(values),
            }
        }
        Ok(false)
    }

    /// A result set is over: its rows count, and it is kept for `\gset` and control work.
    fn keep_result(&mut self) {
        self.reply.rows += self.result.rows;
        if self.capture {
            self.reply.results.push(std::mem::take(&mut self.result));
        }
    }

    /// True unless the server says more results follow (a CALL, a multi-statement string).
    fn result_ended(&mut self, status: u16) -> bool {
        self.last_status = Some(status);
        self.phase = Phase::Start;
        status & SERVER_MORE_RESULTS_EXISTS == 0
    }
}

/// The payload at the front of `buf` and the bytes it takes there, once all of it has
/// arrived: in place for one packet, joined for a payload of 16 MiB or more.
fn peek_payload(buf: &[u8]) -> Option<(Cow<'_, [u8]>, usize)> {
    let (length, first) = packet_at(buf, 0)?;
    if length < MAX_PAYLOAD {
        return Some((Cow::Borrowed(first), 4 + length));
    }
    let mut joined = first.to_vec();
    let mut offset = 4 + length;
    loop {
        let (length, part) = packet_at(buf, offset)?;
        joined.extend_from_slice(part);
        offset += 4 + length;
        if length < MAX_PAYLOAD {
            return Some((Cow::Owned(joined), offset));
        }
    }
}

/// The length and payload of the packet at `offset`, if all of it is in `buf`.
fn packet_at(buf: &[u8], offset: usize) -> Option<(usize, &[u8])> {
    let header = buf.get(offset..offset + 4)?;
    let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let payload = buf.get(offset + 4..offset + 4 + length)?;
    Some((length, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql::packet::put_packet;

    fn framed(payloads: &[&[u8]]) -> BytesMut {
        let mut out = BytesMut::new();
        let mut sequence = 1;
        payloads
            .iter()
            .for_each(|p| put_packet(&mut out, &mut sequence, p));
        out
    }

    /// A one-column text result with one row, ended by an OK packet (DEPRECATE_EOF), fed a
    /// byte at a time: nothing is consumed twice, nothing is lost at the cuts.
    #[test]
    fn a_reply_cut_anywhere_parses_the_same() {
        let column =
            b"\x03def\x00\x00\x00\x01c\x01c\x0c\x2d\x00\x78\x00\x00\x00\xfe\x00\x00\x00\x00\x00";
        let whole = framed(&[
            b"\x01",
            column,
            b"\x05hello",
            b"\xfe\x00\x00\x02\x00\x00\x00",
        ]);
        let text = Format {
            binary: false,
            deprecates_eof: true,
            metadata_flag: false,
        };
        let mut parser = ReplyParser::new(true, text, None, None);
        let mut buf = BytesMut::new();
        let mut done = false;
        for byte in whole.iter() {
            assert!(!done, "finished before the last byte");
            buf.extend_from_slice(&[*byte]);
            done = parser.parse(&mut buf).unwrap();
        }
        assert!(done && buf.is_empty());
        assert_eq!(parser.last_status, Some(0x2));
        let reply = parser.into_reply();
        assert_eq!(reply.rows, 1);
        assert_eq!(reply.results[0].columns, vec!["c".to_string()]);
        assert_eq!(
            reply.results[0].last_row,
            Some(vec![Some("hello".to_string())])
        );
    }

    /// MARIADB_CLIENT_CACHE_METADATA: an execute whose column count says "metadata follows"
    /// replaces the statement's columns; one that says not reads its rows with them.
    #[test]
    fn skipped_metadata_reuses_the_statements_last_columns() {
        let binary = Format {
            binary: true,
            deprecates_eof: true,
            metadata_flag: true,
        };
        let column = |name: &[u8]| {
            let mut packet = b"\x03def\x00\x00\x00".to_vec();
            packet.push(name.len() as u8);
            packet.extend_from_slice(name);
            packet.extend_from_slice(b"\x01n\x0c\x3f\x00\x14\x00\x00\x00\x08\x00\x00\x00\x00\x00");
            packet
        };
        let row = |value: i64| {
            let mut packet = vec![0x00, 0x00];
            packet.extend_from_slice(&value.to_le_bytes());
            packet
        };
        let end: &[u8] = b"\xfe\x00\x00\x02\x00\x00\x00";
        let parse = |packets: &[&[u8]], known: &mut Vec<rows::Column>| {
            let mut parser = ReplyParser::new(true, binary, None, Some(known));
            assert!(parser.parse(&mut framed(packets)).unwrap());
            parser.into_reply()
        };
        let mut known = Vec::new();
        let reply = parse(&[b"\x01\x01", &column(b"a"), &row(5), end], &mut known);
        assert_eq!(reply.results[0].columns, vec!["a".to_string()]);
        assert_eq!(known.len(), 1);
        let reply = parse(&[b"\x01\x00", &row(6), end], &mut known);
        assert_eq!(reply.results[0].columns, vec!["a".to_string()]);
        assert_eq!(reply.results[0].last_row, Some(vec![Some("6".to_string())]));
        // A new description (the table changed) replaces the old one.
        let reply = parse(&[b"\x01\x01", &column(b"b"), &row(7), end], &mut known);
        assert_eq!(reply.results[0].columns, vec!["b".to_string()]);
        assert_eq!(known[0].name, "b");
        // A skipped description that does not match what is known is refused.
        let mut parser = ReplyParser::new(true, binary, None, Some(&mut known));
        assert!(parser.parse(&mut framed(&[b"\x02\x00"])).is_err());
    }

    #[test]
    fn a_payload_over_16_mib_is_joined() {
        let big = vec![b'x'; MAX_PAYLOAD + 10];
        let buf = framed(&[&big]);
        let (payload, consumed) = peek_payload(&buf).unwrap();
        assert_eq!(payload.len(), MAX_PAYLOAD + 10);
        assert_eq!(consumed, buf.len());
        assert!(peek_payload(&buf[..buf.len() - 1]).is_none());
    }
}
