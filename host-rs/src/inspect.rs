//! What can be checked of a component without compiling it: that the bytes are a component (not
//! a core module), that its outermost level imports nothing and exports an evaluator interface.
//! A parse of the section headers (wasmparser, the parser wasmtime itself uses), no validation
//! and no code generation: a candidate that fails here never reaches cranelift or the cache.
//! wasmtime's own checks after compiling stay the authority; these are necessary conditions.

use wasmparser::{Encoding, Parser, Payload};

use crate::HostError;
use crate::exports::INTERFACES;

/// Refuses `bytes` unless they are a component whose outermost level imports nothing and exports
/// an interface named like one of [`INTERFACES`] (any patch release).
///
/// # Errors
/// [`HostError::InvalidComponent`] (not wasm, a core module, a malformed section),
/// [`HostError::Imports`], [`HostError::WrongWorld`].
pub(crate) fn inspect(bytes: &[u8], digest: &str) -> Result<(), HostError> {
    let invalid = |reason: String| HostError::InvalidComponent { digest: digest.to_owned(), reason };
    let mut depth = 0_usize;
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|error| invalid(error.to_string()))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding != Encoding::Component {
                    return Err(invalid("a core WebAssembly module, not a component".to_owned()));
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.push(import.map_err(|error| invalid(error.to_string()))?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(section) if depth == 1 => {
                for export in section {
                    exports.push(export.map_err(|error| invalid(error.to_string()))?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    if !imports.is_empty() {
        return Err(HostError::Imports { imports });
    }
    let speaks = |name: &str| {
        INTERFACES.iter().any(|(interface, _)| {
            // `…@0.2.0` matches any `…@0.2.x`, as wasmtime does.
            interface.rsplit_once('.').is_some_and(|(minor, _)| {
                name.strip_prefix(minor).and_then(|rest| rest.strip_prefix('.')).is_some_and(|patch| !patch.is_empty())
            })
        })
    };
    if !exports.iter().any(|name| speaks(name)) {
        let found = if exports.is_empty() { "nothing".to_owned() } else { exports.join(", ") };
        let reason = format!("no scale-units:evaluator/evaluator export (it exports {found})");
        return Err(HostError::WrongWorld { reason });
    }
    Ok(())
}
