//! The unit registry's routes (feature `kubernetes`), when the service has a
//! [`Units`](crate::units::Units) registry:
//!
//! | route | does |
//! |---|---|
//! | `PUT /v1/units/{namespace}/{name}/observations` | stores a collector's observations (the push role's bearer token when one is configured) |
//! | `GET /v1/units` | the units with a contract |
//! | `GET /v1/units/{namespace}/{name}` | the unit's decision now, at the collector's last replica count (`?replicas=N` for another), the stored evidence with its age (`age_s`) and `source_ref`, the time its cooldowns count from (`last_action`, with its `source`) and its journal of accepted decisions |
//! | `POST /v1/admission` | the admission webhook (`AdmissionReview` in, `AdmissionReview` out; always 200); a review without the webhook's client certificate or the push role's token, when either is configured, is judged but recorded nowhere, never overrides or recovers, and is answered without details |

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post, put};
use serde_json::json;

use super::{Role, Shared, Shared_, authorize_as, error_response, json_response, read_body, read_text};
use crate::units::{UnitError, UnitKey, UnitVerdict, Units};

/// Adds the routes to `router`.
pub(super) fn routes(router: Router<Arc<Shared>>) -> Router<Arc<Shared>> {
    router
        .route("/v1/units", get(list))
        .route("/v1/units/{namespace}/{name}", get(decision))
        .route("/v1/units/{namespace}/{name}/observations", put(observations))
        .route("/v1/admission", post(admission))
}

fn units_of(shared: &Shared) -> Option<&Arc<Units>> {
    shared.config.units.as_ref()
}

/// The registry and the unit a route names, or the answer when there is no registry or the name
/// is not a unit's.
fn unit(shared: &Shared, namespace: String, name: String) -> Result<(&Arc<Units>, UnitKey), Box<Response>> {
    let units = units_of(shared).ok_or_else(|| Box::new(no_units()))?;
    let key = UnitKey::new(namespace, name).map_err(|error| Box::new(unit_error(&error)))?;
    Ok((units, key))
}

fn no_units() -> Response {
    error_response(StatusCode::NOT_FOUND, "units_disabled", "this service has no unit registry (serve --units DIR)")
}

fn unit_error(error: &UnitError) -> Response {
    let status = match error {
        UnitError::InvalidKey(_) | UnitError::InvalidObservations(_) => StatusCode::BAD_REQUEST,
        UnitError::UnknownUnit(_) => StatusCode::NOT_FOUND,
        UnitError::UnknownReplicas(_) => StatusCode::CONFLICT,
        UnitError::Evaluation(_) => StatusCode::UNPROCESSABLE_ENTITY,
        UnitError::Policy(_) | UnitError::Store(_) | UnitError::Config(_) | UnitError::Fenced(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    let body = match error {
        UnitError::InvalidObservations(inner) | UnitError::Evaluation(inner) => {
            json!({"error": inner.to_json()})
        }
        _ => json!({"error": {"code": error.code(), "message": error.to_string()}}),
    };
    json_response(status, body.to_string())
}

async fn list(State(shared): Shared_, headers: HeaderMap) -> Response {
    if shared.config.token_for_evaluation
        && let Some(response) = authorize_as(&shared, &headers, Role::Read)
    {
        return response;
    }
    let units = match units_of(&shared) {
        Some(units) => units,
        None => return no_units(),
    };
    let list: Vec<_> = units
        .keys()
        .into_iter()
        .map(|key| json!({"namespace": key.namespace, "name": key.name, "contract_id": units.contract_id(&key)}))
        .collect();
    json_response(
        StatusCode::OK,
        json!({"store": units.store_kind(), "state": units.state_kind(), "units": list}).to_string(),
    )
}

async fn decision(
    State(shared): Shared_,
    peer: Option<axum::Extension<crate::listen::Peer>>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    if shared.config.token_for_evaluation
        && let Some(response) = authorize_as(&shared, &headers, Role::Read)
    {
        return response;
    }
    let (units, key) = match unit(&shared, namespace, name) {
        Ok(found) => found,
        Err(response) => return *response,
    };
    let replicas = uri.query().unwrap_or_default().split('&').find_map(|pair| pair.strip_prefix("replicas="));
    let replicas = match replicas.map(str::parse::<u64>) {
        None => None,
        Some(Ok(count)) => Some(count),
        Some(Err(_)) => return error_response(StatusCode::BAD_REQUEST, "invalid_field", "replicas takes a number"),
    };
    let decided = units.decide_with_evidence(&key, replicas).await;
    if let Some(audit) = &shared.config.audit {
        let mut record = crate::audit::AuditRecord::new("unit");
        record.unit = Some(key.to_string());
        record.caller = crate::audit::Caller::peer(peer.as_ref().map(|peer| &peer.0));
        match &decided {
            Ok(decided) => {
                // The typed decision the unit decided on: its JSON is not read again.
                record = record.decision(match &decided.verdict {
                    UnitVerdict::Decided { decision, .. } => Some(crate::audit::DecisionFacts::of(decision)),
                    UnitVerdict::NoContract => None,
                });
                record.component_digest =
                    decided.provenance.as_ref().map(|provenance| provenance.component_digest.clone());
            }
            Err(error) => {
                record.error =
                    Some(crate::audit::ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
            }
        }
        if let Err(error) = audit.record(&record).await {
            return super::audit_failed(&error);
        }
    }
    let journal = match &decided {
        Ok(_) => match units.journal(&key).await {
            Ok(journal) => journal,
            Err(error) => return unit_error(&error),
        },
        Err(_) => Vec::new(),
    };
    match decided {
        // The evidence shown is the evidence decided on: one read of the store (each with its
        // age and source).
        Ok(decided) => match (decided.verdict, decided.decision_json, decided.provenance, decided.evidence) {
            (UnitVerdict::Decided { .. }, Some(decision), Some(provenance), Some(evidence)) => json_response(
                StatusCode::OK,
                format!(
                    "{{\"unit\":{},\"decision\":{decision},\"policy\":{},\"last_action\":{},\"journal\":{},\"evidence\":{evidence}}}",
                    json!(key.to_string()),
                    json!({"digest": provenance.component_digest, "evaluator_version": provenance.evaluator_version}),
                    decided.last_action.as_ref().map_or(serde_json::Value::Null, crate::units::LastAction::to_json),
                    json!({"store": units.state_kind(), "entries": journal}),
                ),
            ),
            _ => unit_error(&UnitError::UnknownUnit(key)),
        },
        Err(error) => unit_error(&error),
    }
}

async fn observations(
    State(shared): Shared_,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    body: Body,
) -> Response {
    // A token, when configured, guards every write of evidence (a forged observation could
    // unblock a unit); without one the listener is loopback only (`serve` refuses otherwise).
    if shared.token_of(Role::Push).is_some()
        && let Some(response) = authorize_as(&shared, &headers, Role::Push)
    {
        return response;
    }
    let (units, key) = match unit(&shared, namespace, name) {
        Ok(found) => found,
        Err(response) => return *response,
    };
    let text = match read_text(body, &headers, shared.config.max_body_bytes).await {
        Ok(text) => text,
        Err(response) => return response,
    };
    match units.put_observations(&key, &text).await {
        Ok((written, forgotten)) => json_response(
            StatusCode::OK,
            json!({"unit": key.to_string(), "written": written, "forgotten": forgotten}).to_string(),
        ),
        Err(error) => unit_error(&error),
    }
}

async fn admission(
    State(shared): Shared_,
    peer: Option<axum::Extension<crate::listen::Peer>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let units = match units_of(&shared) {
        Some(units) => Arc::clone(units),
        None => return no_units(),
    };
    // Every review is judged and answered alike and records nothing (issue 37); whether it
    // authenticated goes to its audit line and a counter.
    let unauthenticated = !admission_authenticated(&shared, peer.as_ref().map(|peer| &peer.0), &headers);
    if unauthenticated {
        shared.metrics.admission_unauthenticated();
    }
    let body = match read_body(body, &headers, crate::webhook::MAX_REVIEW_BYTES).await {
        Ok(body) => body,
        Err(_) => axum::body::Bytes::new(),
    };
    let options = crate::webhook::AdmissionOptions {
        dry_run: shared.config.admission_dry_run,
        override_groups: shared.config.override_groups.clone(),
        unauthenticated,
        peer: peer.map(|peer| peer.0),
        cluster: shared.config.kubernetes.clone(),
    };
    let reviewed = crate::webhook::review_with(&units, &body, &options).await;
    if let Some(group) = &reviewed.overridden {
        shared.metrics.admission_override(group);
    }
    if reviewed.recovered {
        shared.metrics.admission_recovery();
    }
    if let Some(denial) = reviewed.denial {
        shared.metrics.admission_denial(denial.mode.as_str(), denial.code);
    }
    if let (Some(audit), Some(record)) = (&shared.config.audit, &reviewed.record)
        && let Err(error) = audit.record(record).await
    {
        // The API server applies the webhook's failurePolicy to an error answer.
        return super::audit_failed(&error);
    }
    json_response(StatusCode::OK, reviewed.review.to_string())
}

/// Whether an admission review authenticated: with a client certificate the webhook's client CA
/// signed (`serve --webhook-client-ca`; the listener verified it) or with the push role's bearer
/// token. It only marks the review's audit line: a review records nothing. With
/// neither configured the listener is loopback only (`serve` refuses otherwise) and a local
/// caller is trusted, as for observations.
fn admission_authenticated(shared: &Shared, peer: Option<&crate::listen::Peer>, headers: &HeaderMap) -> bool {
    if peer.is_some_and(|peer| peer.client_certificate.is_some()) {
        return true;
    }
    let client_ca = shared.config.tls.as_ref().is_some_and(|tls| tls.client_ca.is_some());
    match shared.token_of(Role::Push) {
        None => !client_ca,
        Some(_) => authorize_as(shared, headers, Role::Push).is_none(),
    }
}
