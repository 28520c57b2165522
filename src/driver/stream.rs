//! The measured path's socket: a Unix socket, plain TCP, or TCP under TLS as `sslmode` asks
//! (SSLRequest then the handshake, or the handshake at once under `sslnegotiation=direct`).

use std::io;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

use super::conn::ConnError;
use crate::server::target::ConnSpec;
use crate::tls::SslMode;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// How much room a read offers at least.
pub const READ_CHUNK: usize = 16 * 1024;

impl Stream {
    /// Reads at least one byte more into `buf`; a closed connection is an error.
    pub async fn fill(&mut self, buf: &mut BytesMut) -> Result<(), ConnError> {
        buf.reserve(READ_CHUNK);
        match self.read_some(buf).await? {
            0 => Err(ConnError::Protocol(
                "server closed the connection unexpectedly".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Reads what has arrived into `buf` (0 when the peer closed). On a raw socket, one
    /// readiness wait and one read; a short read marks the socket drained without a syscall.
    pub async fn read_some(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        if let Stream::Tls(tls) = self {
            return tls.read_buf(buf).await;
        }
        loop {
            self.readable().await?;
            let offered = buf.capacity() - buf.len();
            match self.try_read_buf(buf) {
                Ok(n) => {
                    if n > 0 && n < offered {
                        self.forget_readiness();
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(data).await,
            Stream::Unix(s) => s.write_all(data).await,
            Stream::Tls(s) => {
                s.write_all(data).await?;
                // rustls holds records until flushed.
                s.flush().await
            }
        }
    }

    async fn readable(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.readable().await,
            Stream::Unix(s) => s.readable().await,
            Stream::Tls(_) => Ok(()),
        }
    }

    fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read_buf(buf),
            Stream::Unix(s) => s.try_read_buf(buf),
            Stream::Tls(_) => unreachable!("TLS reads go through read_buf"),
        }
    }

    /// Marks the socket as drained without a syscall: edge-triggered epoll reports any later
    /// arrival as a new event, so the next read waits instead of failing with EAGAIN first.
    fn forget_readiness(&self) {
        let would_block = || Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock));
        let _ = match self {
            Stream::Tcp(s) => s.try_io(Interest::READABLE, would_block),
            Stream::Unix(s) => s.try_io(Interest::READABLE, would_block),
            Stream::Tls(_) => Ok(()),
        };
    }
}

/// Connects as `spec` says; `tls` overrides the TLS decision (`allow`'s second try).
pub async fn open_stream(spec: &ConnSpec, force_tls: bool) -> Result<Stream, ConnError> {
    if spec.is_unix_socket() {
        // libpq never negotiates TLS over a Unix socket.
        return Ok(Stream::Unix(UnixStream::connect(spec.socket_path()).await?));
    }
    let mut stream = TcpStream::connect((spec.host.as_str(), spec.port)).await?;
    stream.set_nodelay(true)?;
    let mode = spec.tls.mode;
    let wants_tls = force_tls || !matches!(mode, SslMode::Disable | SslMode::Allow);
    if !wants_tls {
        return Ok(Stream::Tcp(stream));
    }
    if !spec.tls.direct && !server_accepts_tls(&mut stream).await? {
        if mode.requires_tls() || force_tls {
            return Err(ConnError::Protocol(
                "server does not support SSL, but SSL was required".into(),
            ));
        }
        return Ok(Stream::Tcp(stream));
    }
    let config = crate::tls::cached_client_config(&spec.tls)
        .map_err(ConnError::Protocol)?
        .ok_or_else(|| ConnError::Protocol("TLS is disabled by sslmode".into()))?;
    let name = crate::tls::server_name(&spec.host).map_err(ConnError::Protocol)?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await
        .map_err(|e| ConnError::Protocol(format!("SSL error: {e}")))?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// The SSLRequest exchange: the server answers one byte, `S` for yes.
async fn server_accepts_tls(stream: &mut TcpStream) -> Result<bool, ConnError> {
    let mut request = BytesMut::new();
    postgres_protocol::message::frontend::ssl_request(&mut request);
    stream.write_all(&request).await?;
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer).await?;
    match answer[0] {
        b'S' => Ok(true),
        b'N' => Ok(false),
        other => Err(ConnError::Protocol(format!(
            "received invalid response to SSL negotiation: {}",
            other as char
        ))),
    }
}
