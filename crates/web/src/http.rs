//! The HTTP/1.1 this server speaks: a request's line and headers (no body: it only reads), and
//! a response with a whole body or a stream (server-sent events) written as it comes.

use std::io::{self, BufRead, Write};

/// The most a request's line and headers may take: a GET with a token fits many times over.
const MAX_HEAD_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without its query (`/metrics`).
    pub path: String,
    /// The query without its `?`, still encoded.
    pub query: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// HTTP/1.0, or `Connection: close`: the connection ends after the response.
    pub closes: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A query parameter's value, percent-decoded.
    pub fn query_value(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| percent_decode(value))
        })
    }
}

/// Reads one request's head; None when the peer closed the connection before a request.
pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let limit = (MAX_HEAD_BYTES + 1 - head.len()) as u64;
        let read = io::Read::take(&mut *reader, limit).read_until(b'\n', &mut head)?;
        if read == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(invalid("the request ended within its head"))
            };
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(invalid("the request's head is too long"));
        }
        let line = &head[before..];
        // A blank line ends the head; blank lines before the request line are skipped.
        if line == b"\r\n" || line == b"\n" {
            if before == 0 {
                head.clear();
                continue;
            }
            break;
        }
    }
    let text = std::str::from_utf8(&head).map_err(|_| invalid("the head is not UTF-8"))?;
    parse_head(text).map(Some)
}

fn parse_head(text: &str) -> io::Result<Request> {
    let mut lines = text.lines();
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("not an HTTP request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(invalid("not HTTP/1.x"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let connection = headers
        .iter()
        .find(|(name, _)| name == "connection")
        .map(|(_, value)| value.to_ascii_lowercase());
    let closes = match connection.as_deref() {
        Some(value) if value.contains("close") => true,
        Some(value) if value.contains("keep-alive") => false,
        _ => version == "HTTP/1.0",
    };
    Ok(Request {
        method: method.to_string(),
        path: percent_decode(path),
        query: query.to_string(),
        headers,
        closes,
    })
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// `%XX` escapes and `+` (a space in a query) decoded; a malformed escape is kept as written.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A stream's writer: it writes until the client goes away or the source ends.
pub type StreamWriter = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

pub enum Body {
    Bytes(Vec<u8>),
    /// Written as it comes, without a length: the connection closes after it.
    Stream(StreamWriter),
}

pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type: content_type.to_string(),
            headers: Vec::new(),
            body: Body::Bytes(body.into()),
        }
    }

    pub fn text(status: u16, text: impl Into<String>) -> Response {
        Response::new(status, "text/plain; charset=utf-8", text.into())
    }

    /// Server-sent events (`text/event-stream`), written by `writer`.
    pub fn events(writer: StreamWriter) -> Response {
        Response {
            status: 200,
            content_type: "text/event-stream".into(),
            headers: vec![("Cache-Control".into(), "no-store".into())],
            body: Body::Stream(writer),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Writes the response; `head_only` for HEAD (the headers a GET would have). Returns
    /// whether the connection can carry another request.
    pub fn write_to(self, out: &mut impl Write, head_only: bool) -> io::Result<bool> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nX-Content-Type-Options: nosniff\r\n",
            self.status,
            reason(self.status),
            self.content_type
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match self.body {
            Body::Bytes(bytes) => {
                head.push_str(&format!("Content-Length: {}\r\n\r\n", bytes.len()));
                out.write_all(head.as_bytes())?;
                if !head_only {
                    out.write_all(&bytes)?;
                }
                out.flush()?;
                Ok(true)
            }
            Body::Stream(writer) => {
                head.push_str("Connection: close\r\n\r\n");
                out.write_all(head.as_bytes())?;
                out.flush()?;
                if !head_only {
                    writer(out)?;
                }
                Ok(false)
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> Request {
        read_request(&mut text.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn a_request_line_headers_and_query_are_read() {
        let request = request(
            "GET /events?token=a%20b&x=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n\r\n",
        );
        assert_eq!(request.method, "GET");
        assert_eq!(request.path, "/events");
        assert_eq!(request.query_value("token").as_deref(), Some("a b"));
        assert_eq!(request.query_value("y"), None);
        assert_eq!(request.header("authorization"), Some("Bearer t"));
        assert!(!request.closes);
        assert!(self::request("GET / HTTP/1.0\r\n\r\n").closes);
        assert!(self::request("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").closes);
    }

    #[test]
    fn nothing_a_closed_connection_and_garbage_are_told_apart() {
        assert!(read_request(&mut &b""[..]).unwrap().is_none());
        assert!(read_request(&mut &b"GET / HTTP/1.1\r\nHost"[..]).is_err());
        assert!(read_request(&mut &b"SSH-2.0-OpenSSH\r\n\r\n"[..]).is_err());
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD_BYTES));
        assert!(read_request(&mut long.as_bytes()).is_err());
    }

    #[test]
    fn percent_escapes_decode_and_malformed_ones_stay() {
        assert_eq!(percent_decode("a%2Fb+c"), "a/b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn a_whole_body_has_its_length_and_head_leaves_it_out() {
        let mut out = Vec::new();
        let more = Response::text(200, "hello")
            .write_to(&mut out, false)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(more);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Length: 5\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nhello"), "{text}");
        let mut out = Vec::new();
        Response::text(200, "hello")
            .write_to(&mut out, true)
            .unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with("\r\n\r\n"));
    }
}
