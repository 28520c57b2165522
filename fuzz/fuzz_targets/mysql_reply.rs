//! The MySQL reply parser must never panic: any bytes a server (or a broken proxy) sends end
//! as a reply, a protocol error, or a wait for more bytes, under every framing a connection
//! negotiates, and cut at any point.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stampede_wire::mysql::{parse_reply, ReplyFraming};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, bytes)) = data.split_first() else {
        return;
    };
    let framing = ReplyFraming {
        binary: flags & 1 != 0,
        deprecates_eof: flags & 2 != 0,
        metadata_flag: flags & 4 != 0,
        capture: flags & 8 != 0,
    };
    let _ = parse_reply(bytes, framing);
    // The same bytes arriving in two reads.
    let cut = usize::from(flags >> 4) * bytes.len() / 16;
    let _ = parse_reply(&bytes[..cut], framing);
});
