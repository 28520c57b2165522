//! Cancelling a running query from another connection, since a stuck client's own socket cannot
//! carry it (the server is not reading it): PostgreSQL's cancel request (a new connection with
//! the backend's process id and secret key, which the postmaster answers by interrupting that
//! backend's query), MariaDB/MySQL's `KILL QUERY <connection id>` in a session of its own.

use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use stampede_conn::{ConnSpec, MysqlSpec};

use crate::mysql::MyConn;
use crate::reply::ConnError;

/// What cancels one connection's running query.
#[derive(Clone)]
pub enum CancelToken {
    Postgres(PostgresCancel),
    Mysql {
        server: MysqlSpec,
        connection_id: u32,
    },
}

/// Where a PostgreSQL connection's server is and its backend's key.
#[derive(Clone)]
pub struct PostgresCancel {
    /// The one host the connection reached (of a host list, the one that answered).
    pub server: ConnSpec,
    pub process_id: i32,
    pub secret_key: i32,
}

/// How long a cancel request may take: the postmaster answers at once unless it is stuck too.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

impl CancelToken {
    /// Asks the server to interrupt the query, within a few seconds; whether it could is
    /// the caller's to ignore (the server may be gone too).
    pub async fn cancel(&self) -> Result<(), ConnError> {
        match self {
            CancelToken::Postgres(postgres) => {
                tokio::time::timeout(CANCEL_TIMEOUT, postgres.send())
                    .await
                    .map_err(|_| timed_out())??;
                Ok(())
            }
            CancelToken::Mysql {
                server,
                connection_id,
            } => {
                let mut session = MyConn::connect(server, CANCEL_TIMEOUT).await?;
                let kill = format!("KILL QUERY {connection_id}");
                let killed = tokio::time::timeout(CANCEL_TIMEOUT, session.execute_simple(&kill))
                    .await
                    .map_err(|_| timed_out())?;
                session.close().await;
                killed.map(|_| ())
            }
        }
    }
}

/// libpq's words for a wait that ran out.
fn timed_out() -> ConnError {
    ConnError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "timeout expired",
    ))
}

impl PostgresCancel {
    /// Sends the request and waits for the server to close the connection (its only answer).
    /// Plain TCP or the unix socket, as libpq's PQcancel: the request precedes any TLS.
    async fn send(&self) -> std::io::Result<()> {
        let mut request = BytesMut::new();
        frontend::cancel_request(self.process_id, self.secret_key, &mut request);
        let mut answer = [0u8; 1];
        if self.server.is_unix_socket() {
            let mut socket = tokio::net::UnixStream::connect(self.server.socket_path()).await?;
            socket.write_all(&request).await?;
            let _ = socket.read(&mut answer).await?;
        } else {
            let address = (self.server.tcp_target(), self.server.port);
            let mut socket = tokio::net::TcpStream::connect(address).await?;
            socket.write_all(&request).await?;
            let _ = socket.read(&mut answer).await?;
        }
        Ok(())
    }
}
