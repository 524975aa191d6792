//! The evaluation routes: `POST /v1/evaluate` (one request or a batch, through the active policy,
//! a pin or a shadow) and `POST /v1/validate`, with their audit lines and counters.

#[allow(clippy::wildcard_imports, reason = "the service's own items, split by route")]
use super::*;

/// What the service reads of one evaluation's decision (its counters, its audit line), parsed once
/// from the component's JSON; the JSON itself goes on the wire untouched. `None` for an error, or
/// a decision that cannot be read (counted as nothing, audited without facts).
pub(super) fn facts(outcome: &Outcome) -> Option<crate::audit::DecisionFacts> {
    match outcome {
        Ok(Ok(served)) => crate::audit::DecisionFacts::from_json(&served.evaluated.decision),
        _ => None,
    }
}

/// The audit line of one evaluation: the contract's `unit_ref`, the decision or the error.
pub(super) fn audit_record(
    request: &str,
    outcome: &Outcome,
    facts: Option<&crate::audit::DecisionFacts>,
    caller: &crate::audit::Caller,
) -> crate::audit::AuditRecord {
    #[derive(serde::Deserialize)]
    struct Request {
        contract: Contract,
    }
    #[derive(serde::Deserialize)]
    struct Contract {
        unit_ref: String,
    }
    let mut record = crate::audit::AuditRecord::new("evaluate");
    record.unit = serde_json::from_str::<Request>(request).ok().map(|request| request.contract.unit_ref);
    record.caller = caller.clone();
    match outcome {
        Ok(Ok(served)) => {
            record = record.decision(facts.cloned());
            record.component_digest = Some(served.evaluated.provenance.component_digest.clone());
        }
        Ok(Err(error)) => {
            record.error = Some(crate::audit::ErrorFacts {
                code: error.code().as_str().to_owned(),
                message: error.message().to_owned(),
            });
        }
        Err(error) => {
            record.error = Some(crate::audit::ErrorFacts { code: error.code().to_owned(), message: error.to_string() });
        }
    }
    record
}

pub(super) async fn evaluate(
    State(shared): Shared_,
    peer: Option<axum::Extension<crate::listen::Peer>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if shared.config.token_for_evaluation
        && let Some(response) = authorize_as(&shared, &headers, Role::Read)
    {
        return response;
    }
    let text = match read_text(body, &headers, shared.config.max_body_bytes).await {
        Ok(text) => text,
        Err(response) => return response,
    };
    let batch = text.trim_start().starts_with('[');
    let requests: Vec<String> = if batch {
        match serde_json::from_str::<Vec<&RawValue>>(&text) {
            Ok(items) if items.len() > shared.config.max_batch => {
                return error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "batch_too_large",
                    &format!("a batch holds at most {} requests", shared.config.max_batch),
                );
            }
            Ok(items) => items.into_iter().map(|item| item.get().to_owned()).collect(),
            Err(error) => {
                return error_response(StatusCode::BAD_REQUEST, "invalid_json", &format!("not a JSON array: {error}"));
            }
        }
    } else {
        vec![text]
    };
    let worker = Arc::clone(&shared);
    let caller = shared.config.audit.is_some().then(|| crate::audit::Caller::peer(peer.as_ref().map(|peer| &peer.0)));
    let outcomes = blocking(&shared, move || {
        let snapshot = worker.registry.snapshot();
        let outcomes = requests.iter().map(|request| snapshot.evaluate_json(request)).collect::<Vec<Outcome>>();
        // Each decision read once, off the async workers, for the counters and the audit lines.
        let facts = outcomes.iter().map(facts).collect::<Vec<_>>();
        let records = caller.map(|caller| {
            requests
                .iter()
                .zip(&outcomes)
                .zip(&facts)
                .map(|((request, outcome), facts)| audit_record(request, outcome, facts.as_ref(), &caller))
                .collect::<Vec<_>>()
        });
        (outcomes, facts, records)
    })
    .await;
    let (outcomes, facts, records) = match outcomes {
        Ok(outcomes) => outcomes,
        Err(response) => return response,
    };
    for (outcome, facts) in outcomes.iter().zip(&facts) {
        count(&shared.metrics, outcome, facts.as_ref());
    }
    if let (Some(audit), Some(records)) = (&shared.config.audit, records)
        && let Err(error) = audit.record_all(&records).await
    {
        return audit_failed(&error);
    }
    if batch {
        let mut body = String::from("{\"results\":[");
        for (index, outcome) in outcomes.iter().enumerate() {
            if index > 0 {
                body.push(',');
            }
            body.push_str(&outcome_json(outcome).1);
        }
        body.push_str("]}");
        json_response(StatusCode::OK, body)
    } else {
        match outcomes.first() {
            Some(outcome) => {
                let (status, body) = outcome_json(outcome);
                json_response(status, body)
            }
            None => error_response(StatusCode::INTERNAL_SERVER_ERROR, "host_error", "no outcome"),
        }
    }
}

/// Counts a decision by action and reasons (its [`facts`]), or an error by code.
pub(super) fn count(metrics: &Metrics, outcome: &Outcome, facts: Option<&crate::audit::DecisionFacts>) {
    match outcome {
        Ok(Ok(_)) => {
            if let Some(facts) = facts {
                metrics.decision(&facts.action, &facts.reasons);
            }
        }
        Ok(Err(error)) => metrics.error(error.code().as_str()),
        Err(error) => metrics.error(error.code()),
    }
}

/// `{"decision": …, "policy": …}` (the decision's bytes exactly as the component wrote them), or
/// `{"error": …, "policy"?: …}`, and the status a single evaluation answers with.
pub(super) fn outcome_json(outcome: &Outcome) -> (StatusCode, String) {
    match outcome {
        Ok(Ok(served)) => (
            StatusCode::OK,
            format!("{{\"decision\":{},\"policy\":{}}}", served.evaluated.decision, policy_json(served)),
        ),
        Ok(Err(error)) => {
            let status = if error.code() == scale_units_core::ErrorCode::InvalidJson {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            (status, json!({"error": error.to_json()}).to_string())
        }
        Err(error) => registry_error(error),
    }
}

pub(super) fn policy_json(served: &Served<String>) -> Value {
    let provenance = &served.evaluated.provenance;
    let (digest, version) = (&provenance.component_digest, &provenance.evaluator_version);
    match &served.route {
        Route::Active { activation } => {
            json!({"digest": digest, "evaluator_version": version, "activation": activation})
        }
        Route::Pinned { unit_ref } => json!({"digest": digest, "evaluator_version": version, "pinned_unit": unit_ref}),
    }
}

pub(super) async fn validate(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
    if shared.config.token_for_evaluation
        && let Some(response) = authorize_as(&shared, &headers, Role::Read)
    {
        return response;
    }
    let text = match read_text(body, &headers, shared.config.max_body_bytes).await {
        Ok(text) => text,
        Err(response) => return response,
    };
    let worker = Arc::clone(&shared);
    let outcome = blocking(&shared, move || {
        let active = worker.registry.active().ok_or(RegistryError::NoActivePolicy)?;
        let outcome = active.policy.validate_contract_json(&text)?;
        Ok::<_, RegistryError>((outcome, active))
    })
    .await;
    match outcome {
        Err(response) => response,
        Ok(Err(error)) => {
            let (status, body) = registry_error(&error);
            json_response(status, body)
        }
        Ok(Ok((Ok(identity), active))) => json_response(
            StatusCode::OK,
            json!({
                "contract_id": identity.contract_id,
                "contract_digest": identity.contract_digest,
                "policy": {
                    "digest": active.policy.digest(),
                    "evaluator_version": active.policy.info().evaluator_version,
                    "activation": active.activation,
                },
            })
            .to_string(),
        ),
        Ok(Ok((Err(error), _))) => {
            let status = if error.code() == scale_units_core::ErrorCode::InvalidJson {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            json_response(status, json!({"error": error.to_json()}).to_string())
        }
    }
}
