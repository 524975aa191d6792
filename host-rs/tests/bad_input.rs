//! Bad input at the Rust faces (the `Policy` API and the `scale-units` command): each gets its
//! typed error, the native core and the component agree on it, nothing crashes, and the host
//! keeps serving. The same list runs in bindings-js/test/bad-input.test.mjs and
//! bindings-py/tests/test_bad_input.py.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::{good_request, policy};
use scale_units_host::{HostError, MAX_REQUEST_BYTES};
use serde_json::Value;

/// The good request with `path` (dotted, `[i]` for an index) set to the JSON text `raw`.
fn with(path: &str, raw: &str) -> String {
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
fn cases() -> Vec<(String, String, &'static str)> {
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

fn native(text: &str) -> Result<String, (String, String, String)> {
    scale_units_core::evaluate_json(text).map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()))
}

#[test]
fn every_bad_input_gets_its_typed_error_in_the_api() {
    for (name, text, code) in cases() {
        let outcome = policy().evaluate_json(&text).unwrap_or_else(|e| panic!("{name}: host error {e}"));
        let component =
            outcome.map(|e| e.decision).map_err(|e| (e.code().to_string(), e.message().into(), e.path().into()));
        assert_eq!(component, native(&text), "{name}: the component and the core differ");
        match component {
            Err((actual, message, _)) => assert_eq!(actual, code, "{name}: {message}"),
            Ok(decision) => panic!("{name}: decided {decision}"),
        }
        // The contract entry point too, where there is a contract to send.
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text)
            && let Some(contract) = map.get("contract")
        {
            let contract = contract.to_string();
            let component = policy().validate_contract_json(&contract).expect("no host error").map_err(|e| e.code());
            let native = scale_units_core::validate_contract_json(&contract).map_err(|e| e.code());
            assert_eq!(component, native, "{name}: validate-contract-json");
        }
    }
    assert!(policy().evaluate_json(&good_request()).expect("no host error").is_ok(), "still serving");
}

#[test]
fn invalid_utf8_is_invalid_json_in_the_core() {
    for bytes in [&b"\xff"[..], b"{\"now\":\"\xc3\x28\"}", b"\xed\xa0\x80", b"{\"a\":\"\xf4\x90\x80\x80\"}"] {
        let error = scale_units_core::evaluate_json_bytes(bytes).expect_err("not UTF-8");
        assert_eq!(error.code().as_str(), "invalid_json", "{bytes:?}");
    }
}

#[test]
fn text_over_the_size_limit_is_refused_before_the_component() {
    assert_eq!(MAX_REQUEST_BYTES, 1 << 20);
    // Just at the limit (the good request padded with spaces): decided.
    let good = good_request();
    let at_limit = format!("{good}{}", " ".repeat(MAX_REQUEST_BYTES - good.len()));
    let decided = policy().evaluate_json(&at_limit).expect("no host error").expect("a decision");
    assert!(decided.decision.contains("scale_up"));
    // One byte over, and far over: refused, whatever the text.
    for size in [MAX_REQUEST_BYTES + 1, 16 << 20, 100 << 20] {
        let text = format!("{good}{}", " ".repeat(size - good.len()));
        for outcome in [
            policy().evaluate_json(&text).map(drop),
            policy().validate_contract_json(&text).map(drop),
            policy().simulate_json(&text).map(drop),
        ] {
            match outcome {
                Err(HostError::RequestTooLarge { bytes, limit }) => {
                    assert_eq!((bytes, limit), (size, MAX_REQUEST_BYTES))
                }
                other => panic!("{size} bytes: expected RequestTooLarge, got {other:?}"),
            }
        }
    }
    assert!(policy().evaluate_json(&good).expect("no host error").is_ok(), "still serving");
}

/// Runs `scale-units eval -` with `stdin`, or on a file holding it when `file` names one.
fn eval(stdin: &[u8], file: Option<&str>) -> (Option<i32>, String, String) {
    let _ = common::component_bytes();
    let dir = std::env::temp_dir().join(format!("scale-units-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_scale-units"));
    command.env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"));
    command.args(["eval", "--format", "json"]);
    let path = file.map(|name| dir.join(name));
    match &path {
        Some(path) => {
            std::fs::write(path, stdin).expect("write the input");
            command.arg(path).stdin(Stdio::null());
        }
        None => {
            command.arg("-").stdin(Stdio::piped());
        }
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary runs");
    if path.is_none() {
        let mut pipe = child.stdin.take().expect("stdin");
        let input = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let output = child.wait_with_output().expect("the binary ends");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn every_bad_input_gets_its_typed_error_at_the_command() {
    let mut inputs: Vec<(String, Vec<u8>, Option<&str>, &str)> = cases()
        .into_iter()
        // The command reads text that does not start with `{` or `[` as YAML; those cases
        // have their own expectations below.
        .filter(|(_, text, _)| text.trim_start().starts_with(['{', '[']))
        .map(|(name, text, code)| (name, text.into_bytes(), None, code))
        .collect();
    inputs.push(("invalid UTF-8, stdin".into(), b"{\"now\":\"\xff\"}".to_vec(), None, "invalid_json"));
    inputs.push(("invalid UTF-8, file".into(), b"{\"now\":\"\xff\"}".to_vec(), Some("bad.json"), "invalid_json"));
    inputs.push((
        "deep YAML".into(),
        format!("a: {}", "[".repeat(100_000)).into_bytes(),
        Some("deep.yaml"),
        "invalid_json",
    ));
    inputs.push((
        "deep YAML, block".into(),
        (0..20_000).map(|i| format!("{}- \n", " ".repeat(i % 2000))).collect::<String>().into_bytes(),
        Some("block.yaml"),
        "invalid_json",
    ));
    inputs.push((
        "YAML alias bomb".into(),
        b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n".to_vec(),
        Some("bomb.yaml"),
        "invalid_json",
    ));
    inputs.push(("duplicate YAML key".into(), b"now: a\nnow: b\n".to_vec(), Some("dup.yaml"), "invalid_json"));
    for (name, bytes, file, code) in inputs {
        let (status, stdout, stderr) = eval(&bytes, file);
        assert_eq!(status, Some(2), "{name}: exit {status:?}\n{stdout}\n{stderr}");
        let error: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{name}: {e}: {stdout}"));
        assert_eq!(error["error"]["code"], code, "{name}: {stdout}");
    }
    // Over the size limit: a host failure (exit 1) naming the limit, never a crash.
    let big = format!("{}{}", good_request(), " ".repeat(MAX_REQUEST_BYTES));
    for file in [None, Some("big.json")] {
        let (status, stdout, stderr) = eval(big.as_bytes(), file);
        assert_eq!(status, Some(1), "{file:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(&MAX_REQUEST_BYTES.to_string()), "{stderr}");
    }
}
