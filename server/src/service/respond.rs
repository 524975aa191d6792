//! What every route shares: the blocking pool, the roles' tokens, bodies read within their limit,
//! and the error answers.

#[allow(clippy::wildcard_imports, reason = "the service's own items, split by route")]
use super::*;

/// Runs `f` on the blocking pool once an evaluation permit is free.
pub(super) async fn blocking<T: Send + 'static>(
    shared: &Shared,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    shared
        .workers
        .run(f)
        .await
        .map_err(|error| error_response(StatusCode::INTERNAL_SERVER_ERROR, "host_error", &error.to_string()))
}

/// Who a bearer token speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Stages, activates, shadows, pins, rolls back and drops policies.
    Admin = 0,
    /// Pushes observations; authenticates admission reviews.
    Push = 1,
    /// Evaluates, validates and reads policies and units.
    Read = 2,
}

impl Shared {
    /// The digest of `role`'s token, if it has one.
    pub(super) fn token_of(&self, role: Role) -> Option<&[u8; 32]> {
        self.token_digests.get(role as usize).and_then(Option::as_ref)
    }
}

/// `None` when the bearer token is the admin's, else the refusal.
pub(super) fn authorize(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    authorize_as(shared, headers, Role::Admin)
}

/// `None` when the bearer token is `role`'s, else the refusal. Compared through its sha256 (no
/// early exit on the secret's bytes).
pub(super) fn authorize_as(shared: &Shared, headers: &HeaderMap, role: Role) -> Option<Response> {
    let Some(expected) = shared.token_of(role) else {
        return Some(match role {
            Role::Admin => error_response(
                StatusCode::FORBIDDEN,
                "policy_changes_disabled",
                "no token is configured: this service does not change policy",
            ),
            Role::Push | Role::Read => {
                error_response(StatusCode::UNAUTHORIZED, "unauthorized", "a valid bearer token is required")
            }
        });
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| <[u8; 32]>::from(Sha256::digest(token.trim().as_bytes())));
    if given.as_ref() == Some(expected) {
        None
    } else {
        Some(error_response(StatusCode::UNAUTHORIZED, "unauthorized", "a valid bearer token is required"))
    }
}

pub(super) async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, Response> {
    use tokio_stream::StreamExt as _;
    let too_large = || {
        closing(error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            &format!("the body is larger than {limit} bytes"),
        ))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let mut frames = body.into_data_stream();
    if declared.is_some_and(|length| length > u64::try_from(limit).unwrap_or(u64::MAX)) {
        linger(&mut frames).await;
        return Err(too_large());
    }
    let mut kept = Vec::new();
    while let Some(frame) = frames.next().await {
        let Ok(frame) = frame else { return Err(too_large()) };
        if kept.len().saturating_add(frame.len()) > limit {
            linger(&mut frames).await;
            return Err(too_large());
        }
        kept.extend_from_slice(&frame);
    }
    Ok(Bytes::from(kept))
}

/// Most bytes of an oversized body read and dropped before its 413 is answered.
pub(super) const LINGER_BYTES: u64 = 8 << 20;

/// Longest time an oversized body is read and dropped before its 413 is answered.
pub(super) const LINGER_TIME: Duration = Duration::from_secs(5);

/// Reads the rest of an oversized body and drops it, frame by frame, never held, at most
/// [`LINGER_BYTES`] and [`LINGER_TIME`] (nginx's lingering close): a client still sending then
/// reads the 413 instead of a reset. Past either bound the connection is closed unread.
pub(super) async fn linger(frames: &mut axum::body::BodyDataStream) {
    use tokio_stream::StreamExt as _;
    let discard = async {
        let mut read = 0_u64;
        while read < LINGER_BYTES
            && let Some(Ok(frame)) = frames.next().await
        {
            read = read.saturating_add(u64::try_from(frame.len()).unwrap_or(u64::MAX));
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, discard).await;
}

/// `response` with `Connection: close`: hyper then reads no more of the request.
pub(super) fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The body as UTF-8 text; invalid UTF-8 is `invalid_json` (SPEC §1).
pub(super) async fn read_text(body: Body, headers: &HeaderMap, limit: usize) -> Result<String, Response> {
    let bytes = read_body(body, headers, limit).await?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| error_response(StatusCode::BAD_REQUEST, "invalid_json", "the body is not valid UTF-8"))
}

pub(super) fn registry_error(error: &RegistryError) -> (StatusCode, String) {
    let status = match error {
        RegistryError::UnknownPolicy { .. } => StatusCode::NOT_FOUND,
        RegistryError::NoActivePolicy => StatusCode::SERVICE_UNAVAILABLE,
        RegistryError::NothingToRollBack
        | RegistryError::StagedFull { .. }
        | RegistryError::PinsFull { .. }
        | RegistryError::PolicyInUse { .. } => StatusCode::CONFLICT,
        RegistryError::InvalidUnitRef { .. } => StatusCode::BAD_REQUEST,
        RegistryError::Host(error) if is_call_failure(error) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    (status, json!({"error": {"code": error.code(), "message": error.to_string()}}).to_string())
}

pub(super) fn is_call_failure(error: &scale_units_host::HostError) -> bool {
    matches!(
        error,
        scale_units_host::HostError::OutOfFuel { .. }
            | scale_units_host::HostError::MemoryLimit { .. }
            | scale_units_host::HostError::Trap { .. }
    )
}

pub(super) fn respond_registry_error(error: &RegistryError) -> Response {
    let (status, body) = registry_error(error);
    json_response(status, body)
}

/// A request whose audit line could not be written (blocking-strict): 503, no decision.
pub(crate) fn audit_failed(error: &crate::audit::AuditError) -> Response {
    error_response(StatusCode::SERVICE_UNAVAILABLE, crate::audit::AuditError::CODE, &error.to_string())
}

pub(super) fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(status, json!({"error": {"code": code, "message": message}}).to_string())
}

pub(super) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
