//! The SDK as an embedder gets it: no network-facing crate among its normal dependencies, the
//! component inside the package, and a crate outside the workspace that evaluates a reference
//! vector through `Policy::bundled()` with nothing but a path dependency.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use scale_units_host::{HostError, Policy, bundled_component};
use sha2::{Digest, Sha256};

/// Crates an embedder of the SDK must never compile (issue 14): servers, RPC, stores, TLS,
/// Kubernetes.
const NETWORK_FACING: &[&str] =
    &["tokio", "axum", "hyper", "tonic", "prost", "redis", "rustls", "kube-core", "k8s-openapi"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace());
    command
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?}: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_sdk_pulls_nothing_network_facing() {
    let tree = run(cargo().args(["tree", "--locked", "-p", "scale-units-host", "-e", "normal", "--prefix", "none"]));
    let crates: BTreeSet<&str> = tree.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert!(crates.contains("wasmtime") && crates.contains("scale-units-core"), "the tree is read: {crates:?}");
    let found: Vec<&&str> = NETWORK_FACING.iter().filter(|name| crates.contains(**name)).collect();
    assert!(found.is_empty(), "scale-units-host depends on {found:?}:\n{tree}");
    // The same check finds them in the server, so it is not vacuous.
    let server =
        run(cargo().args(["tree", "--locked", "-p", "scale-units-server", "-e", "normal", "--prefix", "none"]));
    for name in ["tokio", "axum", "tonic", "redis", "rustls", "k8s-openapi"] {
        assert!(server.lines().any(|line| line.split_whitespace().next() == Some(name)), "{name} in the server");
    }
}

#[test]
fn the_package_carries_the_component_and_its_recorded_digest() {
    let list = run(cargo().args(["package", "--locked", "-p", "scale-units-host", "--list", "--allow-dirty"]));
    let files: BTreeSet<&str> = list.lines().collect();
    for file in ["component/scale_units_evaluator.wasm", "component/scale_units_evaluator.wasm.sha256", "build.rs"] {
        assert!(files.contains(file), "{file} is not packaged:\n{list}");
    }
    assert!(!files.iter().any(|file| file.starts_with("tests/")), "tests stay out of the package:\n{list}");

    let (bytes, recorded) = bundled_component().expect("`make component` bundles the component before the tests");
    let actual = format!("sha256:{:x}", Sha256::digest(bytes));
    assert_eq!(recorded, actual, "the recorded digest is the bundled bytes' sha256");
    let built = std::fs::read(scale_units_host::default_component_path().unwrap()).unwrap();
    assert_eq!(bytes, built.as_slice(), "the bundled bytes are the component this workspace built");
    let policy = Policy::bundled().unwrap();
    assert_eq!(policy.digest(), recorded);
    // The recorded digest replaces a builder's; the same bytes under another digest are refused.
    let other = format!("sha256:{}", "0".repeat(64));
    Policy::bundled_with(Policy::builder().expected_digest(other)).unwrap();
    assert!(matches!(
        Policy::builder().expected_digest(format!("sha256:{}", "0".repeat(64))).load(bytes),
        Err(HostError::DigestMismatch { .. })
    ));
}

/// The workspace's `[profile.dev*]` sections as written in its Cargo.toml: the outside crate builds
/// with the workspace's dev profile (what its tests build with), not cargo's default one with full
/// debug info, which costs a build of wasmtime several times the size for nothing this test reads.
fn dev_profile(manifest: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            inside = line.starts_with("[profile.dev]") || line.starts_with("[profile.dev.");
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(out.contains("[profile.dev]"), "the workspace's Cargo.toml has a [profile.dev]:\n{out}");
    out
}

/// A controller's crate outside the workspace, depending on the SDK by path, evaluates t01
/// through the bundled component and prints the decision.
#[test]
fn a_crate_outside_the_workspace_evaluates_t01_through_the_bundled_component() {
    let root = workspace().canonicalize().unwrap();
    let dir = std::env::temp_dir().join(format!("scale-units-embedder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"embedder\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dependencies]\nscale-units-host = {{ path = {:?} }}\n\n[workspace]\n\n{}",
            root.join("host-rs").display().to_string(),
            dev_profile(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap())
        ),
    )
    .unwrap();
    // The workspace's lock file: the versions the workspace is tested with.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        r#"fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request = std::io::read_to_string(std::io::stdin())?;
    let policy = scale_units_host::Policy::bundled()?;
    let evaluated = policy.evaluate_json(&request)?.map_err(|error| error.to_string())?;
    println!("{}", evaluated.decision);
    println!("{}", evaluated.provenance.component_digest);
    Ok(())
}
"#,
    )
    .unwrap();
    let vector: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/vectors/reference/t01-mcp-target-tracks-deterministically.json"))
            .unwrap(),
    )
    .unwrap();
    // The workspace's target folder (cargo releases its lock before it runs the tests).
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(&dir)
        .args(["run", "-q", "--offline"])
        .env("CARGO_TARGET_DIR", &target)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .env_remove("SCALE_UNITS_COMPONENT")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(vector["request"].to_string().as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    let mut lines = stdout.lines();
    let decision: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(decision, vector["expect"]["decision"], "t01's decision, byte for byte in value");
    assert_eq!(lines.next(), Some(bundled_component().unwrap().1), "evaluated by the bundled component");
    let _ = std::fs::remove_dir_all(&dir);
}
