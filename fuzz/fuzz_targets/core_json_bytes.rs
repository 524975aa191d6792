//! Arbitrary bytes into `evaluate_json_bytes`: never a panic, and every answer well formed — a
//! decision that reads back as the core's `Decision` and writes out to the same bytes, or an
//! error with a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scale_units_core::{Decision, decision_to_json, evaluate_json, evaluate_json_bytes};

fuzz_target!(|data: &[u8]| {
    match evaluate_json_bytes(data) {
        Ok(decision) => {
            let typed: Decision = serde_json::from_str(&decision).expect("a decision reads back");
            assert_eq!(decision_to_json(&typed), decision, "a decision writes out to the same bytes");
            let text = std::str::from_utf8(data).expect("a decided request was UTF-8");
            assert_eq!(evaluate_json(text).ok(), Some(decision), "bytes and text decide alike");
        }
        Err(error) => assert!(!error.message().is_empty(), "an error has a message"),
    }
});
