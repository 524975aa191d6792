//! The policy registry: what is refused is never staged (so never activated) and the active policy
//! keeps serving; activation, rollback, pins, shadow divergences and history.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;

use common::{Behaviour, GOOD_INFO, component_bytes, good_request, hostile_component};
use ed25519_dalek::{Signer, SigningKey};
use scale_units_host::registry::{HistoryEvent, OutcomeSummary, Route, digest_of, signing_message};
use scale_units_host::{Candidate, ConformanceSuite, HostError, Policy, PolicyRegistry, RegistryError};

/// Compiled components are cached across the tests' processes.
fn builder() -> scale_units_host::registry::RegistryBuilder {
    PolicyRegistry::builder()
        .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7; 32])
}

fn sign(key: &SigningKey, bytes: &[u8]) -> Vec<u8> {
    key.sign(signing_message(&digest_of(bytes))).to_bytes().to_vec()
}

/// A registry with the built component staged and active.
fn serving(registry: &PolicyRegistry) -> String {
    let staged = registry.stage(Candidate::new(component_bytes()).signature(sign(&key(), component_bytes()))).unwrap();
    assert_eq!(staged.vectors_passed, registry.conformance_suite().len());
    assert!(staged.vectors_passed > 400, "the embedded vectors: {}", staged.vectors_passed);
    registry.activate(&staged.digest).unwrap();
    staged.digest
}

fn assert_serving(registry: &PolicyRegistry, digest: &str) {
    let served = registry.evaluate_json(&good_request()).unwrap().unwrap();
    assert_eq!(served.evaluated.provenance.component_digest, digest);
    assert!(served.evaluated.decision.contains("\"action\":\"scale_up\""));
}

fn refused_and_never_activated(
    registry: &PolicyRegistry,
    bytes: &[u8],
    outcome: Result<impl std::fmt::Debug, RegistryError>,
    code: &str,
    active: &str,
) {
    let error = outcome.expect_err("refused");
    assert_eq!(error.code(), code, "{error}");
    let digest = digest_of(bytes);
    assert!(matches!(registry.activate(&digest), Err(RegistryError::UnknownPolicy { .. })));
    assert!(matches!(registry.shadow(Some(&digest)), Err(RegistryError::UnknownPolicy { .. })));
    assert!(registry.staged().iter().all(|staged| staged.digest != digest));
    assert!(registry.history().iter().any(
        |entry| matches!(&entry.event, HistoryEvent::Refused { digest: d, code: c, .. } if *d == digest && c == code)
    ));
    assert_serving(registry, active);
}

#[test]
fn under_a_trust_key_every_bad_candidate_is_refused_and_the_active_policy_keeps_serving() {
    let public = hex(key().verifying_key().as_bytes());
    let registry = builder().trust_key_hex(&public).unwrap().build();
    assert!(registry.requires_signature());
    let active = serving(&registry);

    let variant = common::variant_build(component_bytes(), "b");
    // Missing signature, a signature by another key, a malformed one: refused whatever else.
    let outcome = registry.stage(Candidate::new(&variant));
    refused_and_never_activated(&registry, &variant, outcome, "signature_missing", &active);
    let outcome = registry.stage(Candidate::new(&variant).signature(sign(&SigningKey::from_bytes(&[8; 32]), &variant)));
    refused_and_never_activated(&registry, &variant, outcome, "signature_invalid", &active);
    let outcome = registry.stage(Candidate::new(&variant).signature(vec![1, 2, 3]));
    refused_and_never_activated(&registry, &variant, outcome, "signature_invalid", &active);
    // A signature of another component's digest.
    let outcome = registry.stage(Candidate::new(&variant).signature(sign(&key(), component_bytes())));
    refused_and_never_activated(&registry, &variant, outcome, "signature_invalid", &active);
    // A wrong expected digest, even well signed.
    let outcome =
        registry.stage(Candidate::new(&variant).signature(sign(&key(), &variant)).expected_digest(active.clone()));
    refused_and_never_activated(&registry, &variant, outcome, "digest_mismatch", &active);

    // Signed, but answering wrongly: the conformance gate.
    let wrong = hostile_component(
        Behaviour::Answer(r#"{"schema_version":"1","action":"hold","reasons":[]}"#),
        &GOOD_INFO,
        None,
    );
    let outcome = registry.stage(Candidate::new(&wrong).signature(sign(&key(), &wrong)));
    refused_and_never_activated(&registry, &wrong, outcome, "conformance_failed", &active);
    // Signed, but trapping: the gate stops at the first trap.
    let trap = hostile_component(Behaviour::Trap, &GOOD_INFO, None);
    let outcome = registry.stage(Candidate::new(&trap).signature(sign(&key(), &trap)));
    let RegistryError::ConformanceFailed { failures, .. } = outcome.as_ref().expect_err("refused") else {
        panic!("{outcome:?}")
    };
    assert!(failures.iter().any(|failure| failure.contains("trap")), "{failures:?}");
    refused_and_never_activated(&registry, &trap, outcome, "conformance_failed", &active);
    // Signed, but importing a clock.
    let import = hostile_component(
        Behaviour::Trap,
        &GOOD_INFO,
        Some(
            "package test:hostile;\nworld with-clock {\n  import now: func() -> u64;\n  export scale-units:evaluator/evaluator@0.3.0;\n}\n",
        ),
    );
    let outcome = registry.stage(Candidate::new(&import).signature(sign(&key(), &import)));
    assert!(matches!(outcome, Err(RegistryError::Host(HostError::Imports { .. }))), "{outcome:?}");
    refused_and_never_activated(&registry, &import, outcome, "component_imports", &active);
    // Not a component at all.
    let junk = b"not wasm".to_vec();
    let outcome = registry.stage(Candidate::new(&junk).signature(sign(&key(), &junk)));
    refused_and_never_activated(&registry, &junk, outcome, "invalid_component", &active);

    // The variant, well signed: staged, activated, rolled back.
    let staged = registry.stage(Candidate::new(&variant).signature(sign(&key(), &variant))).unwrap();
    assert!(staged.signed);
    assert_ne!(staged.digest, active);
    assert_eq!(registry.activate(&staged.digest).unwrap(), 2);
    assert_serving(&registry, &staged.digest);
    assert_eq!(registry.rollback().unwrap(), (active.clone(), 3));
    assert_serving(&registry, &active);
    assert!(matches!(registry.rollback(), Err(RegistryError::NothingToRollBack)));
}

#[test]
fn an_empty_conformance_suite_passes_nothing() {
    let dir = std::env::temp_dir().join(format!("scale-units-empty-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let registry = builder().conformance(ConformanceSuite::from_dir(&dir).unwrap()).build();
    let outcome = registry.stage(Candidate::new(component_bytes()));
    assert!(matches!(outcome, Err(RegistryError::NoConformanceVectors)), "{outcome:?}");
    assert!(registry.evaluate_json(&good_request()).is_err_and(|error| matches!(error, RegistryError::NoActivePolicy)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_finishes_on_the_policy_it_started_with_and_pins_and_shadows_route_by_digest() {
    // A suite of one vector, so that a candidate answering one fixed decision can pass it.
    let request = good_request();
    let decision = Policy::from_bytes(component_bytes()).unwrap().evaluate_json(&request).unwrap().unwrap().decision;
    let dir = std::env::temp_dir().join(format!("scale-units-one-vector-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("one.json"),
        format!(r#"{{"id": "one/gateway", "description": "the gateway example", "request": {request}, "expect": {{"decision": {decision}}}}}"#),
    )
    .unwrap();
    let registry = builder().conformance(ConformanceSuite::from_dir(&dir).unwrap()).build();
    let _ = std::fs::remove_dir_all(&dir);
    let active = registry.stage(Candidate::new(component_bytes())).unwrap().digest;
    registry.activate(&active).unwrap();
    let fixed: &'static str = Box::leak(decision.clone().into_boxed_str());
    let parrot_bytes = hostile_component(Behaviour::Answer(fixed), &GOOD_INFO, None);
    let parrot = registry.stage(Candidate::new(&parrot_bytes)).unwrap().digest;

    // A snapshot taken before a swap evaluates on the old policy; a new one on the new.
    let before = registry.snapshot();
    registry.activate(&parrot).unwrap();
    let old = before.evaluate_json(&request).unwrap().unwrap();
    assert_eq!(old.evaluated.provenance.component_digest, active);
    assert_eq!(old.route, Route::Active { activation: 1 });
    let new = registry.evaluate_json(&request).unwrap().unwrap();
    assert_eq!(new.evaluated.provenance.component_digest, parrot);
    assert_eq!(new.route, Route::Active { activation: 2 });
    registry.rollback().unwrap();

    // Shadowing: the same answer is no divergence; another request is.
    registry.shadow(Some(&parrot)).unwrap();
    registry.evaluate_json(&request).unwrap().unwrap();
    assert_eq!(registry.divergences().1, 0);
    let other = common::example("connector-pool/request.json");
    let served = registry.evaluate_json(&other).unwrap().unwrap();
    assert_eq!(served.evaluated.provenance.component_digest, active, "the active policy answers");
    let (divergences, total) = registry.divergences();
    assert_eq!(total, 1);
    let divergence = &divergences[0];
    assert_eq!(divergence.request_digest, digest_of(other.as_bytes()));
    assert_eq!(
        (divergence.active_digest.as_str(), divergence.candidate_digest.as_str()),
        (active.as_str(), parrot.as_str())
    );
    assert!(matches!(&divergence.candidate, OutcomeSummary::Decision { action, .. } if action == "scale_up"));
    assert_ne!(divergence.active, divergence.candidate);
    registry.shadow(None).unwrap();

    // A pin routes one unit to a staged policy by its contract.unit_ref.
    let unit: serde_json::Value = serde_json::from_str(&other).unwrap();
    let unit = unit["contract"]["unit_ref"].as_str().unwrap().to_owned();
    registry.pin(&unit, Some(&parrot)).unwrap();
    let pinned = registry.evaluate_json(&other).unwrap().unwrap();
    assert_eq!(pinned.evaluated.provenance.component_digest, parrot);
    assert_eq!(pinned.route, Route::Pinned { unit_ref: unit.clone() });
    assert_eq!(registry.evaluate_json(&request).unwrap().unwrap().evaluated.provenance.component_digest, active);
    registry.pin(&unit, None).unwrap();
    assert_eq!(registry.evaluate_json(&other).unwrap().unwrap().evaluated.provenance.component_digest, active);

    let events: Vec<&str> = registry
        .history()
        .iter()
        .map(|entry| match entry.event {
            HistoryEvent::Staged { .. } => "staged",
            HistoryEvent::Refused { .. } => "refused",
            HistoryEvent::Activated { .. } => "activated",
            HistoryEvent::RolledBack { .. } => "rolled_back",
            HistoryEvent::Shadow { .. } => "shadow",
            HistoryEvent::Pinned { .. } => "pinned",
            HistoryEvent::Unstaged { .. } => "unstaged",
        })
        .collect();
    assert_eq!(
        events,
        ["staged", "activated", "staged", "activated", "rolled_back", "shadow", "shadow", "pinned", "pinned"]
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
