//! The script parser and evaluator must never panic: any text either parses into a script whose
//! expressions evaluate to a value or an error, or is rejected with a positioned message.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        stampede_script::fuzzing::parse_and_evaluate(text);
    }
});
