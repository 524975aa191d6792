//! What the command says when something is wrong, and the simulator's report, through the real
//! binary: an error is printed once (JSON on stdout with `--format json`, words on stderr with
//! `--format text`), a YAML tab is reported on its own line, and `simulate` keeps decisions,
//! changes carried out and pending scales apart (and reads its trace from stdin with `-`).
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
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs the binary from the workspace root, with `stdin` piped in when given.
fn run_with(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let _ = common::component_bytes();
    let mut command = Command::new(env!("CARGO_BIN_EXE_scale-units"));
    command
        .args(args)
        .current_dir(root())
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"))
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    child.wait_with_output().expect("the binary ends")
}

fn run(args: &[&str]) -> Output {
    run_with(args, None)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn an_error_is_printed_once_in_the_format_asked_for() {
    let contract = temp_file("no-axis.json", &{
        let mut contract: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join("examples/dispatch-worker/contract.json")).unwrap(),
        )
        .unwrap();
        contract["required_capacity_axes"] = serde_json::json!(["cpu_milli", "memory_mib"]);
        contract.to_string()
    });
    let path = contract.to_str().unwrap();
    for command in ["validate", "eval"] {
        let json = run(&[command, "--format", "json", path]);
        assert_eq!(json.status.code(), Some(2), "{command}");
        let error: Value = serde_json::from_str(stdout(&json).trim()).expect("one JSON error");
        assert!(error["error"]["code"].is_string(), "{command}");
        // stderr is not a terminal here: nothing repeated there.
        assert_eq!(stderr(&json), "", "{command}");

        let text = run(&[command, "--format", "text", path]);
        assert_eq!(text.status.code(), Some(2), "{command}");
        assert_eq!(stdout(&text), "", "{command}: the error is not repeated on stdout");
        let words = stderr(&text);
        assert_eq!(words.lines().filter(|line| line.starts_with("scale-units: ")).count(), 1, "{words}");
    }
    let text = run(&["validate", "--format", "text", path]);
    // The code, the path when there is one (a §4.3 check names the contract as a whole), the message.
    assert_eq!(
        stderr(&text).lines().next(),
        Some("scale-units: invalid_contract: dispatch_worker contract omitted a required hard capacity axis")
    );
    // With a path: `eval` of a contract file finds no request `contract` field.
    let text = run(&["eval", "--format", "text", path]);
    assert_eq!(stderr(&text).lines().next(), Some("scale-units: invalid_field at contract: contract is required"));
}

#[test]
fn a_yaml_tab_is_reported_on_its_line() {
    let yaml = "unit_ref: unit:a\nsurface: api_gateway\npolicy:\n  target: 5\n\ttarget_signal: in_flight\n";
    let file = temp_file("tab.yaml", yaml);
    let output = run(&["validate", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let error: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
    assert_eq!(error["error"]["code"], "invalid_json");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("line 5, column 1: a tab in the indentation"), "{message}");
    assert!(message.contains("replace the tab with spaces"), "{message}");
}

fn vector_input(name: &str) -> Value {
    let text = std::fs::read_to_string(root().join("tests/vectors-sim").join(name)).expect("a simulation vector");
    serde_json::from_str::<Value>(&text).expect("JSON")["input"].clone()
}

#[test]
fn the_text_report_keeps_decisions_changes_and_pending_scales_apart() {
    // A delay longer than the cooldown: decisions replace pending ones, and a scale-down is
    // still pending when the trace ends (tests/vectors-sim/decisions-replaced-while-pending.json).
    let input = vector_input("decisions-replaced-while-pending.json");
    let contract = temp_file("replaced.json", &input["contract"].to_string());
    let trace = input["trace_csv"].as_str().unwrap();
    let initial = input["initial_replicas"].to_string();
    let delay = input["actuation_delay_s"].to_string();
    let args = ["simulate", "--initial", &initial, "--delay", &delay, contract.to_str().unwrap(), "-"];

    let json = run_with(&[&args[..1], &["--format", "json"], &args[1..]].concat(), Some(trace.as_bytes()));
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let simulation: Value = serde_json::from_str(stdout(&json).trim()).expect("JSON");
    let summary = &simulation["summary"];

    let text = run_with(&[&args[..1], &["--format", "text"], &args[1..]].concat(), Some(trace.as_bytes()));
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let report = stdout(&text);
    let lines: Vec<&str> = report.lines().collect();
    // One row a step: its decision as current->desired, never current twice for a scale.
    for (step, line) in simulation["steps"].as_array().unwrap().iter().zip(&lines[1..]) {
        let decision =
            format!("{}->{} {}", step["current_replicas"], step["desired_replicas"], step["action"].as_str().unwrap());
        assert!(line.contains(&decision), "{line} lacks {decision}");
        if step["action"] == "scale_up" || step["action"] == "scale_down" {
            assert_ne!(step["current_replicas"], step["desired_replicas"], "{line}");
        }
        let pending = step["pending_replicas"].as_u64().map_or_else(|| "-".to_owned(), |p| p.to_string());
        assert!(line.split_whitespace().any(|cell| cell == pending), "{line}: pending {pending}");
    }
    // The summary: decisions, changes carried out and replaced ones, each with its count.
    let decisions = format!("{} scale_up, {} scale_down,", summary["scale_ups"], summary["scale_downs"]);
    assert!(report.contains(&decisions), "{report}");
    assert!(
        summary["scale_ups"].as_u64() > summary["scale_ups_carried_out"].as_u64(),
        "the vector replaces a scale-up"
    );
    let changes = format!(
        "changes carried out: {} scale-up{}",
        summary["scale_ups_carried_out"],
        if summary["scale_ups_carried_out"] == 1 { "" } else { "s" }
    );
    assert!(report.contains(&changes), "{report}");
    assert!(
        report.contains(&format!("{} decisions replaced by a later one while pending", summary["replaced_scales"])),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "running at the end {}, final {}",
            summary["running_replicas_at_end"], summary["final_replicas"]
        )),
        "{report}"
    );
    let pending = &summary["pending_at_end"];
    assert!(pending.is_object(), "the vector ends with a scale pending");
    assert!(
        report.contains(&format!(
            "pending at the end: {} {}->{} decided at {}, due at {}",
            pending["action"].as_str().unwrap(),
            pending["from_replicas"],
            pending["to_replicas"],
            pending["decided_at"].as_str().unwrap(),
            pending["due_at"].as_str().unwrap()
        )),
        "{report}"
    );

    // Without a delay nothing is pending, and the report says so.
    let outage = run(&[
        "simulate",
        "--format",
        "text",
        "--initial",
        "3",
        "examples/api-gateway/contract.json",
        "examples/traces/metrics-outage-mid-spike.csv",
    ]);
    let report = stdout(&outage);
    assert!(report.contains("pending at the end: nothing"), "{report}");
    assert!(report.contains("3->5 scale_up"), "{report}");
    assert!(report.contains("5->5 blocked"), "{report}");
}

#[test]
fn simulate_reads_the_trace_from_stdin_and_names_bad_lines() {
    let trace = std::fs::read(root().join("examples/traces/metrics-outage-mid-spike.csv")).unwrap();
    let from_file = run(&[
        "simulate",
        "--format",
        "json",
        "--initial",
        "3",
        "examples/api-gateway/contract.json",
        "examples/traces/metrics-outage-mid-spike.csv",
    ]);
    let from_stdin = run_with(
        &["simulate", "--format", "json", "--initial", "3", "examples/api-gateway/contract.json", "-"],
        Some(&trace),
    );
    assert_eq!(from_stdin.status.code(), Some(0), "{}", stderr(&from_stdin));
    assert_eq!(stdout(&from_stdin), stdout(&from_file));

    // A bad cell: the text's line and the column; an unknown column: the valid ones.
    let bad = b"# a comment\ntime,signal\n2026-08-19T12:00:00Z,10\n2026-08-19T12:01:00Z,ten\n";
    let output = run_with(&["simulate", "--format", "json", "examples/api-gateway/contract.json", "-"], Some(bad));
    assert_eq!(output.status.code(), Some(2));
    let error: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
    assert_eq!(error["error"]["path"], "trace[1].signal");
    assert!(error["error"]["message"].as_str().unwrap().contains("line 4, column `signal`"), "{error}");
    let output = run_with(
        &["simulate", "--format", "json", "examples/api-gateway/contract.json", "-"],
        Some(b"time,sginal\n2026-08-19T12:00:00Z,10\n"),
    );
    let error: Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
    assert!(error["error"]["message"].as_str().unwrap().contains("`signal`, `capacity_headroom`"), "{error}");

    // Both from stdin: bad usage.
    let output = run_with(&["simulate", "-", "-"], Some(b""));
    assert_eq!(output.status.code(), Some(64));
    assert!(stderr(&output).contains("not both"), "{}", stderr(&output));
}
