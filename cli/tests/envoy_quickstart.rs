//! Issue 40: docs/envoy.md's quick start, run as written. Its `sh` blocks are one shell session
//! (`bash -euo pipefail`, from the repository root) with this build's `scale-units` and the real
//! Envoy 1.40.0 (`make envoy-setup`) first on PATH. The blocks check their own answers (each call
//! greps the reason it expects), start the gate, a stand-in actuator and Envoy on the fixed ports
//! the shipped bootstrap names, and stop them; whatever is left when the session ends is killed
//! with its process group.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod proxy;

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `sh` blocks of the section `## {heading}`, in order.
fn blocks(markdown: &str, heading: &str) -> Vec<String> {
    let start = markdown.find(&format!("\n## {heading}\n")).unwrap_or_else(|| panic!("no section {heading}"));
    let section = &markdown[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |end| end + 3);
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in section[..end].lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_quick_start_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let markdown = std::fs::read_to_string(root.join("docs/envoy.md")).unwrap();
    let blocks = blocks(&markdown, "Quick start");
    assert!(blocks.len() >= 5, "the quick start's sh blocks: {blocks:?}");
    let script = blocks.concat();
    for port in [8080, 9191, 10000, 9901, 2375] {
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} is taken: the quick start runs on the fixed ports of deploy/envoy/envoy.yaml"
        );
    }
    let binary = Path::new(env!("CARGO_BIN_EXE_scale-units"));
    let envoy = proxy::envoy_binary();
    let path = format!(
        "{}:{}:{}",
        binary.parent().unwrap().display(),
        envoy.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let before = std::fs::read_dir(root.join("deploy/envoy/quickstart")).unwrap().count();
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(&root)
        .env("PATH", path)
        .env_remove("SCALE_UNITS_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = child.id();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(180) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Whatever the session left running (it stops its own on success).
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).status();
    let output = child.wait_with_output().unwrap();
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let status = status.unwrap_or_else(|| panic!("the quick start did not finish in 180 s\n{said}"));
    assert!(status.success(), "the quick start failed ({status})\n{said}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for reason in ["past_desired", "count_ambiguous", "count_out_of_range"] {
        assert!(stdout.contains(&format!("\"reason\":\"{reason}\"")), "{reason}\n{said}");
    }
    let after = std::fs::read_dir(root.join("deploy/envoy/quickstart")).unwrap().count();
    assert_eq!(before, after, "the quick start left files in deploy/envoy/quickstart");
}
