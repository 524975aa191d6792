//! `scale-units inspect COMPONENT.wasm`: what a component is, before trusting it.

use sha2::{Digest, Sha256};
use wit_component::{DecodedWasm, WitPrinter};

use crate::{Failure, Options, exit};

pub(crate) fn run(options: &Options) -> Result<u8, Failure> {
    let [path] = options.operands.as_slice() else {
        return Err(Failure::Usage("inspect takes one COMPONENT.wasm".to_owned()));
    };
    let bytes = std::fs::read(path).map_err(|error| Failure::Host(format!("cannot read {path}: {error}")))?;
    let digest: String = Sha256::digest(&bytes).iter().map(|byte| format!("{byte:02x}")).collect();
    out!("file     {path}");
    out!("digest   sha256:{digest}");
    out!("size     {} bytes", bytes.len());
    let imports = match imports(&bytes) {
        Ok(imports) if imports.is_empty() => "(none)".to_owned(),
        Ok(imports) => imports.join(", "),
        Err(error) => format!("(unreadable: {error})"),
    };
    out!("imports  {imports}");

    let mut code = 0;
    match crate::load_policy(options, Some(path.as_ref())) {
        Ok(policy) => {
            let info = policy.info();
            out!(
                "info     evaluator {}, schema {}, WIT {}",
                info.evaluator_version,
                info.schema_version,
                info.wit_version
            );
        }
        Err(Failure::Host(error) | Failure::Usage(error)) => {
            out!("info     (refused: {error})");
            code = exit::FAILURE;
        }
    }
    match world(&bytes) {
        Ok(world) => out!("world\n{world}"),
        Err(error) => {
            out!("world    (unreadable: {error})");
            code = exit::FAILURE;
        }
    }
    Ok(code)
}

/// The names of the component's top-level imports.
fn imports(bytes: &[u8]) -> Result<Vec<String>, wasmparser::BinaryReaderError> {
    let mut imports = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(import?.name.name.to_owned());
                }
            }
            wasmparser::Payload::ImportSection(section) if depth == 1 => {
                for import in section.into_imports() {
                    let import = import?;
                    imports.push(format!("{}::{}", import.module, import.name));
                }
            }
            _ => {}
        }
    }
    Ok(imports)
}

/// The component's world, printed as WIT.
fn world(bytes: &[u8]) -> Result<String, String> {
    let decoded = wit_component::decode(bytes).map_err(|error| format!("{error:#}"))?;
    let DecodedWasm::Component(resolve, _) = &decoded else {
        return Err("a WIT package, not a component".to_owned());
    };
    let main = decoded.package();
    let nested: Vec<_> = resolve.packages.iter().map(|(id, _)| id).filter(|id| *id != main).collect();
    let mut printer = WitPrinter::default();
    printer.print(resolve, main, &nested).map_err(|error| format!("{error:#}"))?;
    Ok(printer.output.to_string())
}
