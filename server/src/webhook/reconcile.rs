//! What a review teaches of the workload before its change is judged: the API server's
//! `oldObject` settles the unit's last admission (docs/DECISIONS.md, "Admitted, then refused").

use serde_json::Value;

use super::input::RequestIn;
use super::{AdmissionOptions, replicas, target};
use crate::units::{Admission, Reconciled, ReviewedObject, UnitKey, Units};

/// What an authenticated review says of the workload as the API server holds it (its `oldObject`)
/// settles the unit's last admission before the change is judged ([`Units::reconcile_review`]):
/// the object unchanged since the admission, at its old count, retracts it (the API server refused
/// that change: no cooldown, no count of a change that never happened); the admitted count
/// confirms it. Every review of the workload teaches it, a change or not. Not from a review that
/// did not authenticate (anyone who reaches the port could write its `oldObject`), nor from any
/// dry run (nothing is recorded then). Returns what the audit line keeps; a store that fails
/// leaves the admission as it stood, and the judgment is the stricter one.
pub(super) async fn reconcile(units: &Units, options: &AdmissionOptions, request: &RequestIn) -> Option<Value> {
    if options.unauthenticated || options.dry_run || request.dry_run {
        return None;
    }
    let (workload, scale) = target(request)?;
    let old = request.old_object.as_ref()?;
    let count = replicas(old, workload, scale).ok()?;
    let key = UnitKey::new(request.namespace.as_deref()?, request.name.as_str()).ok()?;
    if units.sources(&key).and_then(|sources| sources.workload).is_some_and(|declared| declared != workload.kind()) {
        return None;
    }
    let resource_version = old.metadata.resource_version.as_deref();
    let object = ReviewedObject { review_uid: &request.uid, resource_version, count };
    let settled = |outcome: &str, admission: &Admission| {
        serde_json::json!({
            "outcome": outcome,
            "admission": {"review_uid": admission.review_uid, "from": admission.from, "to": admission.to, "at": admission.at},
            "count": count,
            "resource_version": resource_version,
        })
    };
    match units.reconcile_review(&key, object).await {
        Ok(Reconciled::Unchanged) => None,
        Ok(Reconciled::Retracted(admission)) => {
            tracing::info!(unit = %key, review = %request.uid, "the admitted {} -> {} (review {}) never happened: retracted", admission.from, admission.to, admission.review_uid);
            Some(settled("retracted", &admission))
        }
        Ok(Reconciled::Confirmed(admission)) => Some(settled("confirmed", &admission)),
        Ok(Reconciled::Corrected { admitted }) => Some(
            serde_json::json!({"outcome": "count_corrected", "admitted": admitted, "count": count, "resource_version": resource_version}),
        ),
        Err(error) => {
            tracing::warn!(unit = %key, "what the review says of the workload cannot be recorded: {error}");
            Some(serde_json::json!({"outcome": "error", "message": error.to_string()}))
        }
    }
}
