//! The lab spec parser must never panic: any text is a spec or a refusal naming
//! file:line:column.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = std::env::temp_dir().join("stampede-fuzz-lab.toml");
        if let Err(error) = stampede::lab::spec::parse(&path, text) {
            let _ = error.to_string();
        }
    }
});
