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

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::bad_inputs::cases;
use common::{good_request, policy};
use scale_units_host::{HostError, MAX_REQUEST_BYTES};
use serde_json::Value;

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

#[path = "../../server/tests/support/mod.rs"]
mod support;

/// The decision service (`scale-units serve`) over loopback, with the built component active.
fn service() -> support::Running {
    use scale_units_host::{Candidate, Policy, PolicyRegistry};
    use scale_units_server::service::{Service, ServiceConfig};
    let registry = PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
        .build();
    let digest = registry.stage(Candidate::new(common::component_bytes())).expect("stages").digest;
    registry.activate(&digest).expect("activates");
    let config = ServiceConfig { shutdown_delay: std::time::Duration::ZERO, ..ServiceConfig::default() };
    support::Running::start(Service::new(std::sync::Arc::new(registry), config), 2)
}

/// The code of a reply: the error's, or the first result's in a batch.
fn reply_code(reply: &support::Reply) -> (u16, String) {
    let body = reply.json();
    let error = if body["results"].is_array() { &body["results"][0]["error"] } else { &body["error"] };
    (reply.status, error["code"].as_str().unwrap_or_else(|| panic!("no code in {}", reply.body)).to_owned())
}

#[test]
fn every_bad_input_gets_its_typed_error_over_http() {
    let running = service();
    let mut client = support::Client::new(running.address).retrying_stale_connections();
    let mut inputs: Vec<(String, Vec<u8>, &str)> =
        cases().into_iter().map(|(name, text, code)| (name, text.into_bytes(), code)).collect();
    inputs.push(("invalid UTF-8".into(), b"{\"now\":\"\xff\"}".to_vec(), "invalid_json"));
    inputs.push(("invalid UTF-8, batch".into(), b"[{\"now\":\"\xc3\x28\"}]".to_vec(), "invalid_json"));
    for (name, body, code) in inputs {
        let reply = client.post("/v1/evaluate", &[], &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (status, actual) = reply_code(&reply);
        assert_eq!(actual, code, "{name}: {}", reply.body);
        assert!([200, 400, 422].contains(&status), "{name}: {status} {}", reply.body);
        // The same over /v1/validate, for the contract alone, never a crash.
        if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&body)
            && let Some(contract) = map.get("contract")
        {
            let reply = client.post("/v1/validate", &[], contract.to_string().as_bytes()).expect("a reply");
            assert!([200, 400, 422].contains(&reply.status), "{name}: {}", reply.body);
        }
    }
    // Over the body limit (the service's default, 1 MiB, is MAX_REQUEST_BYTES): 413.
    let big = format!("{}{}", good_request(), " ".repeat(MAX_REQUEST_BYTES));
    let reply = client.post("/v1/evaluate", &[], big.as_bytes()).expect("a reply");
    assert_eq!(reply_code(&reply), (413, "payload_too_large".to_owned()), "{}", reply.body);
    let reply = client.post("/v1/evaluate", &[], good_request().as_bytes()).expect("a reply");
    assert_eq!(reply.status, 200, "still serving: {}", reply.body);
    running.stop();
}
