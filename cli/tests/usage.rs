//! The command line as people expect it: `--help` on every subcommand (exit 0, its own options),
//! `--version` with the component's versions and digest, shell completions, a suggestion for a
//! misspelt subcommand, and the documented exit 64 for bad usage.
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
use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(args)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-cli-test-cache"))
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_subcommand_answers_help_with_its_own_options() {
    let cases: &[(&str, &[&str])] = &[
        ("eval", &["--format", "--provenance", "--component", "--expect-digest", "--no-cache"]),
        ("validate", &["--format", "--component"]),
        ("conformance", &["--native", "--known-failures", "--component"]),
        ("inspect", &["--expect-digest", "--no-cache"]),
        ("simulate", &["--initial", "--delay", "--svg", "--format"]),
        ("init", &["--surface", "--format", "--out", "--force", "--unit-ref", "--schema"]),
        ("profile", &["--format", "--component"]),
        ("serve", &["--listen", "--units", "--redis", "--webhook", "--tls-cert", "--keda-listen", "--token-file"]),
        ("completions", &["bash", "zsh", "fish"]),
    ];
    for (command, options) in cases {
        let output = run(&[command, "--help"]);
        let help = text(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{command} --help: {}", text(&output.stderr));
        assert!(help.contains(&format!("Usage: scale-units {command}")), "{command}: {help}");
        for option in *options {
            assert!(help.contains(option), "{command} --help lacks {option}:\n{help}");
        }
    }
    // The top level lists every command.
    let help = text(&run(&["--help"]).stdout);
    for command in ["eval", "validate", "conformance", "inspect", "simulate", "init", "profile", "serve", "completions"]
    {
        assert!(help.contains(command), "{help}");
    }
}

#[test]
fn version_names_the_component_and_its_digest() {
    let path = scale_units_host::default_component_path().expect("make component first");
    let digest = format!("sha256:{:x}", Sha256::digest(common::component_bytes()));
    let output = run(&["--version"]);
    let version = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(version.starts_with(&format!("scale-units {}\n", env!("CARGO_PKG_VERSION"))), "{version}");
    assert!(version.contains("schema 1") && version.contains("WIT scale-units:evaluator@"), "{version}");
    assert!(version.contains(&digest), "{version} lacks {digest}");
    assert!(version.contains(&path.display().to_string()), "{version}");

    // A component named by $SCALE_UNITS_COMPONENT that does not exist is said, not replaced.
    let output = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .arg("-V")
        .env("SCALE_UNITS_COMPONENT", "/nonexistent/evaluator.wasm")
        .output()
        .unwrap();
    let version = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(version.contains("component  none") && version.contains("/nonexistent/evaluator.wasm"), "{version}");
}

#[test]
fn completion_scripts_are_valid_shell() {
    let output = run(&["completions", "bash"]);
    assert_eq!(output.status.code(), Some(0));
    let script = output.stdout;
    assert!(text(&script).contains("scale-units"), "a bash completion for scale-units");
    let mut bash = Command::new("bash").arg("-n").stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    bash.stdin.take().unwrap().write_all(&script).unwrap();
    let checked = bash.wait_with_output().unwrap();
    assert!(checked.status.success(), "bash -n: {}", text(&checked.stderr));
    for shell in ["zsh", "fish"] {
        let output = run(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        assert!(text(&output.stdout).contains("scale-units"), "{shell}");
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(64), "an unknown shell is bad usage");
}

#[test]
fn bad_usage_exits_64_with_a_suggestion_for_a_misspelling() {
    let output = run(&["evl", "x.json"]);
    assert_eq!(output.status.code(), Some(64));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("unrecognized subcommand 'evl'") && stderr.contains("'eval'"), "{stderr}");
    for args in [&["eval"][..], &["eval", "--bogus", "x.json"], &["simulate", "only-one.json"], &[]] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {}", text(&output.stderr));
    }
    assert_eq!(run(&["eval", "--format", "yaml", "x.json"]).status.code(), Some(64), "a bad --format value");
}

/// Every flag combination `serve` refuses is a usage error (64) before anything is compiled,
/// connected or bound: with a component path that does not exist, a check made after loading it
/// would fail with exit 1 on the path instead; and nothing listens or compiles, so the answer
/// comes at once (the time is printed, not asserted).
#[test]
fn serve_refuses_bad_flag_combinations_before_loading_anything() {
    let dir = std::env::temp_dir().join(format!("scale-units-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("file");
    std::fs::write(&file, "x").unwrap();
    let file = file.to_str().unwrap();
    let missing = "/nonexistent/scale-units/component.wasm";
    let cases: [(&[&str], &str); 9] = [
        (&["--webhook"], "--webhook needs --tls-cert and --tls-key"),
        (&["--webhook", "--tls-cert", file, "--tls-key", file], "--webhook needs --units"),
        (&["--webhook-client-ca", file], "--webhook-client-ca needs --webhook"),
        (&["--state-dir", file], "--state-dir needs --units"),
        (&["--keda-listen", "127.0.0.1:0"], "--keda-listen needs --units"),
        (&["--keda-listen", "0.0.0.0:0", "--units", file], "is not loopback"),
        (&["--keda-tls-cert", file, "--keda-tls-key", file], "--keda-tls-cert needs --keda-listen"),
        (&["--listen", "0.0.0.0:0"], "is not loopback: give a token"),
        (&["--redis-ca-file", file], "--redis-ca-file needs a rediss:// Redis URL"),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["serve", "--policy", missing];
        args.extend_from_slice(flags);
        let started = std::time::Instant::now();
        let output = run(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{flags:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(!stderr.contains(missing), "{flags:?}: the component was looked at first: {stderr}");
        println!("{flags:?}: exit 64 in {:?}", started.elapsed());
    }
    // The same component path with good flags is looked at, and fails as a host error.
    let output = run(&["serve", "--policy", missing]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `serve --config FILE`: its errors are usage errors (64) too, at their path, before the
/// component is looked at; a flag beside it is refused (the file is the whole configuration).
#[test]
fn serve_refuses_a_bad_config_file_before_loading_anything() {
    let dir = std::env::temp_dir().join(format!("scale-units-usage-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = "/nonexistent/scale-units/component.wasm";
    let cases: [(&str, &str); 5] = [
        ("webhook: true\n", "webhook needs tls_cert and tls_key"),
        ("keda_listen: 127.0.0.1:0\n", "keda_listen needs units"),
        ("keda_listen: nowhere\n", "at keda_listen"),
        ("listn: 127.0.0.1:0\n", "unknown field `listn`"),
        ("override_groups: [ops, [x]]\n", "at override_groups[1]"),
    ];
    for (index, (body, expected)) in cases.iter().enumerate() {
        let file = dir.join(format!("serve-{index}.yaml"));
        std::fs::write(&file, format!("policy: {missing}\n{body}")).unwrap();
        let started = std::time::Instant::now();
        let output = run(&["serve", "--config", file.to_str().unwrap()]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{body:?}: {stderr}");
        assert!(stderr.contains(expected), "{body:?}: {stderr}");
        assert!(!stderr.contains(missing), "{body:?}: the component was looked at first: {stderr}");
        println!("{body:?}: exit 64 in {:?}", started.elapsed());
    }
    let file = dir.join("good.yaml");
    std::fs::write(&file, format!("policy: {missing}\n")).unwrap();
    let file = file.to_str().unwrap();
    // A flag beside --config, and a file that does not exist.
    let output = run(&["serve", "--config", file, "--listen", "127.0.0.1:0"]);
    assert_eq!(output.status.code(), Some(64), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("--config"), "{}", text(&output.stderr));
    let output = run(&["serve", "--config", "/nonexistent/scale-units/serve.yaml"]);
    assert_eq!(output.status.code(), Some(64), "{}", text(&output.stderr));
    // A good file is served: its policy is looked at, and fails as a host error.
    let output = run(&["serve", "--config", file]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(missing), "{}", text(&output.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
