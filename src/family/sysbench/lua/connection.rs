//! A script's connection (`sysbench.sql`'s connection object, without its Lua): its
//! statements, prepared statements, result set and bulk insert over stampede's wire, with
//! sysbench's error classes (an ignorable error restarts the event) and its counters (a query
//! that returned rows is a read, one that changed rows a write, any other is other). It keeps
//! its thread's context, so that the statement path called through the FFI (`sql.rs`) needs no
//! interpreter.

use std::rc::Rc;
use std::time::Duration;

use super::context::ThreadContext;
use super::stats::Counter;
use super::target::{Ignored, Target};
use stampede_conn::{ConnSpec, MysqlSpec};
use stampede_script::Value as BoundValue;
use stampede_wire::mysql::Rows as MysqlRows;
use stampede_wire::mysql::{MyConn, Prepared};
use stampede_wire::reply::RawRows;
use stampede_wire::{ConnError, DbError, PgConn, Reply, StatementReply, Waiting};

/// sysbench's limit on a bulk INSERT's text before it is sent.
const BULK_PACKET_BYTES: usize = 512 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

enum Db {
    Pg(PgConn),
    My(MyConn),
    /// `--mysql-dry-run`: nothing is sent, every statement succeeds with no rows.
    DryRun,
}

/// A statement prepared on the connection.
enum Statement {
    Pg(String),
    My(Prepared),
    /// A statement the server cannot prepare (`ER_UNSUPPORTED_PS`, e.g. `BEGIN` before MariaDB
    /// 10.6): sent as text with its values inlined, as sysbench's driver emulates it.
    Emulated(String),
    DryRun,
}

/// "This command is not supported in the prepared statement protocol yet".
const ER_UNSUPPORTED_PS: u16 = 1295;

/// sysbench's error classes.
const ERROR_NONE: u8 = 0;
const ERROR_IGNORABLE: u8 = 1;
const ERROR_FATAL: u8 = 2;

#[derive(Default)]
struct LastError {
    kind: u8,
    errno: i64,
    state: Option<String>,
    message: Option<String>,
}

pub(super) struct Connection {
    context: Rc<ThreadContext>,
    target: Target,
    db: Option<Db>,
    error: LastError,
    statements: Vec<Option<Statement>>,
    /// A bulk insert under way: its INSERT head and the values gathered.
    bulk: Option<(String, String)>,
    /// Statements run so far: the number of the last one, whose result set is `result`.
    statements_run: u64,
    result: Option<ResultSet>,
    /// PostgreSQL's replies are read into this, its rows' buffer taken back from the result
    /// set when the next statement frees it.
    pg_reply: StatementReply,
    /// MariaDB's/MySQL's rows, likewise.
    my_rows: MysqlRows,
    bind_text: BindText,
}

/// What a query brought back: its class for the counters and, for a read, its rows.
struct Outcome {
    counter: Counter,
    rows: Rows,
    fields: usize,
    affected: u64,
}

/// A result's rows as the server sent them, read when fetched.
enum Rows {
    Postgres(RawRows),
    Mysql(MysqlRows),
}

impl Rows {
    fn len(&self) -> usize {
        match self {
            Rows::Postgres(raw) => raw.len(),
            Rows::Mysql(rows) => rows.len(),
        }
    }

    /// Row `index`'s values, None past the last.
    fn row(&mut self, index: usize) -> Option<Vec<Option<String>>> {
        match self {
            Rows::Postgres(raw) => raw.row(index),
            Rows::Mysql(rows) => rows.row(index),
        }
    }
}

impl Connection {
    pub(super) fn open(context: Rc<ThreadContext>, target: &Target) -> Option<Connection> {
        let db = connect(&context, target);
        match db {
            Ok(db) => Some(Connection {
                context,
                target: target.clone(),
                db: Some(db),
                error: LastError::default(),
                statements: Vec::new(),
                bulk: None,
                statements_run: 0,
                result: None,
                pg_reply: StatementReply::default(),
                my_rows: MysqlRows::lazy(),
                bind_text: BindText::default(),
            }),
            Err(message) => {
                context.shared.log.fatal(&message);
                None
            }
        }
    }

    fn count(&self, counter: Counter) {
        if let Some((stats, tid)) = self.context.stats() {
            stats.count(tid, counter);
        }
    }

    fn set_error(&mut self, kind: u8, errno: i64, state: Option<String>, message: Option<String>) {
        self.error = LastError {
            kind,
            errno,
            state,
            message,
        };
    }

    /// A server error: ignorable as sysbench's driver decides (PostgreSQL: deadlock, unique
    /// violation, serialization failure, after a ROLLBACK; MySQL: `--mysql-ignore-errors`),
    /// else fatal and logged as sysbench's driver logs it.
    fn server_error(&mut self, error: DbError, function: &str, query: Option<&str>) {
        let context = self.context.clone();
        let log = &context.shared.log;
        let ignorable = match (&self.target, error.mysql_errno) {
            (Target::Mysql { ignored, .. }, Some(number)) => match ignored {
                Ignored::All => true,
                Ignored::Numbers(numbers) => numbers.contains(&number),
            },
            _ => matches!(error.code.as_str(), "40P01" | "23505" | "40001"),
        };
        if ignorable {
            if let Some(Db::Pg(conn)) = &mut self.db {
                let _ = context.runtime().block_on(conn.execute_simple("ROLLBACK"));
            }
        } else {
            match (error.mysql_errno, query) {
                (Some(number), Some(query)) => log.fatal(&format!(
                    "{function} returned error {number} ({}) for query '{query}'",
                    error.message
                )),
                (Some(number), None) => log.fatal(&format!(
                    "{function} returned error {number} ({})",
                    error.message
                )),
                (None, _) => {
                    log.fatal(&format!("{function}() failed: 7 {}", error.message));
                    if let Some(query) = query {
                        log.fatal(&format!("failed query was: {query}"));
                    }
                }
            }
        }
        if let Some((stats, tid)) = context.stats() {
            stats.count(tid, Counter::Errors);
        }
        drop(context);
        let errno = error.mysql_errno.map(i64::from).unwrap_or(0);
        let kind = if ignorable {
            ERROR_IGNORABLE
        } else {
            ERROR_FATAL
        };
        self.set_error(kind, errno, Some(error.code), Some(error.message));
    }

    fn closed(&mut self) -> bool {
        if self.db.is_some() {
            return false;
        }
        let context = self.context.clone();
        context
            .shared
            .log
            .alert("attempt to use an already closed connection");
        drop(context);
        self.set_error(ERROR_FATAL, 0, None, None);
        true
    }

    fn query(&mut self, sql: &str) -> Option<Outcome> {
        if self.closed() {
            return None;
        }
        self.recycle_rows();
        let context = self.context.clone();
        let (reply, rows) = (&mut self.pg_reply, &mut self.my_rows);
        let result = match self
            .db
            .as_mut()
            .expect("closed() reconnected or returned above")
        {
            Db::Pg(conn) => complete(&context, pg_query(conn, sql, reply)),
            Db::My(conn) => complete(&context, my_query(conn, sql, rows)),
            Db::DryRun => Ok(dry_run()),
        };
        drop(context);
        self.finish(result, "query", Some(sql))
    }

    fn finish(
        &mut self,
        result: Result<(Option<DbError>, Outcome), ConnError>,
        function: &str,
        query: Option<&str>,
    ) -> Option<Outcome> {
        self.statements_run += 1;
        self.result = None;
        match result {
            Ok((error, outcome)) => match error {
                Some(error) => {
                    let name = match (&self.db, function) {
                        (Some(Db::My(_)), "query") => "mysql_drv_query()",
                        (Some(Db::My(_)), _) => "mysql_stmt_execute()",
                        (_, "query") => "PQexec",
                        _ => "PQexecPrepared",
                    };
                    self.server_error(error, name, query);
                    None
                }
                None => {
                    self.count(outcome.counter);
                    self.set_error(ERROR_NONE, 0, None, None);
                    Some(outcome)
                }
            },
            Err(error) => {
                self.lost(&error);
                None
            }
        }
    }

    /// The current result's rows' buffer back into the reply, for the next statement.
    fn recycle_rows(&mut self) {
        match self.result.take().map(|result| result.rows) {
            Some(Rows::Postgres(rows)) => self.pg_reply.rows = rows,
            Some(Rows::Mysql(rows)) => self.my_rows = rows,
            None => {}
        }
    }

    /// Keeps a statement's result as the connection's; its number, None when it failed.
    fn keep(&mut self, outcome: Option<Outcome>) -> Option<u64> {
        self.result = Some(ResultSet::new(outcome?));
        Some(self.statements_run)
    }

    /// The result of statement `statement`, if it is still the connection's.
    fn current(&mut self, statement: u64) -> Option<&mut ResultSet> {
        self.result
            .as_mut()
            .filter(|_| statement == self.statements_run)
    }

    fn lost(&mut self, error: &ConnError) {
        let context = self.context.clone();
        context
            .shared
            .log
            .fatal(&format!("connection lost: {error}"));
        if let Some((stats, tid)) = context.stats() {
            stats.count(tid, Counter::Errors);
        }
        drop(context);
        self.db = None;
        self.set_error(
            ERROR_FATAL,
            2013,
            Some("HY000".into()),
            Some(error.to_string()),
        );
    }

    pub(super) fn prepare(&mut self, sql: &str) -> Option<usize> {
        if self.closed() {
            return None;
        }
        let context = self.context.clone();
        let slot = self.statements.len();
        let prepared = match self
            .db
            .as_mut()
            .expect("closed() reconnected or returned above")
        {
            Db::Pg(conn) => {
                let name = format!("sbstmt{slot}");
                let numbered = numbered_placeholders(sql);
                match context
                    .runtime()
                    .block_on(pg_prepare(conn, &name, &numbered))
                {
                    Ok(None) => Ok(Statement::Pg(name)),
                    Ok(Some(error)) => Err(format!(
                        "PQprepare() failed: {}\n",
                        error.render(Some(&numbered))
                    )),
                    Err(error) => Err(error.to_string()),
                }
            }
            Db::My(conn) => match context.runtime().block_on(conn.prepare(sql)) {
                Ok(Ok(prepared)) => Ok(Statement::My(prepared)),
                Ok(Err(error)) if error.mysql_errno == Some(ER_UNSUPPORTED_PS) => {
                    Ok(Statement::Emulated(sql.to_string()))
                }
                Ok(Err(error)) => Err(format!(
                    "mysql_stmt_prepare() failed\nFATAL: MySQL error: {} \"{}\"",
                    error.mysql_errno.unwrap_or(0),
                    error.message
                )),
                Err(error) => Err(error.to_string()),
            },
            Db::DryRun => Ok(Statement::DryRun),
        };
        match prepared {
            Ok(statement) => {
                self.statements.push(Some(statement));
                Some(slot)
            }
            Err(message) => {
                context.shared.log.fatal(&message);
                drop(context);
                self.set_error(ERROR_FATAL, 0, None, None);
                None
            }
        }
    }

    fn execute(&mut self, slot: usize, values: &[BoundValue]) -> Option<Outcome> {
        if self.closed() {
            return None;
        }
        if !matches!(self.statements.get(slot), Some(Some(_))) {
            self.set_error(ERROR_FATAL, 0, None, None);
            return None;
        }
        if let Some(Statement::Emulated(sql)) = &self.statements[slot] {
            let text = inline_values(sql, values);
            return self.query(&text);
        }
        self.recycle_rows();
        let statement = self.statements[slot]
            .as_ref()
            .expect("an unknown slot returned above");
        let context = self.context.clone();
        let (reply, rows, bind) = (&mut self.pg_reply, &mut self.my_rows, &mut self.bind_text);
        let result = match (
            self.db
                .as_mut()
                .expect("closed() reconnected or returned above"),
            statement,
        ) {
            (Db::Pg(conn), Statement::Pg(name)) => {
                complete(&context, pg_execute(conn, name, values, (reply, bind)))
            }
            (Db::My(conn), Statement::My(prepared)) => {
                complete(&context, my_execute(conn, *prepared, values, rows))
            }
            (Db::DryRun, Statement::DryRun) => Ok(dry_run()),
            _ => unreachable!("statements are prepared on their own connection"),
        };
        drop(context);
        self.finish(result, "execute", None)
    }

    pub(super) fn reconnect(&mut self) -> bool {
        let context = self.context.clone();
        if matches!(self.target, Target::Postgres(_)) {
            context
                .shared
                .log
                .alert("reconnect is not supported by the current driver");
            return true;
        }
        if let Some(db) = self.db.take() {
            close(&context, db);
        }
        match connect(&context, &self.target) {
            Ok(db) => {
                self.db = Some(db);
                self.statements.clear();
                if let Some((stats, tid)) = context.stats() {
                    stats.count(tid, Counter::Reconnects);
                }
                true
            }
            Err(message) => {
                context.shared.log.fatal(&message);
                false
            }
        }
    }

    pub(super) fn disconnect(&mut self) -> bool {
        let context = self.context.clone();
        match self.db.take() {
            Some(db) => close(&context, db),
            None => context
                .shared
                .log
                .alert("attempt to close an already closed connection"),
        }
        true
    }

    pub(super) fn bulk_next(&mut self, value: &str) -> bool {
        let Some((head, values)) = self.bulk.as_mut() else {
            let context = self.context.clone();
            context
                .shared
                .log
                .alert("attempt to call bulk_insert_next() before bulk_insert_init()");
            return false;
        };
        // sysbench's rule: the text, its terminating NUL and the comma must fit.
        if !values.is_empty() && head.len() + values.len() + value.len() + 2 > BULK_PACKET_BYTES {
            let sql = format!("{head}{values}");
            values.clear();
            if self.query(&sql).is_none() {
                return false;
            }
        }
        let (_, values) = self.bulk.as_mut().expect("bulk insert under way");
        if !values.is_empty() {
            values.push(',');
        }
        values.push_str(value);
        true
    }

    pub(super) fn bulk_done(&mut self) -> bool {
        match self.bulk.take() {
            Some((head, values)) if !values.is_empty() => {
                self.query(&format!("{head}{values}")).is_some()
            }
            _ => true,
        }
    }
}

/// A connection of the thread's interpreter: its waits happen in the kernel until the reply
/// (`Waiting::SoloUntimed`), as a script's statements run one at a time on the thread and
/// nothing else runs there, as libpq's and libmysqlclient's do.
fn connect(context: &ThreadContext, target: &Target) -> Result<Db, String> {
    let mut db = open(context, target)?;
    let left = match &mut db {
        Db::Pg(conn) => conn.leave_reactor(Waiting::SoloUntimed),
        Db::My(conn) => conn.leave_reactor(Waiting::SoloUntimed),
        Db::DryRun => Ok(()),
    };
    left.map_err(|e| e.to_string())?;
    Ok(db)
}

fn open(context: &ThreadContext, target: &Target) -> Result<Db, String> {
    let runtime = context.runtime();
    match target {
        Target::Postgres(spec) => runtime
            .block_on(PgConn::connect(spec))
            .map(Db::Pg)
            .map_err(|e| {
                format!(
                    "Connection to database failed: {}\n",
                    libpq_words(&e.to_string(), spec)
                )
            }),
        Target::Mysql { dry_run: true, .. } => Ok(Db::DryRun),
        Target::Mysql { spec, .. } => runtime
            .block_on(MyConn::connect(spec, CONNECT_TIMEOUT))
            .map(Db::My)
            .map_err(|e| {
                format!(
                    "unable to connect to MySQL server on host '{}', port {}, aborting...\nFATAL: error {}",
                    spec.host,
                    spec.port,
                    client_words(&e.to_string(), spec)
                )
            }),
    }
}

const LOOKUP_FAILED: &str = "failed to lookup address information: ";

/// A host name that does not resolve, in libpq's words.
fn libpq_words(message: &str, spec: &ConnSpec) -> String {
    match message.find(LOOKUP_FAILED) {
        Some(at) => format!(
            "could not translate host name \"{}\" to address: {}",
            spec.host,
            &message[at + LOOKUP_FAILED.len()..]
        ),
        None => message.to_string(),
    }
}

/// A host name that does not resolve, in the MySQL client library's words (its error 2005).
fn client_words(message: &str, spec: &MysqlSpec) -> String {
    if message.contains(LOOKUP_FAILED) {
        return format!("2005: Unknown MySQL server host '{}' (0)", spec.host);
    }
    message.to_string()
}

fn close(context: &ThreadContext, db: Db) {
    match db {
        Db::Pg(conn) => context.runtime().block_on(conn.close()),
        Db::My(conn) => context.runtime().block_on(conn.close()),
        Db::DryRun => {}
    }
}

fn dry_run() -> (Option<DbError>, Outcome) {
    (None, outcome_of(0, Rows::Postgres(RawRows::default()), 0))
}

fn outcome_of(columns: usize, rows: Rows, affected: u64) -> Outcome {
    let counter = if columns > 0 {
        Counter::Reads
    } else if affected > 0 {
        Counter::Writes
    } else {
        Counter::Other
    };
    Outcome {
        counter,
        fields: columns,
        affected,
        rows,
    }
}

async fn pg_query(
    conn: &mut PgConn,
    sql: &str,
    reply: &mut StatementReply,
) -> Result<(Option<DbError>, Outcome), ConnError> {
    conn.queue_simple_query(sql)?;
    conn.flush().await?;
    conn.read_statement_reply(reply).await?;
    Ok(pg_outcome(reply))
}

/// The reply's error, and its result with its rows moved out.
fn pg_outcome(reply: &mut StatementReply) -> (Option<DbError>, Outcome) {
    let rows = Rows::Postgres(std::mem::take(&mut reply.rows));
    (
        reply.error.take(),
        outcome_of(reply.fields, rows, reply.affected),
    )
}

/// sysbench's `?` placeholders as PostgreSQL's `$1`, `$2`, … (outside quoted text), as its
/// pgsql driver rewrites them.
fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut number = 0;
    for c in sql.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(open), _) if c == open => quote = None,
            (None, '?') => {
                number += 1;
                out.push_str(&format!("${number}"));
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Parse and Sync: the server's error, if it refused the statement.
async fn pg_prepare(
    conn: &mut PgConn,
    name: &str,
    sql: &str,
) -> Result<Option<DbError>, ConnError> {
    conn.queue_parse(name, sql)?;
    conn.queue_sync();
    let reply = conn.round_trip(false).await?;
    Ok(reply.error)
}

/// Where a statement's bound values are written as text before they are sent, kept from one
/// statement to the next.
#[derive(Default)]
struct BindText {
    text: Vec<u8>,
    /// Each value's place in `text`, None for NULL.
    spans: Vec<Option<(usize, usize)>>,
}

async fn pg_execute(
    conn: &mut PgConn,
    name: &str,
    values: &[BoundValue],
    (reply, bind): (&mut StatementReply, &mut BindText),
) -> Result<(Option<DbError>, Outcome), ConnError> {
    // Every value's text in one buffer (None: NULL), then bound as slices of it.
    bind.text.clear();
    bind.spans.clear();
    for value in values {
        let span = pg_text(value, &mut bind.text);
        bind.spans.push(span);
    }
    let text = &bind.text;
    let params = bind
        .spans
        .iter()
        .map(|span| span.map(|(from, to)| &text[from..to]));
    conn.queue_bind(name, params, false)?;
    conn.queue_describe_portal()?;
    conn.queue_execute()?;
    conn.queue_sync();
    conn.flush().await?;
    conn.read_statement_reply(reply).await?;
    Ok(pg_outcome(reply))
}

/// Writes a value as PostgreSQL's text format into `text`; where it lies, None for NULL.
fn pg_text(value: &BoundValue, text: &mut Vec<u8>) -> Option<(usize, usize)> {
    let from = text.len();
    match value {
        BoundValue::Unset | BoundValue::Null => return None,
        BoundValue::Bool(b) => text.extend_from_slice(if *b { b"t" } else { b"f" }),
        BoundValue::Int(i) => text.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
        BoundValue::Double(d) => text.extend_from_slice(d.to_string().as_bytes()),
        BoundValue::Text(value) => text.extend_from_slice(value.as_bytes()),
    }
    Some((from, text.len()))
}

async fn my_query(
    conn: &mut MyConn,
    sql: &str,
    rows: &mut MysqlRows,
) -> Result<(Option<DbError>, Outcome), ConnError> {
    let reply = conn.query_rows(sql, rows).await?;
    Ok(my_outcome(reply, rows))
}

async fn my_execute(
    conn: &mut MyConn,
    prepared: Prepared,
    values: &[BoundValue],
    rows: &mut MysqlRows,
) -> Result<(Option<DbError>, Outcome), ConnError> {
    let reply = conn.execute_rows(prepared, values.iter(), rows).await?;
    Ok(my_outcome(reply, rows))
}

/// The reply's error, and its result with its rows moved out.
fn my_outcome(reply: Reply, rows: &mut MysqlRows) -> (Option<DbError>, Outcome) {
    let fields = rows.fields();
    let rows = Rows::Mysql(std::mem::replace(rows, MysqlRows::lazy()));
    (reply.error, outcome_of(fields, rows, reply.affected))
}

/// Runs a statement's future to its end. It is polled in place first: on a connection that
/// waits in the kernel (`Waiting::SoloUntimed`, every connection here) it completes at once, and the
/// runtime's `block_on` (entering its context, moving the future, parking) cost 5% of the
/// client's user CPU on sysbench's point select. Only a future that yields (a wait longer than
/// the solo socket's wake interval) goes on in the runtime.
fn complete<F: std::future::Future>(context: &ThreadContext, future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut poll_context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut poll_context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => context.runtime().block_on(future),
    }
}

/// What the Lua side asks of a connection.
impl Connection {
    /// Runs `sql`; the number of the statement, whose result is now the connection's, or None
    /// when it failed (`last_error` says how).
    pub(super) fn run(&mut self, sql: &str) -> Option<u64> {
        let outcome = self.query(sql);
        self.keep(outcome)
    }

    /// Runs prepared statement `slot` with `values`, as `run`.
    pub(super) fn run_prepared(&mut self, slot: usize, values: &[BoundValue]) -> Option<u64> {
        let outcome = self.execute(slot, values);
        self.keep(outcome)
    }

    /// sysbench's error fields: class, number, SQLSTATE, message.
    pub(super) fn last_error(&self) -> (u8, i64, Option<String>, Option<String>) {
        let e = &self.error;
        (e.kind, e.errno, e.state.clone(), e.message.clone())
    }

    /// The next row of statement `statement`'s result, if it is still the connection's.
    pub(super) fn fetch_row(&mut self, statement: u64) -> Option<Vec<Option<String>>> {
        self.current(statement).and_then(ResultSet::next_row)
    }

    /// `nrows` or `nfields` of statement `statement`'s result.
    pub(super) fn result_field(&mut self, statement: u64, field: &str) -> Option<u64> {
        self.current(statement).map(|result| match field {
            "nrows" => result.nrows,
            _ => result.nfields as u64,
        })
    }

    /// False for a result set already freed (or no longer the connection's): the caller says
    /// so, as sysbench does.
    pub(super) fn free_result(&mut self, statement: u64) -> bool {
        self.current(statement).is_some() && self.result.take().is_some()
    }

    pub(super) fn close_statement(&mut self, slot: usize) {
        if let Some(statement) = self.statements.get_mut(slot) {
            *statement = None;
        }
    }

    pub(super) fn bulk_init(&mut self, head: String) -> bool {
        if self.closed() {
            return false;
        }
        self.bulk = Some((head, String::new()));
        true
    }
}

/// A statement's result: its rows, fetched one at a time.
struct ResultSet {
    rows: Rows,
    /// The next row `fetch_row` returns.
    next: usize,
    nrows: u64,
    nfields: usize,
}

impl ResultSet {
    fn new(outcome: Outcome) -> ResultSet {
        let nrows = if outcome.counter == Counter::Reads {
            outcome.rows.len() as u64
        } else {
            outcome.affected
        };
        ResultSet {
            nrows,
            nfields: outcome.fields,
            rows: outcome.rows,
            next: 0,
        }
    }

    fn next_row(&mut self) -> Option<Vec<Option<String>>> {
        let row = self.rows.row(self.next)?;
        self.next += 1;
        Some(row)
    }
}

/// `sql` with each `?` marker replaced by its value as a literal (text quoted), as sysbench's
/// emulation of a statement the server cannot prepare writes it.
fn inline_values(sql: &str, values: &[BoundValue]) -> String {
    let mut text = String::with_capacity(sql.len() + 16 * values.len());
    let mut values = values.iter();
    for c in sql.chars() {
        if c != '?' {
            text.push(c);
            continue;
        }
        match values.next() {
            Some(BoundValue::Text(value)) => stampede_wire::mysql::push_quoted(&mut text, value),
            Some(BoundValue::Null | BoundValue::Unset) => text.push_str("NULL"),
            Some(value) => value.write_text(&mut text),
            None => text.push('?'),
        }
    }
    text
}
