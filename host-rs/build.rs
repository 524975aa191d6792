//! Embeds two things in the crate:
//!
//! - the conformance vectors of `tests/vectors/` (SPEC §11): the registry's conformance gate runs
//!   them against every candidate component before it can be activated. Outside the workspace (a
//!   packaged crate) the list is empty, and the gate then needs a folder;
//! - the evaluator component, when `component/scale_units_evaluator.wasm` is present (`make
//!   component` copies it there with its sha256 in `component/scale_units_evaluator.wasm.sha256`;
//!   a packaged crate always carries both): `Policy::bundled()` loads exactly those bytes and
//!   checks them against the recorded digest.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const COMPONENT: &str = "component/scale_units_evaluator.wasm";
const DIGEST: &str = "component/scale_units_evaluator.wasm.sha256";

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    vectors(&manifest, &out_dir);
    bundled(&manifest, &out_dir);
}

fn vectors(manifest: &Path, out_dir: &Path) {
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
    write(&out_dir.join("vectors.rs"), &out);
}

/// `OUT_DIR/bundled.rs`: `BUNDLED: Option<(&[u8], &str)>`, the component and its recorded digest.
fn bundled(manifest: &Path, out_dir: &Path) {
    let component = manifest.join(COMPONENT);
    let digest = manifest.join(DIGEST);
    println!("cargo::rerun-if-changed={}", component.display());
    println!("cargo::rerun-if-changed={}", digest.display());
    let recorded = std::fs::read_to_string(&digest).ok().map(|text| text.trim().to_owned());
    let out = match (component.is_file(), recorded) {
        (true, Some(recorded)) => format!(
            "/// The bundled component and the digest recorded when it was copied in.\n\
             pub(crate) static BUNDLED: Option<(&[u8], &str)> = Some((include_bytes!({:?}), {recorded:?}));\n",
            component.display().to_string()
        ),
        _ => "/// No component was bundled into this build (`make component` bundles one).\n\
              pub(crate) static BUNDLED: Option<(&[u8], &str)> = None;\n"
            .to_owned(),
    };
    write(&out_dir.join("bundled.rs"), &out);
}

fn write(path: &Path, text: &str) {
    if let Err(error) = std::fs::write(path, text) {
        println!("cargo::error=cannot write {}: {error}", path.display());
    }
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
