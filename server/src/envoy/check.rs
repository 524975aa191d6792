//! One `Check`: an HTTP request Envoy holds, turned into the core gate's question (SPEC §12) and
//! the answer back.

use envoy_types::pb::envoy::service::auth::v3::attribute_context::HttpRequest;
use scale_units_core::gate::{self, Bounds, ChangeKind, Evaluated, GateVerdict};
use serde_json::{Value, json};

use super::decoder::BodyError;
use super::routes::{Routes, ScaleCall};
use crate::audit::{AuditLog, AuditRecord, Caller, DecisionFacts, ErrorFacts};
use crate::listen::Peer;
use crate::sources::WorkloadKind;
use crate::units::{AdmittedChange, UnitKey, UnitVerdict, Units};

/// The largest body read for a replica count; a larger one is denied (`body_too_large`).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The header Envoy adds to the check request when `with_request_body` kept only part of the body.
const PARTIAL_BODY_HEADER: &str = "x-envoy-auth-partial-body";

/// Headers an allowed scale call carries upstream and back to its caller.
pub const DECISION_HEADER: &str = "x-scale-units-decision";
/// The decision's reason codes, comma-separated.
pub const REASONS_HEADER: &str = "x-scale-units-reasons";
/// The unit, `namespace/name`.
pub const UNIT_HEADER: &str = "x-scale-units-unit";

/// What Envoy is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not a scale call: the request goes on untouched.
    Pass,
    /// An allowed scale call: the request goes on with these headers.
    Allow(Vec<(&'static str, String)>),
    /// A denied scale call: 403 with this JSON body.
    Deny(Value),
}

/// A judged request: the answer and its audit line (none for a request that is not a scale call).
pub struct Checked {
    /// What Envoy is told.
    pub answer: Answer,
    /// The audit line.
    pub record: Option<AuditRecord>,
}

/// A scale call denied before any decision is read.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

fn refusal(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal { code, message: message.into() }
}

/// The body Envoy sent, when the check may read it.
fn body(http: &HttpRequest) -> Result<&[u8], Refusal> {
    let partial = http.headers.get(PARTIAL_BODY_HEADER).is_some_and(|value| value.eq_ignore_ascii_case("true"));
    let body = if http.raw_body.is_empty() { http.body.as_bytes() } else { http.raw_body.as_slice() };
    if partial || body.len() > MAX_BODY_BYTES {
        return Err(refusal(
            "body_too_large",
            "the body is larger than the check reads (the filter's max_request_bytes, at most 1 MiB): its replica count cannot be read",
        ));
    }
    Ok(body)
}

/// The unit and the replica count the body asks for, read as the route's actuator reads them
/// ([`super::decoder`]).
pub(crate) fn requested(http: &HttpRequest, call: &ScaleCall) -> Result<(String, u64), Refusal> {
    let from = |error: BodyError| Refusal { code: error.code, message: error.message };
    if let Some(refusal) = &call.refusal {
        return Err(from(refusal.clone()));
    }
    let body = body(http)?;
    call.decoder.check_media_type(http.headers.get("content-type").map(String::as_str)).map_err(from)?;
    if body.is_empty() {
        return Err(refusal("count_missing", format!("the body is empty: no replica count at {}", call.replicas)));
    }
    let unit = call.resolve(body).map_err(from)?;
    let count = call.decoder.count(body, &call.replicas).map_err(from)?;
    Ok((unit, count))
}

/// Judges one request Envoy holds.
pub async fn check(
    units: &Units,
    routes: &Routes,
    http: &HttpRequest,
    client: Option<String>,
    peer: Option<&Peer>,
) -> Checked {
    let Some(call) = routes.matching(&http.method, &http.path) else {
        return Checked { answer: Answer::Pass, record: None };
    };
    let mut record = AuditRecord::new("envoy");
    record.unit = Some(call.unit.clone());
    record.caller = Caller::peer(peer);
    let mut detail = json!({
        "request_id": http.id,
        "method": http.method,
        "path": http.path,
        "route": call.pattern,
        "client": client,
    });
    let deny = |mut record: AuditRecord, mut detail: Value, body: Value| {
        record.allowed = Some(false);
        if let (Some(detail), Some(message)) = (detail.as_object_mut(), body.get("message")) {
            detail.insert("message".to_owned(), message.clone());
        }
        record.detail = detail;
        Checked { answer: Answer::Deny(body), record: Some(record) }
    };
    let refused = |mut record: AuditRecord, detail: Value, unit: &str, refusal: Refusal, to: Option<u64>| {
        let message = format!("scale-units: {unit} {} denied: {}", http.method, refusal.message);
        record.error = Some(ErrorFacts { code: refusal.code.to_owned(), message: refusal.message.clone() });
        let body = json!({
            "allowed": false, "unit": unit, "reason": refusal.code, "message": message,
            "to_replicas": to, "decision_id": null, "reasons": [],
        });
        deny(record, detail, body)
    };
    let (unit, to) = match requested(http, &call) {
        Ok(requested) => requested,
        Err(why) => return refused(record, detail, &call.unit, why, None),
    };
    record.unit = Some(unit.clone());
    let key = match unit.split_once('/').map(|(namespace, name)| UnitKey::new(namespace, name)) {
        Some(Ok(key)) => key,
        Some(Err(error)) => {
            return refused(record, detail, &unit, refusal("invalid_unit", error.to_string()), Some(to));
        }
        None => {
            return refused(record, detail, &unit, refusal("invalid_unit", "the route names no namespace/name"), None);
        }
    };
    // A unit whose sources name its workload's kind is that workload's only (as the webhook
    // judges it): a StatefulSet's scale call on a Deployment's unit of the same name is no call of
    // this unit — it goes on unjudged, and starts no cooldown of the Deployment's.
    let kind = if call.pattern.contains("/statefulsets/") {
        Some(WorkloadKind::StatefulSet)
    } else if call.pattern.contains("/deployments/") {
        Some(WorkloadKind::Deployment)
    } else {
        None
    };
    if let (Some(kind), Some(declared)) = (kind, units.sources(&key).and_then(|sources| sources.workload))
        && kind != declared
    {
        record.allowed = Some(true);
        if let Some(detail) = detail.as_object_mut() {
            detail.insert(
                "message".to_owned(),
                json!(format!("{key} is a {declared:?}'s unit; this {kind:?}'s scale call is not checked")),
            );
        }
        record.detail = detail;
        return Checked { answer: Answer::Pass, record: Some(record) };
    }
    // A unit with a contract has bounds, read here once for both paths below.
    let bounds = units.bounds(&key).map(|(min_replicas, max_replicas)| Bounds { min_replicas, max_replicas });
    let decided = match units.decide(&key, None).await {
        Ok(decided) => Ok(decided),
        // Below the floor the evaluator cannot decide (replicas_out_of_bounds): the core's gate
        // judges a recovery toward it from the unit's replica-count evidence, as the webhook does
        // from the review's count.
        Err(error) => match (bounds, error.code() == "replicas_out_of_bounds") {
            (Some(bounds), true) => match standing_count(units, &key).await {
                Some(current) if current < bounds.min_replicas => {
                    record.error = Some(ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
                    Err(Evaluated::BelowFloor { current_replicas: current, bounds })
                }
                _ => return no_decision(record, detail, &key, &unit, to, &error),
            },
            _ => return no_decision(record, detail, &key, &unit, to, &error),
        },
    };
    let (evaluated, id, reasons, action, desired) = match decided {
        Ok(decided) => {
            let UnitVerdict::Decided { decision, .. } = decided.verdict else {
                let why = refusal("unknown_unit", format!("{key} has no scale-unit contract"));
                return refused(record, detail, &unit, why, Some(to));
            };
            record = record.decision(Some(DecisionFacts::of(&decision)));
            record.component_digest = decided.provenance.map(|provenance| provenance.component_digest.clone());
            let id = Some(decision.decision_id.clone());
            let reasons: Vec<String> = decision.reasons.iter().map(|reason| reason.as_str().to_owned()).collect();
            let (action, desired) = (Some(decision.action.as_str()), Some(decision.desired_replicas));
            // A unit with a decision has a contract; its bounds were read a moment before.
            let bounds = bounds.unwrap_or(Bounds { min_replicas: 0, max_replicas: u64::MAX });
            (Evaluated::Decided { decision, bounds }, id, reasons, action, desired)
        }
        Err(below_floor) => (below_floor, None, Vec::new(), None, None),
    };
    let verdict: GateVerdict = gate::judge(evaluated, to, ChangeKind::Scale);
    let from = verdict.from_replicas.unwrap_or_default();
    if let Some(detail) = detail.as_object_mut() {
        detail.insert("change".to_owned(), json!({"from": from, "to": to}));
        detail.insert("gate_reason".to_owned(), json!(verdict.reason.as_str()));
    }
    let message = format!("scale-units: {key} {}", verdict.message);
    let denial = |message: String| {
        json!({
            "allowed": false, "unit": unit, "reason": verdict.reason.as_str(), "message": message,
            "from_replicas": from, "to_replicas": to, "action": action, "desired_replicas": desired,
            "decision_id": id, "reasons": reasons,
        })
    };
    if !verdict.allowed {
        return deny(record, detail, denial(message));
    }
    // A Kubernetes dry run (`?dryRun=All`) changes nothing: judged, not recorded.
    let dry_run = call.decoder == crate::envoy::decoder::Decoder::Kubernetes && kubernetes_dry_run(&http.path);
    if from != to && !dry_run {
        // An allowed change starts the contract's cooldowns; a change whose cooldown cannot be
        // kept is not let through.
        let uid = match (&id, http.id.is_empty()) {
            (_, false) => format!("envoy:{}", http.id),
            (Some(id), true) => format!("envoy:{id}:{from}->{to}"),
            (None, true) => format!("envoy:{key}:{from}->{to}"),
        };
        let change = AdmittedChange { from, to, decision_id: id.as_deref(), review_uid: &uid, resource_version: None };
        if let Err(error) = units.record_admission(&key, change).await {
            let message = format!("scale-units: {key}: the scale action cannot be recorded for its cooldown: {error}");
            record.error = Some(ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
            return deny(record, detail, denial(message));
        }
        if let Err(error) = units.record_admitted_count(&key, to).await {
            tracing::warn!("{key}: the admitted replica count cannot be recorded: {error}");
        }
    }
    record.allowed = Some(true);
    if let Some(detail) = detail.as_object_mut() {
        detail.insert("message".to_owned(), json!(message));
    }
    record.detail = detail;
    // A recovery below the floor has no decision: its header names none.
    let headers = vec![
        (DECISION_HEADER, id.unwrap_or_default()),
        (REASONS_HEADER, reasons.join(",")),
        (UNIT_HEADER, key.to_string()),
    ];
    Checked { answer: Answer::Allow(headers), record: Some(record) }
}

/// Whether a Kubernetes API path's query asks for a dry run (`dryRun=All`, the API server's only
/// value). A spelling this misses is recorded: a cooldown too many, never one too few.
fn kubernetes_dry_run(path: &str) -> bool {
    let Some((_, query)) = path.split_once('?') else { return false };
    query.split('&').any(|pair| pair.split_once('=').is_some_and(|(name, value)| name == "dryRun" && !value.is_empty()))
}

/// Writes the audit line; in blocking-strict mode a line that cannot be written denies the call.
pub async fn audited(checked: Checked, audit: Option<&AuditLog>) -> Answer {
    let (Some(audit), Some(record)) = (audit, &checked.record) else { return checked.answer };
    match audit.record(record).await {
        Ok(()) => checked.answer,
        Err(error) => Answer::Deny(json!({
            "allowed": false, "unit": record.unit, "reason": "audit_unavailable",
            "message": format!("scale-units: the audit line cannot be written: {error}"),
            "decision_id": record.decision_id, "reasons": record.reasons,
        })),
    }
}

/// The unit's replica count as its evidence stands (`None` when missing or expired).
async fn standing_count(units: &Units, key: &UnitKey) -> Option<u64> {
    units.evidence(key).await.ok()?.get("replicas")?.get("count")?.as_u64()
}

/// A call denied because the unit has no decision (no evidence of its count, a store error, …).
fn no_decision(
    mut record: AuditRecord,
    mut detail: Value,
    key: &UnitKey,
    unit: &str,
    to: u64,
    error: &crate::units::UnitError,
) -> Checked {
    let message = format!("scale-units: {key} -> {to} replicas denied: no decision: {error} ({})", error.code());
    record.error = Some(ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
    record.allowed = Some(false);
    if let Some(detail) = detail.as_object_mut() {
        detail.insert("message".to_owned(), json!(message));
    }
    record.detail = detail;
    let body = json!({
        "allowed": false, "unit": unit, "reason": error.code(), "message": message,
        "to_replicas": to, "decision_id": null, "reasons": [],
    });
    Checked { answer: Answer::Deny(body), record: Some(record) }
}

#[cfg(test)]
mod tests {
    use super::kubernetes_dry_run;

    #[test]
    fn a_kubernetes_dry_run_is_read_from_the_query() {
        assert!(kubernetes_dry_run("/apis/apps/v1/namespaces/shop/deployments/web/scale?dryRun=All"));
        assert!(kubernetes_dry_run("/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=x&dryRun=All"));
        assert!(!kubernetes_dry_run("/apis/apps/v1/namespaces/shop/deployments/web/scale"));
        assert!(!kubernetes_dry_run("/apis/apps/v1/namespaces/shop/deployments/web/scale?dryRun="));
        assert!(!kubernetes_dry_run("/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=dryRun"));
    }
}
