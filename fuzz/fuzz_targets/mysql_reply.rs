//! The MySQL reply parser must never panic: any bytes a server (or a broken proxy) sends end
//! as a reply, a protocol error, or a wait for more bytes, under every framing a connection
//! negotiates, and cut at any point.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| stampede_wire::mysql::fuzz_reply(data));
