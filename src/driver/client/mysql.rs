//! A script's SQL on a MySQL/MariaDB connection: the text protocol with values inlined as
//! literals under `simple` (sysbench's `--db-ps-mode=disable`), server-side prepared
//! statements with typed binds otherwise (sysbench's default), each prepared once per
//! connection as libmysqlclient users do.

use std::time::Duration;

use super::{abort_sql, Client, Connection, TryOutcome};
use crate::driver::plan::{Protocol, RunPlan};
use stampede_conn::MysqlSpec;
use stampede_script::ast::{SqlCommand, SqlPiece, VarSlot};
use stampede_wire::mysql::{MyConn, Prepared};
use stampede_wire::ConnError;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A statement prepared on this connection and the variables bound to its markers; no
/// statement when the server cannot prepare it (`ER_UNSUPPORTED_PS`, e.g. `BEGIN` before
/// MariaDB 10.6), which then runs as text with its values inlined, as sysbench emulates it.
#[derive(Debug, Clone)]
pub struct PreparedCommand {
    statement: Option<Prepared>,
    params: Vec<VarSlot>,
}

/// "This command is not supported in the prepared statement protocol yet".
const ER_UNSUPPORTED_PS: u16 = 1295;

impl Client {
    pub(super) async fn connect_mysql(&mut self, target: &MysqlSpec) -> Result<(), ConnError> {
        let mut conn = MyConn::connect(target, CONNECT_TIMEOUT).await?;
        conn.leave_reactor(self.waiting)?;
        self.conn = Some(Connection::Mysql(conn));
        self.mysql_statements
            .iter_mut()
            .for_each(|statements| statements.fill(None));
        self.mysql_by_text.clear();
        Ok(())
    }

    pub(super) async fn run_mysql_sql(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        let capture = sql.store.is_some();
        if plan.protocol != Protocol::Simple {
            self.prepare_command(plan, sql, script_index, command_index)
                .await?;
        }
        let emulated = plan.protocol != Protocol::Simple
            && self.mysql_statements[script_index][command_index]
                .as_ref()
                .is_some_and(|prepared| prepared.statement.is_none());
        let reply = if plan.protocol == Protocol::Simple || emulated {
            let text = self.inline_variables(plan, sql, true);
            self.debug(plan, || format!("sending {text}"));
            self.last_simple_sql = text;
            match mysql(&mut self.conn) {
                Ok(conn) => conn.query(&self.last_simple_sql, capture).await,
                Err(e) => Err(e),
            }
        } else {
            let prepared = self.mysql_statements[script_index][command_index]
                .as_ref()
                .expect("a prepared command's statement is prepared when the client connects");
            let statement = prepared
                .statement
                .expect("an emulated statement is sent as text above");
            let variables = &self.variables;
            let values = prepared.params.iter().map(|slot| &variables[*slot]);
            match mysql(&mut self.conn) {
                Ok(conn) => conn.execute(statement, values, capture).await,
                Err(e) => Err(e),
            }
        };
        self.handle_reply(plan, sql, reply, script_index, command_index)
            .await
    }

    /// Prepares the command's statement if this connection has not yet.
    async fn prepare_command(
        &mut self,
        plan: &RunPlan,
        sql: &SqlCommand,
        script_index: usize,
        command_index: usize,
    ) -> Result<(), TryOutcome> {
        if self.mysql_statements[script_index][command_index].is_some() {
            return Ok(());
        }
        let (text, params) = with_markers(sql);
        // One server-side statement per distinct text, as sysbench prepares each of its
        // statements once however often an event runs it.
        let statement = match self.mysql_by_text.get(&text) {
            Some(statement) => *statement,
            None => {
                self.debug(plan, || {
                    format!("preparing P_{script_index}_{command_index}")
                });
                let abort = |message| abort_sql(self.id, script_index, command_index, message);
                let conn = mysql(&mut self.conn).map_err(|e| abort(e.to_string()))?;
                let statement = match conn.prepare(&text).await {
                    Ok(Ok(statement)) => Some(statement),
                    Ok(Err(error)) if error.mysql_errno == Some(ER_UNSUPPORTED_PS) => None,
                    Ok(Err(error)) => return Err(abort(error.render(Some(&text)))),
                    Err(e) => return Err(abort(e.to_string())),
                };
                self.mysql_by_text.insert(text, statement);
                statement
            }
        };
        self.mysql_statements[script_index][command_index] =
            Some(PreparedCommand { statement, params });
        Ok(())
    }
}

/// The MySQL connection; an error, not a panic, when the client is not connected to MySQL.
fn mysql(conn: &mut Option<Connection>) -> Result<&mut MyConn, ConnError> {
    match conn {
        Some(Connection::Mysql(conn)) => Ok(conn),
        _ => Err(ConnError::Protocol(
            "not connected to a MySQL server".into(),
        )),
    }
}

/// The statement with a `?` marker for each variable reference, and those variables in order
/// (MySQL's markers are positional: a variable used twice is bound twice).
pub fn with_markers(sql: &SqlCommand) -> (String, Vec<VarSlot>) {
    let mut text = String::with_capacity(sql.parameterized.len());
    let mut params = Vec::new();
    for piece in &sql.pieces {
        match piece {
            SqlPiece::Text(t) => text.push_str(t),
            SqlPiece::Var(slot) => {
                text.push('?');
                params.push(*slot);
            }
        }
    }
    (text, params)
}

pub(super) use stampede_wire::mysql::push_quoted;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_the_parser_reads_specially() {
        let mut out = String::new();
        push_quoted(&mut out, "it's a \\ \"test\"\n");
        assert_eq!(out, r#"'it\'s a \\ \"test\"\n'"#);
    }
}
