//! The published JSON Schemas (`schema/`) are generated from the core's types; this test fails
//! when they drift. After an intended change: `SCALE_UNITS_BLESS=1 cargo test -p
//! scale-units-core --features schema --test schema`.
#![cfg(feature = "schema")]
#![allow(clippy::panic, reason = "a test fails by panicking")]
use std::path::Path;

use scale_units_core::{Decision, Derivation, EvaluationRequest, ScaleUnitContract};
use schemars::{JsonSchema, schema_for};

fn check<T: JsonSchema>(file: &str, title: &str) {
    let mut schema = schema_for!(T);
    schema.insert("$id".into(), format!("https://scale-units.dev/schema/1/{file}").into());
    schema.insert("title".into(), title.into());
    let text = serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema").join(file);
    if std::env::var_os("SCALE_UNITS_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(current == text, "{} is out of date: rerun with SCALE_UNITS_BLESS=1", path.display());
}

#[test]
fn published_schemas_match_the_types() {
    check::<EvaluationRequest>("evaluation-request.schema.json", "Scale Units evaluation request (schema 1)");
    check::<ScaleUnitContract>("scale-unit-contract.schema.json", "Scale Units scale-unit contract (schema 1)");
    check::<Decision>("decision.schema.json", "Scale Units decision (schema 1)");
    check::<Derivation>("derivation.schema.json", "Scale Units derivation of a decision (schema 1)");
}
