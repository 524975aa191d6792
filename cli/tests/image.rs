//! The OCI image `make image` builds (`make test-image` runs this after building it): unpacked with
//! umoci, its root filesystem holds the static binary, the component and its vectors and a non-root
//! user; `scale-units --version` run from it (chroot, as the image's user, with the image's
//! environment) finds the component inside the image, and the conformance vectors pass there; the
//! image config's labels, user, environment and entrypoint are the Containerfile's.
//!
//! Ignored by `cargo test`: it needs the built image and root (chroot). `make test-image` builds the
//! image and runs it with `--ignored`; a missing image or missing root fails, never skips.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A blob of the layout by its digest, as JSON.
fn blob(layout: &Path, digest: &str) -> Value {
    let (algorithm, hash) = digest.split_once(':').unwrap();
    let bytes = std::fs::read(layout.join("blobs").join(algorithm).join(hash)).unwrap();
    assert_eq!(format!("sha256:{}", hex(&Sha256::digest(&bytes))), digest, "the blob is its digest");
    serde_json::from_slice(&bytes).unwrap()
}

/// The Containerfile's final stage: labels, environment, user, entrypoint.
fn containerfile() -> (BTreeMap<String, String>, Vec<String>, String, Value) {
    let text = std::fs::read_to_string(workspace().join("deploy/image/Containerfile")).unwrap();
    let stage = text.rsplit_once("FROM scratch").unwrap().1;
    let (mut labels, mut env, mut user, mut entrypoint) = (BTreeMap::new(), Vec::new(), String::new(), Value::Null);
    for line in stage.lines() {
        if let Some(rest) = line.strip_prefix("LABEL ") {
            let (key, value) = rest.split_once('=').unwrap();
            labels.insert(key.to_owned(), value.trim_matches('"').to_owned());
        } else if let Some(rest) = line.strip_prefix("ENV ") {
            env.push(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("USER ") {
            rest.clone_into(&mut user);
        } else if let Some(rest) = line.strip_prefix("ENTRYPOINT ") {
            entrypoint = serde_json::from_str(rest).unwrap();
        }
    }
    (labels, env, user, entrypoint)
}

#[test]
#[ignore = "needs `make image` and root: run by `make test-image`"]
fn the_built_image_runs_its_binary_with_its_component_as_its_non_root_user() {
    let layout =
        PathBuf::from(std::env::var("SCALE_UNITS_IMAGE_LAYOUT").expect("SCALE_UNITS_IMAGE_LAYOUT (make test-image)"));
    let tag = std::env::var("SCALE_UNITS_IMAGE_TAG").expect("SCALE_UNITS_IMAGE_TAG (make test-image)");
    assert_eq!(tag, env!("CARGO_PKG_VERSION"));

    // The layout: an index naming the tag, a manifest, a config.
    let index = blob_index(&layout);
    let manifest = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|manifest| manifest["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
        .unwrap_or_else(|| panic!("no manifest tagged {tag}: {index}"));
    let manifest = blob(&layout, manifest["digest"].as_str().unwrap());
    let config = blob(&layout, manifest["config"]["digest"].as_str().unwrap());
    assert_eq!((config["os"].as_str(), config["architecture"].as_str()), (Some("linux"), Some("amd64")));
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1, "FROM scratch: one layer");

    // The config is the Containerfile's.
    let (labels, env, user, entrypoint) = containerfile();
    let image = &config["config"];
    assert_eq!(image["User"], user.as_str());
    assert_eq!(image["Entrypoint"], entrypoint);
    for (key, value) in &labels {
        assert_eq!(image["Labels"][key], value.as_str(), "label {key}");
    }
    for key in ["revision", "created"] {
        assert!(image["Labels"][format!("org.opencontainers.image.{key}")].is_string(), "label {key}");
    }
    let image_env: Vec<&str> = image["Env"].as_array().unwrap().iter().map(|item| item.as_str().unwrap()).collect();
    for item in &env {
        assert!(image_env.contains(&item.as_str()), "{item} in {image_env:?}");
    }

    // Unpacked: the root filesystem.
    let bundle = std::env::temp_dir().join(format!("scale-units-image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&bundle);
    let unpack = Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:{tag}", layout.display()))
        .arg(&bundle)
        .output()
        .expect("umoci (make image-setup)");
    assert!(unpack.status.success(), "umoci unpack (as root): {}", String::from_utf8_lossy(&unpack.stderr));
    let rootfs = bundle.join("rootfs");
    let component = std::fs::read(rootfs.join("opt/scale-units/scale_units_evaluator.wasm")).unwrap();
    let built = std::fs::read(workspace().join("target/scale-units/scale_units_evaluator.wasm")).unwrap();
    assert_eq!(component, built, "the image carries the built component");
    let digest = format!("sha256:{}", hex(&Sha256::digest(&component)));
    assert!(rootfs.join("opt/scale-units/vectors").read_dir().unwrap().next().is_some());
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(passwd.lines().any(|line| line.starts_with("nonroot:x:65532:65532:")), "{passwd}");
    let file = Command::new("file").arg(rootfs.join("usr/local/bin/scale-units")).output();
    if let Ok(file) = file {
        let kind = String::from_utf8_lossy(&file.stdout);
        assert!(kind.contains("statically linked") || kind.contains("static-pie"), "{kind}");
    }

    // Run from the root filesystem, as the image's user, with only the image's environment.
    let run = |args: &[&str]| {
        // The image's PATH is set for the child, so chroot is named by its host path.
        let mut command = Command::new(chroot());
        command.arg(format!("--userspec={user}")).arg(&rootfs).arg("/usr/local/bin/scale-units").args(args);
        command.env_clear();
        for item in &image_env {
            let (key, value) = item.split_once('=').unwrap();
            command.env(key, value);
        }
        let output = command.output().expect("chroot");
        (
            output.status,
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (status, stdout, stderr) = run(&["--version"]);
    assert!(status.success(), "chroot needs root: {status:?}\n{stdout}\n{stderr}");
    assert!(stdout.starts_with(&format!("scale-units {}", env!("CARGO_PKG_VERSION"))), "{stdout}");
    let line = stdout.lines().find(|line| line.starts_with("component")).unwrap();
    assert!(
        line.contains(&digest) && line.contains("/opt/scale-units/scale_units_evaluator.wasm"),
        "the component inside the image: {stdout}"
    );
    let (status, stdout, stderr) = run(&["conformance", "/opt/scale-units/vectors"]);
    assert!(status.success(), "the vectors pass in the image: {stdout}\n{stderr}");
    eprintln!("{stdout}");
    let _ = std::fs::remove_dir_all(&bundle);
}

fn blob_index(layout: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(layout.join("index.json")).expect("the image layout (make image)")).unwrap()
}

/// The host's `chroot`, found on the test's own PATH.
fn chroot() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chroot"))
        .find(|path| path.is_file())
        .expect("chroot (coreutils)")
}
