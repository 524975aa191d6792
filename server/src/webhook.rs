//! The admission webhook (`scale-units serve --webhook`, `POST /v1/admission`): a
//! `ValidatingWebhookConfiguration` sends the API server's `AdmissionReview` (`admission.k8s.io/v1`)
//! for `UPDATE` of `deployments/scale` and `statefulsets/scale` (an `autoscaling/v1` `Scale`: what
//! the HPA and `kubectl scale` send) and of `deployments` and `statefulsets` themselves.
//!
//! The unit (`namespace/name` of the workload) is evaluated with the old replica count as current.
//! A change is allowed when the count does not change, or when it moves in the decision's
//! direction without passing `desired_replicas`. Everything else is denied — above all any change
//! while the decision is `blocked` — with a message naming the reasons and the decision id. A
//! unit without a contract is allowed with a warning. Evidence that cannot be read (Redis down)
//! denies. A body that is not an `AdmissionReview` gets a well-formed denial, never a 500. In dry
//! run, a denial is answered `allowed` with the would-be denial as a warning.

pub mod tls;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v1::Scale;
use kube_core::DynamicObject;
use kube_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use scale_units_core::{ActionKind, Decision};
use serde_json::Value;

use crate::units::{UnitKey, UnitVerdict, Units};

/// The audit annotation carrying the decision id of an admitted change (the API server prefixes
/// it with the webhook's name).
pub const DECISION_ANNOTATION: &str = "decision-id";

/// What the webhook answers for one review.
enum Outcome {
    Allow { warnings: Vec<String>, decision_id: Option<String> },
    Deny { message: String, decision_id: Option<String> },
}

/// A judged review: the answer, and the unit whose replica count it would change (a unit with a
/// contract, its count changing), whose admission is recorded as its last scale action.
struct Judged {
    outcome: Outcome,
    changes: Option<UnitKey>,
}

/// Answers one `AdmissionReview` body: the response review, as JSON, always well-formed.
/// `dry_run` answers every denial `allowed`, with the denial as a warning.
pub async fn review(units: &Units, body: &[u8], dry_run: bool) -> Value {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(error) => {
            return malformed(body, &format!("the body is not an admission.k8s.io/v1 AdmissionReview: {error}"));
        }
    };
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(_) => return malformed(body, "the AdmissionReview has no request"),
    };
    let Judged { mut outcome, changes } = admit(units, &request).await;
    // An admitted change (in dry run too: the change happens) starts the contract's cooldown for
    // the next decision. A server-side dry run (`kubectl --dry-run=server`) changes nothing.
    let admitted = dry_run || matches!(outcome, Outcome::Allow { .. });
    if admitted
        && !request.dry_run
        && let Some(key) = changes
        && let Err(error) = units.record_action(&key).await
    {
        let decision_id = match &outcome {
            Outcome::Allow { decision_id, .. } | Outcome::Deny { decision_id, .. } => decision_id.clone(),
        };
        let message = format!("scale-units: {key}: the scale action cannot be recorded for its cooldown: {error}");
        outcome = Outcome::Deny { message, decision_id };
    }
    let mut response = AdmissionResponse::from(&request);
    match outcome {
        Outcome::Allow { warnings, decision_id } => {
            if let Some(id) = decision_id {
                response.audit_annotations.insert(DECISION_ANNOTATION.to_owned(), id);
            }
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
        }
        Outcome::Deny { message, decision_id } => {
            if let Some(id) = decision_id {
                response.audit_annotations.insert(DECISION_ANNOTATION.to_owned(), id);
            }
            if dry_run {
                response.warnings = Some(vec![format!("scale-units dry run, would deny: {message}")]);
            } else {
                response = response.deny(message);
                response.result.code = 403;
                response.result.reason = "Forbidden".to_owned();
            }
        }
    }
    to_json(response)
}

/// A denial for a body that cannot be read as a review, echoing its `request.uid` when there is one.
fn malformed(body: &[u8], message: &str) -> Value {
    let mut response = AdmissionResponse::invalid(format!("scale-units: {message}"));
    response.result.code = 400;
    if let Some(uid) = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| value.pointer("/request/uid").and_then(Value::as_str).map(str::to_owned))
    {
        response.uid = uid;
    }
    to_json(response)
}

fn to_json(response: AdmissionResponse) -> Value {
    serde_json::to_value(response.into_review()).unwrap_or_else(|error| {
        // Unreachable (the types serialize); still an answer the API server can read.
        serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "", "allowed": false, "status": {"message": format!("scale-units: {error}"), "code": 500}}
        })
    })
}

/// Which workloads' replica counts the webhook judges.
#[derive(Clone, Copy)]
enum Workload {
    Deployment,
    StatefulSet,
}

async fn admit(units: &Units, request: &AdmissionRequest<DynamicObject>) -> Judged {
    let allow = || Judged { outcome: Outcome::Allow { warnings: Vec::new(), decision_id: None }, changes: None };
    if request.operation != Operation::Update {
        return allow();
    }
    let workload = match (request.resource.group.as_str(), request.resource.resource.as_str()) {
        ("apps", "deployments") => Workload::Deployment,
        ("apps", "statefulsets") => Workload::StatefulSet,
        _ => return allow(),
    };
    let scale = match request.sub_resource.as_deref() {
        Some("scale") => true,
        None | Some("") => false,
        Some(_) => return allow(),
    };
    let deny = |message: String| Judged {
        outcome: Outcome::Deny { message: format!("scale-units: {message}"), decision_id: None },
        changes: None,
    };
    let (Some(old), Some(new)) = (&request.old_object, &request.object) else {
        return deny("an UPDATE review without object and oldObject".to_owned());
    };
    let (old, new) = match (replicas(old, workload, scale), replicas(new, workload, scale)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(error), _) | (_, Err(error)) => return deny(error),
    };
    if old == new {
        return allow();
    }
    let Some(namespace) = request.namespace.as_deref() else {
        return deny("the review names no namespace".to_owned());
    };
    let key = match UnitKey::new(namespace, request.name.as_str()) {
        Ok(key) => key,
        Err(error) => return deny(error.to_string()),
    };
    let change = format!("{key} {old} -> {new} replicas");
    match units.evaluate(&key, Some(old)).await {
        Ok(UnitVerdict::NoContract) => Judged {
            outcome: Outcome::Allow {
                warnings: vec![format!(
                    "scale-units: {key} has no scale-unit contract; {old} -> {new} replicas not checked"
                )],
                decision_id: None,
            },
            changes: None,
        },
        Ok(UnitVerdict::Decided { decision, .. }) => {
            Judged { outcome: judge(&change, old, new, &decision), changes: Some(key) }
        }
        Err(error) => Judged { changes: Some(key), ..deny(format!("{change} denied: {error}")) },
    }
}

/// Allowed: a move in the decision's direction that does not pass `desired_replicas`.
fn judge(change: &str, old: u64, new: u64, decision: &Decision) -> Outcome {
    let desired = decision.desired_replicas;
    let fits = match decision.action {
        ActionKind::ScaleUp => new > old && new <= desired,
        ActionKind::ScaleDown => new < old && new >= desired,
        ActionKind::Hold | ActionKind::Blocked => false,
    };
    let id = decision.decision_id.clone();
    if fits {
        let mut warnings = Vec::new();
        if decision.drain_required {
            warnings.push(format!("scale-units: drain the removed replicas first (decision {id})"));
        }
        return Outcome::Allow { warnings, decision_id: Some(id) };
    }
    let why = match decision.action {
        ActionKind::Blocked => "the decision is blocked".to_owned(),
        ActionKind::Hold => format!("the decision is hold at {old}"),
        ActionKind::ScaleUp if new < old => format!("the decision is scale_up to {desired}, not down"),
        ActionKind::ScaleDown if new > old => format!("the decision is scale_down to {desired}, not up"),
        ActionKind::ScaleUp => format!("the decision is scale_up to at most {desired}"),
        ActionKind::ScaleDown => format!("the decision is scale_down to at least {desired}"),
    };
    let reasons: Vec<String> =
        decision.reasons.iter().map(|reason| format!("{} ({})", reason.as_str(), reason.describe())).collect();
    Outcome::Deny {
        message: format!("scale-units: {change} denied: {why}; reasons: {}; decision {id}", reasons.join("; ")),
        decision_id: Some(id),
    }
}

/// `spec.replicas` of a `Scale` (absent: 0) or of a Deployment or StatefulSet (absent: 1, the
/// Kubernetes default), read through the Kubernetes API types.
fn replicas(object: &DynamicObject, workload: Workload, scale: bool) -> Result<u64, String> {
    let value = serde_json::to_value(object).map_err(|error| format!("the object cannot be read: {error}"))?;
    let count = if scale {
        let scale: Scale = serde_json::from_value(value)
            .map_err(|error| format!("the object is not an autoscaling/v1 Scale: {error}"))?;
        scale.spec.and_then(|spec| spec.replicas).unwrap_or(0)
    } else {
        match workload {
            Workload::Deployment => {
                let deployment: Deployment = serde_json::from_value(value)
                    .map_err(|error| format!("the object is not an apps/v1 Deployment: {error}"))?;
                deployment.spec.and_then(|spec| spec.replicas).unwrap_or(1)
            }
            Workload::StatefulSet => {
                let set: StatefulSet = serde_json::from_value(value)
                    .map_err(|error| format!("the object is not an apps/v1 StatefulSet: {error}"))?;
                set.spec.and_then(|spec| spec.replicas).unwrap_or(1)
            }
        }
    };
    u64::try_from(count).map_err(|_| format!("spec.replicas is negative ({count})"))
}
