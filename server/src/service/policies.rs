//! The policy registry's routes (`/v1/policies…`: list, stage, activate, unstage, roll back,
//! shadow, pin) and the watched folder of components.

#[allow(clippy::wildcard_imports, reason = "the service's own items, split by route")]
use super::*;

pub(super) async fn list_policies(State(shared): Shared_, headers: HeaderMap) -> Response {
    // Paths, history, pins and refusal reasons are internals: outside loopback, token holders only.
    if shared.config.token_for_evaluation
        && let Some(response) = authorize_as(&shared, &headers, Role::Read)
    {
        return response;
    }
    let registry = &shared.registry;
    let active = registry.active().map(|active| {
        json!({
            "digest": active.policy.digest(),
            "evaluator_version": active.policy.info().evaluator_version,
            "activation": active.activation,
        })
    });
    let staged: Vec<Value> = registry
        .staged()
        .into_iter()
        .map(|staged| {
            json!({
                "digest": staged.digest,
                "evaluator_version": staged.evaluator_version,
                "source": staged.source,
                "signed": staged.signed,
                "vectors_passed": staged.vectors_passed,
                "staged_at_ms": staged.staged_at_ms,
                "load_micros": staged.load_micros,
                "cache": staged.cache.as_str(),
                "gate_micros": staged.gate_micros,
            })
        })
        .collect();
    let pins: serde_json::Map<String, Value> =
        registry.pins().into_iter().map(|(unit, digest)| (unit, Value::String(digest))).collect();
    let history: Vec<Value> = registry
        .history()
        .into_iter()
        .map(|entry| {
            let mut event = history_json(&entry.event);
            if let Some(event) = event.as_object_mut() {
                event.insert("at_ms".to_owned(), json!(entry.at_ms));
            }
            event
        })
        .collect();
    let (divergences, total) = registry.divergences();
    let divergences: Vec<Value> = divergences.iter().map(divergence_json).collect();
    let suite = registry.conformance_suite();
    json_response(
        StatusCode::OK,
        json!({
            "active": active,
            "shadow": registry.shadowed(),
            "pins": pins,
            "staged": staged,
            "requires_signature": registry.requires_signature(),
            "conformance": {"vectors": suite.len(), "origin": suite.origin()},
            "history": history,
            "divergences": {"total": total, "recent": divergences},
        })
        .to_string(),
    )
}

pub(super) fn history_json(event: &HistoryEvent) -> Value {
    match event {
        HistoryEvent::Staged { digest, source, signed } => {
            json!({"event": "staged", "digest": digest, "source": source, "signed": signed})
        }
        HistoryEvent::Refused { digest, source, code, reason } => {
            json!({"event": "refused", "digest": digest, "source": source, "code": code, "reason": reason})
        }
        HistoryEvent::Activated { digest, activation } => {
            json!({"event": "activated", "digest": digest, "activation": activation})
        }
        HistoryEvent::RolledBack { from, to, activation } => {
            json!({"event": "rolled_back", "from": from, "digest": to, "activation": activation})
        }
        HistoryEvent::Shadow { digest } => json!({"event": "shadow", "digest": digest}),
        HistoryEvent::Pinned { unit_ref, digest } => json!({"event": "pinned", "unit_ref": unit_ref, "digest": digest}),
        HistoryEvent::Unstaged { digest, evicted } => {
            json!({"event": "unstaged", "digest": digest, "evicted": evicted})
        }
    }
}

pub(super) fn divergence_json(divergence: &Divergence) -> Value {
    let summary = |outcome: &OutcomeSummary| match outcome {
        OutcomeSummary::Decision { action, reasons } => json!({"action": action, "reasons": reasons}),
        OutcomeSummary::Error { code } => json!({"error": code}),
        OutcomeSummary::HostError { message } => json!({"host_error": message}),
    };
    json!({
        "request_digest": divergence.request_digest,
        "active": {"digest": divergence.active_digest, "outcome": summary(&divergence.active)},
        "candidate": {"digest": divergence.candidate_digest, "outcome": summary(&divergence.candidate)},
        "at_ms": divergence.at_ms,
    })
}

pub(super) async fn stage(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    let bytes = match read_body(body, &headers, shared.config.max_component_bytes).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let signature = match headers
        .get("x-scale-units-signature")
        .map(|value| value.to_str().ok().and_then(|v| decode_hex(v.trim())))
    {
        None => None,
        Some(Some(signature)) => Some(signature),
        Some(None) => {
            return error_response(StatusCode::BAD_REQUEST, "signature_invalid", "x-scale-units-signature is not hex");
        }
    };
    let expected =
        headers.get("x-scale-units-expected-digest").and_then(|value| value.to_str().ok()).map(str::to_owned);
    let registry = Arc::clone(&shared.registry);
    // Compiling is slow and rare: the blocking pool, outside the evaluation permits.
    let outcome = tokio::task::spawn_blocking(move || {
        let mut candidate = Candidate::new(&bytes).source("api");
        if let Some(signature) = signature {
            candidate = candidate.signature(signature);
        }
        if let Some(expected) = expected {
            candidate = candidate.expected_digest(expected);
        }
        registry.stage(candidate)
    })
    .await;
    match outcome {
        Ok(Ok(staged)) => {
            if let CacheStatus::NotStored { reason } = &staged.cache {
                tracing::warn!(digest = %staged.digest, "staged {} over HTTP, {reason}", staged.digest);
            }
            json_response(
                StatusCode::CREATED,
                json!({
                    "digest": staged.digest,
                    "evaluator_version": staged.evaluator_version,
                    "signed": staged.signed,
                    "vectors_passed": staged.vectors_passed,
                    "load_micros": staged.load_micros,
                    "cache": staged.cache.as_str(),
                    "gate_micros": staged.gate_micros,
                })
                .to_string(),
            )
        }
        Ok(Err(error)) => {
            let (status, body) = registry_error(&error);
            json_response(status, body)
        }
        Err(error) => error_response(StatusCode::INTERNAL_SERVER_ERROR, "host_error", &error.to_string()),
    }
}

pub(super) async fn activate(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    let started = Instant::now();
    match shared.registry.activate(&digest) {
        Ok(activation) => json_response(
            StatusCode::OK,
            json!({"digest": digest, "activation": activation, "swap_micros": started.elapsed().as_micros()})
                .to_string(),
        ),
        Err(error) => respond_registry_error(&error),
    }
}

pub(super) async fn unstage(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.unstage(&digest) {
        Ok(()) => json_response(StatusCode::OK, json!({"unstaged": digest}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

pub(super) async fn rollback(State(shared): Shared_, headers: HeaderMap) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.rollback() {
        Ok((digest, activation)) => {
            json_response(StatusCode::OK, json!({"digest": digest, "activation": activation}).to_string())
        }
        Err(error) => respond_registry_error(&error),
    }
}

pub(super) async fn shadow(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.shadow(Some(&digest)) {
        Ok(()) => json_response(StatusCode::OK, json!({"shadow": digest}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

pub(super) async fn stop_shadow(State(shared): Shared_, headers: HeaderMap) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.shadow(None) {
        Ok(()) => json_response(StatusCode::OK, json!({"shadow": null}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

pub(super) async fn pin(
    State(shared): Shared_,
    headers: HeaderMap,
    Path(digest): Path<String>,
    body: Body,
) -> Response {
    pin_or_unpin(&shared, &headers, Some(digest), body).await
}

pub(super) async fn unpin(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
    pin_or_unpin(&shared, &headers, None, body).await
}

pub(super) async fn pin_or_unpin(shared: &Shared, headers: &HeaderMap, digest: Option<String>, body: Body) -> Response {
    if let Some(response) = authorize(shared, headers) {
        return response;
    }
    let text = match read_text(body, headers, shared.config.max_body_bytes).await {
        Ok(text) => text,
        Err(response) => return response,
    };
    let Some(unit_ref) = crate::strict::check(text.as_bytes())
        .ok()
        .and_then(|()| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| value.get("unit_ref").and_then(Value::as_str).map(str::to_owned))
    else {
        return error_response(StatusCode::BAD_REQUEST, "invalid_field", "the body must be {\"unit_ref\": \"…\"}");
    };
    match shared.registry.pin(&unit_ref, digest.as_deref()) {
        Ok(()) => json_response(StatusCode::OK, json!({"unit_ref": unit_ref, "digest": digest}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

/// Stages every new or changed `*.wasm` in `dir` (with `*.wasm.sig`), every
/// [`ServiceConfig::watch_interval`]. It never activates: an operator does.
pub(super) async fn watch(shared: Arc<Shared>, dir: PathBuf) {
    // A file's stamp is its modification time and length, and its signature's: a file seen while
    // it was being written changes length when the write completes, even when its modification
    // time stays within one tick of the file system's clock.
    type Stamp = Option<(std::time::SystemTime, u64)>;
    let mut seen: std::collections::HashMap<PathBuf, [Stamp; 2]> = std::collections::HashMap::new();
    let mut interval = tokio::time::interval(shared.config.watch_interval);
    loop {
        interval.tick().await;
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|extension| extension != "wasm") {
                continue;
            }
            let stamp_of = |path: &std::path::Path| -> Stamp {
                let meta = std::fs::metadata(path).ok()?;
                Some((meta.modified().ok()?, meta.len()))
            };
            let mut signature = path.as_os_str().to_owned();
            signature.push(".sig");
            let stamp = [stamp_of(&path), stamp_of(std::path::Path::new(&signature))];
            if seen.get(&path) == Some(&stamp) {
                continue;
            }
            seen.insert(path.clone(), stamp);
            let registry = Arc::clone(&shared.registry);
            let file = path.clone();
            // Regular files only, read up to the upload limit: a FIFO or a link to a device named
            // *.wasm never stalls the watcher, a huge file is never read whole.
            let limit = u64::try_from(shared.config.max_component_bytes).unwrap_or(u64::MAX);
            match tokio::task::spawn_blocking(move || registry.stage_file_within(&file, limit)).await {
                Ok(Ok(staged)) => {
                    tracing::info!("staged {} from {} (cache: {})", staged.digest, path.display(), staged.cache);
                }
                Ok(Err(error)) => tracing::warn!("refused {}: {error}", path.display()),
                Err(error) => tracing::error!("staging {} failed: {error}", path.display()),
            }
        }
    }
}
