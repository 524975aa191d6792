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

mod evaluate;
mod metrics;
mod policies;
mod respond;
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

#[allow(clippy::wildcard_imports, reason = "the routes, split by what they serve")]
use evaluate::*;
use metrics::Metrics;
#[allow(clippy::wildcard_imports, reason = "the routes, split by what they serve")]
use policies::*;
#[allow(clippy::wildcard_imports, reason = "the routes, split by what they serve")]
use respond::*;
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
    /// The Kubernetes watch (issue 37): `/ready` fails until it is in step with the API server,
    /// and the webhook tells it what it allowed and refused.
    pub kubernetes: Option<Arc<crate::kubernetes::Cluster>>,
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
            kubernetes: None,
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
    // Kubernetes mode: no answer stands on a watch that has not listed the cluster yet.
    let watching = shared.config.kubernetes.as_ref().is_none_or(|cluster| cluster.synced());
    let ready = shared.ready.load(Ordering::SeqCst) && active && watching;
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let reason = match (shared.ready.load(Ordering::SeqCst), active, watching) {
        (false, _, _) => "shutting down",
        (true, false, _) => "no active policy",
        (true, true, false) => "the Kubernetes watch is not in step with the API server yet",
        (true, true, true) => "ready",
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
    if let Some(cluster) = &shared.config.kubernetes {
        text.push_str(&cluster.render_metrics());
    }
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
