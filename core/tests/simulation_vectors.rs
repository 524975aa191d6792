//! Runs every simulation vector below `tests/vectors-sim/` through the native core.

use std::path::Path;

use scale_units_core::conformance::SimulationVector;
use scale_units_core::simulate::simulate_json;

#[test]
fn every_simulation_vector_passes_natively() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors-sim");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .map(|entries| {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let outcome = SimulationVector::parse(&text).and_then(|vector| {
            let result = simulate_json(&vector.input_text);
            let as_ref = match &result {
                Ok(json) => Ok(json.as_str()),
                Err(error) => Err((error.code().as_str(), error.message())),
            };
            vector.check(as_ref).map_err(|m| format!("{}: {m}", vector.id))
        });
        if let Err(message) = outcome {
            failures.push(format!("{} ({message})", file.display()));
        }
    }
    assert!(files.len() >= 6, "found only {} simulation vectors below {}", files.len(), root.display());
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    eprintln!("{} simulation vectors passed", files.len());
}
