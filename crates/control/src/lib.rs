//! Control sessions: the connections stampede makes to set a server up, load and check data,
//! and probe it while a run goes on — one module per engine, side by side. Never the measured
//! path: that is `stampede-wire`'s, and a control session never shares a connection with it.
//!
//! - `postgres`: tokio-postgres sessions (`connect_quietly`), errors as PostgreSQL's tools print
//!   them, and one-call queries in a session of their own (`postgres::queries`).
//! - `mysql`: a session over stampede's own MySQL protocol (`stampede-wire`), as MySQL has no
//!   client library in the tree; the same connection code, driven to completion.
//!
//! Both run on the one control runtime (`stampede_conn::control_runtime`).

pub mod mysql;
pub mod postgres;
