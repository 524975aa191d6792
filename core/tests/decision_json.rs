//! `decision_to_json` writes exactly what `serde_json::to_string` writes for the same decision:
//! for the decision of every conformance vector, and for generated decisions with any strings.

#![allow(clippy::panic, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scale_units_core::conformance::Vector;
use scale_units_core::{
    ActionKind, Decision, Evidence, EvidenceKind, EvidenceStatus, Reason, decision_to_json, evaluate, parse_request,
};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn every_vector_decision_is_written_as_serde_json_writes_it() {
    let mut files = Vec::new();
    collect(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors"), &mut files);
    let mut decisions = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let Ok(vector) = Vector::parse(&text) else { continue };
        let Ok(decision) = parse_request(&vector.request_text).and_then(|request| evaluate(&request)) else {
            continue;
        };
        let expected = serde_json::to_string(&decision).unwrap_or_default();
        assert_eq!(decision_to_json(&decision), expected, "{}", file.display());
        decisions += 1;
    }
    assert!(decisions > 200, "only {decisions} vectors decided: the folder was not found or not read");
}

fn pick<T: Copy + std::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(all)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[\\x00-\\x1f\"\\\\a-z\\u{7f}-\\u{a0}\\u{2028}\\u{1F600}]{0,12}",]
}

fn evidence() -> impl Strategy<Value = Evidence> {
    (pick(EvidenceKind::ALL), text(), text(), pick(EvidenceStatus::ALL), text())
        .prop_map(|(kind, reference, digest, status, code)| Evidence { kind, reference, digest, status, code })
}

fn decision() -> impl Strategy<Value = Decision> {
    (
        (text(), text(), text(), text(), text()),
        (any::<u64>(), any::<u64>(), pick(ActionKind::ALL), proptest::collection::vec(pick(Reason::ALL), 0..4)),
        (any::<bool>(), proptest::collection::vec(evidence(), 0..4)),
    )
        .prop_map(
            |(
                (schema_version, decision_id, decision_digest, contract_id, evaluated_at),
                (current_replicas, desired_replicas, action, reasons),
                (drain_required, evidence),
            )| Decision {
                schema_version,
                decision_id,
                decision_digest,
                contract_id,
                evaluated_at,
                current_replicas,
                desired_replicas,
                action,
                reasons,
                drain_required,
                evidence,
            },
        )
}

proptest! {
    #[test]
    fn any_decision_is_written_as_serde_json_writes_it(decision in decision()) {
        prop_assert_eq!(decision_to_json(&decision), serde_json::to_string(&decision).unwrap_or_default());
    }
}
