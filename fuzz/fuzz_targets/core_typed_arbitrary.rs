//! Structured requests into the typed `evaluate`. The fuzzer's bytes drive the boundary
//! generator the host's differential test uses (`host-rs/tests/common/boundary.rs`): a valid
//! example request, moved to the freshness, capacity-fit, cooldown and integer edges, then a few
//! fields overwritten with arbitrary strings and integers. Checks: no panic; the typed path and
//! the JSON path give the same bytes (DECISIONS.md, "Shape before rules"); a decision keeps the
//! invariants of SPEC §9.
#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use scale_units_core::{ActionKind, EvaluationRequest, decision_to_json, evaluate, evaluate_json, parse_request};

#[path = "../../host-rs/tests/common/boundary.rs"]
#[allow(dead_code, reason = "shared with the host's tests")]
mod boundary;

use boundary::{Choose, boundary_request, request_json};

const EXAMPLES: &[&str] = &[
    include_str!("../../examples/api-gateway/request.json"),
    include_str!("../../examples/connector-pool/request.json"),
    include_str!("../../examples/dispatch-worker/request.json"),
    include_str!("../../examples/graphos-gateway/request.json"),
    include_str!("../../examples/ingest-worker/request.json"),
    include_str!("../../examples/mcp-gateway/request.json"),
    include_str!("../../examples/media-pool/request.json"),
    include_str!("../../examples/query-reader/request.json"),
    include_str!("../../examples/rlm-pool/request.json"),
];

fn bases() -> &'static [EvaluationRequest] {
    static BASES: OnceLock<Vec<EvaluationRequest>> = OnceLock::new();
    BASES.get_or_init(|| EXAMPLES.iter().map(|text| parse_request(text).expect("an example parses")).collect())
}

/// The fuzzer's bytes as the generator's choices; an exhausted input chooses 0.
struct Bytes<'u, 'a>(&'u mut Unstructured<'a>);

impl Choose for Bytes<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.0.choose_index(n).unwrap_or(0) }
    }
}

/// A field the fuzzer may overwrite after the generator ran.
#[derive(Arbitrary, Debug)]
enum Overwrite {
    Now(String),
    LastActionAt(String),
    ObservedAt(String),
    ExpiresAt(String),
    UnitRef(String),
    SourceRef(String),
    SourceDigest(String),
    ContractId(String),
    ContractDigest(String),
    SignalValue(i64),
    CurrentReplicas(i64),
    Target(u64),
    MinReplicas(u64),
    MaxReplicas(u64),
    Allocatable(u64),
    PerReplica(u64),
}

/// One structured request.
#[derive(Debug)]
struct Request(EvaluationRequest);

impl<'a> Arbitrary<'a> for Request {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let index = u.choose_index(bases().len())?;
        let mut request = boundary_request(&bases()[index], &mut Bytes(u));
        let overwrites: Vec<Overwrite> = u.arbitrary()?;
        for overwrite in overwrites.into_iter().take(4) {
            apply(&mut request, overwrite);
        }
        Ok(Self(request))
    }
}

fn apply(r: &mut EvaluationRequest, overwrite: Overwrite) {
    match overwrite {
        Overwrite::Now(text) => r.now = text,
        Overwrite::LastActionAt(text) => r.last_action_at = Some(text),
        Overwrite::ObservedAt(text) => r.signal.iter_mut().for_each(|s| s.observed_at = text.clone()),
        Overwrite::ExpiresAt(text) => r.capacities.iter_mut().for_each(|c| c.expires_at = text.clone()),
        Overwrite::UnitRef(text) => r.contract.unit_ref = text,
        Overwrite::SourceRef(text) => r.signal.iter_mut().for_each(|s| s.source_ref = text.clone()),
        Overwrite::SourceDigest(text) => r.safety.iter_mut().for_each(|s| s.source_digest = text.clone()),
        Overwrite::ContractId(text) => r.contract.contract_id = text,
        Overwrite::ContractDigest(text) => r.contract.contract_digest = text,
        Overwrite::SignalValue(value) => r.signal.iter_mut().for_each(|s| s.value = value),
        Overwrite::CurrentReplicas(value) => r.current_replicas = value,
        Overwrite::Target(value) => r.contract.policy.target = value,
        Overwrite::MinReplicas(value) => r.contract.policy.min_replicas = value,
        Overwrite::MaxReplicas(value) => r.contract.policy.max_replicas = value,
        Overwrite::Allocatable(value) => r.capacities.iter_mut().for_each(|c| c.allocatable = value),
        Overwrite::PerReplica(value) => r.contract.replica_demands.iter_mut().for_each(|d| d.per_replica = value),
    }
}

fuzz_target!(|input: Request| {
    let request = input.0;
    let typed = evaluate(&request);
    let json = evaluate_json(&request_json(&request));
    match (&typed, &json) {
        (Ok(decision), Ok(text)) => assert_eq!(&decision_to_json(decision), text, "typed and JSON decide alike"),
        (Err(a), Err(b)) => assert_eq!(a, b, "typed and JSON refuse alike"),
        _ => panic!("typed {typed:?} but JSON {json:?}"),
    }
    if let Ok(decision) = typed {
        let (current, desired) = (decision.current_replicas, decision.desired_replicas);
        match decision.action {
            ActionKind::ScaleUp => assert!(desired > current),
            ActionKind::ScaleDown => assert!(desired < current),
            ActionKind::Hold | ActionKind::Blocked => assert_eq!(desired, current),
        }
        // A scale-up never passes the ceiling; a unit above it steps down (SPEC §6, and the
        // vector bounds/above-max-replicas-steps-down), so a scale-down may stay above it.
        if decision.action == ActionKind::ScaleUp {
            assert!(desired <= request.contract.policy.max_replicas, "within the ceiling");
        }
        assert!(!decision.reasons.is_empty() && decision.reasons.len() <= 16);
        assert!(decision.evidence.len() <= 64);
        assert!(decision.decision_id.starts_with("scale-decision:") && decision.decision_id.len() == 47);
    }
});
