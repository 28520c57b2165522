//! A small read-only HTTP/1.1 server for what stampede shows while it runs: the live page, its
//! server-sent events and the OpenMetrics text at `/metrics`.
//!
//! Why not a framework: the server answers GET and HEAD for a handful of paths, a few requests
//! a second (a browser, a Prometheus scrape), and one long-lived event stream per open page; a
//! thread per connection on std's sockets does that with nothing to configure, no runtime the
//! measured run shares, and nothing new to compile.
//!
//! Safe by default (`address`): an address without a host binds loopback; a non-loopback
//! address needs a bearer token where the caller says so; the token is compared in constant
//! time and never logged.

pub mod address;
pub mod http;
pub mod server;

pub use address::{parse_listen_address, ListenAddress};
pub use http::{Body, Request, Response};
pub use server::{listen, Access, Handler, Listening};
