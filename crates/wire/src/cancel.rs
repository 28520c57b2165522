//! PostgreSQL's cancel request: a new connection to the same server carrying the backend's
//! process id and secret key, which the postmaster answers by interrupting that backend's
//! query. A stuck client's own socket cannot carry it: the backend is not reading it.

use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use stampede_conn::ConnSpec;

/// What cancels one connection's running query: where its server is and the backend's key.
#[derive(Clone)]
pub struct CancelToken {
    /// The one host the connection reached (of a host list, the one that answered).
    pub server: ConnSpec,
    pub process_id: i32,
    pub secret_key: i32,
}

/// How long a cancel request may take: the postmaster answers at once unless it is stuck too.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

impl CancelToken {
    /// Sends the request and waits for the server to close the connection (its only answer).
    /// Plain TCP or the unix socket, as libpq's PQcancel: the request precedes any TLS.
    pub async fn cancel(&self) -> std::io::Result<()> {
        tokio::time::timeout(CANCEL_TIMEOUT, self.send())
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    }

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
