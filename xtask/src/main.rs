//! Workspace tasks (`cargo xtask <task>`).
//!
//! - `component`: builds `evaluator-component` as a `cdylib` for `wasm32-unknown-unknown` with the
//!   `component` profile, wraps the core module into a component with `wit-component`, and writes it to
//!   `<target>/scale-units/scale_units_evaluator.wasm`, where the host finds it by default, and
//!   bundles a copy with its digest into the SDK crate (`host-rs/component/`) and into the Go
//!   module (`bindings-go/`, committed: `make go-component-check` compares it with a fresh build).
//! - `wit-check [--bless]`: builds the component, then fails when the component imports anything,
//!   when its printed world differs from `wit/snapshot/component.wit` (`--bless` rewrites the
//!   snapshot), or when an item of `wit/` lacks a `///` doc comment.
//! - `print-wit FILE.wasm`: prints the world of any component.
//! - `sha256-wasm`: builds the bench-only module `xtask/sha256-wasm` (sha2 compiled to wasm with the
//!   same profile as the component) into `<target>/scale-units/sha256_bench.wasm`, for the `sha256`
//!   group of `host-rs/benches/evaluate.rs`. It is never part of the component.

#![allow(
    clippy::indexing_slicing,
    reason = "a build tool: arena ids index the Resolve that produced them, and a panic here only fails the task"
)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use wit_component::{ComponentEncoder, DecodedWasm, WitPrinter};
use wit_parser::{Docs, Resolve, TypeDefKind, WorldItem};

/// The file name of the built component, beside the other outputs of this workspace.
const COMPONENT_FILE: &str = "scale_units_evaluator.wasm";
/// The checked-in printed world of the built component.
const SNAPSHOT: &str = "wit/snapshot/component.wit";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["component"] => build_component().map(|_| ()),
        ["sha256-wasm"] => build_sha256_wasm(),
        ["wit-check"] => wit_check(false),
        ["wit-check", "--bless"] => wit_check(true),
        ["print-wit", file] => fs::read(file)
            .with_context(|| format!("reading {file}"))
            .and_then(|bytes| print_world(&bytes))
            .map(|text| print!("{text}")),
        _ => {
            eprintln!("usage: cargo xtask component | sha256-wasm | wit-check [--bless] | print-wit FILE.wasm");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    // xtask/ sits directly below the workspace root. `cargo run` sets CARGO_MANIFEST_DIR for the
    // process; it is read at run time first because a target directory shared by two clones may
    // hold a binary built from the other one.
    let manifest_dir =
        env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn target_dir(root: &Path) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds the component and returns its path and bytes.
fn build_component() -> Result<(PathBuf, Vec<u8>)> {
    let root = workspace_root();
    let target = target_dir(&root);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // Remapped paths keep the build machine's directories out of the artifact, so the same
    // sources and toolchain give the same bytes anywhere.
    let home = env::var("CARGO_HOME")
        .ok()
        .or_else(|| env::var("HOME").ok().map(|home| format!("{home}/.cargo")))
        .unwrap_or_default();
    let mut rustflags = format!("--remap-path-prefix={}=/scale-units", root.display());
    if !home.is_empty() {
        rustflags.push_str(&format!(" --remap-path-prefix={home}=/cargo"));
    }
    let status = Command::new(cargo)
        .current_dir(&root)
        .args([
            "rustc",
            "--package",
            "scale-units-component",
            "--lib",
            "--crate-type",
            "cdylib",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            "component",
        ])
        .env("RUSTFLAGS", rustflags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .context("running cargo build for wasm32-unknown-unknown")?;
    if !status.success() {
        bail!(
            "building the core module failed (is the target installed? \
             `rustup target add wasm32-unknown-unknown`)"
        );
    }
    let module_path = target.join("wasm32-unknown-unknown/component/scale_units_component.wasm");
    let module = shrink(&module_path)?;
    let component = ComponentEncoder::default()
        .module(&module)
        .context("reading the core module and its component-type section")?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    let component = without_debug_names(&component)?;
    ensure_no_imports(&component)?;
    let out_dir = target.join("scale-units");
    fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let out = out_dir.join(COMPONENT_FILE);
    fs::write(&out, &component).with_context(|| format!("writing {}", out.display()))?;
    let digest = format!("sha256:{}", hex(&Sha256::digest(&component)));
    println!("component {} ({} bytes, {digest})", out.display(), component.len());
    bundle(&root.join("host-rs").join("component"), &component, &digest)?;
    bundle(&root.join("bindings-go"), &component, &digest)?;
    Ok((out, component))
}

/// The binaryen release whose `wasm-opt` shrinks the core module. Pinned: the same release gives
/// the same bytes from the same module, another one may not (docs/DECISIONS.md, "The component's
/// size"). `make wasm-opt-setup` installs it (Debian's `binaryen` package).
const WASM_OPT_VERSION: &str = "wasm-opt version 108";

/// What `wasm-opt` runs on the core module: size-first optimisation, no debug or producers
/// sections. The features are those rustc's wasm32-unknown-unknown target enables (the module's
/// `target_features` section is stripped with the symbols, so they are named here); the
/// `component-type` custom section that wit-component reads is kept.
const WASM_OPT_ARGS: &[&str] = &[
    "-Oz",
    "--strip-debug",
    "--strip-producers",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-reference-types",
    "--enable-multivalue",
];

/// Runs the pinned `wasm-opt` on the core module that cargo built and returns the optimised bytes.
/// Fails when `wasm-opt` is missing or is another release than [`WASM_OPT_VERSION`].
fn shrink(module_path: &Path) -> Result<Vec<u8>> {
    shrink_with("wasm-opt", module_path)
}

/// [`shrink`] with the `wasm-opt` program named (a test names a missing or a wrong one).
fn shrink_with(wasm_opt: &str, module_path: &Path) -> Result<Vec<u8>> {
    let version = Command::new(wasm_opt).arg("--version").output().map_err(|error| {
        anyhow::anyhow!(
            "wasm-opt not found ({error}): the component is built with binaryen's wasm-opt \
             ({WASM_OPT_VERSION}); install it with `make wasm-opt-setup` (Debian: apt-get install binaryen)"
        )
    })?;
    let found = String::from_utf8_lossy(&version.stdout);
    let found = found.trim();
    let pinned =
        found.strip_prefix(WASM_OPT_VERSION).is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()));
    if !version.status.success() || !pinned {
        bail!(
            "wasm-opt reports {found:?}, but the component is built with {WASM_OPT_VERSION:?} so that it is \
             the same bytes on every host; install that release (`make wasm-opt-setup`)"
        );
    }
    let optimised = module_path.with_extension("opt.wasm");
    let status = Command::new(wasm_opt)
        .args(WASM_OPT_ARGS)
        .arg(module_path)
        .arg("-o")
        .arg(&optimised)
        .status()
        .context("running wasm-opt")?;
    if !status.success() {
        bail!("wasm-opt failed on {}", module_path.display());
    }
    fs::read(&optimised).with_context(|| format!("reading {}", optimised.display()))
}

/// Copies the component with its digest beside it into `dir`: the SDK crate's
/// `host-rs/component/` (ignored by git, listed in the crate's `include`, so that
/// `cargo package -p scale-units-host` carries it and `Policy::bundled()` loads it) and the Go
/// module's `bindings-go/` (committed, `go:embed`ded). Unchanged files are not rewritten: their
/// mtime is what makes cargo rebuild the SDK.
fn bundle(dir: &Path, component: &[u8], digest: &str) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files: [(PathBuf, Vec<u8>); 2] = [
        (dir.join(COMPONENT_FILE), component.to_vec()),
        (dir.join(format!("{COMPONENT_FILE}.sha256")), format!("{digest}\n").into_bytes()),
    ];
    for (path, bytes) in files {
        if fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
            fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Builds `xtask/sha256-wasm` for wasm32-unknown-unknown and copies it beside the component.
fn build_sha256_wasm() -> Result<()> {
    let root = workspace_root();
    let target = target_dir(&root);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let own_target = target.join("sha256-wasm");
    let status = Command::new(cargo)
        .current_dir(root.join("xtask/sha256-wasm"))
        .args(["build", "--locked", "--target", "wasm32-unknown-unknown", "--profile", "component"])
        .env("CARGO_TARGET_DIR", &own_target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .context("running cargo build for the sha256 bench module")?;
    if !status.success() {
        bail!("building xtask/sha256-wasm failed");
    }
    let module = own_target.join("wasm32-unknown-unknown/component/sha256_wasm.wasm");
    let out_dir = target.join("scale-units");
    fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let out = out_dir.join("sha256_bench.wasm");
    fs::copy(&module, &out).with_context(|| format!("copying {} to {}", module.display(), out.display()))?;
    println!("sha256 bench module {}", out.display());
    Ok(())
}

/// The component without its top-level `component-name` custom section: the debug names that
/// `wit-component` gives the wrapping's own core instances, aliases and shims (about 3 KB; issue
/// 29's size budget). No host reads them: the exports, their types and the WIT are named by the
/// component's export and type sections, which are copied as they are.
fn without_debug_names(component: &[u8]) -> Result<Vec<u8>> {
    let Some((preamble, sections)) = component.split_at_checked(8) else {
        bail!("the component is shorter than its preamble");
    };
    let mut out = preamble.to_vec();
    let mut reader = wasmparser::BinaryReader::new(sections, 8);
    while !reader.eof() {
        let start = reader.original_position();
        let id = reader.read_u8().context("reading a section id")?;
        let size = reader.read_var_u32().context("reading a section size")?;
        let content = reader.read_bytes(usize::try_from(size)?).context("reading a section")?;
        let end = reader.original_position();
        if id == 0 && wasmparser::BinaryReader::new(content, 0).read_string().is_ok_and(|name| name == "component-name")
        {
            continue;
        }
        out.extend_from_slice(component.get(start..end).context("a section out of the component")?);
    }
    Ok(out)
}

/// Fails when the component has any import at its top level: no WASI, no host function, no type.
fn ensure_no_imports(component: &[u8]) -> Result<()> {
    let mut imports = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload.context("parsing the component")? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(import.context("reading an import")?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    if !imports.is_empty() {
        bail!("the component must import nothing, but imports: {}", imports.join(", "));
    }
    Ok(())
}

/// Prints the world of a component as `wasm-tools component wit` does.
fn print_world(component: &[u8]) -> Result<String> {
    let decoded = wit_component::decode(component).context("decoding the component")?;
    let DecodedWasm::Component(resolve, world) = &decoded else {
        bail!("not a component but a WIT package");
    };
    if !resolve.worlds[*world].imports.is_empty() {
        let names: Vec<String> = resolve.worlds[*world].imports.keys().map(|key| resolve.name_world_key(key)).collect();
        bail!("the component's world imports {}", names.join(", "));
    }
    let main = decoded.package();
    let nested: Vec<_> = resolve.packages.iter().map(|(id, _)| id).filter(|id| *id != main).collect();
    let mut printer = WitPrinter::default();
    printer.print(resolve, main, &nested)?;
    Ok(printer.output.to_string())
}

fn wit_check(bless: bool) -> Result<()> {
    let root = workspace_root();
    check_docs(&root.join("wit"))?;
    let (_, component) = build_component()?;
    let printed = print_world(&component)?;
    let snapshot = root.join(SNAPSHOT);
    if bless {
        if let Some(dir) = snapshot.parent() {
            fs::create_dir_all(dir)?;
        }
        fs::write(&snapshot, &printed)?;
        println!("wrote {}", snapshot.display());
        return Ok(());
    }
    let expected = fs::read_to_string(&snapshot).with_context(|| format!("reading {}", snapshot.display()))?;
    if expected != printed {
        let first = expected
            .lines()
            .zip(printed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(printed.lines().count()));
        bail!(
            "the component's world differs from {SNAPSHOT} from line {}:\n  snapshot: {:?}\n  built:    {:?}\n\
             (if the change is intended: cargo xtask wit-check --bless)",
            first + 1,
            expected.lines().nth(first).unwrap_or("<end>"),
            printed.lines().nth(first).unwrap_or("<end>"),
        );
    }
    println!("wit-check: the component imports nothing and matches {SNAPSHOT}");
    Ok(())
}

/// Fails when a package, world, interface, type, field, case or function of `wit/` has no docs.
fn check_docs(dir: &Path) -> Result<()> {
    let mut resolve = Resolve::default();
    let (main, _) = resolve.push_dir(dir).with_context(|| format!("parsing {}", dir.display()))?;
    let mut missing = Vec::new();
    let mut need = |docs: &Docs, what: String| {
        if docs.contents.as_deref().is_none_or(|text| text.trim().is_empty()) {
            missing.push(what);
        }
    };
    let package = &resolve.packages[main];
    need(&package.docs, format!("package {}", package.name));
    for (name, id) in &package.worlds {
        let world = &resolve.worlds[*id];
        need(&world.docs, format!("world {name}"));
        for (key, item) in world.imports.iter().chain(&world.exports) {
            if let (wit_parser::WorldKey::Name(item_name), WorldItem::Function(func)) = (key, item) {
                need(&func.docs, format!("world {name} function {item_name}"));
            }
        }
    }
    for (name, id) in &package.interfaces {
        let interface = &resolve.interfaces[*id];
        need(&interface.docs, format!("interface {name}"));
        for (func_name, func) in &interface.functions {
            need(&func.docs, format!("{name}.{func_name}"));
        }
        for (type_name, type_id) in &interface.types {
            let ty = &resolve.types[*type_id];
            need(&ty.docs, format!("{name}.{type_name}"));
            let at = |item: &str| format!("{name}.{type_name}.{item}");
            match &ty.kind {
                TypeDefKind::Record(record) => {
                    record.fields.iter().for_each(|field| need(&field.docs, at(&field.name)));
                }
                TypeDefKind::Enum(enum_) => {
                    enum_.cases.iter().for_each(|case| need(&case.docs, at(&case.name)));
                }
                TypeDefKind::Variant(variant) => {
                    variant.cases.iter().for_each(|case| need(&case.docs, at(&case.name)));
                }
                TypeDefKind::Flags(flags) => {
                    flags.flags.iter().for_each(|flag| need(&flag.docs, at(&flag.name)));
                }
                _ => {}
            }
        }
    }
    if !missing.is_empty() {
        bail!("these WIT items have no `///` doc comment: {}", missing.join(", "));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

    use std::path::Path;

    use super::{shrink_with, without_debug_names};

    #[test]
    fn the_components_debug_names_are_dropped_and_nothing_else() {
        // A component with a `component-name` section between two others (a custom one and an
        // empty type section), encoded by hand: id, size, then the content.
        let custom = |name: &str, data: &[u8]| {
            let mut content = vec![u8::try_from(name.len()).unwrap()];
            content.extend_from_slice(name.as_bytes());
            content.extend_from_slice(data);
            let mut section = vec![0, u8::try_from(content.len()).unwrap()];
            section.extend(content);
            section
        };
        let preamble = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let kept = custom("producers", b"\x00");
        let types = [7_u8, 1, 0];
        let component = [&preamble[..], &kept, &custom("component-name", b"\x00\x01\x02"), &types].concat();
        let stripped = without_debug_names(&component).unwrap();
        assert_eq!(stripped, [&preamble[..], &kept, &types].concat());
        assert_eq!(without_debug_names(&stripped).unwrap(), stripped);
        assert!(without_debug_names(&component[..component.len() - 1]).is_err(), "a cut section is refused");
    }

    #[test]
    fn a_missing_wasm_opt_says_how_to_install_it() {
        let error = shrink_with("wasm-opt-not-installed-here", Path::new("core.wasm")).unwrap_err().to_string();
        assert!(error.contains("wasm-opt not found") && error.contains("make wasm-opt-setup"), "{error}");
    }

    #[test]
    fn another_wasm_opt_release_is_refused() {
        // `echo --version` answers its own version (GNU) or "--version": not the pinned release.
        let error = shrink_with("echo", Path::new("core.wasm")).unwrap_err().to_string();
        assert!(
            error.starts_with("wasm-opt reports") && error.contains("built with \"wasm-opt version 108\""),
            "{error}"
        );
    }
}
