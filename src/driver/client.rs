//! One client: a connection, its variables and random state, and the execution of one script
//! run (a "transaction" in pgbench's sense).

use std::time::Duration;

use super::conn::{ConnError, DbError, PgConn, Reply};
use super::plan::{Protocol, RunPlan};
use crate::script::ast::{CommandKind, SleepArg, SqlCommand, SqlPiece};
use crate::script::eval::{evaluate, to_int, EvalContext};
use crate::script::prng::PgPrng;
use crate::script::Value;

/// How one script run ended.
pub enum TxnOutcome {
    Committed,
    /// A serialization failure or deadlock: counted, rolled back, and the client goes on.
    Failed(DbError),
    /// Anything else: the client stops, and the run exits with status 2.
    Aborted(String),
}

pub struct Client {
    pub id: usize,
    pub variables: Vec<Value>,
    pub random: PgPrng,
    pub conn: Option<PgConn>,
    /// Which statements this connection has prepared, per script and command.
    prepared: Vec<Vec<bool>>,
    /// Prepared-statement names, per script and command, built once.
    statement_names: Vec<Vec<String>>,
    /// Parameter text for the statement being sent, and where each parameter lies in it.
    param_text: String,
    param_ranges: Vec<Option<(usize, usize)>>,
}

impl Client {
    pub fn new(id: usize, variables: Vec<Value>, random: PgPrng, plan: &RunPlan) -> Client {
        Client {
            id,
            variables,
            random,
            conn: None,
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
        }
    }

    pub async fn connect(&mut self, plan: &RunPlan) -> Result<(), ConnError> {
        self.conn = Some(PgConn::connect(&plan.conn).await?);
        self.prepared.iter_mut().for_each(|p| p.fill(false));
        Ok(())
    }

    pub async fn disconnect(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.close().await;
        }
    }

    pub async fn run_script(&mut self, plan: &RunPlan, script_index: usize) -> TxnOutcome {
        let script = &plan.scripts[script_index].script;
        for (command_index, command) in script.commands.iter().enumerate() {
            let step = match &command.kind {
                CommandKind::Set { var, expr } => {
                    let mut ctx = EvalContext {
                        variables: &self.variables,
                        variable_names: plan.variables.names(),
                        random: &mut self.random,
                    };
                    match evaluate(expr, &mut ctx) {
                        Ok(value) => {
                            self.variables[*var] = value;
                            Ok(())
                        }
                        Err(message) => Err(TxnOutcome::Aborted(format!(
                            "client {} aborted in command {command_index} (set) of script {script_index}; evaluation of meta-command failed: {message}",
                            self.id
                        ))),
                    }
                }
                CommandKind::Sleep { duration, unit } => {
                    self.sleep(plan, duration, *unit, script_index, command_index)
                        .await
                }
                CommandKind::Sql(sql) => self.run_sql(plan, sql, script_index, command_index).await,
            };
            if let Err(outcome) = step {
                return outcome;
            }
        }
        TxnOutcome::Committed
    }

    async fn sleep(
        &mut self,
        plan: &RunPlan,
        duration: &SleepArg,
        unit: crate::script::ast::SleepUnit,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TxnOutcome> {
        let amount = match duration {
            SleepArg::Constant(n) => Ok(*n),
            SleepArg::Var(slot) => match &self.variables[*slot] {
                Value::Unset => Err(format!(
                    "undefined variable \"{}\"",
                    plan.variables.names()[*slot]
                )),
                Value::Text(t) => t
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("invalid sleep time \"{t}\"")),
                other => to_int(other),
            },
        }
        .map_err(|message| {
            TxnOutcome::Aborted(format!(
                "client {} aborted in command {command_index} (sleep) of script {script_index}; execution of meta-command failed: {message}",
                self.id
            ))
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
    ) -> Result<(), TxnOutcome> {
        let abort = |id: usize, message: String| {
            TxnOutcome::Aborted(format!(
                "client {id} script {script_index} aborted in command {command_index} query 0: {message}"
            ))
        };
        let reply = match self.send_sql(plan, sql, script_index, command_index).await {
            Ok(reply) => reply,
            Err(SendError::Variable(message)) => return Err(abort(self.id, message)),
            Err(SendError::Conn(e)) => return Err(abort(self.id, e.to_string())),
        };
        let Some(error) = reply.error else {
            return Ok(());
        };
        if !error.is_retryable() {
            return Err(abort(self.id, error.to_string()));
        }
        if reply.transaction_status != b'I' {
            let conn = self.conn.as_mut().expect("connected");
            if let Err(e) = conn.execute_simple("ROLLBACK").await {
                return Err(abort(self.id, e.to_string()));
            }
        }
        Err(TxnOutcome::Failed(error))
    }

    async fn send_sql(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) -> Result<Reply, SendError> {
        if plan.protocol == Protocol::Simple {
            let text = self.inline_variables(plan, sql)?;
            let conn = self.conn.as_mut().expect("connected");
            conn.queue_simple_query(&text)?;
            return Ok(conn.round_trip().await?);
        }
        self.format_params(plan, sql)?;
        let conn = self.conn.as_mut().expect("connected");
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
        conn.queue_bind(statement, params)?;
        // libpq describes the portal on every execution; so do we, to load the server alike.
        conn.queue_describe_portal()?;
        conn.queue_execute()?;
        conn.queue_sync();
        Ok(conn.round_trip().await?)
    }

    /// Writes each parameter's text form into one reusable buffer.
    fn format_params(&mut self, plan: &RunPlan, sql: &SqlCommand) -> Result<(), SendError> {
        self.param_text.clear();
        self.param_ranges.clear();
        for slot in &sql.params {
            let value = &self.variables[*slot];
            if let Value::Unset = value {
                return Err(undefined(plan, *slot));
            }
            if let Value::Null = value {
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
        Ok(())
    }

    /// Simple mode: variables are substituted into the text; unknown names stay as written.
    fn inline_variables(&self, plan: &RunPlan, sql: &SqlCommand) -> Result<String, SendError> {
        let mut text = String::with_capacity(sql.parameterized.len() + 16);
        for piece in &sql.pieces {
            match piece {
                SqlPiece::Text(t) => text.push_str(t),
                SqlPiece::Var(slot) => match &self.variables[*slot] {
                    Value::Unset => {
                        text.push(':');
                        text.push_str(&plan.variables.names()[*slot]);
                    }
                    value => value.write_text(&mut text),
                },
            }
        }
        Ok(text)
    }
}

enum SendError {
    Variable(String),
    Conn(ConnError),
}

impl From<ConnError> for SendError {
    fn from(e: ConnError) -> Self {
        SendError::Conn(e)
    }
}

fn undefined(plan: &RunPlan, slot: usize) -> SendError {
    SendError::Variable(format!(
        "undefined variable \"{}\"",
        plan.variables.names()[slot]
    ))
}
