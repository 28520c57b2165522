//! The wire protocols on the measured path: PostgreSQL's (`pg`) and MySQL's (`mysql`), each a
//! connection that writes protocol messages straight into one buffer and reads replies itself
//! (no channel or background task between the caller and the socket), over one socket type
//! (`stream`: TCP, Unix, TLS, and a thread's only connection waiting in the kernel). What a
//! statement brings back on either engine is in `reply`. Also MySQL's control session, as the
//! server's own protocol serves setup and probes there.

pub mod cancel;
mod classify;
mod error_position;
pub mod mysql;
pub mod pg;
pub mod reply;
#[cfg(feature = "scripted-server")]
pub mod scripted;
pub mod statement;
mod stream;
pub mod sweep;

pub use pg::PgConn;
pub use reply::{ConnError, DbError, FailureKind, QueryResult, Reply};
pub use statement::StatementReply;
pub use stream::Waiting;
