//! The decision service behind `scale-units serve`: HTTP/1.1 on axum and tokio over a
//! [`PolicyRegistry`].
//!
//! | route | does |
//! |---|---|
//! | `POST /v1/evaluate` | one request (a JSON object) or a batch (a JSON array, evaluated on one snapshot of the policies) |
//! | `POST /v1/validate` | a contract's `contract_id` and `contract_digest` |
//! | `GET /v1/policies` | active, staged, shadow, pins, history, divergences |
//! | `POST /v1/policies` | stages a component (the body; `x-scale-units-signature: <hex>`, `x-scale-units-expected-digest`) |
//! | `POST /v1/policies/{digest}/activate` · `/shadow` · `/pin` | activate, shadow, pin (`{"unit_ref": …}`) |
//! | `POST /v1/policies/rollback` · `/unpin` · `DELETE /v1/policies/shadow` | roll back, unpin, stop shadowing |
//! | `DELETE /v1/policies/{digest}` | drops a staged policy that is not in use (at most 16 stay staged; the oldest unused one is evicted) |
//! | `GET /health` · `/ready` · `/metrics` | liveness (always 200), readiness (503 from shutdown on), Prometheus text |
//!
//! Every answer is JSON; every error is `{"error": {"code", "message", "path"?}}` with the SPEC's
//! codes for evaluation errors and the registry's codes for refused policies.
//!
//! Three roles, each with its own bearer token ([`Role`]): **admin** ([`ServiceConfig::token`]:
//! the policy-changing routes, disabled without it), **push** ([`ServiceConfig::push_token`]:
//! observations, and an admission review's token) and **read** ([`ServiceConfig::read_token`]:
//! evaluation, validation, `GET /v1/policies` and `/v1/units…`). A role without a token of its own
//! takes the admin token (one token does everything, as before roles); a role with one takes only
//! it, so no role's token opens another's routes. Public are `/health`, `/ready` and `/metrics`
//! only: with [`ServiceConfig::token_for_evaluation`] (a listener outside loopback) the read
//! routes need the read token.
//!
//! wasmtime calls are synchronous: they run on tokio's blocking pool, at most
//! [`ServiceConfig::workers`] at a time; the async workers only parse and route.

mod metrics;
mod units;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use scale_units_core::EvaluationError;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use metrics::Metrics;
use scale_units_host::CacheStatus;
use scale_units_host::registry::{
    Candidate, Divergence, HistoryEvent, OutcomeSummary, PolicyRegistry, RegistryError, Route, Served, decode_hex,
};

/// How the service runs. [`Default`] is a loopback-friendly configuration.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// The admin's bearer token (policy-changing routes; `None` disables them), and the push and
    /// read roles' when they have none of their own.
    pub token: Option<String>,
    /// The push role's token: observations and admission reviews (default: [`Self::token`]).
    pub push_token: Option<String>,
    /// The read role's token: evaluation, validation and the reads (default: [`Self::token`]).
    pub read_token: Option<String>,
    /// Requires the token on every route but `/health`, `/ready` and `/metrics` (for a
    /// non-loopback listener): evaluation, validation and the reads (`GET /v1/policies`,
    /// `/v1/units…`) too.
    pub token_for_evaluation: bool,
    /// Largest request body of the evaluation routes, in bytes.
    pub max_body_bytes: usize,
    /// Largest component a `POST /v1/policies` may upload, in bytes.
    pub max_component_bytes: usize,
    /// Most requests in one batch.
    pub max_batch: usize,
    /// Evaluations running at once on the blocking pool. With [`Self::units`], the units' limit
    /// ([`crate::units::UnitsBuilder::workers`]) is the service's instead: one limit for every
    /// evaluation, whichever route or listener asked for it.
    pub workers: usize,
    /// After the shutdown signal: serve on with `/ready` failing for this long.
    pub shutdown_delay: Duration,
    /// Then: stop accepting and wait at most this long for requests in flight.
    pub drain_timeout: Duration,
    /// A folder watched for new components (`*.wasm`, signatures in `*.wasm.sig`), staged as they
    /// appear.
    pub watch_dir: Option<PathBuf>,
    /// How often the folder is scanned.
    pub watch_interval: Duration,
    /// The unit registry: the routes `/v1/units…` and `/v1/admission` (see `service/units.rs`).
    pub units: Option<Arc<crate::units::Units>>,
    /// Serve HTTPS with these files (reloaded when they change) instead of plain HTTP.
    pub tls: Option<crate::listen::tls::TlsFiles>,
    /// The KEDA scaler's TLS files (served by its own listener): `/metrics` shows their
    /// certificate's expiry and refused reloads beside this listener's.
    pub keda_tls: Option<crate::listen::tls::TlsFiles>,
    /// The admission webhook answers `allowed`, with the would-be denial as a warning.
    pub admission_dry_run: bool,
    /// Members of these groups (`userInfo.groups` of a review) may override a denial of the
    /// admission webhook: allowed with a warning, counted and audited (`webhook/breakglass.rs`).
    pub override_groups: Vec<String>,
    /// The decision audit log: one JSON line per decision served (`audit.rs`); `None`: none.
    pub audit: Option<Arc<crate::audit::AuditLog>>,
    /// The listener's connection cap and deadlines (`listen.rs`).
    pub limits: crate::listen::Limits,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            token: None,
            push_token: None,
            read_token: None,
            token_for_evaluation: false,
            max_body_bytes: 1 << 20,
            max_component_bytes: 32 << 20,
            max_batch: 1000,
            workers: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            shutdown_delay: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(20),
            watch_dir: None,
            watch_interval: Duration::from_secs(2),
            units: None,
            tls: None,
            keda_tls: None,
            admission_dry_run: false,
            override_groups: Vec::new(),
            audit: None,
            limits: crate::listen::Limits::default(),
        }
    }
}

/// How the service stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Requests in flight when the listener closed.
    pub in_flight_at_drain: i64,
    /// Whether every one of them finished within the drain timeout.
    pub drained: bool,
}

struct Shared {
    registry: Arc<PolicyRegistry>,
    config: ServiceConfig,
    /// The sha256 of each role's token, by [`Role`] (the admin token standing in for a role
    /// without its own).
    token_digests: [Option<[u8; 32]>; 3],
    ready: AtomicBool,
    metrics: Metrics,
    workers: Arc<crate::workers::Workers>,
    /// The connections the listener closed on its own.
    closed: Arc<crate::listen::Closed>,
}

/// The decision service over one registry.
#[derive(Clone)]
pub struct Service {
    shared: Arc<Shared>,
}

impl Service {
    /// A service over `registry`; it is ready at once (activate a policy first).
    pub fn new(registry: Arc<PolicyRegistry>, config: ServiceConfig) -> Self {
        let digest = |token: Option<&String>| token.map(|token| <[u8; 32]>::from(Sha256::digest(token.as_bytes())));
        let admin = config.token.as_ref();
        let token_digests =
            [digest(admin), digest(config.push_token.as_ref().or(admin)), digest(config.read_token.as_ref().or(admin))];
        let workers = config
            .units
            .as_ref()
            .map_or_else(|| crate::workers::Workers::new(config.workers), |units| Arc::clone(units.workers()));
        Self {
            shared: Arc::new(Shared {
                registry,
                config,
                token_digests,
                ready: AtomicBool::new(true),
                metrics: Metrics::default(),
                workers,
                closed: Arc::default(),
            }),
        }
    }

    /// The registry the service evaluates with.
    pub fn registry(&self) -> &Arc<PolicyRegistry> {
        &self.shared.registry
    }

    /// The routes, with metrics around every request.
    pub fn router(&self) -> Router {
        let router = Router::new();
        let router = units::routes(router);
        router
            .route("/health", get(health))
            .route("/ready", get(ready))
            .route("/metrics", get(metrics_text))
            .route("/v1/evaluate", post(evaluate))
            .route("/v1/validate", post(validate))
            .route("/v1/policies", get(list_policies).post(stage))
            .route("/v1/policies/rollback", post(rollback))
            .route("/v1/policies/unpin", post(unpin))
            .route("/v1/policies/shadow", delete(stop_shadow))
            .route("/v1/policies/{digest}", delete(unstage))
            .route("/v1/policies/{digest}/activate", post(activate))
            .route("/v1/policies/{digest}/shadow", post(shadow))
            .route("/v1/policies/{digest}/pin", post(pin))
            .fallback(not_found)
            .layer(axum::middleware::from_fn_with_state(Arc::clone(&self.shared), measure))
            .with_state(Arc::clone(&self.shared))
    }

    /// Serves on `listener` until `shutdown` completes, then drains: `/ready` fails at once, the
    /// service goes on serving for [`ServiceConfig::shutdown_delay`], then stops accepting and
    /// waits at most [`ServiceConfig::drain_timeout`] for the requests in flight.
    ///
    /// # Errors
    /// An I/O error of the listener.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<DrainReport> {
        if let Some(dir) = self.shared.config.watch_dir.clone() {
            tokio::spawn(watch(Arc::clone(&self.shared), dir));
        }
        if let Some(units) = &self.shared.config.units {
            tokio::spawn(Arc::clone(units).watch());
        }
        let (close_tx, close_rx) = tokio::sync::oneshot::channel::<()>();
        let limits = self.shared.config.limits;
        let acceptor = crate::listen::Acceptor::start(
            listener,
            self.shared.config.tls.clone(),
            crate::listen::Protocol::Http1,
            limits,
            Arc::clone(&self.shared.closed),
        )?;
        let mut server = crate::listen::serve_http(acceptor, self.router(), limits, close_rx);
        tokio::select! {
            outcome = &mut server => {
                outcome.map_err(std::io::Error::other)??;
                return Ok(DrainReport { in_flight_at_drain: 0, drained: true });
            }
            () = shutdown => {}
        }
        self.shared.ready.store(false, Ordering::SeqCst);
        tracing::info!(
            "shutting down: /ready fails from now on; serving for {:?} more",
            self.shared.config.shutdown_delay
        );
        tokio::time::sleep(self.shared.config.shutdown_delay).await;
        // The metrics middleware counts this service's requests only (probes included).
        let in_flight_at_drain = self.shared.metrics.in_flight();
        tracing::info!(
            "closing the listener; draining {in_flight_at_drain} request(s) in flight for at most {:?}",
            self.shared.config.drain_timeout
        );
        let _ = close_tx.send(());
        let drained = match tokio::time::timeout(self.shared.config.drain_timeout, &mut server).await {
            Ok(outcome) => {
                outcome.map_err(std::io::Error::other)??;
                true
            }
            Err(_) => {
                server.abort();
                false
            }
        };
        if drained {
            tracing::info!("drained, stopped");
        } else {
            tracing::warn!("drain timeout reached, stopped with requests in flight");
        }
        Ok(DrainReport { in_flight_at_drain, drained })
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn termination_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

type Shared_ = State<Arc<Shared>>;

/// Counts the request in flight and its latency by route.
async fn measure(State(shared): Shared_, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let route = match path {
        "/v1/evaluate" => 0,
        "/v1/validate" => 1,
        _ if path.starts_with("/v1/policies") => 2,
        "/health" | "/ready" | "/metrics" => 3,
        _ if path.starts_with("/v1/units") => 4,
        "/v1/admission" => 5,
        _ => 6,
    };
    let started = Instant::now();
    shared.metrics.started();
    let response = next.run(request).await;
    shared.metrics.finished(route, response.status().as_u16(), started.elapsed());
    response
}

async fn health() -> Response {
    json_response(StatusCode::OK, json!({"status": "ok"}).to_string())
}

async fn ready(State(shared): Shared_) -> Response {
    let active = shared.registry.active().is_some();
    let ready = shared.ready.load(Ordering::SeqCst) && active;
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let reason = match (shared.ready.load(Ordering::SeqCst), active) {
        (false, _) => "shutting down",
        (true, false) => "no active policy",
        (true, true) => "ready",
    };
    json_response(status, json!({"ready": ready, "status": reason}).to_string())
}

async fn metrics_text(State(shared): Shared_) -> Response {
    let mut text =
        shared.metrics.render(&shared.registry, shared.ready.load(Ordering::SeqCst), shared.config.audit.as_deref());
    {
        use std::fmt::Write as _;
        let _ = write!(
            text,
            "# HELP scale_units_workers Component calls allowed at once (serve --workers), every route and listener.\n\
             # TYPE scale_units_workers gauge\nscale_units_workers {}\n\
             # HELP scale_units_workers_busy_max The most component calls seen running at once.\n\
             # TYPE scale_units_workers_busy_max gauge\nscale_units_workers_busy_max {}\n\
             # HELP scale_units_worker_calls_total Component calls run through the workers.\n\
             # TYPE scale_units_worker_calls_total counter\nscale_units_worker_calls_total {}\n",
            shared.workers.size(),
            shared.workers.busy_max(),
            shared.workers.calls()
        );
    }
    {
        use std::fmt::Write as _;
        use std::sync::atomic::Ordering::Relaxed;
        let closed = &shared.closed;
        let _ = write!(
            text,
            "# HELP scale_units_connections_closed_total Connections the listener closed on its own: over their address's cap, in the reserve without a trusted client certificate, no handshake or first byte in time.\n\
             # TYPE scale_units_connections_closed_total counter\n\
             scale_units_connections_closed_total{{reason=\"peer_cap\"}} {}\n\
             scale_units_connections_closed_total{{reason=\"no_certificate\"}} {}\n\
             scale_units_connections_closed_total{{reason=\"first_bytes\"}} {}\n",
            closed.peer_cap.load(Relaxed),
            closed.no_certificate.load(Relaxed),
            closed.first_bytes.load(Relaxed)
        );
    }
    render_tls(&mut text, &shared.config);
    if let Some(units) = &shared.config.units {
        use std::fmt::Write as _;
        let _ = write!(
            text,
            "# HELP scale_units_units_defined_twice Units defined by more than one contract file (neither taken).\n\
             # TYPE scale_units_units_defined_twice gauge\nscale_units_units_defined_twice {}\n",
            units.duplicated().len()
        );
        units.collect_stats().render(&mut text);
    }
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

async fn not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, "not_found", "no such route")
}

/// One evaluation's outcome, as the handlers send it.
type Outcome = Result<Result<Served<String>, EvaluationError>, RegistryError>;

/// The audit line of one evaluation: the contract's `unit_ref`, the decision or the error.
fn audit_record(request: &str, outcome: &Outcome, caller: &crate::audit::Caller) -> crate::audit::AuditRecord {
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
            record = record.decision(crate::audit::DecisionFacts::from_json(&served.evaluated.decision));
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

async fn evaluate(
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
        // The audit lines are built here, off the async workers.
        let records = caller.map(|caller| {
            requests.iter().zip(&outcomes).map(|(request, outcome)| audit_record(request, outcome, &caller)).collect()
        });
        (outcomes, records)
    })
    .await;
    let (outcomes, records): (Vec<Outcome>, Option<Vec<crate::audit::AuditRecord>>) = match outcomes {
        Ok(outcomes) => outcomes,
        Err(response) => return response,
    };
    for outcome in &outcomes {
        count(&shared.metrics, outcome);
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

/// Counts a decision by action and reasons, or an error by code.
fn count(metrics: &Metrics, outcome: &Outcome) {
    match outcome {
        Ok(Ok(served)) => {
            #[derive(serde::Deserialize)]
            struct Brief {
                action: String,
                reasons: Vec<String>,
            }
            if let Ok(brief) = serde_json::from_str::<Brief>(&served.evaluated.decision) {
                metrics.decision(&brief.action, &brief.reasons);
            }
        }
        Ok(Err(error)) => metrics.error(error.code().as_str()),
        Err(error) => metrics.error(error.code()),
    }
}

/// `{"decision": …, "policy": …}` (the decision's bytes exactly as the component wrote them), or
/// `{"error": …, "policy"?: …}`, and the status a single evaluation answers with.
fn outcome_json(outcome: &Outcome) -> (StatusCode, String) {
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

fn policy_json(served: &Served<String>) -> Value {
    let provenance = &served.evaluated.provenance;
    let (digest, version) = (&provenance.component_digest, &provenance.evaluator_version);
    match &served.route {
        Route::Active { activation } => {
            json!({"digest": digest, "evaluator_version": version, "activation": activation})
        }
        Route::Pinned { unit_ref } => json!({"digest": digest, "evaluator_version": version, "pinned_unit": unit_ref}),
    }
}

async fn validate(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
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

async fn list_policies(State(shared): Shared_, headers: HeaderMap) -> Response {
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

fn history_json(event: &HistoryEvent) -> Value {
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

fn divergence_json(divergence: &Divergence) -> Value {
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

async fn stage(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
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

async fn activate(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
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

async fn unstage(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.unstage(&digest) {
        Ok(()) => json_response(StatusCode::OK, json!({"unstaged": digest}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

async fn rollback(State(shared): Shared_, headers: HeaderMap) -> Response {
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

async fn shadow(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.shadow(Some(&digest)) {
        Ok(()) => json_response(StatusCode::OK, json!({"shadow": digest}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

async fn stop_shadow(State(shared): Shared_, headers: HeaderMap) -> Response {
    if let Some(response) = authorize(&shared, &headers) {
        return response;
    }
    match shared.registry.shadow(None) {
        Ok(()) => json_response(StatusCode::OK, json!({"shadow": null}).to_string()),
        Err(error) => respond_registry_error(&error),
    }
}

async fn pin(State(shared): Shared_, headers: HeaderMap, Path(digest): Path<String>, body: Body) -> Response {
    pin_or_unpin(&shared, &headers, Some(digest), body).await
}

async fn unpin(State(shared): Shared_, headers: HeaderMap, body: Body) -> Response {
    pin_or_unpin(&shared, &headers, None, body).await
}

async fn pin_or_unpin(shared: &Shared, headers: &HeaderMap, digest: Option<String>, body: Body) -> Response {
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

/// The served certificates' expiry and the refused reloads, by listener (`webhook`, `keda`).
fn render_tls(text: &mut String, config: &ServiceConfig) {
    use std::fmt::Write as _;
    let listeners: Vec<(&str, &crate::listen::tls::TlsFiles)> =
        [("webhook", config.tls.as_ref()), ("keda", config.keda_tls.as_ref())]
            .into_iter()
            .filter_map(|(name, files)| Some((name, files?)))
            .collect();
    if listeners.is_empty() {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX));
    let _ = write!(
        text,
        "# HELP scale_units_tls_certificate_expiry_seconds Seconds until the served certificate expires (negative: expired), by listener.\n\
         # TYPE scale_units_tls_certificate_expiry_seconds gauge\n"
    );
    for (name, files) in &listeners {
        if let Some(not_after) = files.status.not_after() {
            let _ = writeln!(
                text,
                "scale_units_tls_certificate_expiry_seconds{{listener=\"{name}\"}} {}",
                not_after.saturating_sub(now)
            );
        }
    }
    let _ = write!(
        text,
        "# HELP scale_units_tls_reload_failures_total Changed certificate pairs refused (the previous pair stays served), by listener.\n\
         # TYPE scale_units_tls_reload_failures_total counter\n"
    );
    for (name, files) in &listeners {
        let _ = writeln!(
            text,
            "scale_units_tls_reload_failures_total{{listener=\"{name}\"}} {}",
            files.status.reload_failures()
        );
    }
}

/// Runs `f` on the blocking pool once an evaluation permit is free.
async fn blocking<T: Send + 'static>(shared: &Shared, f: impl FnOnce() -> T + Send + 'static) -> Result<T, Response> {
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
    fn token_of(&self, role: Role) -> Option<&[u8; 32]> {
        self.token_digests.get(role as usize).and_then(Option::as_ref)
    }
}

/// `None` when the bearer token is the admin's, else the refusal.
fn authorize(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    authorize_as(shared, headers, Role::Admin)
}

/// `None` when the bearer token is `role`'s, else the refusal. Compared through its sha256 (no
/// early exit on the secret's bytes).
fn authorize_as(shared: &Shared, headers: &HeaderMap, role: Role) -> Option<Response> {
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

async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, Response> {
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
const LINGER_BYTES: u64 = 8 << 20;

/// Longest time an oversized body is read and dropped before its 413 is answered.
const LINGER_TIME: Duration = Duration::from_secs(5);

/// Reads the rest of an oversized body and drops it, frame by frame, never held, at most
/// [`LINGER_BYTES`] and [`LINGER_TIME`] (nginx's lingering close): a client still sending then
/// reads the 413 instead of a reset. Past either bound the connection is closed unread.
async fn linger(frames: &mut axum::body::BodyDataStream) {
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
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The body as UTF-8 text; invalid UTF-8 is `invalid_json` (SPEC §1).
async fn read_text(body: Body, headers: &HeaderMap, limit: usize) -> Result<String, Response> {
    let bytes = read_body(body, headers, limit).await?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| error_response(StatusCode::BAD_REQUEST, "invalid_json", "the body is not valid UTF-8"))
}

fn registry_error(error: &RegistryError) -> (StatusCode, String) {
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

fn is_call_failure(error: &scale_units_host::HostError) -> bool {
    matches!(
        error,
        scale_units_host::HostError::OutOfFuel { .. }
            | scale_units_host::HostError::MemoryLimit { .. }
            | scale_units_host::HostError::Trap { .. }
    )
}

fn respond_registry_error(error: &RegistryError) -> Response {
    let (status, body) = registry_error(error);
    json_response(status, body)
}

/// A request whose audit line could not be written (blocking-strict): 503, no decision.
pub(crate) fn audit_failed(error: &crate::audit::AuditError) -> Response {
    error_response(StatusCode::SERVICE_UNAVAILABLE, crate::audit::AuditError::CODE, &error.to_string())
}

fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(status, json!({"error": {"code": code, "message": message}}).to_string())
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Stages every new or changed `*.wasm` in `dir` (with `*.wasm.sig`), every
/// [`ServiceConfig::watch_interval`]. It never activates: an operator does.
async fn watch(shared: Arc<Shared>, dir: PathBuf) {
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
