//! The PostgreSQL reply reading of the measured path must never panic and never reserve what
//! a length field claims beyond the message limit: any bytes a server (or a broken proxy)
//! sends end as a reply, a protocol error, or a wait for more bytes, cut at any point.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| stampede_wire::pg::fuzz_reply(data));
