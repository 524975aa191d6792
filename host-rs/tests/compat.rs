//! Components of the previous WIT minor versions (0.1.0 and 0.2.0, `tests/fixtures/`) still load and serve:
//! a function they lack is a typed `HostError::Unsupported`, never a trap or a refusal of the
//! whole component, and a registry hot-swaps between them and the current component under load.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use common::{component_bytes, good_request, policy};
use scale_units_host::{Candidate, HostError, Policy, PolicyRegistry};

/// The component built from main before WIT 0.2.0 (tests/fixtures/README.md).
fn wit_0_1_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/scale_units_evaluator-wit-0.1.0.wasm");
        std::fs::read(&file).unwrap_or_else(|error| panic!("reading {}: {error}", file.display()))
    })
}

fn wit_0_1() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| Policy::from_bytes(wit_0_1_bytes()).expect("a WIT 0.1.0 component loads"))
}

/// The component built from main before WIT 0.3.0 (tests/fixtures/README.md).
fn wit_0_2() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/scale_units_evaluator-wit-0.2.0.wasm");
        let bytes = std::fs::read(&file).unwrap_or_else(|error| panic!("reading {}: {error}", file.display()));
        Policy::from_bytes(&bytes).expect("a WIT 0.2.0 component loads")
    })
}

fn assert_unsupported(outcome: Result<impl std::fmt::Debug, HostError>, expected: &str) {
    assert_unsupported_in(outcome, expected, "0.1.0");
}

fn assert_unsupported_in(outcome: Result<impl std::fmt::Debug, HostError>, expected: &str, version: &str) {
    match outcome {
        Err(HostError::Unsupported { function, wit_version }) => {
            assert_eq!(function, expected);
            assert_eq!(wit_version, version);
        }
        other => panic!("expected Unsupported({expected}), got {other:?}"),
    }
}

/// The functions WIT 0.3.0 added: a 0.2.0 (and a 0.1.0) component answers each with a typed
/// `Unsupported`, and keeps deciding exactly as the current component does.
#[test]
fn a_wit_0_2_component_loads_and_answers_unsupported_for_the_gate() {
    let request = good_request();
    let typed: scale_units_host::EvaluationRequest = scale_units_core::parse_request(&request).unwrap();
    let change = scale_units_core::ProposedChange::scale(2);
    for (old, version) in [(wit_0_2(), "0.2.0"), (wit_0_1(), "0.1.0")] {
        assert_eq!(old.info().wit_version, version);
        let decision = old.evaluate_json(&request).unwrap().unwrap().decision;
        assert_eq!(decision, policy().evaluate_json(&request).unwrap().unwrap().decision);
        for function in
            ["gate", "gate-json", "scaler-reading-json", "validate-observations-json", "derivation-text", "limits-json"]
        {
            assert!(!old.supports(function), "{version} {function}");
            assert!(policy().supports(function), "{function}");
        }
        assert_unsupported_in(old.gate(&typed, &change), "gate", version);
        assert_unsupported_in(old.gate_json(&request, r#"{"to_replicas": 2}"#), "gate-json", version);
        assert_unsupported_in(old.scaler_reading_json(&request), "scaler-reading-json", version);
        assert_unsupported_in(old.validate_observations_json(&request), "validate-observations-json", version);
        assert_unsupported_in(old.derivation_text(&request), "derivation-text", version);
        assert_unsupported_in(old.limits_json(), "limits-json", version);
    }
    assert!(wit_0_2().supports("derive-json"));
}

/// The current component's gate is the core's, byte for byte, typed and as JSON.
#[test]
fn the_current_component_gates_as_the_core_does() {
    let request = good_request();
    let typed = scale_units_core::parse_request(&request).unwrap();
    for to in [0, 1, 2, 3, 5, 10_000] {
        for kind in [scale_units_core::ChangeKind::Scale, scale_units_core::ChangeKind::BreakGlass] {
            let change = scale_units_core::ProposedChange { to_replicas: to, kind };
            let verdict = policy().gate(&typed, &change).unwrap().unwrap();
            assert_eq!(verdict, scale_units_core::gate(&typed, &change).unwrap());
            let text = format!(r#"{{"to_replicas": {to}, "kind": "{kind}"}}"#);
            let json = policy().gate_json(&request, &text).unwrap().unwrap();
            assert_eq!(json, scale_units_core::gate_json(&request, &text).unwrap());
            assert_eq!(json, verdict.to_json());
        }
    }
    let error = policy().gate(&typed, &scale_units_core::ProposedChange::scale(10_001)).unwrap().unwrap_err();
    assert_eq!(error.code().as_str(), "invalid_field");
    assert_eq!(policy().scaler_reading_json(&request).unwrap(), scale_units_core::scaler_reading_json(&request));
    assert_eq!(policy().limits_json().unwrap(), scale_units_core::LIMITS.to_json());
    assert_eq!(
        policy().derivation_text(&request).unwrap().unwrap(),
        scale_units_core::derivation_text(&request).unwrap()
    );
    assert_eq!(policy().validate_observations_json(&request).unwrap(), Ok(()));
}

#[test]
fn a_wit_0_1_component_loads_evaluates_and_answers_unsupported_for_what_it_lacks() {
    let old = wit_0_1();
    assert_eq!(old.info().wit_version, "0.1.0");
    assert_eq!(policy().info().wit_version, "0.3.0");

    // Every 0.1.0 function serves, with the same bytes as the current component.
    let request = good_request();
    let decision = old.evaluate_json(&request).expect("no host error").expect("a decision").decision;
    let current = policy().evaluate_json(&request).unwrap().unwrap().decision;
    assert_eq!(decision, current);
    let typed: scale_units_host::EvaluationRequest = scale_units_core::parse_request(&request).unwrap();
    assert_eq!(
        old.evaluate(&typed).unwrap().unwrap().decision.decision_id,
        policy().evaluate(&typed).unwrap().unwrap().decision.decision_id
    );
    assert!(old.supports("evaluate-json"));

    // The 0.2.0 functions are typed refusals, each time, and the component keeps serving.
    for function in ["derive", "derive-json", "diagnose-request-json", "diagnose-contract-json"] {
        assert!(!old.supports(function), "{function}");
        assert!(policy().supports(function), "{function}");
    }
    assert_unsupported(old.derive(&typed), "derive");
    assert_unsupported(old.derive_json(&request), "derive-json");
    assert_unsupported(old.diagnose_request_json("{}"), "diagnose-request-json");
    assert_unsupported(old.diagnose_contract_json("{}"), "diagnose-contract-json");
    let again = old.evaluate_json(&request).unwrap().unwrap().decision;
    assert_eq!(again, current);
    let error = old.derive_json(&request).unwrap_err().to_string();
    assert!(error.contains("WIT 0.1.0") && error.contains("derive-json"), "{error}");
}

#[test]
fn the_current_component_derives_and_diagnoses() {
    let request = good_request();
    let decision = policy().evaluate_json(&request).unwrap().unwrap().decision;
    let typed = scale_units_core::parse_request(&request).unwrap();
    let derivation = policy().derive(&typed).expect("no host error").expect("a derivation");
    assert!(decision.contains(&format!("\"decision_id\":\"{}\"", derivation.decision_id)), "{decision}");
    assert_eq!(derivation, scale_units_core::derive(&typed).unwrap());
    let json = policy().derive_json(&request).unwrap().unwrap();
    assert_eq!(json, scale_units_core::derive_json(&request).unwrap());
    // An invalid request: derive's error is evaluate's, and the diagnosis starts with it.
    let mut value: serde_json::Value = serde_json::from_str(&request).unwrap();
    value["current_replicas"] = serde_json::Value::from(10_001);
    value["contract"]["policy"]["target"] = serde_json::Value::from(0);
    let broken = value.to_string();
    let error = policy().derive_json(&broken).unwrap().unwrap_err();
    assert_eq!(error, policy().evaluate_json(&broken).unwrap().unwrap_err());
    let diagnosis = policy().diagnose_request_json(&broken).unwrap();
    assert_eq!(diagnosis.first().map(scale_units_host::Fault::to_error), Some(error));
    assert_eq!(diagnosis, scale_units_core::diagnose_request_json(&broken));
    assert!(diagnosis.len() >= 2, "both planted faults: {diagnosis}");
    assert!(policy().diagnose_request_json(&request).unwrap().is_empty());
    let contract = common::example("api-gateway/contract.json");
    assert!(policy().diagnose_contract_json(&contract).unwrap().is_empty());
    let faults = policy().diagnose_contract_json("{\"surface\": \"api_gatway\"}").unwrap();
    assert_eq!(faults, scale_units_core::diagnose_contract_json("{\"surface\": \"api_gatway\"}"));
    assert!(faults.len() > 1, "{faults}");
}

/// Threads evaluate without pause while the registry swaps between the WIT 0.1.0 component and
/// the current one (activate, rollback, activate…): no call fails, every decision is the same
/// bytes, and `derive-json` on the active policy is a derivation or a typed `Unsupported`.
#[test]
fn a_registry_hot_swaps_between_wit_minor_versions_under_load_with_no_failed_call() {
    let registry = Arc::new(
        PolicyRegistry::builder()
            .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
            .build(),
    );
    let current = registry.stage(Candidate::new(component_bytes())).expect("the current component passes the gate");
    let old = registry.stage(Candidate::new(wit_0_1_bytes())).expect("the 0.1.0 component passes the gate");
    assert_ne!(current.digest, old.digest);
    registry.activate(&current.digest).unwrap();

    let request = Arc::new(good_request());
    let expected = Arc::new(policy().evaluate_json(&request).unwrap().unwrap().decision);
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, derived, unsupported) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (registry, request, expected, stop) =
                (registry.clone(), request.clone(), expected.clone(), stop.clone());
            let (calls, derived, unsupported) = (calls.clone(), derived.clone(), unsupported.clone());
            std::thread::spawn(move || {
                let mut served = std::collections::BTreeSet::new();
                while !stop.load(Ordering::Relaxed) || calls.load(Ordering::Relaxed) < 400 {
                    let answer = registry.evaluate_json(&request).expect("no failed call").expect("a decision");
                    assert_eq!(answer.evaluated.decision, *expected);
                    served.insert(answer.evaluated.provenance.component_digest.clone());
                    calls.fetch_add(1, Ordering::Relaxed);
                    let active = registry.active().expect("always an active policy");
                    match active.policy.derive_json(&request) {
                        Ok(Ok(_)) => derived.fetch_add(1, Ordering::Relaxed),
                        Err(HostError::Unsupported { .. }) => unsupported.fetch_add(1, Ordering::Relaxed),
                        other => panic!("derive-json on the active policy: {other:?}"),
                    };
                }
                served
            })
        })
        .collect();

    let swaps = 40;
    for swap in 0..swaps {
        // Let some calls land on each component before the next swap.
        let before = calls.load(Ordering::Relaxed);
        while calls.load(Ordering::Relaxed) < before + 8 && !workers.iter().any(std::thread::JoinHandle::is_finished) {
            std::thread::yield_now();
        }
        if swap % 2 == 0 {
            registry.activate(&old.digest).unwrap();
        } else {
            let (digest, _) = registry.rollback().unwrap();
            assert_eq!(digest, current.digest);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut served = std::collections::BTreeSet::new();
    for worker in workers {
        served.extend(worker.join().expect("no worker panicked"));
    }
    assert!(served.contains(&current.digest) && served.contains(&old.digest), "{served:?}");
    assert!(derived.load(Ordering::Relaxed) > 0 && unsupported.load(Ordering::Relaxed) > 0);
}
