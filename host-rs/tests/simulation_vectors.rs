//! Every simulation vector below `tests/vectors-sim/` through the component, and the same
//! bytes as the native core.
#![allow(clippy::expect_used, reason = "test code: a failed expectation is a test failure")]

mod common;

use std::path::Path;

use scale_units_core::conformance::SimulationVector;

#[test]
fn every_simulation_vector_passes_through_the_component() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors-sim");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/vectors-sim")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let policy = common::policy();
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("vector");
        let vector = SimulationVector::parse(&text).expect("a simulation vector");
        let outcome = policy.simulate_json(&vector.input_text).expect("no host failure");
        let native = scale_units_core::simulate::simulate_json(&vector.input_text);
        match (&outcome, &native) {
            (Ok(component), Ok(native)) if component != native => {
                failures.push(format!("{}: the component and the native core disagree", vector.id));
            }
            (Err(component), Err(native)) if component != native => {
                failures.push(format!("{}: errors differ: {component} vs {native}", vector.id));
            }
            (Ok(_), Err(_)) | (Err(_), Ok(_)) => failures.push(format!("{}: one side failed", vector.id)),
            _ => {}
        }
        let as_ref = match &outcome {
            Ok(json) => Ok(json.as_str()),
            Err(error) => Err((error.code().as_str(), error.message())),
        };
        if let Err(message) = vector.check(as_ref) {
            failures.push(format!("{}: {message}", vector.id));
        }
    }
    assert!(files.len() >= 6, "found only {} simulation vectors", files.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
