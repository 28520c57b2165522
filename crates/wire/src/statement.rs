//! One statement's reply taken in place from the connection's read buffer, for a client that
//! keeps every row of what it runs and reads them later (sysbench's Lua API, as libpq keeps a
//! PGresult). The general reply (`pg::ReplyAssembler`) splits each message off the buffer as a
//! shared `Bytes` and gathers column names and per-query results; here a message is looked at
//! where it lies, the rows are copied once into the reply's own buffer (reused from one
//! statement to the next), and nothing else is allocated: on sysbench's point select this
//! halved the client's user CPU spent reading a reply.

use bytes::{Buf, BytesMut};
use postgres_protocol::message::backend::Message;

use crate::reply::{ConnError, DbError, RawRows};

/// pgbench's words for a script statement that starts a COPY.
pub(crate) const COPY_UNSUPPORTED: &str = "COPY is not supported in pgbench, aborting";

/// The largest message stampede accepts from a server: libpq's limit for any message (a row of
/// 1 GB values is still below it). A length field beyond it is a broken or hostile server, and
/// must not make the client reserve that much memory.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1 << 30;

/// A message of type `kind` whose length field says more than `MAX_MESSAGE_BYTES`.
pub(crate) fn message_too_long(kind: u8, length: usize) -> ConnError {
    ConnError::Protocol(format!(
        "the server sent a message of {length} bytes (type '{}'), more than the {MAX_MESSAGE_BYTES} a message may have",
        char::from(kind).escape_default()
    ))
}

/// The rows an INSERT, UPDATE or DELETE changed, from its CommandComplete tag ("INSERT 0 5",
/// "UPDATE 3"); 0 for the others (a SELECT's rows are counted as they arrive).
fn changed_rows(tag: &str) -> u64 {
    let mut words = tag.split(' ');
    match words.next() {
        Some("INSERT" | "UPDATE" | "DELETE" | "MERGE") => {
            words.next_back().and_then(|n| n.parse().ok()).unwrap_or(0)
        }
        _ => 0,
    }
}

/// What a statement (or a simple query's statements) brought back; the counts are the last
/// statement's, as libpq's PQexec returns the last result, except `affected`, summed over all.
#[derive(Debug, Default)]
pub struct StatementReply {
    /// The first error the server sent.
    pub error: Option<DbError>,
    /// The last result's columns (its RowDescription's count; 0 for a statement without rows).
    pub fields: usize,
    /// The last result's rows as sent.
    pub rows: RawRows,
    /// Rows changed by INSERT, UPDATE, DELETE and MERGE over every statement.
    pub affected: u64,
    /// ReadyForQuery's status: b'I' idle, b'T' in a block, b'E' failed block.
    pub transaction_status: u8,
    /// A result ended (CommandComplete or EmptyQueryResponse): the next one replaces it.
    result_ended: bool,
    copy_out_seen: bool,
}

/// How far the reply got with the bytes at hand.
pub enum Progress {
    /// More bytes are needed.
    More,
    /// ReadyForQuery came: the reply is whole.
    Done,
    /// A COPY FROM STDIN began: the caller fails it, as the general reply does.
    CopyIn,
}

impl StatementReply {
    /// Empties the reply for the next statement, keeping its rows' buffer.
    pub fn clear(&mut self) {
        self.error = None;
        self.fields = 0;
        self.rows.clear();
        self.affected = 0;
        self.transaction_status = 0;
        self.result_ended = false;
        self.copy_out_seen = false;
    }

    /// Consumes the whole messages at the front of `buffer`, up to and including
    /// ReadyForQuery; a partial message stays for the next read.
    pub fn take_messages(&mut self, buffer: &mut BytesMut) -> Result<Progress, ConnError> {
        loop {
            let Some(header) = buffer.get(..5) else {
                return Ok(Progress::More);
            };
            let kind = header[0];
            let length = u32::from_be_bytes(header[1..5].try_into().expect("a slice of four bytes"))
                as usize;
            if length > MAX_MESSAGE_BYTES {
                return Err(message_too_long(kind, length));
            }
            if length < 4 {
                return Err(ConnError::Protocol(format!(
                    "invalid message length {length} (type '{}')",
                    char::from(kind).escape_default()
                )));
            }
            if buffer.len() < 1 + length {
                buffer.reserve(1 + length - buffer.len());
                return Ok(Progress::More);
            }
            let step = self.accept(kind, &buffer[..1 + length])?;
            buffer.advance(1 + length);
            match step {
                Progress::More => {}
                done => return Ok(done),
            }
        }
    }

    /// One message, `whole` with its type and length.
    fn accept(&mut self, kind: u8, whole: &[u8]) -> Result<Progress, ConnError> {
        let body = &whole[5..];
        if matches!(kind, b'T' | b'D' | b'C' | b'I') && self.result_ended {
            self.fields = 0;
            self.rows.clear();
            self.result_ended = false;
        }
        match kind {
            b'T' => self.fields = usize::from(u16::from_be_bytes(field_count(body)?)),
            b'D' => {
                let values = usize::from(u16::from_be_bytes(field_count(body)?));
                self.fields = self.fields.max(values);
                self.rows.push(&body[2..]);
            }
            b'C' => {
                let tag = body.strip_suffix(&[0]).unwrap_or(body);
                self.affected += changed_rows(&String::from_utf8_lossy(tag));
                self.result_ended = true;
            }
            b'I' => self.result_ended = true,
            b'E' if self.error.is_none() => {
                let mut copy = BytesMut::from(whole);
                if let Some(Message::ErrorResponse(error)) = Message::parse(&mut copy)? {
                    self.error = Some(DbError::from_body(&error));
                }
            }
            b'G' => return Ok(Progress::CopyIn),
            b'H' => self.copy_out_seen = true,
            b'Z' if self.copy_out_seen => return Err(ConnError::Unsupported(COPY_UNSUPPORTED)),
            b'Z' => {
                self.transaction_status = body.first().copied().unwrap_or(b'I');
                return Ok(Progress::Done);
            }
            // Parse/Bind/Close complete, notices, parameter status, notifications, COPY data.
            _ => {}
        }
        Ok(Progress::More)
    }
}

fn field_count(body: &[u8]) -> Result<[u8; 2], ConnError> {
    body.get(..2)
        .map(|count| [count[0], count[1]])
        .ok_or_else(|| ConnError::Protocol("a row message without its value count".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn row(values: &[Option<&str>]) -> Vec<u8> {
        let mut body = (values.len() as u16).to_be_bytes().to_vec();
        for value in values {
            match value {
                Some(text) => {
                    body.extend_from_slice(&(text.len() as i32).to_be_bytes());
                    body.extend_from_slice(text.as_bytes());
                }
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        message(b'D', &body)
    }

    /// Every cut of the bytes in two reads gives the same reply.
    fn read_in_two(bytes: &[u8]) -> Vec<StatementReply> {
        (0..=bytes.len())
            .map(|cut| {
                let mut reply = StatementReply::default();
                let mut buffer = BytesMut::from(&bytes[..cut]);
                let first = reply.take_messages(&mut buffer).unwrap();
                assert!(matches!(first, Progress::More) || cut == bytes.len());
                buffer.extend_from_slice(&bytes[cut..]);
                assert!(
                    matches!(reply.take_messages(&mut buffer).unwrap(), Progress::Done)
                        || matches!(first, Progress::Done)
                );
                assert!(buffer.is_empty());
                reply
            })
            .collect()
    }

    #[test]
    fn a_select_keeps_its_rows_and_columns() {
        let mut bytes = message(b'2', &[]);
        bytes.extend(message(b'T', &[0, 2, 1, 2, 3]));
        bytes.extend(row(&[Some("1"), None]));
        bytes.extend(row(&[Some("22"), Some("x")]));
        bytes.extend(message(b'C', b"SELECT 2\0"));
        bytes.extend(message(b'Z', b"I"));
        for reply in read_in_two(&bytes) {
            assert_eq!((reply.fields, reply.rows.len(), reply.affected), (2, 2, 0));
            assert_eq!(reply.rows.row(0), Some(vec![Some("1".into()), None]));
            assert_eq!(
                reply.rows.row(1),
                Some(vec![Some("22".into()), Some("x".into())])
            );
            assert_eq!(reply.transaction_status, b'I');
        }
    }

    #[test]
    fn the_last_statements_result_counts_and_changes_add_up() {
        let mut bytes = message(b'T', &[0, 1]);
        bytes.extend(row(&[Some("1")]));
        bytes.extend(message(b'C', b"SELECT 1\0"));
        bytes.extend(message(b'C', b"UPDATE 3\0"));
        bytes.extend(message(b'C', b"INSERT 0 2\0"));
        bytes.extend(message(b'Z', b"T"));
        for reply in read_in_two(&bytes) {
            assert_eq!((reply.fields, reply.rows.len(), reply.affected), (0, 0, 5));
            assert_eq!(reply.transaction_status, b'T');
        }
    }

    #[test]
    fn an_error_is_kept_and_a_bad_length_refused() {
        let mut bytes = message(b'E', b"SERROR\0C42P01\0Mno such table\0\0");
        bytes.extend(message(b'Z', b"I"));
        for reply in read_in_two(&bytes) {
            let error = reply.error.expect("the error");
            assert_eq!(
                (error.code.as_str(), error.message.as_str()),
                ("42P01", "no such table")
            );
        }
        let mut reply = StatementReply::default();
        let mut short = BytesMut::from(&[b'C', 0, 0, 0, 2][..]);
        assert!(reply.take_messages(&mut short).is_err());
    }
}
