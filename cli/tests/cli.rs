//! The `scale-units` command: the examples through the component, exit codes, output shapes.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(args: &[&str]) -> Output {
    // Touch the component first so that a missing build fails with its own message.
    let _ = common::component_bytes();
    Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(args)
        .current_dir(root())
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"))
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Each example's decision: (request file, action, reasons, drain_required).
const EXAMPLES: &[(&str, &str, &[&str], bool)] = &[
    ("api-gateway/request.json", "scale_up", &["target_tracking"], false),
    ("dispatch-worker/request.json", "scale_up", &["target_tracking"], false),
    ("dispatch-worker/request.yaml", "scale_up", &["target_tracking"], false),
    ("dispatch-worker/request-backlog-read-failed.json", "blocked", &["signal_missing"], false),
    ("ingest-worker/request.json", "blocked", &["engine_authority_saturated"], false),
    ("graphos-gateway/request.json", "hold", &["at_target"], false),
    ("mcp-gateway/request.json", "scale_up", &["target_tracking"], false),
    ("query-reader/request.json", "scale_down", &["target_tracking"], true),
    ("connector-pool/request.json", "blocked", &["provider_quota_exhausted"], false),
    ("media-pool/request.json", "scale_up", &["target_tracking"], false),
    ("rlm-pool/request.json", "blocked", &["active_sessions_block_drain"], true),
];

#[test]
fn every_example_is_decided_as_documented() {
    let mut surfaces = std::collections::BTreeSet::new();
    for (file, action, reasons, drain) in EXAMPLES {
        let path = format!("examples/{file}");
        let output = run(&["eval", "--format", "json", &path]);
        assert_eq!(output.status.code(), Some(0), "{file}: {}", String::from_utf8_lossy(&output.stderr));
        let decision: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON decision");
        assert_eq!(decision["action"], *action, "{file}");
        assert_eq!(decision["reasons"], serde_json::json!(reasons), "{file}");
        assert_eq!(decision["drain_required"], *drain, "{file}");
        let request: Value = serde_json::from_str(&common::example(&file.replace(".yaml", ".json"))).expect("JSON");
        surfaces.insert(request["contract"]["surface"].as_str().expect("surface").to_owned());
    }
    assert_eq!(surfaces.len(), scale_units_core::SurfaceKind::ALL.len(), "one example per surface: {surfaces:?}");
}

#[test]
fn every_example_contract_is_the_contract_of_its_request_and_validates() {
    for entry in std::fs::read_dir(root().join("examples")).expect("examples") {
        let dir = entry.expect("entry").path();
        // `traces/` holds CSV traces for `simulate`, not an example unit.
        if !dir.is_dir() || dir.ends_with("traces") {
            continue;
        }
        let contract: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("contract.json")).expect("contract")).expect("JSON");
        let request: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("request.json")).expect("request")).expect("JSON");
        assert_eq!(request["contract"], contract, "{}", dir.display());
        let output = run(&["validate", "--format", "json", dir.join("contract.json").to_str().expect("utf-8")]);
        assert_eq!(output.status.code(), Some(0), "{}", dir.display());
        let identity: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
        assert!(identity["contract_id"].as_str().is_some_and(|id| id.starts_with("scale-unit:")));
        assert!(identity["contract_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")));
    }
}

#[test]
fn eval_text_explains_the_decision_with_its_provenance() {
    let output = run(&["eval", "--format", "text", "examples/api-gateway/request.json"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.starts_with("scale up: 3 -> 5 replicas"), "{text}");
    assert!(text.contains(scale_units_core::Reason::TargetTracking.describe()), "{text}");
    assert!(text.contains("metrics:zentinelle-gateway/requests-in-flight"), "{text}");
    assert!(text.contains("Evaluated by component sha256:"), "{text}");

    let output = run(&["eval", "--format", "json", "--provenance", "examples/api-gateway/request.json"]);
    let wrapped: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
    assert_eq!(wrapped["decision"]["action"], "scale_up");
    assert!(wrapped["provenance"]["component_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")));
    assert_eq!(wrapped["provenance"]["evaluator_version"], scale_units_core::EVALUATOR_VERSION);
}

#[test]
fn a_typed_error_exits_2_with_the_error_object() {
    let dir = std::env::temp_dir().join(format!("scale-units-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = [
        ("bad.json", "{\"contract\": {}, \"current_replicas\": 1, \"now\": \"2026-08-19T12:00:00Z\"}", "invalid_field"),
        ("broken.json", "{\"contract\":", "invalid_json"),
        ("broken.yaml", "contract: [unclosed", "invalid_json"),
    ];
    for (name, text, code) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write");
        let output = run(&["eval", "--format", "json", file.to_str().expect("utf-8")]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let error: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
        assert_eq!(error["error"]["code"], code, "{name}");
        assert!(error["error"]["message"].is_string() && error["error"]["path"].is_string(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_failures_exit_1_and_usage_64() {
    let wrong = format!("sha256:{}", "0".repeat(64));
    let output = run(&["eval", "--expect-digest", &wrong, "examples/api-gateway/request.json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("digest mismatch"));
    assert_eq!(run(&["eval", "no/such/file.json"]).status.code(), Some(1));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(64));
    assert_eq!(run(&["eval"]).status.code(), Some(64));
    assert_eq!(run(&["eval", "--format", "xml", "x.json"]).status.code(), Some(64));
}

#[test]
fn conformance_runs_every_vector_through_the_component_and_natively() {
    for native in [false, true] {
        let mut args = vec!["conformance", "tests/vectors"];
        if native {
            args.push("--native");
        }
        let output = run(&args);
        let text = stdout(&output);
        let last = text.lines().last().expect("a last line");
        assert_eq!(output.status.code(), Some(0), "{text}");
        let (passed, failed) = last.split_once(" passed, ").expect("N passed, N failed");
        assert!(passed.parse::<usize>().expect("a count") >= 12, "{last}");
        assert_eq!(failed, "0 failed");
    }
}

#[test]
fn conformance_reports_a_failing_vector_and_exits_1() {
    let dir = std::env::temp_dir().join(format!("scale-units-vectors-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested")).expect("temp dir");
    let vector = |id: &str, code: &str| {
        serde_json::json!({
            "id": id,
            "description": "the request is not JSON",
            "request_json": "{",
            "expect": {"error": {"code": code}},
        })
        .to_string()
    };
    std::fs::write(dir.join("pass.json"), vector("t/pass", "invalid_json")).expect("write");
    std::fs::write(dir.join("nested/fail.json"), vector("t/fail", "invalid_field")).expect("write");
    let output = run(&["conformance", dir.to_str().expect("utf-8")]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL t/fail"), "{text}");
    assert_eq!(text.lines().last(), Some("1 passed, 1 failed"));

    // Listed as a known failure, it passes the run; a listed vector that passes fails it.
    let known = dir.join("known.txt");
    std::fs::write(&known, "t/fail expects the wrong code on purpose\n").expect("write");
    let output =
        run(&["conformance", "--known-failures", known.to_str().expect("utf-8"), dir.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    std::fs::write(&known, "t/pass listed wrongly\n").expect("write");
    let output =
        run(&["conformance", "--known-failures", known.to_str().expect("utf-8"), dir.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inspect_shows_digest_info_world_and_no_imports() {
    let component = scale_units_host::default_component_path().expect("built");
    let output = run(&["inspect", component.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let digest = format!("sha256:{}", hex_sha256(common::component_bytes()));
    assert!(text.lines().any(|line| line == format!("digest   {digest}")), "{text}");
    assert!(text.contains("imports  (none)"), "{text}");
    assert!(text.contains("info     evaluator "), "{text}");
    assert!(text.contains("export scale-units:evaluator/evaluator@0.3.0;"), "{text}");
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[test]
fn simulate_replays_a_trace_through_the_component() {
    let svg = std::env::temp_dir().join(format!("scale-units-sim-{}.svg", std::process::id()));
    let svg_arg = svg.to_string_lossy().into_owned();
    let output = run(&[
        "simulate",
        "--format",
        "json",
        "--initial",
        "3",
        "--svg",
        &svg_arg,
        "examples/api-gateway/contract.json",
        "examples/traces/metrics-outage-mid-spike.csv",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let simulation: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON simulation");
    let steps = simulation["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 8);
    // The failed metric reads block and keep the count: never read as an idle gateway.
    for step in &steps[2..4] {
        assert_eq!(step["action"], "blocked");
        assert_eq!(step["reasons"], serde_json::json!(["signal_missing"]));
        assert_eq!(step["replicas_after"], step["replicas_before"]);
    }
    assert_eq!(simulation["summary"]["blocked_seconds"], 120);
    let chart = std::fs::read_to_string(&svg).expect("the chart was written");
    let _ = std::fs::remove_file(&svg);
    assert!(chart.starts_with("<svg"));
    assert_eq!(chart.matches(r#"class="blocked""#).count(), 2);

    let text = run(&[
        "simulate",
        "--format",
        "text",
        "--initial",
        "4",
        "examples/rlm-pool/contract.json",
        "examples/traces/drain-with-sessions-open.csv",
    ]);
    assert_eq!(text.status.code(), Some(0));
    assert!(stdout(&text).contains("active_sessions_block_drain"));
}

#[test]
fn simulate_reports_a_bad_trace_cell_at_its_row_and_column() {
    let trace = std::env::temp_dir().join(format!("scale-units-bad-trace-{}.csv", std::process::id()));
    std::fs::write(&trace, "time,signal\n2026-08-19T12:00:00Z,10\n2026-08-19T12:01:00Z,ten\n").unwrap();
    let output = run(&["simulate", "--format", "json", "examples/api-gateway/contract.json", &trace.to_string_lossy()]);
    let _ = std::fs::remove_file(&trace);
    assert_eq!(output.status.code(), Some(2));
    let error: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON error");
    assert_eq!(error["error"]["code"], "invalid_field");
    assert_eq!(error["error"]["path"], "trace[1].signal");
}
