//! What a statement brings back on either engine: the rows, the captured results, the
//! server's error, and how a failed transaction is counted (pgbench's classes). Which error
//! counts how is `classify.rs`'s question.

use std::io;

/// pgbench's classes of failed transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    Serialization,
    Deadlock,
    Other,
}

impl FailureKind {
    /// PostgreSQL's classes: 40001 serialization failure, 40P01 deadlock.
    pub fn of_sqlstate(sqlstate: &str) -> FailureKind {
        match sqlstate {
            "40001" => FailureKind::Serialization,
            "40P01" => FailureKind::Deadlock,
            _ => FailureKind::Other,
        }
    }

    /// The word pgbench's `-l --failures-detailed` log writes in the latency column.
    pub fn log_name(self) -> &'static str {
        match self {
            FailureKind::Serialization => "serialization",
            FailureKind::Deadlock => "deadlock",
            FailureKind::Other => "other",
        }
    }
}

/// An error the server reported (`ErrorResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    pub severity: String,
    pub code: String,
    pub message: String,
    /// The fields libpq prints after the message at its default verbosity, in its order:
    /// DETAIL, HINT, QUERY (an internal query) and CONTEXT.
    pub details: Vec<(&'static str, String)>,
    /// Where in the statement (1-based, in characters) the error lies, if the server said.
    pub position: Option<u32>,
    /// The same within an internal query (the QUERY field), e.g. a PL/pgSQL statement.
    pub internal_position: Option<u32>,
    /// A MySQL/MariaDB server's error number (1213 deadlock, 1205 lock wait timeout); `code`
    /// then holds its SQLSTATE.
    pub mysql_errno: Option<u16>,
}

impl DbError {
    /// A MySQL/MariaDB ERR packet's number, SQLSTATE and message.
    pub fn from_mysql(number: u16, sqlstate: String, message: String) -> DbError {
        DbError {
            severity: "ERROR".to_string(),
            code: sqlstate,
            message,
            details: Vec::new(),
            position: None,
            internal_position: None,
            mysql_errno: Some(number),
        }
    }
}

impl DbError {
    /// libpq's PQerrorMessage at the default verbosity, without its final newline. `query` is
    /// the statement as sent: a position in it is shown as libpq's `LINE n:` line and caret;
    /// without it, as " at character N" after the message, as libpq does then.
    pub fn render(&self, query: Option<&str>) -> String {
        if let Some(number) = self.mysql_errno {
            // The mysql client's form.
            return format!("ERROR {number} ({}): {}", self.code, self.message);
        }
        let mut text = format!("{}:  {}", self.severity, self.message);
        let internal_query = self
            .details
            .iter()
            .find(|(label, _)| *label == "QUERY")
            .map(|(_, query)| query.as_str());
        let cursor = match (self.position, self.internal_position) {
            (Some(position), _) => match query {
                Some(query) => Some((query, position)),
                None => {
                    text.push_str(&format!(" at character {position}"));
                    None
                }
            },
            (None, Some(position)) => match internal_query {
                Some(query) => Some((query, position)),
                None => {
                    text.push_str(&format!(" at character {position}"));
                    None
                }
            },
            (None, None) => None,
        };
        text.push('\n');
        if let Some((query, position)) = cursor {
            text.push_str(&crate::error_position::render(query, position as usize));
        }
        for (label, value) in &self.details {
            text.push_str(&format!("{label}:  {value}\n"));
        }
        text.pop();
        text
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(None))
    }
}

#[derive(Debug)]
pub enum ConnError {
    Io(io::Error),
    Server(DbError),
    Protocol(String),
    /// A statement whose reply the driver does not handle (pgbench's: COPY); the client aborts
    /// with this message alone, as pgbench does.
    Unsupported(&'static str),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            // The mysql client's form (number and SQLSTATE) for MySQL; libpq's message alone.
            ConnError::Server(e) if e.mysql_errno.is_some() => write!(f, "{}", e.render(None)),
            ConnError::Server(e) => write!(f, "{}", e.message),
            ConnError::Protocol(m) => write!(f, "{m}"),
            ConnError::Unsupported(m) => write!(f, "{m}"),
        }
    }
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        ConnError::Io(e)
    }
}

/// What came back for one Sync (or one simple Query): rows and the first error, if any.
#[derive(Debug, Default)]
pub struct Reply {
    pub rows: u64,
    pub error: Option<DbError>,
    /// Transaction status from ReadyForQuery: b'I' idle, b'T' in a block, b'E' failed block.
    pub transaction_status: u8,
    /// With capture on: each query's column names, row count and last row (text; None = NULL).
    pub results: Vec<QueryResult>,
    /// Rows the statements changed (INSERT, UPDATE, DELETE), where the reply was read with
    /// every row kept (`MyConn::query_rows`; PostgreSQL's is `StatementReply`).
    pub affected: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: u64,
    pub last_row: Option<Vec<Option<String>>>,
}

/// Rows as PostgreSQL sent them (its DataRow bodies after their value count, copied into one
/// buffer as libpq keeps a result), turned into values only when one is read: most scripts
/// never read theirs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RawRows {
    bytes: Vec<u8>,
    /// Where each row ends in `bytes`.
    ends: Vec<usize>,
}

impl RawRows {
    pub fn push(&mut self, body: &[u8]) {
        if self.ends.is_empty() {
            // Results come in runs of like rows: room for a few at the first.
            self.bytes.reserve(body.len() * 4);
        }
        self.bytes.extend_from_slice(body);
        self.ends.push(self.bytes.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// No rows, the buffers kept for the next result.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Row `index`'s values as text (None: NULL), None past the last row or for a malformed one.
    pub fn row(&self, index: usize) -> Option<Vec<Option<String>>> {
        let end = *self.ends.get(index)?;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        let mut body = &self.bytes[start..end];
        let mut values = Vec::new();
        // Each value: its length (-1 for NULL), then its bytes.
        while !body.is_empty() {
            let length = i32::from_be_bytes(body.get(..4)?.try_into().ok()?);
            body = &body[4..];
            if length < 0 {
                values.push(None);
                continue;
            }
            let value = body.get(..length as usize)?;
            values.push(Some(String::from_utf8_lossy(value).into_owned()));
            body = &body[length as usize..];
        }
        Some(values)
    }

    /// The number of values in the first row (0 without rows).
    pub fn fields(&self) -> usize {
        let Some(&end) = self.ends.first() else {
            return 0;
        };
        let mut body = &self.bytes[..end];
        let mut count = 0;
        while let Some(length) = body.get(..4) {
            let length =
                i32::from_be_bytes(length.try_into().expect("a slice of four bytes")).max(0);
            body = body.get(4 + length as usize..).unwrap_or_default();
            count += 1;
        }
        count
    }
}
