//! Embeds the conformance vectors of `tests/vectors/` (SPEC §11) in the crate: the registry's
//! conformance gate runs them against every candidate component before it can be activated.
//! Outside the workspace (a packaged crate) the list is empty, and the gate then needs a folder.
//!
//! With the `kubernetes` feature it also compiles KEDA's `proto/externalscaler.proto` into Rust
//! (`OUT_DIR/externalscaler.rs`, included by `src/keda/proto.rs`) with protox, a protobuf
//! compiler in pure Rust, so that building needs no system `protoc`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("..").join("tests").join("vectors");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut out = String::from("/// The vectors of `tests/vectors/`: (path below it, text).\n");
    out.push_str("pub(crate) static EMBEDDED: &[(&str, &str)] = &[\n");
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file).to_string_lossy().replace('\\', "/");
        let _ = writeln!(out, "    ({relative:?}, include_str!({:?})),", file.display().to_string());
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("vectors.rs");
    if let Err(error) = std::fs::write(&target, out) {
        println!("cargo::error=cannot write {}: {error}", target.display());
    }
    #[cfg(feature = "kubernetes")]
    if let Err(error) = externalscaler() {
        println!("cargo::error=cannot compile proto/externalscaler.proto: {error}");
    }
}

#[cfg(feature = "kubernetes")]
fn externalscaler() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed=proto/externalscaler.proto");
    let descriptors = protox::compile(["proto/externalscaler.proto"], ["proto"])?;
    tonic_prost_build::configure().emit_rerun_if_changed(false).compile_fds(descriptors)?;
    Ok(())
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "json") {
            files.push(path);
        }
    }
}
