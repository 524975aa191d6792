//! Runs every conformance vector below `tests/vectors/` (and below `$SCALE_UNITS_VECTORS` when
//! set) through the native core. Fails naming each vector and its first differing field.

#![allow(clippy::panic, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};

use scale_units_core::conformance::Vector;
use scale_units_core::{
    ChangeKind, ContractCache, Derivation, ProposedChange, derive_json, diagnose_request_json, evaluate_json, gate,
    gate_json, parse_request, scaler_reading, scaler_reading_json, validate_contract_json,
};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read vector folder {}", dir.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn known_failures(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("known-failures/native.txt")).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn run(vector_text: &str) -> Result<String, String> {
    let vector = Vector::parse(vector_text)?;
    let outcome = evaluate_json(&vector.request_text);
    let as_ref = match &outcome {
        Ok(text) => Ok(text.as_str()),
        Err(error) => Err((error.code().as_str(), error.message())),
    };
    vector.check(as_ref).map_err(|m| format!("{}: {m}", vector.id))?;
    if vector.derivation.is_some() {
        let derived = derive_json(&vector.request_text);
        let as_ref = match &derived {
            Ok(text) => Ok(text.as_str()),
            Err(error) => Err((error.code().as_str(), error.message())),
        };
        vector.check_derivation(as_ref).map_err(|m| format!("{}: {m}", vector.id))?;
    }
    check_gate(&vector).map_err(|m| format!("{}: {m}", vector.id))?;
    let diagnosis = diagnose_request_json(&vector.request_text).to_json();
    vector.check_diagnosis(&diagnosis).map_err(|m| format!("{}: {m}", vector.id))?;
    if let Some(expected) = Vector::contract_digest(vector_text) {
        let request: serde_json::Value = serde_json::from_str(&vector.request_text).map_err(|e| e.to_string())?;
        let contract = request.get("contract").map(|c| c.to_string()).unwrap_or_default();
        let identity = validate_contract_json(&contract).map_err(|e| format!("{}: contract: {e}", vector.id))?;
        if identity.contract_digest != expected {
            return Err(format!(
                "{}: contract_digest: expected {expected}, got {}",
                vector.id, identity.contract_digest
            ));
        }
    }
    Ok(vector.id)
}

/// A gate vector (SPEC §12) through the JSON entry points, and through the typed ones when the
/// request and the change can be given typed.
fn check_gate(vector: &Vector) -> Result<(), String> {
    let Some(case) = &vector.gate else { return Ok(()) };
    let verdict = gate_json(&vector.request_text, &case.change_text);
    let as_ref = match &verdict {
        Ok(text) => Ok(text.as_str()),
        Err(error) => Err((error.code().as_str(), error.message())),
    };
    vector.check_gate(as_ref).map_err(|m| format!("gate_json: {m}"))?;
    vector.check_scaler(&scaler_reading_json(&vector.request_text)).map_err(|m| format!("scaler_reading_json: {m}"))?;
    let (Ok(request), Some((to_replicas, kind))) = (parse_request(&vector.request_text), &case.change) else {
        return Ok(());
    };
    let kind = ChangeKind::parse(kind).ok_or_else(|| format!("unknown change kind {kind}"))?;
    let typed = gate(&request, &ProposedChange { to_replicas: *to_replicas, kind }).map(|verdict| verdict.to_json());
    let as_ref = match &typed {
        Ok(text) => Ok(text.as_str()),
        Err(error) => Err((error.code().as_str(), error.message())),
    };
    vector.check_gate(as_ref).map_err(|m| format!("typed gate: {m}"))?;
    vector.check_scaler(&scaler_reading(&request).to_json()).map_err(|m| format!("typed scaler_reading: {m}"))
}

#[test]
fn every_vector_passes_natively() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files = Vec::new();
    collect(&root, &mut files);
    if let Some(extra) = std::env::var_os("SCALE_UNITS_VECTORS") {
        collect(Path::new(&extra), &mut files);
    }
    files.sort();
    let known = known_failures(&root);
    let (mut passed, mut failures, mut diagnosed) = (0, Vec::new(), 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        diagnosed += usize::from(Vector::parse(&text).is_ok_and(|v| v.diagnosis.is_some()));
        let id = Vector::parse(&text).map(|v| v.id).unwrap_or_else(|_| file.display().to_string());
        match (run(&text), known.contains(&id)) {
            (Ok(_), false) | (Err(_), true) => passed += 1,
            (Ok(_), true) => {
                failures.push(format!("{id}: listed as a known failure but passes; remove it from the list"))
            }
            (Err(message), false) => failures.push(format!("{} ({message})", file.display())),
        }
    }
    assert!(files.len() >= 12, "found only {} vectors below {}", files.len(), root.display());
    assert!(failures.is_empty(), "{} of {} vectors failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    assert!(diagnosed >= 12, "only {diagnosed} vectors carry expect.diagnosis");
    eprintln!("{passed} vectors passed, {diagnosed} with their whole diagnosis");
}

/// Every vector through one shared [`ContractCache`] (a small one, so that it also starts over),
/// twice each: a miss and then a hit give exactly the uncached outcome, error or decision.
#[test]
fn every_vector_gives_the_same_outcome_through_a_contract_cache() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut cache = ContractCache::with_capacity(7);
    let mut compared = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let Ok(vector) = Vector::parse(&text) else { continue };
        let expected = evaluate_json(&vector.request_text);
        for round in ["miss", "hit"] {
            let actual = cache.evaluate_json(&vector.request_text);
            assert_eq!(actual, expected, "{} ({round})", vector.id);
        }
        compared += 1;
    }
    assert!(compared >= 12, "compared only {compared} vectors");
    eprintln!("{compared} vectors gave the same outcome through the cache");
}

/// `derive_json` on every vector gives exactly `evaluate_json`'s error, or a derivation whose
/// identity and outcome are the decision's, that reads back as the same value, and whose text
/// ends with the decision.
#[test]
fn every_vector_derives_what_it_decides() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let (mut derived, mut with_expectation) = (0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let Ok(vector) = Vector::parse(&text) else { continue };
        with_expectation += usize::from(vector.derivation.is_some());
        match (evaluate_json(&vector.request_text), derive_json(&vector.request_text)) {
            (Err(decided), Err(derivation)) => assert_eq!(decided, derivation, "{}", vector.id),
            (Ok(decision), Ok(json)) => {
                let decision: serde_json::Value =
                    serde_json::from_str(&decision).unwrap_or_else(|e| panic!("{}: {e}", vector.id));
                let derivation: Derivation = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("{}: derivation does not read back: {e}", vector.id));
                assert_eq!(derivation.to_json(), json, "{}: JSON round trip", vector.id);
                let generic = serde_json::to_string(&derivation).unwrap_or_else(|e| panic!("{}: {e}", vector.id));
                assert_eq!(json, generic, "{}: the derivation's writer differs from serde_json's", vector.id);
                let value: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
                for key in [
                    "decision_id",
                    "decision_digest",
                    "contract_id",
                    "evaluated_at",
                    "current_replicas",
                    "action",
                    "desired_replicas",
                    "reasons",
                    "drain_required",
                ] {
                    assert_eq!(value.get(key), decision.get(key), "{}: {key}", vector.id);
                }
                let evidence = decision.get("evidence").and_then(|e| e.as_array()).cloned().unwrap_or_default();
                assert_eq!(derivation.evidence.len(), evidence.len(), "{}: evidence", vector.id);
                for (verdict, entry) in
                    value.get("evidence").and_then(|e| e.as_array()).into_iter().flatten().zip(&evidence)
                {
                    for key in ["kind", "ref", "status", "code"] {
                        assert_eq!(verdict.get(key), entry.get(key), "{}: evidence {key}", vector.id);
                    }
                }
                let text = derivation.to_text();
                let last = text.lines().last().unwrap_or_default();
                assert!(last.starts_with("decision: "), "{}: {text}", vector.id);
                derived += 1;
            }
            (decided, derivation) => panic!("{}: evaluate gave {decided:?}, derive gave {derivation:?}", vector.id),
        }
    }
    assert!(derived >= 12, "derived only {derived} decisions");
    assert!(with_expectation >= 15, "only {with_expectation} vectors carry expect.derivation");
    eprintln!("{derived} derivations agree with their decisions; {with_expectation} vectors carry one");
}
