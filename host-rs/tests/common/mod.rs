//! Shared by the host tests: the real component, and small hostile components generated from
//! WAT against the real WIT world.
#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

pub mod bad_inputs;
pub mod boundary;

use std::path::Path;
use std::sync::OnceLock;

use scale_units_host::{Policy, default_component_path};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::abi::{AbiVariant, WasmType};
use wit_parser::{Resolve, WorldItem};

/// The component this workspace built (`make component`).
pub fn component_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = default_component_path()
            .unwrap_or_else(|error| panic!("{error}\nbuild the component first: make component"));
        std::fs::read(&path).unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
    })
}

/// One policy over the real component, shared by the tests of a binary.
pub fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| Policy::from_bytes(component_bytes()).expect("the built component loads"))
}

/// A request that the real component decides (`scale_up`).
pub fn good_request() -> String {
    example("api-gateway/request.json")
}

/// The text of a file below `examples/`.
pub fn example(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("reading {}: {error}", file.display()))
}

/// How a generated component's `evaluate-json` behaves.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    /// Loops forever.
    Loop,
    /// Grows its memory by 1 MiB at a time, forever.
    GrowMemory,
    /// Traps at once.
    Trap,
    /// Answers every request with this decision JSON (under 3000 bytes), whatever it asks.
    Answer(&'static str),
    /// Recurses without end (a non-tail call), until the stack runs out.
    Recurse,
    /// Grows its memory by `pages` (64 KiB each) and answers `ok` with a string of `len` zero
    /// bytes at 64 KiB, inside memory or not.
    HugeOutput { pages: u32, len: u32 },
    /// Answers `ok` with a string that is not UTF-8.
    BadUtf8Output,
}

/// What the generated component's `info` reports.
pub struct Info<'a> {
    pub evaluator_version: &'a str,
    pub schema_version: &'a str,
    pub wit_version: &'a str,
}

pub const GOOD_INFO: Info<'static> =
    Info { evaluator_version: "0.0.0-hostile", schema_version: "1", wit_version: "0.3.0" };

/// A component exporting the real `scale-units` world (plus `extra_world`'s imports, when given)
/// whose `info` answers `info`, whose `evaluate-json` does `behaviour`, and whose other functions
/// trap. Built from a WAT core module whose exports follow the canonical ABI signatures that
/// wit-parser computes for the real WIT, then encoded with wit-component.
pub fn hostile_component(behaviour: Behaviour, info: &Info<'_>, extra_world: Option<&str>) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit")).expect("the WIT parses");
    let world = match extra_world {
        None => resolve.select_world(&[package], Some("scale-units")).expect("the world exists"),
        Some(source) => {
            let extra = resolve.push_str("hostile.wit", source).expect("the hostile WIT parses");
            resolve.select_world(&[extra], None).expect("the hostile world exists")
        }
    };

    // Strings for `info`, and a return area pointing at them.
    let strings = [info.evaluator_version, info.schema_version, info.wit_version];
    let mut data = Vec::new();
    let mut return_area = Vec::new();
    let base = 256u32;
    for text in strings {
        return_area.extend((base + u32::try_from(data.len()).expect("small")).to_le_bytes());
        return_area.extend(u32::try_from(text.len()).expect("small").to_le_bytes());
        data.extend_from_slice(text.as_bytes());
    }
    let escape = |bytes: &[u8]| bytes.iter().map(|byte| format!("\\{byte:02x}")).collect::<String>();

    let mut wat = String::from("(module\n");
    let mut imports = String::new();
    let mut exports = String::new();
    for (key, item) in &resolve.worlds[world].imports {
        match item {
            WorldItem::Function(func) => {
                let signature = resolve.wasm_signature(AbiVariant::GuestImport, func);
                imports.push_str(&format!(
                    "  (import \"$root\" \"{}\" (func {}))\n",
                    resolve.name_world_key(key),
                    signature_text(&signature.params, &signature.results)
                ));
            }
            // An imported interface (a WASI one, say): import each of its functions.
            WorldItem::Interface { id, .. } => {
                for (name, func) in &resolve.interfaces[*id].functions {
                    let signature = resolve.wasm_signature(AbiVariant::GuestImport, func);
                    imports.push_str(&format!(
                        "  (import \"{}\" \"{name}\" (func {}))\n",
                        resolve.name_world_key(key),
                        signature_text(&signature.params, &signature.results)
                    ));
                }
            }
            WorldItem::Type { .. } => {}
        }
    }
    for (key, item) in &resolve.worlds[world].exports {
        let WorldItem::Interface { id, .. } = item else { continue };
        let interface_name = resolve.name_world_key(key);
        for (name, func) in &resolve.interfaces[*id].functions {
            let signature = resolve.wasm_signature(AbiVariant::GuestExport, func);
            let body = match (name.as_str(), behaviour) {
                ("info", _) => "i32.const 128".to_owned(),
                ("evaluate-json", Behaviour::Loop) => "(loop $forever (br $forever)) unreachable".to_owned(),
                // The return area at 1024: `ok` (0), then the string's pointer and length.
                ("evaluate-json", Behaviour::Answer(_)) => "i32.const 1024".to_owned(),
                ("evaluate-json", Behaviour::Recurse) => "(drop (call $deep (i32.const 0))) unreachable".to_owned(),
                ("evaluate-json", Behaviour::HugeOutput { pages, len }) => format!(
                    "(drop (memory.grow (i32.const {pages}))) (i32.store8 (i32.const 2048) (i32.const 0)) \
                     (i32.store (i32.const 2052) (i32.const 65536)) (i32.store (i32.const 2056) (i32.const {len})) \
                     i32.const 2048"
                ),
                ("evaluate-json", Behaviour::BadUtf8Output) => "i32.const 2064".to_owned(),
                ("evaluate-json", Behaviour::GrowMemory) => {
                    "(loop $more (drop (memory.grow (i32.const 16))) (br $more)) unreachable".to_owned()
                }
                _ => "unreachable".to_owned(),
            };
            exports.push_str(&format!(
                "  (func (export \"{interface_name}#{name}\") {}\n    {body})\n",
                signature_text(&signature.params, &signature.results)
            ));
        }
    }
    wat.push_str(&imports);
    wat.push_str("  (memory (export \"memory\") 1)\n");
    wat.push_str("  (global $heap (mut i32) (i32.const 4096))\n");
    wat.push_str(&format!("  (data (i32.const 128) \"{}\")\n", escape(&return_area)));
    wat.push_str(&format!("  (data (i32.const 256) \"{}\")\n", escape(&data)));
    // For BadUtf8Output: `ok`, then a 2-byte string at 2080 that is not UTF-8.
    wat.push_str("  (data (i32.const 2064) \"\\00\\00\\00\\00\\20\\08\\00\\00\\02\\00\\00\\00\")\n");
    wat.push_str("  (data (i32.const 2080) \"\\ff\\fe\")\n");
    // For Recurse: a call that is not in tail position, so every level keeps a frame.
    wat.push_str(
        "  (func $deep (param i32) (result i32)\n    (i32.add (call $deep (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))\n",
    );
    if let Behaviour::Answer(answer) = behaviour {
        assert!(answer.len() < 3000, "the answer must fit below the heap");
        let mut area = vec![0u8; 4];
        area.extend(1040u32.to_le_bytes());
        area.extend(u32::try_from(answer.len()).expect("small").to_le_bytes());
        wat.push_str(&format!("  (data (i32.const 1024) \"{}\")\n", escape(&area)));
        wat.push_str(&format!("  (data (i32.const 1040) \"{}\")\n", escape(answer.as_bytes())));
    }
    wat.push_str(
        r#"  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $ptr i32)
    (local.set $ptr
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
        (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
    (global.set $heap (i32.add (local.get $ptr) (local.get 3)))
    (block $done
      (loop $grow
        (br_if $done (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
        (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))
        (br $grow)))
    (local.get $ptr))
"#,
    );
    wat.push_str(&exports);
    wat.push_str(")\n");

    let mut module = wat::parse_str(&wat).unwrap_or_else(|error| panic!("{error}\n{wat}"));
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .expect("metadata embeds");
    ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| encoder.validate(true).encode())
        .unwrap_or_else(|error| panic!("{error:#}\n{wat}"))
}

/// A component of another world altogether: `other:thing/api.hello: func() -> u32`.
pub fn other_world_component() -> Vec<u8> {
    single_function_component(
        "package other:thing@1.0.0;\ninterface api { hello: func() -> u32; }\nworld other { export api; }\n",
        "other:thing/api@1.0.0#hello",
    )
}

/// An impostor: the evaluator's interface name, but only `info`, and returning a number.
pub fn impostor_component() -> Vec<u8> {
    single_function_component(
        "package scale-units:evaluator@0.1.0;\n\
         interface evaluator { info: func() -> u32; }\n\
         world scale-units { export evaluator; }\n",
        "scale-units:evaluator/evaluator@0.1.0#info",
    )
}

/// A component of the one-package world `wit` exporting one `func() -> u32` as `export`.
fn single_function_component(wit: &str, export: &str) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let package = resolve.push_str("other.wit", wit).expect("the WIT parses");
    let world = resolve.select_world(&[package], None).expect("the world exists");
    let mut module = wat::parse_str(format!(
        r#"(module (memory (export "memory") 1) (func (export "{export}") (result i32) i32.const 42))"#
    ))
    .expect("the WAT parses");
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .expect("metadata embeds");
    ComponentEncoder::default().module(&module).and_then(|mut encoder| encoder.encode()).expect("the component encodes")
}

fn signature_text(params: &[WasmType], results: &[WasmType]) -> String {
    let name = |ty: &WasmType| match ty {
        WasmType::I64 | WasmType::PointerOrI64 => "i64",
        WasmType::F32 => "f32",
        WasmType::F64 => "f64",
        _ => "i32",
    };
    let mut text = String::new();
    if !params.is_empty() {
        text.push_str("(param");
        for ty in params {
            text.push(' ');
            text.push_str(name(ty));
        }
        text.push(')');
    }
    if !results.is_empty() {
        text.push_str(" (result");
        for ty in results {
            text.push(' ');
            text.push_str(name(ty));
        }
        text.push(')');
    }
    text
}

/// The same component with one custom section appended (`scale-units-build`, naming `variant`):
/// another file with another sha256, whose code, and so every decision, is the same.
pub fn variant_build(component: &[u8], variant: &str) -> Vec<u8> {
    let mut bytes = component.to_vec();
    let section = wasm_encoder::CustomSection {
        name: "scale-units-build".into(),
        data: std::borrow::Cow::Owned(variant.as_bytes().to_vec()),
    };
    wasm_encoder::ComponentSection::append_to_component(&section, &mut bytes);
    bytes
}
