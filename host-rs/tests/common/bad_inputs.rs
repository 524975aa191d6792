//! The bad inputs every face is tried with (cli/tests/bad_input.rs, the service over HTTP;
//! bindings-js/test/bad-input.test.mjs and bindings-py/tests/test_bad_input.py keep the same
//! list), each with the code the evaluator gives it.

use serde_json::Value;

use super::good_request;

/// The good request with `path` (dotted, `[i]` for an index) set to the JSON text `raw`.
pub fn with(path: &str, raw: &str) -> String {
    let marker = "\"__bad_input_marker__\"";
    let mut request: Value = serde_json::from_str(&good_request()).expect("JSON");
    let mut slot = &mut request;
    for part in path.split('.') {
        slot = match part.split_once('[') {
            Some((name, index)) => &mut slot[name][index.trim_end_matches(']').parse::<usize>().expect("index")],
            None => &mut slot[part],
        };
    }
    *slot = Value::String("__bad_input_marker__".into());
    request.to_string().replacen(marker, raw, 1)
}

/// Every bad input of the issue and the code the evaluator gives it.
pub fn cases() -> Vec<(String, String, &'static str)> {
    let mut cases: Vec<(String, String, &'static str)> = vec![
        // Not JSON, or not one JSON document.
        ("empty".into(), String::new(), "invalid_json"),
        ("truncated".into(), good_request()[..100].to_owned(), "invalid_json"),
        ("trailing comma".into(), "{\"now\": 1,}".into(), "invalid_json"),
        ("two documents".into(), format!("{} {{}}", good_request()), "invalid_json"),
        ("byte-order mark".into(), format!("\u{feff}{}", good_request()), "invalid_json"),
        ("NaN".into(), with("current_replicas", "NaN"), "invalid_json"),
        ("single quotes".into(), "{'now': 1}".into(), "invalid_json"),
        ("raw control character in a string".into(), with("contract.unit_ref", "\"a\u{1}b\""), "invalid_json"),
        ("lone surrogate escape".into(), with("contract.unit_ref", "\"\\ud800\""), "invalid_json"),
        (
            "duplicate key".into(),
            good_request().replacen("\"now\"", "\"now\":\"2026-08-19T12:00:00Z\",\"now\"", 1),
            "invalid_json",
        ),
        ("duplicate key, nested".into(), with("signal", "{\"value\":1,\"value\":2}"), "invalid_json"),
        // Nesting: serde_json stops at 128 levels, long before the stack.
        ("100 000 [".into(), "[".repeat(100_000), "invalid_json"),
        ("100 000 {\"a\":".into(), "{\"a\":".repeat(100_000), "invalid_json"),
        ("100 000 [ in a field".into(), with("signal", &"[".repeat(100_000)), "invalid_json"),
        ("129 levels, closed".into(), format!("{}{}", "[".repeat(129), "]".repeat(129)), "invalid_json"),
        // Numbers past 2^53 and 2^64, floats where integers belong.
        ("2^53 + 1 replicas".into(), with("current_replicas", "9007199254740993"), "replicas_out_of_bounds"),
        ("2^53 + 1 capacity".into(), with("capacities[0].allocatable", "9007199254740993"), "invalid_field"),
        ("2^64 capacity".into(), with("capacities[0].allocatable", "18446744073709551616"), "invalid_field"),
        ("2^64 signal".into(), with("signal.value", "18446744073709551616"), "invalid_field"),
        ("-2^63 - 1 replicas".into(), with("current_replicas", "-9223372036854775809"), "invalid_field"),
        ("1e400".into(), with("signal.value", "1e400"), "invalid_field"),
        ("400 digits".into(), with("signal.value", &"9".repeat(400)), "invalid_field"),
        ("float".into(), with("current_replicas", "3.0"), "invalid_field"),
        ("negative zero".into(), with("current_replicas", "-0.0"), "invalid_field"),
        ("boolean as integer".into(), with("current_replicas", "true"), "invalid_field"),
        // Control characters and non-ASCII in references.
        ("escaped control character in a ref".into(), with("contract.unit_ref", "\"a\\u0001b\""), "invalid_ref"),
        ("NUL in a ref".into(), with("signal.source_ref", "\"a\\u0000b\""), "invalid_ref"),
        ("newline in a ref".into(), with("signal.source_ref", "\"a\\nb\""), "invalid_ref"),
        ("non-ASCII ref".into(), with("contract.unit_ref", "\"caf\u{e9}\""), "invalid_ref"),
        ("right-to-left override in a ref".into(), with("signal.source_ref", "\"a\u{202e}b\""), "invalid_ref"),
        ("emoji ref".into(), with("capacities[0].source_ref", "\"\u{1f600}\""), "invalid_ref"),
        ("257-byte ref".into(), with("contract.unit_ref", &format!("\"{}\"", "a".repeat(257))), "invalid_ref"),
        ("megabyte-long ref".into(), with("contract.unit_ref", &format!("\"{}\"", "a".repeat(900_000))), "invalid_ref"),
        // Credential-looking references.
        ("token: ref".into(), with("signal.source_ref", "\"metrics:token:abc123\""), "credential_in_ref"),
        ("bearer ref".into(), with("signal.source_ref", "\"Bearer.eyJhbGciOiJIUzI1NiJ9\""), "credential_in_ref"),
        ("password ref".into(), with("contract.unit_ref", "\"db/PASSWORD/hunter2\""), "credential_in_ref"),
        ("api key ref".into(), with("capacities[1].source_ref", "\"vault:api-key/prod\""), "credential_in_ref"),
        ("private key ref".into(), with("safety.source_ref", "\"ssh/private_key\""), "credential_in_ref"),
        ("token= ref".into(), with("signal.source_ref", "\"token=abc\""), "invalid_ref"),
    ];
    // The same fields with wrong types and nulls, once each.
    cases.push(("null where required".into(), with("now", "null"), "invalid_field"));
    cases.push(("array for object".into(), with("contract", "[]"), "invalid_field"));
    cases.push(("unknown field".into(), good_request().replacen('{', "{\"extra\":1,", 1), "invalid_field"));
    cases
}
