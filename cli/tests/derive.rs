//! The derivation and the diagnosis through the real binary (WIT 0.2.0): `eval --format text`
//! shows the numbers under the reasons while `--format json` keeps the decision's bytes;
//! `derive` prints the derivation; errors carry the diagnosis; `conformance` checks the
//! `derivation/` and `diagnosis/` vectors; a WIT 0.1.0 component still evaluates.
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

fn path(relative: &str) -> String {
    root().join(relative).to_str().expect("utf-8").to_owned()
}

/// The WIT 0.1.0 build of the component (tests/fixtures/README.md).
fn wit_0_1() -> String {
    path("tests/fixtures/scale_units_evaluator-wit-0.1.0.wasm")
}

fn run(args: &[&str]) -> Output {
    let _ = common::component_bytes();
    Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(args)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"))
        .env_remove("SCALE_UNITS_VECTORS")
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn eval_text_prints_the_derivation_under_the_reasons_and_json_keeps_the_decision_bytes() {
    let request = path("examples/api-gateway/request.json");
    let text = run(&["eval", &request, "--format", "text"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = stdout(&text);
    let reasons = out.find("target_tracking").expect("the reason is listed");
    let derivation = out.find("\nDerivation:\n").expect("a derivation section");
    let decision = out.find("\nDecision scale-decision:").expect("the decision id line");
    assert!(reasons < derivation && derivation < decision, "{out}");
    // The numbers, as the core words them, indented under the heading.
    let core = scale_units_core::derive_json(&common::good_request()).unwrap();
    let core: scale_units_core::Derivation = serde_json::from_str(&core).unwrap();
    for line in core.to_text().lines() {
        assert!(out.contains(&format!("\n  {line}\n")), "missing {line:?} in\n{out}");
    }
    assert!(out.contains("  target: ceil("), "{out}");

    let json = run(&["eval", &request, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0));
    let expected = scale_units_core::evaluate_json(&common::good_request()).unwrap();
    assert_eq!(stdout(&json), format!("{expected}\n"), "the decision's bytes, unchanged");
}

#[test]
fn derive_prints_the_derivation_json_or_its_text() {
    let request = path("examples/api-gateway/request.json");
    let json = run(&["derive", &request, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let expected = scale_units_core::derive_json(&common::good_request()).unwrap();
    assert_eq!(stdout(&json), format!("{expected}\n"));
    let text = run(&["derive", &request, "--format", "text"]);
    assert_eq!(text.status.code(), Some(0));
    let derivation: scale_units_core::Derivation = serde_json::from_str(&expected).unwrap();
    assert_eq!(stdout(&text), derivation.to_text());
}

#[test]
fn errors_carry_the_diagnosis_in_both_formats_with_the_same_error_and_exit_code() {
    let vector = path("tests/vectors/diagnosis/dispatch-worker-first-draft.json");
    let vector: Value = serde_json::from_str(&std::fs::read_to_string(&vector).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("scale-units-derive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let request = dir.join("request.json");
    std::fs::write(&request, vector["request"].to_string()).unwrap();
    let contract = dir.join("contract.json");
    std::fs::write(&contract, vector["request"]["contract"].to_string()).unwrap();
    let expected = vector["expect"]["diagnosis"].as_array().unwrap();
    assert!(expected.len() > 1);

    for (command, file, prefix) in [("eval", &request, ""), ("validate", &contract, "contract.")] {
        let file = file.to_str().unwrap();
        let json = run(&[command, file, "--format", "json"]);
        assert_eq!(json.status.code(), Some(2), "{command}");
        let body: Value = serde_json::from_str(&stdout(&json)).unwrap();
        assert_eq!(body["error"]["code"], vector["expect"]["error"]["code"], "{command}");
        let faults = body["diagnosis"]["faults"].as_array().unwrap_or_else(|| panic!("{command}: {body}"));
        assert_eq!(faults.len(), expected.len(), "{command}: {body}");
        // The first fault is the error itself.
        assert_eq!(faults[0]["code"], body["error"]["code"]);
        assert_eq!(faults[0]["path"], body["error"]["path"]);
        for (got, want) in faults.iter().zip(expected) {
            let want_path = want["path"].as_str().unwrap();
            let want_path = want_path.strip_prefix(prefix).unwrap_or(if prefix.is_empty() { want_path } else { "" });
            assert_eq!(got["path"], want_path, "{command}");
            assert!(
                got["hint"].as_str().unwrap().contains(want["hint_contains"].as_str().unwrap()),
                "{command}: {got}"
            );
        }

        let text = run(&[command, file, "--format", "text"]);
        assert_eq!(text.status.code(), Some(2));
        let words = stderr(&text);
        assert!(words.contains(&format!("Diagnosis: {} faults found", expected.len())), "{words}");
        for want in expected {
            assert!(
                words.contains(&format!("hint: {}", want["hint_contains"].as_str().unwrap()))
                    || words.contains(want["hint_contains"].as_str().unwrap()),
                "{words}"
            );
        }
        assert!(stdout(&text).is_empty(), "text errors go to stderr once");
    }
}

#[test]
fn conformance_checks_the_derivation_and_diagnosis_vectors_through_the_component() {
    let output = run(&["conformance", &path("tests/vectors/derivation"), &path("tests/vectors/diagnosis")]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let count = std::fs::read_dir(root().join("tests/vectors/derivation")).unwrap().count()
        + std::fs::read_dir(root().join("tests/vectors/diagnosis")).unwrap().count();
    assert!(stdout(&output).contains(&format!("{count} passed, 0 failed")), "{}", stdout(&output));

    // A planted wrong derivation number fails the run: the check is not vacuous.
    let dir = std::env::temp_dir().join(format!("scale-units-derive-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = std::fs::read_dir(root().join("tests/vectors/derivation")).unwrap().next().unwrap().unwrap().path();
    let mut vector: Value = serde_json::from_str(&std::fs::read_to_string(source).unwrap()).unwrap();
    vector["expect"]["derivation"]["current_replicas"] = Value::from(9999);
    std::fs::write(dir.join("wrong.json"), vector.to_string()).unwrap();
    let output = run(&["conformance", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("derivation.current_replicas"), "{}", stdout(&output));

    // The WIT 0.1.0 component has no derive-json: the derivation vectors fail with the reason.
    let output = run(&["conformance", "--component", &wit_0_1(), &path("tests/vectors/derivation")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("does not export `derive-json`"), "{}", stdout(&output));
}

#[test]
fn a_wit_0_1_component_still_evaluates_and_says_why_there_is_no_derivation() {
    let request = path("examples/api-gateway/request.json");
    let old = wit_0_1();
    let json = run(&["eval", &request, "--format", "json", "--component", &old]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let expected = scale_units_core::evaluate_json(&common::good_request()).unwrap();
    assert_eq!(stdout(&json), format!("{expected}\n"));
    let text = run(&["eval", &request, "--format", "text", "--component", &old]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert!(
        stdout(&text).contains("(No derivation: the component speaks WIT 0.1.0, before 0.2.0.)"),
        "{}",
        stdout(&text)
    );
    let derive = run(&["derive", &request, "--component", &old]);
    assert_eq!(derive.status.code(), Some(1));
    assert!(stderr(&derive).contains("(WIT 0.1.0) does not export `derive-json`"), "{}", stderr(&derive));
    // An error without a diagnosis: the SPEC's error alone, the same exit code.
    let vector = path("tests/vectors/diagnosis/dispatch-worker-first-draft.json");
    let vector: Value = serde_json::from_str(&std::fs::read_to_string(&vector).unwrap()).unwrap();
    let file = std::env::temp_dir().join(format!("scale-units-derive-old-{}.json", std::process::id()));
    std::fs::write(&file, vector["request"].to_string()).unwrap();
    let output = run(&["eval", file.to_str().unwrap(), "--format", "json", "--component", &old]);
    assert_eq!(output.status.code(), Some(2));
    let body: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert!(body.get("diagnosis").is_none() && body["error"]["code"].is_string(), "{body}");
}
