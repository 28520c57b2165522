//! The listener: a thread accepts, a thread per connection reads requests (keep-alive for whole
//! bodies, as Prometheus scrapes) and answers them through the caller's `Handler`.

use std::io::{BufReader, BufWriter};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::address::ListenAddress;
use crate::http::{read_request, Body, Request, Response};

/// Connections served at once; more are answered 503 and closed (each holds a thread).
const MAX_CONNECTIONS: usize = 64;
/// An idle keep-alive connection, or a request trickling in, is closed after this.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping server waits for whole answers still being written: a process that
/// exits as soon as its last numbers were read would cut the answer that carries them.
const WRITING_PATIENCE: Duration = Duration::from_secs(5);

/// What answers the requests. It is read-only by construction: only GET and HEAD reach it.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, request: &Request) -> Response;
}

/// Who may read.
#[derive(Clone)]
pub enum Access {
    Open,
    /// `Authorization: Bearer TOKEN`, or `?token=TOKEN` (a browser's address bar and its
    /// EventSource cannot set a header).
    Bearer(String),
}

impl Access {
    fn allows(&self, request: &Request) -> bool {
        let Access::Bearer(token) = self else {
            return true;
        };
        let given = request
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_string)
            .or_else(|| request.query_value("token"));
        given.is_some_and(|given| same_in_constant_time(given.as_bytes(), token.as_bytes()))
    }
}

/// Compares without returning early, so the time taken does not say how much of a guess was
/// right.
fn same_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    let length_differs = a.len() != b.len();
    let mut difference = 0u8;
    for (i, byte) in a.iter().enumerate() {
        difference |= byte ^ b.get(i % b.len().max(1)).copied().unwrap_or(0);
    }
    !length_differs && difference == 0
}

/// A listening server; dropping it stops accepting (connections in progress finish).
pub struct Listening {
    pub address: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    /// Whole answers being made or written (streams not counted: they end on their own terms).
    writing: Arc<AtomicUsize>,
}

/// Binds `address` and serves `handler` until the returned value is dropped.
pub fn listen(
    address: ListenAddress,
    access: Access,
    handler: Arc<dyn Handler>,
) -> Result<Listening, String> {
    let listener = TcpListener::bind(address.socket)
        .map_err(|e| format!("cannot listen on {}: {e}", address.socket))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", address.socket))?;
    let stop = Arc::new(AtomicBool::new(false));
    let writing = Arc::new(AtomicUsize::new(0));
    let accept = {
        let (stop, writing) = (stop.clone(), writing.clone());
        std::thread::Builder::new()
            .name("stampede-web".into())
            .spawn(move || accept_loop(listener, &stop, access, handler, writing))
            .map_err(|e| format!("cannot start the server's thread: {e}"))?
    };
    Ok(Listening {
        address: bound,
        stop,
        accept: Some(accept),
        writing,
    })
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accepting thread waits in accept(): a connection of our own wakes it.
        let wake = match self.address {
            SocketAddr::V4(v4) if v4.ip().is_unspecified() => {
                SocketAddr::from(([127, 0, 0, 1], v4.port()))
            }
            SocketAddr::V6(v6) if v6.ip().is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, v6.port()))
            }
            other => other,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let started = std::time::Instant::now();
        while self.writing.load(Ordering::SeqCst) > 0 && started.elapsed() < WRITING_PATIENCE {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    stop: &AtomicBool,
    access: Access,
    handler: Arc<dyn Handler>,
    writing: Arc<AtomicUsize>,
) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = Response::text(503, "too many connections\n")
                .with_header("Connection", "close")
                .write_to(&mut &stream, false);
            continue;
        }
        let (access, handler, open) = (access.clone(), handler.clone(), open.clone());
        let writing = writing.clone();
        let spawned = std::thread::Builder::new()
            .name("stampede-web-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &access, handler.as_ref(), &writing);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // The thread was not made: its connection is gone with the closure.
        }
    }
}

/// Answers requests on one connection until it closes, idles out or carries a stream.
fn serve_connection(
    stream: TcpStream,
    access: &Access,
    handler: &dyn Handler,
    writing: &AtomicUsize,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let request = match read_request(&mut reader) {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
                let response = Response::text(400, format!("{error}\n"));
                response.write_to(&mut BufWriter::new(&stream), false)?;
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        let head_only = request.method == "HEAD";
        // Counted from before the answer is made (a handler may note that it was read) until
        // it is written.
        let whole = Writing::start(writing);
        let response = respond(&request, access, handler);
        if matches!(response.body, Body::Stream(_)) {
            drop(whole);
        }
        let mut out = BufWriter::new(&stream);
        let written = response.write_to(&mut out, head_only);
        drop(out);
        let reusable = written?;
        if !reusable || request.closes {
            return Ok(());
        }
    }
}

/// A whole answer in the making: counted while it lives.
struct Writing<'a>(&'a AtomicUsize);

impl<'a> Writing<'a> {
    fn start(writing: &'a AtomicUsize) -> Writing<'a> {
        writing.fetch_add(1, Ordering::SeqCst);
        Writing(writing)
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn respond(request: &Request, access: &Access, handler: &dyn Handler) -> Response {
    if request.method != "GET" && request.method != "HEAD" {
        return Response::text(405, "read-only: GET and HEAD only\n")
            .with_header("Allow", "GET, HEAD");
    }
    if !access.allows(request) {
        return Response::text(
            401,
            "a bearer token is needed (Authorization: Bearer …, or ?token=…)\n",
        )
        .with_header("WWW-Authenticate", "Bearer");
    }
    handler.handle(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::parse_listen_address;
    use std::io::{Read, Write};

    struct Echo;

    impl Handler for Echo {
        fn handle(&self, request: &Request) -> Response {
            if request.path == "/events" {
                return Response::events(Box::new(|out| {
                    for i in 0..3 {
                        write!(out, "data: {i}\n\n")?;
                        out.flush()?;
                    }
                    Ok(())
                }));
            }
            Response::text(200, format!("path {}", request.path))
        }
    }

    fn exchange(address: SocketAddr, request: &str) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    fn serve(access: Access) -> Listening {
        listen(parse_listen_address("").unwrap(), access, Arc::new(Echo)).unwrap()
    }

    #[test]
    fn requests_on_one_connection_are_answered_in_turn() {
        let server = serve(Access::Open);
        assert!(server.address.ip().is_loopback() && server.address.port() != 0);
        let answer = exchange(
            server.address,
            "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        assert!(
            answer.contains("path /a") && answer.ends_with("path /b"),
            "{answer}"
        );
    }

    #[test]
    fn a_stream_is_written_as_it_comes_and_then_closes() {
        let server = serve(Access::Open);
        let answer = exchange(server.address, "GET /events HTTP/1.1\r\n\r\n");
        assert!(
            answer.contains("Content-Type: text/event-stream"),
            "{answer}"
        );
        assert!(
            answer.ends_with("data: 0\n\ndata: 1\n\ndata: 2\n\n"),
            "{answer}"
        );
    }

    #[test]
    fn writes_are_refused_and_a_token_is_asked_for() {
        let server = serve(Access::Bearer("s3cret".into()));
        let close = "Connection: close\r\n\r\n";
        let cases = [
            (format!("POST /a HTTP/1.1\r\n{close}"), "HTTP/1.1 405"),
            (format!("GET /a HTTP/1.1\r\n{close}"), "HTTP/1.1 401"),
            (
                format!("GET /a HTTP/1.1\r\nAuthorization: Bearer s3cre\r\n{close}"),
                "HTTP/1.1 401",
            ),
            (
                format!("GET /a HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n{close}"),
                "HTTP/1.1 200",
            ),
            (
                "GET /a?token=s3cret HTTP/1.0\r\n\r\n".to_string(),
                "HTTP/1.1 200",
            ),
        ];
        for (request, status) in cases {
            let answer = exchange(server.address, &request);
            assert!(answer.starts_with(status), "{request}: {answer}");
            assert!(
                !answer.contains("s3cret"),
                "the token is never echoed: {answer}"
            );
        }
    }

    #[test]
    fn garbage_gets_400_and_dropping_the_server_stops_it() {
        let server = serve(Access::Open);
        let address = server.address;
        let answer = exchange(address, "hello\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        drop(server);
        assert!(TcpStream::connect(address).is_err());
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_in_constant_time(b"abc", b"abc"));
        assert!(!same_in_constant_time(b"abc", b"abd"));
        assert!(!same_in_constant_time(b"ab", b"abc"));
        assert!(!same_in_constant_time(b"abcd", b"abc"));
        assert!(!same_in_constant_time(b"", b"abc"));
    }
}
