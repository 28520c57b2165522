//! TLS for tokio-postgres (the control sessions): its `MakeTlsConnect` over rustls, with the
//! configuration `sslmode` asked for.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// What tokio-postgres is handed: None when the settings never use TLS.
#[derive(Clone)]
pub struct PgTlsConnector {
    config: Option<Arc<ClientConfig>>,
}

impl PgTlsConnector {
    pub fn new(config: Option<Arc<ClientConfig>>) -> PgTlsConnector {
        PgTlsConnector { config }
    }
}

pub struct HostTlsConnect {
    config: Option<Arc<ClientConfig>>,
    host: String,
}

impl<S> MakeTlsConnect<S> for PgTlsConnector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = PgTlsStream<S>;
    type TlsConnect = HostTlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> Result<HostTlsConnect, io::Error> {
        // The name is checked when a handshake happens: a Unix socket never gets one.
        Ok(HostTlsConnect {
            config: self.config.clone(),
            host: host.to_string(),
        })
    }
}

impl<S> TlsConnect<S> for HostTlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = PgTlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<PgTlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let config = self
                .config
                .ok_or_else(|| io::Error::other("TLS is disabled by sslmode"))?;
            let name = super::server_name(&self.host).map_err(io::Error::other)?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await?;
            Ok(PgTlsStream(tls))
        })
    }
}

pub struct PgTlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for PgTlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for PgTlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for PgTlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        // No SCRAM-SHA-256-PLUS: plain SCRAM, as over an unencrypted connection.
        ChannelBinding::none()
    }
}
