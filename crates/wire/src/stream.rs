//! The measured path's socket: a Unix socket, plain TCP, or TCP under TLS as `sslmode` asks
//! (SSLRequest then the handshake, or the handshake at once under `sslnegotiation=direct`).

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::reply::ConnError;
use stampede_conn::tls::SslMode;
use stampede_conn::ConnSpec;

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixSocket),
    Tls(Box<TlsStream<TcpStream>>),
    /// The connection of a thread's only client, out of the runtime's reactor (`SoloSocket`).
    Solo(SoloSocket<Plain>),
    /// One of a thread's several clients' connections, out of the reactor (`SweepSocket`).
    Sweep(SweepSocket<Plain>),
    /// The same two, under TLS.
    SoloTls(Box<SoloSocket<Tls>>),
    SweepTls(Box<SweepSocket<Tls>>),
    /// Nothing: the connection moved to another variant (`leave_reactor`) and failed on the way.
    Gone,
}

/// How a connection waits for the server once it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// In the runtime's reactor (epoll).
    Reactor,
    /// In the kernel itself, for a thread's only client (`SoloSocket`), waking every
    /// `SOLO_WAKE` to let the thread's other tasks run.
    Solo,
    /// In the kernel until the server answers, for a thread that has nothing else to run (a
    /// sysbench script's interpreter): no timer is armed per wait, as libpq's and libmysqlclient's
    /// waits arm none.
    SoloUntimed,
    /// In the thread's sweep over its clients' sockets (`SweepSocket`).
    Sweep,
}

/// A Unix socket watched for readability only. tokio's `UnixStream` also registers for
/// writability, edge-triggered, and a Unix socket signals writable each time the server reads
/// what was sent: one extra wakeup (a context switch and an epoll_wait) per statement, 0.7 per
/// statement measured on sysbench's oltp_read_only, which doubled the client's system time
/// against sysbench's. Writes go straight to the socket; the rare one that would block waits
/// in poll(2).
pub struct UnixSocket {
    socket: AsyncFd<std::os::unix::net::UnixStream>,
    /// Where reads land before they are appended to the caller's buffer: reading straight into
    /// a BytesMut's spare room takes `unsafe`, which the crate forbids.
    scratch: Box<[u8]>,
}

impl UnixSocket {
    pub async fn connect(path: &Path) -> io::Result<UnixSocket> {
        let socket = tokio::net::UnixStream::connect(path).await?.into_std()?;
        socket.set_nonblocking(true)?;
        // `with_interest` is deprecated because an arbitrary `AsRawFd` may hand out another
        // fd later; a std `UnixStream` owns its fd for life and is never handed out mutably
        // here, so the registration stays valid. (The non-deprecated form is `unsafe`, which
        // the crate forbids.)
        #[allow(deprecated)]
        let socket = AsyncFd::with_interest(socket, Interest::READABLE)?;
        Ok(UnixSocket {
            socket,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
        })
    }

    /// One readiness wait and one read; a short read marks the socket drained without a
    /// syscall (edge-triggered epoll reports any later arrival as a new event).
    async fn read_some(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            let mut ready = std::future::poll_fn(|cx| self.socket.poll_read_ready(cx)).await?;
            match ready.get_inner().read(&mut self.scratch) {
                Ok(n) => {
                    if n < self.scratch.len() {
                        ready.clear_ready();
                    }
                    buf.extend_from_slice(&self.scratch[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready.clear_ready(),
                Err(e) => return Err(e),
            }
        }
    }

    async fn write_all(&self, data: &[u8]) -> io::Result<()> {
        write_waiting(self.socket.get_ref(), data).await
    }
}

/// Writes to a socket outside the reactor: a non-blocking Unix socket, or a solo TCP socket
/// whose send timeout ran out. A write that would block waits in poll(2), 10 ms at a time, and
/// lets this thread's other tasks (clients, the interval ticker) go on between waits.
async fn write_waiting<S>(mut socket: S, mut data: &[u8]) -> io::Result<()>
where
    S: Write + AsFd,
{
    while !data.is_empty() {
        let sent = socket.write(data);
        data = &data[wrote_or_wait(sent, socket.as_fd()).await?..];
    }
    Ok(())
}

/// What one write to a socket outside the reactor sent; 0 after waiting in poll(2), up to
/// 10 ms, when the socket was full (or the write was interrupted). Other tasks of the thread
/// run between such waits.
async fn wrote_or_wait(sent: io::Result<usize>, socket: impl AsFd) -> io::Result<usize> {
    const WAIT_MS: u16 = 10;
    match sent {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => Ok(n),
        Err(e) if is_timeout(&e) => {
            let mut wanted = [nix::poll::PollFd::new(
                socket.as_fd(),
                nix::poll::PollFlags::POLLOUT,
            )];
            nix::poll::poll(&mut wanted, WAIT_MS).map_err(io::Error::from)?;
            tokio::task::yield_now().await;
            Ok(0)
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// What a connection outside the runtime's reactor reads and writes through: its socket
/// (`Plain`), or TLS over it (`Tls`). `SoloSocket` and `SweepSocket` wait on the socket the
/// same way for both, through this one small trait with static dispatch: the plain socket's
/// path is compiled as if TLS did not exist, and TLS takes the same waits.
pub(crate) trait Transport {
    /// The socket: what poll(2) and the sweep wait on.
    fn socket(&self) -> &Arc<SoloFd>;
    /// Reads what has arrived (0: the peer closed); WouldBlock, or a blocking socket's
    /// timeout, when nothing has.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Sends all of `data`, waiting in poll(2) while the socket is full.
    async fn write_all(&mut self, data: &[u8]) -> io::Result<()>;
}

/// A plain socket: reads and writes go straight to it.
pub(crate) struct Plain(Arc<SoloFd>);

impl Transport for Plain {
    fn socket(&self) -> &Arc<SoloFd> {
        &self.0
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &*self.0 {
            SoloFd::Tcp(tcp) => (&*tcp).read(buf),
            SoloFd::Unix(unix) => (&*unix).read(buf),
        }
    }

    async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match &*self.0 {
            SoloFd::Tcp(tcp) => write_waiting(tcp, data).await,
            SoloFd::Unix(unix) => write_waiting(unix, data).await,
        }
    }
}

/// TLS over a TCP socket, after the handshake (made in the reactor by tokio-rustls, whose
/// session goes on here): rustls decrypts what the socket brings and encrypts what is sent.
pub(crate) struct Tls {
    socket: Arc<SoloFd>,
    session: rustls::ClientConnection,
}

/// The TCP socket under TLS.
fn tcp_of(socket: &SoloFd) -> &std::net::TcpStream {
    match socket {
        SoloFd::Tcp(tcp) => tcp,
        SoloFd::Unix(_) => unreachable!("TLS runs over TCP alone"),
    }
}

impl Transport for Tls {
    fn socket(&self) -> &Arc<SoloFd> {
        &self.socket
    }

    /// Plaintext already decrypted comes first: a record may carry more than one reply, and
    /// poll(2) cannot see what rustls holds. Only when it holds none is the socket read.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.session.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return done,
            }
            if self.session.read_tls(&mut tcp_of(&self.socket))? == 0 {
                return Ok(0);
            }
            self.session
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
    }

    async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.session.writer().write_all(data)?;
        while self.session.wants_write() {
            let tcp = tcp_of(&self.socket);
            let sent = self.session.write_tls(&mut &*tcp);
            wrote_or_wait(sent, tcp).await?;
        }
        Ok(())
    }
}

/// A socket read and written outside the runtime's reactor, for a thread that runs one client.
///
/// Such a thread has nothing else to do while its client waits for the server, so the reactor
/// is pure overhead there: a statement cost a write, an epoll_wait and a read, plus the
/// runtime's park, wakeup and task poll (some 2,000 instructions a statement under callgrind).
/// Here the thread waits in the kernel itself, as sysbench's and pgbench's single-connection
/// loops do. A wait ends after `SOLO_WAKE` even without a reply and yields, so that the
/// thread's other task (the interval ticker) still runs while a statement takes long.
pub(crate) struct SoloSocket<T> {
    transport: T,
    scratch: Box<[u8]>,
    /// How long a wait lasts before it yields (`SOLO_WAKE`), None: until the reply.
    wake: Option<Duration>,
}

/// TCP is read and written with blocking calls (both with `SOLO_WAKE` as their timeout): a
/// write, then a read that sleeps until the reply, two syscalls a statement. A Unix socket is
/// not: its reader's wait queue is also woken each time the server consumes what was sent (the
/// writable signal), so a blocking read woke 1.7 times a statement on oltp_point_select. It stays non-blocking and waits in poll(2) for input alone,
/// which filters that signal out (as libmariadb does).
pub(crate) enum SoloFd {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

/// How long a solo wait lasts before it lets the thread's other tasks run. The collector ticks
/// a twentieth of an interval after its end; this bounds how much later a thread whose client
/// is inside a long statement closes the interval.
const SOLO_WAKE: Duration = Duration::from_millis(50);

impl<T: Transport> SoloSocket<T> {
    fn new(transport: T, wake: Option<Duration>) -> io::Result<SoloSocket<T>> {
        if let SoloFd::Tcp(tcp) = &**transport.socket() {
            tcp.set_nonblocking(false)?;
            tcp.set_read_timeout(wake)?;
            // A server that stops reading must not stop the thread's interval ticker either.
            tcp.set_write_timeout(wake)?;
        }
        Ok(SoloSocket {
            transport,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            wake,
        })
    }

    async fn read_some(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            let read = match &**self.transport.socket() {
                SoloFd::Tcp(_) => self.transport.read(&mut self.scratch),
                SoloFd::Unix(unix) => match wait_readable(unix.as_fd(), self.wake) {
                    Ok(true) => self.transport.read(&mut self.scratch),
                    Ok(false) => Err(io::ErrorKind::WouldBlock.into()),
                    Err(e) => Err(e),
                },
            };
            match read {
                Ok(n) => {
                    buf.extend_from_slice(&self.scratch[..n]);
                    return Ok(n);
                }
                Err(e) if is_timeout(&e) => tokio::task::yield_now().await,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.transport.write_all(data).await
    }
}

impl AsFd for SoloFd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            SoloFd::Tcp(tcp) => tcp.as_fd(),
            SoloFd::Unix(unix) => unix.as_fd(),
        }
    }
}

/// A non-blocking socket read outside the reactor, one of several on its thread: a read that
/// finds nothing registers the socket with the thread's sweep (`crate::sweep`), which wakes the
/// client when input comes.
pub(crate) struct SweepSocket<T: Transport> {
    transport: T,
    scratch: Box<[u8]>,
}

impl<T: Transport> SweepSocket<T> {
    fn new(transport: T) -> io::Result<SweepSocket<T>> {
        if let SoloFd::Tcp(tcp) = &**transport.socket() {
            tcp.set_nonblocking(true)?;
        }
        Ok(SweepSocket {
            transport,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
        })
    }

    async fn read_some(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        let transport = &mut self.transport;
        let scratch = &mut self.scratch;
        let n = std::future::poll_fn(|cx| loop {
            match transport.read(scratch) {
                Ok(n) => return std::task::Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let fd: crate::sweep::SweepFd = transport.socket().clone();
                    crate::sweep::wait_for_input(&fd, cx.waker());
                    return std::task::Poll::Pending;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return std::task::Poll::Ready(Err(e)),
            }
        })
        .await?;
        buf.extend_from_slice(&self.scratch[..n]);
        Ok(n)
    }

    async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.transport.write_all(data).await
    }
}

impl<T: Transport> Drop for SweepSocket<T> {
    fn drop(&mut self) {
        let fd: crate::sweep::SweepFd = self.transport.socket().clone();
        crate::sweep::forget(&fd);
    }
}

/// poll(2) for input alone, up to `wake` (None: until input): false when the time ran out.
fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, wake: Option<Duration>) -> io::Result<bool> {
    let mut wanted = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
    let timeout = wake.map_or(nix::poll::PollTimeout::NONE, |wake| {
        nix::poll::PollTimeout::try_from(wake).expect("a wake under 2^31 ms")
    });
    Ok(nix::poll::poll(&mut wanted, timeout).map_err(io::Error::from)? > 0)
}

/// A blocking socket's read timeout (EAGAIN), or a wait that ran out.
fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
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
        let tcp = match self {
            Stream::Tls(tls) => return tls.read_buf(buf).await,
            Stream::Unix(unix) => return unix.read_some(buf).await,
            Stream::Solo(solo) => return solo.read_some(buf).await,
            Stream::Sweep(sweep) => return sweep.read_some(buf).await,
            Stream::SoloTls(solo) => return solo.read_some(buf).await,
            Stream::SweepTls(sweep) => return sweep.read_some(buf).await,
            Stream::Gone => return Err(io::ErrorKind::NotConnected.into()),
            Stream::Tcp(tcp) => tcp,
        };
        loop {
            // The socket's own reader slot (`poll_read_ready`), not `readable()`, whose waiter
            // list costs a lock on every wait and every wake.
            std::future::poll_fn(|cx| tcp.poll_read_ready(cx)).await?;
            let offered = buf.capacity() - buf.len();
            match tcp.try_read_buf(buf) {
                Ok(n) => {
                    if n > 0 && n < offered {
                        forget_readiness(tcp);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// For a thread's only client, the socket leaves the reactor (`SoloSocket`); for several
    /// clients on one thread, too (`SweepSocket`); under TLS alike, the session going on over
    /// the socket outside the reactor. Called after the handshake, whose timeout needs the
    /// runtime's timer.
    pub fn leave_reactor(&mut self, waiting: Waiting) -> io::Result<()> {
        if waiting == Waiting::Reactor {
            return Ok(());
        }
        let wake = match waiting {
            Waiting::Solo => Some(SOLO_WAKE),
            _ => None,
        };
        let plain = match self {
            Stream::Tcp(tcp) => SoloFd::Tcp(tcp.as_fd().try_clone_to_owned()?.into()),
            Stream::Unix(unix) => SoloFd::Unix(unix.socket.get_ref().try_clone()?),
            Stream::Tls(tls) => {
                let socket = SoloFd::Tcp(tls.get_ref().0.as_fd().try_clone_to_owned()?.into());
                let Stream::Tls(stream) = std::mem::replace(self, Stream::Gone) else {
                    unreachable!("matched as TLS")
                };
                let (_, session) = stream.into_inner();
                let tls = Tls {
                    socket: Arc::new(socket),
                    session,
                };
                // Dropping the registered stream takes its fd out of epoll and closes it; the
                // duplicate goes on with the same connection and session.
                *self = match waiting {
                    Waiting::Sweep => Stream::SweepTls(Box::new(SweepSocket::new(tls)?)),
                    _ => Stream::SoloTls(Box::new(SoloSocket::new(tls, wake)?)),
                };
                return Ok(());
            }
            _ => return Ok(()),
        };
        let plain = Plain(Arc::new(plain));
        // Dropping the registered stream takes its fd out of epoll and closes it; the
        // duplicate goes on with the same connection.
        *self = match waiting {
            Waiting::Sweep => Stream::Sweep(SweepSocket::new(plain)?),
            _ => Stream::Solo(SoloSocket::new(plain, wake)?),
        };
        Ok(())
    }

    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Stream::Unix(unix) => unix.write_all(data).await,
            Stream::Solo(solo) => solo.write_all(data).await,
            Stream::Sweep(sweep) => sweep.write_all(data).await,
            Stream::SoloTls(solo) => solo.write_all(data).await,
            Stream::SweepTls(sweep) => sweep.write_all(data).await,
            Stream::Gone => Err(io::ErrorKind::NotConnected.into()),
            Stream::Tcp(s) => s.write_all(data).await,
            Stream::Tls(s) => {
                s.write_all(data).await?;
                // rustls holds records until flushed.
                s.flush().await
            }
        }
    }
}

/// Marks the socket as drained without a syscall: edge-triggered epoll reports any later
/// arrival as a new event, so the next read waits instead of failing with EAGAIN first.
fn forget_readiness(tcp: &TcpStream) {
    let would_block = || Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock));
    let _ = tcp.try_io(Interest::READABLE, would_block);
}

/// Connects as `spec` says; `tls` overrides the TLS decision (`allow`'s second try).
pub async fn open_stream(spec: &ConnSpec, force_tls: bool) -> Result<Stream, ConnError> {
    if spec.is_unix_socket() {
        // libpq never negotiates TLS over a Unix socket.
        return Ok(Stream::Unix(
            UnixSocket::connect(&spec.socket_path()).await?,
        ));
    }
    let mut stream = TcpStream::connect((spec.tcp_target().as_str(), spec.port)).await?;
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
    let config = stampede_conn::tls::cached_client_config(&spec.tls)
        .map_err(|e| ConnError::Protocol(e.to_string()))?
        .ok_or_else(|| ConnError::Protocol("TLS is disabled by sslmode".into()))?;
    let name = stampede_conn::tls::server_name(&spec.host)
        .map_err(|e| ConnError::Protocol(e.to_string()))?;
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
