#![doc = include_str!("../README.md")]

mod cache;
mod canonical;
pub mod conformance;
mod derive;
mod diagnose;
mod error;
mod evaluate;
mod explain;
pub mod gate;
mod identity;
mod json;
mod model;
mod parse;
mod scalar;
#[cfg(feature = "schema")]
mod schema;
pub mod simulate;
mod time;
mod validate;
mod vocab;
mod wit_bridge;

use diagnose::{First, Report};

pub use cache::ContractCache;
pub use canonical::{Canon, content_digest};
pub use derive::{
    Bound, Check, CooldownField, DemandCheck, DemandStatus, Derivation, EngineCheck, EvidenceVerdict, Gate, Mismatch,
    QuotaCheck, StepCap, StepField, Target,
};
pub use diagnose::{Diagnosis, Fault};
pub use error::{ErrorCode, EvaluationError};
pub use explain::{Explanation, ReasonText, explain};
pub use gate::{
    Bounds, ChangeKind, Evaluated, GateReason, GateVerdict, ProposedChange, ScalerReading, gate, gate_json,
    scaler_reading, scaler_reading_json,
};
pub use model::{
    CapacityDemand, CapacityObservation, ContinuityContract, ContinuityObservation, ContractIdentity, Decision,
    EvaluationRequest, Evidence, PartitionLeaseContract, QuotaBinding, QuotaObservation, SafetyObservation,
    ScalePolicy, ScaleUnitContract, SignalObservation,
};
pub use vocab::{
    ActionKind, CapacityAxis, ContinuityMode, EvidenceKind, EvidenceStatus, QuotaScope, Reason, SignalKind,
    SurfaceKind, SurfaceProfile,
};

/// The wire schema this evaluator implements.
pub const SCHEMA_VERSION: &str = "1";

/// This evaluator's version (the crate version).
pub const EVALUATOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Evaluates a typed request (SPEC §6–§7).
///
/// Every check of the SPEC runs here, so a typed caller gets exactly the errors a JSON caller
/// gets (apart from JSON-level faults).
///
/// # Errors
/// An [`EvaluationError`] when the request breaks a precondition: an invalid field, reference,
/// digest, time, policy, contract or observation, an identity mismatch, a duplicate observation,
/// or `current_replicas` out of bounds. Missing or stale evidence is not an error: it is a
/// `blocked` decision.
pub fn evaluate(request: &EvaluationRequest) -> Result<Decision, EvaluationError> {
    Ok(evaluate::decide(&validate::request(request)?, &mut derive::Recorder::silent()))
}

/// The derivation of a request's decision: each evidence verdict, the target arithmetic, each
/// gate with its numbers, and the outcome (see [`Derivation`]).
///
/// It is recorded by the one decision path [`evaluate`] runs, so it never disagrees with the
/// decision: its `decision_id`, `decision_digest` and outcome fields are the decision's own.
///
/// # Errors
/// Exactly the errors of [`evaluate`], for the same request.
pub fn derive(request: &EvaluationRequest) -> Result<Derivation, EvaluationError> {
    let mut recorder = derive::Recorder::recording();
    let decision = evaluate::decide(&validate::request(request)?, &mut recorder);
    Ok(recorder.into_derivation(&decision))
}

/// The derivation of a request given as JSON text, as compact JSON ([`Derivation::to_json`]).
///
/// # Errors
/// Exactly the errors of [`evaluate_json`], for the same text.
pub fn derive_json(request: &str) -> Result<String, EvaluationError> {
    Ok(derive(&parse_request(request)?)?.to_json())
}

/// The derivation of a request given as JSON text, in plain words ([`Derivation::to_text`]): the
/// text every face shows, so that no face words a derivation of its own.
///
/// # Errors
/// Exactly the errors of [`evaluate_json`], for the same text.
pub fn derivation_text(request: &str) -> Result<String, EvaluationError> {
    Ok(derive(&parse_request(request)?)?.to_text())
}

/// Checks a request's contract (SPEC §4) and every observation (SPEC §5, §6 preconditions 1 and
/// 4–6) exactly as [`evaluate`] does, without the bounds of `current_replicas` and without
/// deciding: for a host that checks evidence as it arrives (a push, a collector).
///
/// # Errors
/// Every error of [`evaluate`] except `replicas_out_of_bounds`.
pub fn validate_observations(request: &EvaluationRequest) -> Result<(), EvaluationError> {
    validate::evidence(request)
}

/// [`validate_observations`] of a request given as JSON text.
///
/// # Errors
/// `invalid_json`, and every error of [`validate_observations`].
pub fn validate_observations_json(request: &str) -> Result<(), EvaluationError> {
    validate_observations(&parse_request(request)?)
}

/// The bounds this evaluator enforces (SPEC §3–§6), for hosts that check input before they
/// build a request, so that no face writes a bound of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most replicas a count may be (`current_replicas`, `max_replicas`, a step): 10 000.
    pub max_replicas: u64,
    /// The largest signal value, capacity or quota amount: 10^15.
    pub max_amount: u64,
    /// The longest cooldown, drain or lease in seconds: 86 400.
    pub max_seconds: u64,
    /// The most capacity (and, apart, quota) observations in one request: 64.
    pub max_observations: u64,
}

/// The bounds of this evaluator (see [`Limits`]).
pub const LIMITS: Limits = Limits {
    max_replicas: validate::MAX_REPLICAS,
    max_amount: validate::MAX_AMOUNT,
    max_seconds: validate::MAX_SECONDS,
    max_observations: validate::MAX_OBSERVATIONS as u64,
};

impl Limits {
    /// The limits as compact JSON: `{"max_replicas":10000,"max_amount":…,"max_seconds":86400,"max_observations":64}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"max_replicas\":{},\"max_amount\":{},\"max_seconds\":{},\"max_observations\":{}}}",
            self.max_replicas, self.max_amount, self.max_seconds, self.max_observations
        )
    }
}

/// Evaluates a request given as JSON text and returns the decision as compact JSON.
///
/// # Errors
/// `invalid_json` for text that is not one JSON document (a duplicate key included), and every
/// error of [`evaluate`].
pub fn evaluate_json(request: &str) -> Result<String, EvaluationError> {
    let decision = evaluate(&parse_request(request)?)?;
    Ok(decision_to_json(&decision))
}

/// Evaluates a request given as bytes (which must be UTF-8 JSON).
///
/// # Errors
/// `invalid_json` for bytes that are not UTF-8, and every error of [`evaluate_json`].
pub fn evaluate_json_bytes(request: &[u8]) -> Result<String, EvaluationError> {
    let text = std::str::from_utf8(request)
        .map_err(|e| EvaluationError::new(ErrorCode::InvalidJson, format!("request is not valid UTF-8: {e}"), ""))?;
    evaluate_json(text)
}

/// Parses an evaluation request from JSON text, strictly (SPEC §1): unknown fields, floats,
/// booleans as integers and `null` outside the nullable fields are refused. Bounds and rules
/// are checked later, by [`evaluate`].
///
/// # Errors
/// `invalid_json` or `invalid_field`, with the path of the offending field.
pub fn parse_request(request: &str) -> Result<EvaluationRequest, EvaluationError> {
    parse::request(&json::parse(request, "request")?, &mut First)
}

/// Parses a contract from JSON text, strictly (shape only; see [`validate_contract`]).
///
/// # Errors
/// `invalid_json` or `invalid_field`, with a path relative to the contract document.
pub fn parse_contract(contract: &str) -> Result<ScaleUnitContract, EvaluationError> {
    parse::contract(&json::parse(contract, "contract")?, &json::Path::Root, &mut First)
}

/// Validates a contract (SPEC §4) and computes its identity (SPEC §8). Paths in errors are
/// relative to the contract (`policy.target`; `""` for the contract-level checks).
///
/// # Errors
/// `invalid_field`, `invalid_ref`, `credential_in_ref`, `invalid_digest`, `invalid_policy`,
/// `invalid_contract`, or `identity_mismatch` when a supplied id or digest differs.
pub fn validate_contract(contract: &ScaleUnitContract) -> Result<ContractIdentity, EvaluationError> {
    validate::contract(contract, &json::Path::Root)
}

/// Parses and validates a contract given as JSON text.
///
/// # Errors
/// Every error of [`parse_contract`] and [`validate_contract`].
pub fn validate_contract_json(contract: &str) -> Result<ContractIdentity, EvaluationError> {
    validate_contract(&parse_contract(contract)?)
}

/// Every fault of a request given as JSON text, each with a hint naming what to add or change
/// (DECISIONS.md, "Diagnosis"). The first fault is exactly the error [`evaluate_json`] returns
/// for the same text (code, message and path); a request [`evaluate_json`] accepts gives an
/// empty diagnosis. Missing or stale evidence is not a fault: it makes a `blocked` decision.
///
/// Never fails: bad input of any kind is what a diagnosis describes.
pub fn diagnose_request_json(request: &str) -> Diagnosis {
    let mut sink = Report::collecting();
    // A collecting report never stops the checks: each step's `Err` cannot happen.
    let Ok(Some(tree)) = json::parse_in(request, "request", &mut sink) else {
        return sink.into_diagnosis();
    };
    if let Ok(typed) = parse::request(&tree, &mut sink) {
        let _ = validate::request_in(&mut sink, &typed);
    }
    sink.into_diagnosis()
}

/// Every fault of a contract given as JSON text (paths relative to the contract document, as
/// [`validate_contract_json`] reports them). The first fault is exactly the error
/// [`validate_contract_json`] returns; a contract it accepts gives an empty diagnosis.
///
/// Never fails: bad input of any kind is what a diagnosis describes.
pub fn diagnose_contract_json(contract: &str) -> Diagnosis {
    let mut sink = Report::collecting();
    // A collecting report never stops the checks: each step's `Err` cannot happen.
    let Ok(Some(tree)) = json::parse_in(contract, "contract", &mut sink) else {
        return sink.into_diagnosis();
    };
    if let Ok(typed) = parse::contract(&tree, &json::Path::Root, &mut sink) {
        let _ = validate::contract_in(&mut sink, &typed, &json::Path::Root);
    }
    sink.into_diagnosis()
}

/// Every fault of a typed request; the first is exactly the error [`evaluate`] returns. A typed
/// request has no JSON-level faults and no omitted fields, so its hints never speak of defaults.
pub fn diagnose_request(request: &EvaluationRequest) -> Diagnosis {
    let mut sink = Report::collecting();
    let _ = validate::request_in(&mut sink, request);
    sink.into_diagnosis()
}

/// Every fault of a typed contract; the first is exactly the error [`validate_contract`] returns.
pub fn diagnose_contract(contract: &ScaleUnitContract) -> Diagnosis {
    let mut sink = Report::collecting();
    let _ = validate::contract_in(&mut sink, contract, &json::Path::Root);
    sink.into_diagnosis()
}

/// Serializes a diagnosis as compact JSON:
/// `{"faults":[{"code","message","path","hint"}, …],"omitted":0}` (see [`Diagnosis::to_json`]).
pub fn diagnosis_to_json(diagnosis: &Diagnosis) -> String {
    diagnosis.to_json()
}

/// The canonical JSON text of a contract's identity object (SPEC §8): what `contract_id` is the
/// sha256 of, and what `contract_digest` wraps as `{"identity": …, "kind": "scale_unit_contract"}`.
/// For auditing an identity by hand; the contract is not validated.
pub fn contract_identity_text(contract: &ScaleUnitContract) -> String {
    identity::contract_text(contract)
}

/// The canonical JSON text of a decision's identity object (SPEC §8): what `decision_id` is the
/// sha256 of, and what `decision_digest` wraps as `{"identity": …, "kind": "scale_decision"}`.
/// For auditing an identity by hand.
pub fn decision_identity_text(decision: &Decision) -> String {
    identity::decision_text(&identity::DecisionFields {
        contract_id: &decision.contract_id,
        evaluated_at: &decision.evaluated_at,
        current_replicas: decision.current_replicas,
        desired_replicas: decision.desired_replicas,
        action: decision.action,
        reasons: &decision.reasons,
        drain_required: decision.drain_required,
        evidence: &decision.evidence,
    })
}

/// Serializes a decision as compact JSON, fields in SPEC §9 order: byte for byte what
/// `serde_json::to_string` writes for it (the core's tests hold it to that), written directly
/// because this runs on every JSON evaluation and the generic serializer costs about a tenth of a
/// component call there.
pub fn decision_to_json(decision: &Decision) -> String {
    let d = decision;
    let mut out = String::with_capacity(640 + 160 * d.evidence.len());
    let strings = [
        ("{\"schema_version\":", d.schema_version.as_str()),
        (",\"decision_id\":", &d.decision_id),
        (",\"decision_digest\":", &d.decision_digest),
        (",\"contract_id\":", &d.contract_id),
        (",\"evaluated_at\":", &d.evaluated_at),
    ];
    for (key, value) in strings {
        out.push_str(key);
        canonical::write_json_string(value, false, &mut out);
    }
    out.push_str(",\"current_replicas\":");
    canonical::push_decimal(d.current_replicas, 1, &mut out);
    out.push_str(",\"desired_replicas\":");
    canonical::push_decimal(d.desired_replicas, 1, &mut out);
    out.push_str(",\"action\":");
    canonical::write_json_string(d.action.as_str(), false, &mut out);
    out.push_str(",\"reasons\":[");
    for (i, reason) in d.reasons.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        canonical::write_json_string(reason.as_str(), false, &mut out);
    }
    out.push_str(if d.drain_required {
        "],\"drain_required\":true,\"evidence\":["
    } else {
        "],\"drain_required\":false,\"evidence\":["
    });
    for (i, evidence) in d.evidence.iter().enumerate() {
        let fields = [
            (if i > 0 { ",{\"kind\":" } else { "{\"kind\":" }, evidence.kind.as_str()),
            (",\"ref\":", &evidence.reference),
            (",\"digest\":", &evidence.digest),
            (",\"status\":", evidence.status.as_str()),
            (",\"code\":", &evidence.code),
        ];
        for (key, value) in fields {
            out.push_str(key);
            canonical::write_json_string(value, false, &mut out);
        }
        out.push('}');
    }
    out.push_str("]}");
    out
}
