//! The libpq connection-string parser (key=value strings and postgresql:// URIs) must never
//! panic: any text parses into key/value pairs or is refused with a message.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = stampede_conn::conninfo::parse(text);
    }
});
