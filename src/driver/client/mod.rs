//! One client: a connection, its variables and random state, and the execution of one script
//! run (a "transaction" in pgbench's sense). Statements go to PostgreSQL here, to
//! MySQL/MariaDB in `mysql.rs`; everything else is the same for both engines.

mod mysql;

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::plan::{Protocol, RunPlan};
use super::stats::{CommandStats, FailureKind};
use stampede_conn::Endpoint;
use stampede_script::ast::{
    Command, CommandKind, Expr, ResultStore, ShellWord, SleepArg, SqlCommand, SqlPiece,
};
use stampede_script::eval::{evaluate, to_int, truth, EvalContext};
use stampede_script::parser::valid_variable_name;
use stampede_script::prng::PgPrng;
use stampede_script::Value;
use stampede_wire::cancel::CancelToken;
use stampede_wire::mysql::MyConn;
use stampede_wire::{ConnError, DbError, PgConn, QueryResult, Reply, Waiting};

/// A client's connection: the protocol of the plan's engine.
enum Connection {
    Postgres(PgConn),
    Mysql(MyConn),
}

/// The PostgreSQL connection, for what only PostgreSQL's protocol does (extended queries,
/// pipelines); an error, not a panic, when the client is not connected to PostgreSQL.
fn postgres(conn: &mut Option<Connection>) -> Result<&mut PgConn, ConnError> {
    match conn {
        Some(Connection::Postgres(conn)) => Ok(conn),
        _ => Err(ConnError::Protocol(
            "not connected to a PostgreSQL server".into(),
        )),
    }
}

/// How one script run ended.
pub enum TxnOutcome {
    Committed,
    /// A serialization failure or deadlock (or, with `--continue-on-error`, any SQL error) that
    /// was not retried: counted, rolled back, and the client goes on.
    Failed {
        kind: FailureKind,
        command: usize,
        /// The error's SQLSTATE class (none for a lost connection).
        class: Option<crate::driver::stats::SqlClass>,
    },
    /// An error after the run's end: pgbench neither retries nor counts it; the client stops.
    TimeUp,
    /// Anything else: the client stops, and the run exits with status 2.
    Aborted(String),
}

/// A transaction's outcome and how many tries it took.
pub struct TxnResult {
    pub outcome: TxnOutcome,
    pub tries: u32,
    /// The script ended inside a transaction block: pgbench counts the transaction, then
    /// aborts the client with this message.
    pub abort_after: Option<String>,
}

/// One try of a script: finished, or failed at `command` with an error that may be retried.
enum TryOutcome {
    Done(TxnOutcome),
    Failed { error: Box<DbError>, command: usize },
}

impl TryOutcome {
    fn aborted(message: String) -> TryOutcome {
        TryOutcome::Done(TxnOutcome::Aborted(message))
    }
}

pub struct Client {
    pub id: usize,
    pub variables: Vec<Value>,
    pub random: PgPrng,
    conn: Option<Connection>,
    /// How its connections wait for the server: a thread's only client waits in the kernel,
    /// several clients of one thread in the thread's sweep over their sockets.
    pub waiting: Waiting,
    /// Per script and command: the statement prepared on the MySQL connection and the
    /// variables bound to its `?` markers, in order.
    mysql_statements: Vec<Vec<Option<mysql::PreparedCommand>>>,
    /// The statements prepared on the MySQL connection, by text.
    mysql_by_text: std::collections::HashMap<String, Option<stampede_wire::mysql::Prepared>>,
    /// Which statements this connection has prepared, per script and command.
    prepared: Vec<Vec<bool>>,
    /// Prepared-statement names, per script and command, built once.
    statement_names: Vec<Vec<String>>,
    /// Parameter text for the statement being sent, and where each parameter lies in it.
    param_text: String,
    param_ranges: Vec<Option<(usize, usize)>>,
    /// Inside `\startpipeline`: how many Syncs have been queued whose results are unread.
    pipeline_syncs: Option<usize>,
    /// `-r`: per script and command; merged into the thread's totals when the client ends.
    pub command_stats: Vec<Vec<CommandStats>>,
    /// `--verbose-errors` lines, taken by the thread after each transaction.
    pub notices: Vec<String>,
    /// Transactions this client has finished (committed, failed or skipped): pgbench's
    /// per-client count, which `-t` limits and the log numbers.
    pub processed: u64,
    /// SQL statements completed since the counter was last taken.
    pub statements: u64,
    /// The last reply's transaction status said "in a block" (ReadyForQuery 'T').
    in_transaction_block: bool,
    /// Under `-M simple`, the last statement's text as sent (variables in place), for the
    /// position display of its error.
    last_simple_sql: String,
}

impl Client {
    pub fn new(id: usize, variables: Vec<Value>, random: PgPrng, plan: &RunPlan) -> Client {
        Client {
            id,
            variables,
            random,
            conn: None,
            waiting: Waiting::Reactor,
            mysql_statements: plan
                .scripts
                .iter()
                .map(|s| vec![None; s.script.commands.len()])
                .collect(),
            mysql_by_text: Default::default(),
            prepared: plan
                .scripts
                .iter()
                .map(|s| vec![false; s.script.commands.len()])
                .collect(),
            statement_names: plan
                .scripts
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (0..s.script.commands.len())
                        .map(|c| format!("P_{i}_{c}"))
                        .collect()
                })
                .collect(),
            param_text: String::new(),
            param_ranges: Vec::new(),
            pipeline_syncs: None,
            command_stats: plan
                .scripts
                .iter()
                .map(|s| vec![CommandStats::default(); s.script.commands.len()])
                .collect(),
            notices: Vec::new(),
            processed: 0,
            statements: 0,
            in_transaction_block: false,
            last_simple_sql: String::new(),
        }
    }

    pub async fn connect(&mut self, plan: &RunPlan) -> Result<(), ConnError> {
        let target = match &plan.endpoint {
            Endpoint::Postgres(target) => target,
            Endpoint::Mysql(target) => return self.connect_mysql(target).await,
        };
        let mut conn = PgConn::connect(target).await?;
        conn.leave_reactor(self.waiting)?;
        self.conn = Some(Connection::Postgres(conn));
        self.prepared.iter_mut().for_each(|p| p.fill(false));
        Ok(())
    }

    /// What cancels this client's running query from another connection to `endpoint`.
    pub fn cancel_token(&self, endpoint: &Endpoint) -> Option<CancelToken> {
        match (&self.conn, endpoint) {
            (Some(Connection::Postgres(conn)), _) => conn.cancel_token(),
            (Some(Connection::Mysql(conn)), Endpoint::Mysql(server)) => Some(CancelToken::Mysql {
                server: server.clone(),
                connection_id: conn.connection_id(),
            }),
            _ => None,
        }
    }

    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// Whether the server dropped this client's connection.
    pub fn connection_lost(&self) -> bool {
        match &self.conn {
            Some(Connection::Postgres(conn)) => conn.is_lost(),
            Some(Connection::Mysql(conn)) => conn.is_lost(),
            None => false,
        }
    }

    pub async fn disconnect(&mut self) {
        match self.conn.take() {
            Some(Connection::Postgres(conn)) => conn.close().await,
            Some(Connection::Mysql(conn)) => conn.close().await,
            None => {}
        }
    }

    /// Runs one transaction (script), retrying serialization and deadlock failures from the
    /// start with the random state the first try began with, as pgbench does, while
    /// `--max-tries`, `-L` (from `scheduled`) and the run's `deadline` allow.
    pub async fn run_transaction(
        &mut self,
        plan: &RunPlan,
        script_index: usize,
        scheduled: Instant,
        deadline: Option<Instant>,
    ) -> TxnResult {
        let first_try_random = self.random.clone();
        let mut tries = 1;
        self.debug(plan, || {
            format!(
                "executing script \"{}\"",
                plan.scripts[script_index].script.description
            )
        });
        loop {
            let (error, command) = match self.run_try(plan, script_index).await {
                TryOutcome::Done(outcome) => {
                    let abort_after = self.unfinished_block(&outcome);
                    return TxnResult {
                        outcome,
                        tries,
                        abort_after,
                    };
                }
                TryOutcome::Failed { error, command } => (error, command),
            };
            let now = Instant::now();
            if deadline.is_some_and(|end| now >= end) {
                return TxnResult {
                    outcome: TxnOutcome::TimeUp,
                    tries,
                    abort_after: None,
                };
            }
            let retry = plan.errors.retries(&error) && may_retry(plan, tries, scheduled, now);
            if plan.errors.verbose {
                self.note_retry_decision(plan, retry, tries, scheduled, now);
            }
            let stats = &mut self.command_stats[script_index][command];
            if !retry {
                stats.failures += 1;
                let kind = error.failure_kind();
                let class = crate::driver::stats::sqlstate_class(&error.code);
                return TxnResult {
                    outcome: TxnOutcome::Failed {
                        kind,
                        command,
                        class,
                    },
                    tries,
                    abort_after: None,
                };
            }
            stats.retries += 1;
            tries += 1;
            self.random = first_try_random.clone();
        }
    }

    /// pgbench's `-d` lines ("client N sending …"), kept in order with the client's other notices.
    fn debug(&mut self, plan: &RunPlan, text: impl FnOnce() -> String) {
        if plan.debug {
            // pgbench's debug lines carry no level label.
            let line = format!("client {} {}", self.id, text());
            self.notices.push(line);
        }
    }

    /// pgbench's check at the end of a script: a transaction block left open aborts the client.
    fn unfinished_block(&self, outcome: &TxnOutcome) -> Option<String> {
        (matches!(outcome, TxnOutcome::Committed) && self.in_transaction_block).then(|| {
            format!(
                "client {} aborted: end of script reached without completing the last transaction",
                self.id
            )
        })
    }

    /// pgbench's printVerboseErrorMessages.
    fn note_retry_decision(
        &mut self,
        plan: &RunPlan,
        retry: bool,
        tries: u32,
        scheduled: Instant,
        now: Instant,
    ) {
        let mut line = format!(
            "client {} {} (try {tries}",
            self.id,
            if retry {
                "repeats the transaction after the error"
            } else {
                "ends the failed transaction"
            }
        );
        if plan.errors.max_tries > 0 {
            line.push_str(&format!("/{}", plan.errors.max_tries));
        }
        if let Some(limit) = plan.latency_limit {
            let used = 100.0 * (now - scheduled).as_secs_f64() / limit.as_secs_f64();
            line.push_str(&format!(
                ", {used:.3}% of the maximum time of tries was used"
            ));
        }
        line.push(')');
        self.notices.push(line);
    }

    async fn run_try(&mut self, plan: &RunPlan, script_index: usize) -> TryOutcome {
        let commands = &plan.scripts[script_index].script.commands;
        self.in_transaction_block = false;
        let mut pc = 0;
        while pc < commands.len() {
            let started = plan.report_per_command.then(Instant::now);
            if !matches!(commands[pc].kind, CommandKind::Sql(_)) {
                self.debug(plan, || {
                    format!("executing {}", meta_command_words(&commands[pc]))
                });
            }
            let step = match &commands[pc].kind {
                CommandKind::Set { var, expr } => self
                    .evaluate(plan, expr, script_index, pc, "set")
                    .map(|value| {
                        self.variables[*var] = value;
                        pc + 1
                    }),
                CommandKind::If {
                    condition,
                    on_false,
                } => match self.evaluate(plan, condition, script_index, pc, "if") {
                    Ok(v) if truth(&v) => Ok(pc + 1),
                    Ok(_) => self.enter_branch(plan, commands, *on_false, script_index),
                    Err(outcome) => Err(outcome),
                },
                CommandKind::Elif { end, .. } | CommandKind::Else { end } => Ok(*end + 1),
                CommandKind::Endif => Ok(pc + 1),
                CommandKind::Sleep { duration, unit } => self
                    .sleep(plan, duration, *unit, script_index, pc)
                    .await
                    .map(|_| pc + 1),
                CommandKind::Shell { words, target } => self
                    .shell(plan, words, *target, script_index, pc)
                    .map(|_| pc + 1),
                CommandKind::Sql(sql) => self
                    .run_sql(plan, sql, script_index, pc)
                    .await
                    .map(|_| pc + 1),
                CommandKind::StartPipeline => {
                    self.start_pipeline(plan, script_index, pc).map(|_| pc + 1)
                }
                CommandKind::SyncPipeline => {
                    self.sync_pipeline(script_index, pc).await.map(|_| pc + 1)
                }
                CommandKind::EndPipeline => self
                    .end_pipeline(plan, script_index, pc)
                    .await
                    .map(|_| pc + 1),
            };
            match step {
                Ok(next) => {
                    if let Some(started) = started {
                        let stats = &mut self.command_stats[script_index][pc];
                        stats.count += 1;
                        stats.sum_us += started.elapsed().as_secs_f64() * 1e6;
                    }
                    pc = next;
                }
                Err(outcome) => return outcome,
            }
        }
        if self.pipeline_syncs.take().is_some() {
            return TryOutcome::aborted(format!(
                "client {} aborted: end of script reached with pipeline open",
                self.id
            ));
        }
        TryOutcome::Done(TxnOutcome::Committed)
    }

    /// Where a false `\if`/`\elif` continues: the first following `\elif` whose condition holds,
    /// else the `\else` body, else past `\endif`. (Falling into an `\elif`/`\else` from a taken
    /// branch is handled by their own arm: it skips to `end`.)
    fn enter_branch(
        &mut self,
        plan: &RunPlan,
        commands: &[Command],
        target: usize,
        script_index: usize,
    ) -> Result<usize, TryOutcome> {
        let mut target = target;
        loop {
            match commands.get(target).map(|c| &c.kind) {
                Some(CommandKind::Elif {
                    condition,
                    on_false,
                    ..
                }) => {
                    if truth(&self.evaluate(plan, condition, script_index, target, "elif")?) {
                        return Ok(target + 1);
                    }
                    target = *on_false;
                }
                Some(CommandKind::Else { .. }) | Some(CommandKind::Endif) => return Ok(target + 1),
                _ => return Ok(target),
            }
        }
    }

    fn evaluate(
        &mut self,
        plan: &RunPlan,
        expr: &Expr,
        script_index: usize,
        command_index: usize,
        command: &str,
    ) -> Result<Value, TryOutcome> {
        let mut ctx = EvalContext {
            variables: &self.variables,
            variable_names: plan.variables.names(),
            random: &mut self.random,
            script_index,
            command_index,
        };
        let result = evaluate(expr, &mut ctx);
        result.map_err(|error| {
            let message = error.to_string();
            self.meta_command_failed(&message, command, command_index, script_index, "evaluation")
        })
    }

    /// `\shell` / `\setshell`, run through `sh -c` as pgbench's system()/popen() do.
    fn shell(
        &mut self,
        plan: &RunPlan,
        words: &[ShellWord],
        target: Option<usize>,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let command_name = if target.is_some() {
            "setshell"
        } else {
            "shell"
        };
        // pgbench names the shell command's first word in these messages.
        let name = match &words[0] {
            ShellWord::Literal(text) => text.clone(),
            ShellWord::Var(slot) => format!(":{}", plan.variables.names()[*slot]),
        };
        let fail = |client: &mut Client, message: String| {
            let stage = "execution";
            client.meta_command_failed(&message, command_name, command_index, script_index, stage)
        };
        let mut line = String::new();
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            match word {
                ShellWord::Literal(text) => line.push_str(text),
                ShellWord::Var(slot) => match &self.variables[*slot] {
                    Value::Unset => {
                        let message = format!(
                            "{name}: undefined variable \":{}\"",
                            plan.variables.names()[*slot]
                        );
                        return Err(fail(self, message));
                    }
                    value => value.write_text(&mut line),
                },
            }
        }
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(&line);
        let Some(slot) = target else {
            let status = command
                .status()
                .map_err(|e| fail(self, format!("{name}: could not launch shell command: {e}")))?;
            return if status.success() {
                Ok(())
            } else {
                Err(fail(
                    self,
                    format!("{name}: could not launch shell command"),
                ))
            };
        };
        let output = command
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| fail(self, format!("{name}: could not launch shell command: {e}")))?;
        let text = String::from_utf8_lossy(&output.stdout);
        if text.is_empty() {
            let message = format!("{name}: could not read result of shell command");
            return Err(fail(self, message));
        }
        // fgets' line, its newline kept: pgbench quotes it as read.
        let first = text.split_inclusive('\n').next().unwrap_or("");
        match first.trim().parse::<i64>() {
            Ok(number) => {
                self.variables[slot] = Value::Int(number);
                Ok(())
            }
            Err(_) => Err(fail(
                self,
                format!("{name}: shell command must return an integer (not \"{first}\")"),
            )),
        }
    }

    async fn sleep(
        &mut self,
        plan: &RunPlan,
        duration: &SleepArg,
        unit: stampede_script::ast::SleepUnit,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let amount = match duration {
            SleepArg::Constant(n) => Ok(*n),
            SleepArg::Var(slot) => {
                let name = &plan.variables.names()[*slot];
                match &self.variables[*slot] {
                    Value::Unset => Err(format!("sleep: undefined variable \"{name}\"")),
                    Value::Text(t) => t.trim().parse::<i64>().map_err(|_| {
                        format!("sleep: invalid sleep time \"{t}\" for variable \"{name}\"")
                    }),
                    other => to_int(other).map_err(|e| e.to_string()),
                }
            }
        }
        .map_err(|message| {
            self.meta_command_failed(&message, "sleep", command_index, script_index, "execution")
        })?;
        let micros = unit.to_micros(amount).max(0) as u64;
        tokio::time::sleep(Duration::from_micros(micros)).await;
        Ok(())
    }

    async fn run_sql(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        if let Some(Connection::Mysql(_)) = self.conn {
            return self
                .run_mysql_sql(plan, sql, script_index, command_index)
                .await;
        }
        let abort =
            |id: usize, message: String| abort_sql(id, script_index, command_index, message);
        if let (Some(store), Some(_)) = (&sql.store, self.pipeline_syncs) {
            let command = if store.all_queries { "aset" } else { "gset" };
            return Err(self.command_failed(
                command,
                command_index,
                script_index,
                &format!("\\{command} is not allowed in pipeline mode"),
            ));
        }
        if let Err(e) = self.queue_sql(plan, sql, script_index, command_index) {
            return Err(abort(self.id, e.to_string()));
        }
        if self.pipeline_syncs.is_some() {
            // Results are read at \endpipeline.
            return Ok(());
        }
        let reply = match postgres(&mut self.conn) {
            Ok(conn) => {
                if plan.protocol != Protocol::Simple {
                    conn.queue_sync();
                }
                conn.round_trip(sql.store.is_some()).await
            }
            Err(e) => Err(e),
        };
        if plan.debug {
            // pgbench says it once per result and once more for the end of the results.
            let results = reply.as_ref().map_or(1, |reply| reply.results.len().max(1));
            for _ in 0..=results {
                self.debug(plan, || "receiving".to_string());
            }
        }
        self.handle_reply(plan, sql, reply, script_index, command_index)
            .await
    }

    /// What a statement's reply means for the script: stored results, a counted failure (and
    /// a reconnect when the server went away), or an abort. The same for both engines.
    async fn handle_reply(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        reply: Result<Reply, ConnError>,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let reply = match reply {
            Ok(reply) => reply,
            Err(_) if self.connection_lost() && plan.errors.reconnect => {
                self.command_stats[script_index][command_index].failures += 1;
                return Err(TryOutcome::Done(TxnOutcome::Failed {
                    class: None,
                    kind: FailureKind::Other,
                    command: command_index,
                }));
            }
            Err(e) => return Err(abort_on_reply(self.id, script_index, command_index, e)),
        };
        if reply.error.is_none() {
            self.statements += 1;
        }
        self.in_transaction_block = reply.transaction_status == b'T';
        match reply.error {
            None => match &sql.store {
                Some(store) => {
                    self.store_results(plan, store, &reply.results, script_index, command_index)
                }
                None => Ok(()),
            },
            Some(error) => Err(self
                .fail_or_abort(
                    plan,
                    error,
                    reply.transaction_status,
                    script_index,
                    command_index,
                )
                .await),
        }
    }

    /// A serialization failure or deadlock (with `--continue-on-error`, any SQL error) rolls
    /// back and is handed to the retry decision; any other error aborts the client.
    async fn fail_or_abort(
        &mut self,
        plan: &RunPlan,
        error: DbError,
        transaction_status: u8,
        script_index: usize,
        command_index: usize,
    ) -> TryOutcome {
        let message = error.render(self.sent_text(plan, script_index, command_index));
        if !plan.errors.retries(&error) && !plan.errors.continue_on_error {
            return abort_sql(self.id, script_index, command_index, message);
        }
        if plan.errors.verbose {
            self.notices.push(format!(
                "client {} got an error in command {command_index} (SQL) of script {script_index}; {message}",
                self.id
            ));
        }
        if transaction_status != b'I' {
            let rolled_back = match self.conn.as_mut() {
                Some(Connection::Postgres(conn)) => {
                    conn.execute_simple("ROLLBACK").await.map(|_| ())
                }
                Some(Connection::Mysql(conn)) => conn.execute_simple("ROLLBACK").await.map(|_| ()),
                None => Ok(()),
            };
            if let Err(e) = rolled_back {
                return TryOutcome::aborted(format!(
                    "client {} aborted while rolling back the transaction after an error; {e}",
                    self.id
                ));
            }
        }
        TryOutcome::Failed {
            error: Box::new(error),
            command: command_index,
        }
    }

    /// The text of the statement at `command_index` as the server got it: with variables in
    /// place under `-M simple`, with `$n` parameters otherwise. None for a pipeline's end,
    /// whose failed statement is not known.
    fn sent_text<'a>(
        &'a self,
        plan: &'a RunPlan,
        script_index: usize,
        command_index: usize,
    ) -> Option<&'a str> {
        match &plan.scripts[script_index].script.commands[command_index].kind {
            CommandKind::Sql(_) if plan.protocol == Protocol::Simple => Some(&self.last_simple_sql),
            CommandKind::Sql(sql) => Some(&sql.parameterized),
            _ => None,
        }
    }

    fn start_pipeline(
        &mut self,
        plan: &RunPlan,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        if let Endpoint::Mysql(_) = plan.endpoint {
            return Err(self.command_failed(
                "startpipeline",
                command_index,
                script_index,
                "pipeline mode is not available on MySQL/MariaDB",
            ));
        }
        if plan.protocol == Protocol::Simple {
            return Err(self.command_failed(
                "startpipeline",
                command_index,
                script_index,
                "cannot use pipeline mode with the simple query protocol",
            ));
        }
        if self.pipeline_syncs.is_some() {
            return Err(self.command_failed(
                "startpipeline",
                command_index,
                script_index,
                "already in pipeline mode",
            ));
        }
        self.pipeline_syncs = Some(0);
        Ok(())
    }

    /// A meta-command's error, as pgbench logs it: the cause on its own line, then the abort.
    fn meta_command_failed(
        &mut self,
        cause: &str,
        command: &str,
        command_index: usize,
        script_index: usize,
        stage: &str,
    ) -> TryOutcome {
        self.notices.push(format!("error: {cause}"));
        self.command_failed(
            command,
            command_index,
            script_index,
            &format!("{stage} of meta-command failed"),
        )
    }

    /// pgbench's commandFailed: a meta-command that cannot run here aborts the client.
    fn command_failed(
        &self,
        command: &str,
        command_index: usize,
        script_index: usize,
        message: &str,
    ) -> TryOutcome {
        TryOutcome::aborted(format!(
            "client {} aborted in command {command_index} ({command}) of script {script_index}; {message}",
            self.id
        ))
    }

    async fn sync_pipeline(
        &mut self,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let Some(syncs) = self.pipeline_syncs.as_mut() else {
            return Err(self.command_failed(
                "syncpipeline",
                command_index,
                script_index,
                "not in pipeline mode",
            ));
        };
        *syncs += 1;
        postgres(&mut self.conn)
            .map_err(|e| abort_sql(self.id, script_index, command_index, e.to_string()))?
            .queue_sync();
        Ok(())
    }

    /// Sends the final Sync and reads one reply per Sync; the first error decides.
    async fn end_pipeline(
        &mut self,
        plan: &RunPlan,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let Some(syncs) = self.pipeline_syncs.take().map(|syncs| syncs + 1) else {
            return Err(self.command_failed(
                "endpipeline",
                command_index,
                script_index,
                "not in pipeline mode",
            ));
        };
        let abort =
            |id: usize, message: String| abort_sql(id, script_index, command_index, message);
        let conn = postgres(&mut self.conn).map_err(|e| abort(self.id, e.to_string()))?;
        conn.queue_sync();
        conn.flush()
            .await
            .map_err(|e| abort(self.id, e.to_string()))?;
        let mut first_error = None;
        let mut status = b'I';
        for _ in 0..syncs {
            let reply = conn
                .read_reply(false)
                .await
                .map_err(|e| abort_on_reply(self.id, script_index, command_index, e))?;
            status = reply.transaction_status;
            self.in_transaction_block = status == b'T';
            if first_error.is_none() {
                first_error = reply.error;
            }
        }
        match first_error {
            None => Ok(()),
            Some(error) => Err(self
                .fail_or_abort(plan, error, status, script_index, command_index)
                .await),
        }
    }

    /// Queues the statement's messages (no Sync) for the chosen protocol.
    fn queue_sql(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), ConnError> {
        if plan.protocol == Protocol::Simple {
            let text = self.inline_variables(plan, sql, false);
            self.debug(plan, || format!("sending {text}"));
            postgres(&mut self.conn)?.queue_simple_query(&text)?;
            self.last_simple_sql = text;
            return Ok(());
        }
        self.format_params(sql);
        if plan.debug {
            self.debug_sending(plan, sql, script_index, command_index);
        }
        let conn = postgres(&mut self.conn)?;
        let statement = if plan.protocol == Protocol::Prepared {
            let name = self.statement_names[script_index][command_index].as_str();
            let prepared = &mut self.prepared[script_index][command_index];
            if !*prepared {
                conn.queue_parse(name, &sql.parameterized)?;
                *prepared = true;
            }
            name
        } else {
            conn.queue_parse("", &sql.parameterized)?;
            ""
        };
        let text = self.param_text.as_bytes();
        let params = self
            .param_ranges
            .iter()
            .map(|range| range.map(|(start, end)| &text[start..end]));
        // Stored results are read as text.
        conn.queue_bind(
            statement,
            params,
            plan.binary_results && sql.store.is_none(),
        )?;
        // libpq describes the portal on every execution; so do we, to load the server alike.
        conn.queue_describe_portal()?;
        conn.queue_execute()?;
        Ok(())
    }

    /// What pgbench's `-d` says before an extended or prepared execution.
    fn debug_sending(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) {
        if plan.protocol == Protocol::Prepared {
            let name = self.statement_names[script_index][command_index].clone();
            if !self.prepared[script_index][command_index] {
                self.debug(plan, || format!("preparing {name}"));
            }
            self.debug(plan, || format!("sending {name}"));
        } else {
            self.debug(plan, || format!("sending {}", sql.parameterized));
        }
    }

    /// `\gset`: the last query must return exactly one row; `\aset`: the last row of every
    /// query that returned rows. Columns become variables named prefix + column, as text.
    fn store_results(
        &mut self,
        plan: &RunPlan,
        store: &ResultStore,
        results: &[QueryResult],
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        // pgbench's prefix for these errors names the query within the command.
        let query_error = |id: usize, query: usize, message: String| {
            TryOutcome::aborted(format!(
                "client {id} script {script_index} command {command_index} query {query}: {message}"
            ))
        };
        let chosen: Vec<(usize, &QueryResult)> = if store.all_queries {
            results
                .iter()
                .enumerate()
                .filter(|(_, r)| r.rows > 0)
                .collect()
        } else {
            let query = results.len().saturating_sub(1);
            let rows = results.last().map_or(0, |last| last.rows);
            if rows != 1 {
                let message = format!("expected one row, got {rows}");
                return Err(query_error(self.id, query, message));
            }
            vec![(
                query,
                results
                    .last()
                    .expect("one row was counted in the last result"),
            )]
        };
        let command = if store.all_queries { "aset" } else { "gset" };
        for (query, result) in chosen {
            let row = result.last_row.as_ref().expect("rows > 0");
            for (column, value) in result.columns.iter().zip(row) {
                let name = format!("{}{column}", store.prefix);
                if !valid_variable_name(&name) {
                    let cause = format!("{command}: invalid variable name: \"{name}\"");
                    self.notices.push(format!("error: {cause}"));
                    let message = format!("error storing into variable {name}");
                    return Err(query_error(self.id, query, message));
                }
                // Only names some script reads can matter; the others have no slot.
                if let Some(slot) = plan.variables.lookup(&name) {
                    self.variables[slot] = Value::Text(Arc::new(value.clone().unwrap_or_default()));
                }
            }
        }
        Ok(())
    }

    /// Writes each parameter's text form into one reusable buffer.
    fn format_params(&mut self, sql: &SqlCommand) {
        self.param_text.clear();
        self.param_ranges.clear();
        for slot in &sql.params {
            let value = &self.variables[*slot];
            // pgbench binds a variable that was never set as NULL (getQueryParams).
            if let Value::Null | Value::Unset = value {
                self.param_ranges.push(None);
                continue;
            }
            let start = self.param_text.len();
            match value {
                Value::Int(i) => self.param_text.push_str(itoa::Buffer::new().format(*i)),
                other => other.write_text(&mut self.param_text),
            }
            self.param_ranges.push(Some((start, self.param_text.len())));
        }
    }

    /// Simple mode: variables are substituted into the text; unknown names stay as written.
    /// pgbench inlines text as it is; `quote_text` makes it a quoted literal (MySQL's
    /// `--db-ps-mode=disable`, whose statements sysbench sends that way).
    fn inline_variables(&self, plan: &RunPlan, sql: &SqlCommand, quote_text: bool) -> String {
        let mut text = String::with_capacity(sql.parameterized.len() + 16);
        for piece in &sql.pieces {
            match piece {
                SqlPiece::Text(t) => text.push_str(t),
                SqlPiece::Var(slot) => match &self.variables[*slot] {
                    Value::Unset => {
                        text.push(':');
                        text.push_str(&plan.variables.names()[*slot]);
                    }
                    Value::Text(value) if quote_text => mysql::push_quoted(&mut text, value),
                    value => value.write_text(&mut text),
                },
            }
        }
        text
    }
}

/// A reply that could not be read aborts the client; an unsupported statement with pgbench's
/// bare message.
/// What pgbench's `-d` shows of a meta-command: its words, without the expression of `\set`,
/// `\if` and `\elif` (pgbench keeps those parsed, not as words).
fn meta_command_words(command: &Command) -> String {
    let words: Vec<&str> = command.first_line.split_whitespace().collect();
    let shown = match command.kind {
        CommandKind::Set { .. } => words.len().min(2),
        CommandKind::If { .. } | CommandKind::Elif { .. } => 1,
        _ => words.len(),
    };
    words[..shown].join(" ")
}

fn abort_on_reply(
    id: usize,
    script_index: usize,
    command_index: usize,
    error: ConnError,
) -> TryOutcome {
    match error {
        ConnError::Unsupported(message) => TryOutcome::aborted(message.to_string()),
        error => abort_sql(id, script_index, command_index, error.to_string()),
    }
}

fn abort_sql(id: usize, script_index: usize, command_index: usize, message: String) -> TryOutcome {
    TryOutcome::aborted(format!(
        "client {id} script {script_index} aborted in command {command_index} query 0: {message}"
    ))
}

/// pgbench's doRetry, for an error that can be retried: tries left, time left under `-L`.
fn may_retry(plan: &RunPlan, tries: u32, scheduled: Instant, now: Instant) -> bool {
    let max_tries = plan.errors.max_tries;
    if max_tries > 0 && tries >= max_tries {
        return false;
    }
    plan.latency_limit
        .is_none_or(|limit| now.saturating_duration_since(scheduled) <= limit)
}
