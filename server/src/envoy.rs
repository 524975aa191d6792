//! Envoy's external authorization (`envoy.service.auth.v3.Authorization/Check`, gRPC on tonic):
//! the same decision that gates the Kubernetes webhook gates scale calls to any actuator behind
//! Envoy (Docker Engine, Nomad, the Kubernetes API, one of your own). `scale-units serve
//! --envoy-listen ADDR` runs it beside the HTTP service.
//!
//! Envoy's `ext_authz` filter sends each request (with its body: `with_request_body`) to
//! [`EnvoyAuthorizer`]. The [routes](routes) say which requests are scale calls, which unit each
//! one scales, where its replica count is in the body and how the actuator decodes that body (the
//! [decoder](decoder): the gate judges the count the actuator would apply, or refuses):
//!
//! | request | answer |
//! |---|---|
//! | no route matches | allowed, untouched (not a scale call) |
//! | a route matches, the unit's decision permits the change (the core's gate, SPEC §12) | allowed, with `x-scale-units-decision`, `x-scale-units-reasons` and `x-scale-units-unit` headers upstream and back; the change recorded for the cooldowns like an authenticated admission, and audited |
//! | the decision denies it, no contract, no decision (stale evidence), a body that is not JSON, too large, without a count, with one that is not an integer 0 to 10 000, or one the actuator could read otherwise (`count_ambiguous`) | 403 with a JSON body: `reason` (the gate's reason or an error code), `message`, `decision_id`, `reasons`, the numbers |
//!
//! The count a change moves from is the unit's replica-count evidence (the collector's, or the
//! last admitted count), never the caller's word: a stale count has no decision, and denies.
//!
//! The listener keeps the limits of `crate::listen` (a connection cap, the HTTP/2 preface and the
//! TLS handshake within the head deadline, a deadline per call) and may serve TLS with client
//! certificates ([`EnvoyConfig::tls`]); evaluations share the service's worker limit through the
//! unit registry. Envoy must be configured `failure_mode_allow: false` (deploy/envoy/): a check
//! that does not answer in its timeout then refuses the request.

pub mod check;
pub mod decoder;
#[cfg(test)]
mod differential;
pub mod query;
pub mod routes;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use envoy_types::pb::envoy::config::core::v3::address::Address;
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::service::auth::v3::authorization_server::{Authorization, AuthorizationServer};
use envoy_types::pb::envoy::service::auth::v3::check_response::HttpResponse;
use envoy_types::pb::envoy::service::auth::v3::{CheckRequest, CheckResponse, DeniedHttpResponse, OkHttpResponse};
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::google::rpc;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

pub use check::{Answer, DECISION_HEADER, REASONS_HEADER, UNIT_HEADER};
pub use decoder::{BodyError, Decoder};
pub use routes::{Routes, RoutesError};

use crate::audit::AuditLog;
use crate::listen::tls::TlsFiles;
use crate::listen::{Acceptor, Drain, Limits, Peer, Protocol, serve_grpc};
use crate::units::Units;

/// How the authorizer runs. [`Default`]: the three presets, plaintext, the default [`Limits`], no
/// audit log, the routes file polled every 2 s, the service's drain (5 s delay, 20 s timeout).
#[derive(Clone, Debug)]
pub struct EnvoyConfig {
    /// Serve TLS with these files (reloaded when they change; ALPN `h2`); with a client CA, every
    /// client (Envoy) must present a certificate it signed.
    pub tls: Option<TlsFiles>,
    /// The listener's connection cap and deadlines.
    pub limits: Limits,
    /// The decision audit log (one line per scale call; in blocking-strict mode a line that
    /// cannot be written denies the call).
    pub audit: Option<Arc<AuditLog>>,
    /// The routes file (YAML, or JSON by its `.json` extension); `None`: [`Routes::presets`].
    pub routes_file: Option<PathBuf>,
    /// How often the routes file is checked for a change (its modification time and length).
    pub reload_interval: Duration,
    /// After the shutdown signal: serve on for this long.
    pub shutdown_delay: Duration,
    /// Then: stop accepting, and wait at most this long for calls in flight.
    pub drain_timeout: Duration,
}

impl Default for EnvoyConfig {
    fn default() -> Self {
        Self {
            tls: None,
            limits: Limits::default(),
            audit: None,
            routes_file: None,
            reload_interval: Duration::from_secs(2),
            shutdown_delay: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(20),
        }
    }
}

/// Reads and parses a routes file.
///
/// # Errors
/// [`RoutesError`]: the file cannot be read (path empty), or its document is refused.
pub fn load_routes(path: &Path) -> Result<Routes, RoutesError> {
    let text = std::fs::read_to_string(path).map_err(|error| RoutesError {
        path: String::new(),
        message: format!("cannot read {}: {error}", path.display()),
    })?;
    let yaml = path.extension().is_none_or(|extension| extension != "json");
    Routes::parse(&text, yaml)
        .map_err(|error| RoutesError { path: error.path, message: format!("{}: {}", path.display(), error.message) })
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The gRPC service over the unit registry.
pub struct EnvoyAuthorizer {
    units: Arc<Units>,
    routes: Arc<ArcSwap<Routes>>,
    config: EnvoyConfig,
}

impl EnvoyAuthorizer {
    /// An authorizer answering from `units`, with the routes of [`EnvoyConfig::routes_file`].
    ///
    /// # Errors
    /// [`RoutesError`] when the routes file cannot be read or is refused.
    pub fn new(units: Arc<Units>, config: EnvoyConfig) -> Result<Self, RoutesError> {
        let routes = match &config.routes_file {
            Some(path) => load_routes(path)?,
            None => Routes::presets(),
        };
        Ok(Self { units, routes: Arc::new(ArcSwap::from_pointee(routes)), config })
    }

    /// Serves on `listener` until `shutdown` completes, then drains as the KEDA listener does.
    /// The routes file is re-read when it changes; a file that no longer parses keeps the routes
    /// in force (said on stderr). Returns whether every call finished in time.
    ///
    /// # Errors
    /// A transport error of the server.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<bool, tonic::transport::Error> {
        let drain = Drain { shutdown_delay: self.config.shutdown_delay, drain_timeout: self.config.drain_timeout };
        let limits = self.config.limits;
        let acceptor = match Acceptor::start(listener, self.config.tls.clone(), Protocol::Grpc, limits, Arc::default())
        {
            Ok(acceptor) => acceptor,
            Err(error) => {
                tracing::error!("the Envoy authorizer cannot start: {error}");
                return Ok(false);
            }
        };
        let reload = self.config.routes_file.clone().map(|path| {
            let routes = Arc::clone(&self.routes);
            let interval = self.config.reload_interval.max(Duration::from_millis(10));
            tokio::spawn(async move {
                let mut seen = stamp(&path);
                loop {
                    tokio::time::sleep(interval).await;
                    let now = stamp(&path);
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    match load_routes(&path) {
                        Ok(loaded) => {
                            tracing::info!("{} Envoy route(s) from {}", loaded.len(), path.display());
                            routes.store(Arc::new(loaded));
                        }
                        Err(error) => {
                            tracing::warn!("the Envoy routes stay as they were: {error}");
                        }
                    }
                }
            })
        });
        let routes = tonic::service::Routes::new(AuthorizationServer::new(self));
        let outcome = serve_grpc(routes, acceptor, limits, drain, shutdown, || {}).await;
        if let Some(task) = reload {
            task.abort();
        }
        outcome
    }
}

fn header(key: &str, value: String) -> HeaderValueOption {
    HeaderValueOption {
        header: Some(HeaderValue { key: key.to_owned(), value, raw_value: Vec::new() }),
        ..HeaderValueOption::default()
    }
}

/// The `CheckResponse` for an answer.
pub fn response(answer: Answer) -> CheckResponse {
    match answer {
        Answer::Pass => CheckResponse {
            status: Some(rpc::Status { code: 0, message: String::new(), details: Vec::new() }),
            http_response: Some(HttpResponse::OkResponse(OkHttpResponse::default())),
            ..CheckResponse::default()
        },
        Answer::Allow(headers) => {
            let headers: Vec<HeaderValueOption> = headers.into_iter().map(|(key, value)| header(key, value)).collect();
            CheckResponse {
                status: Some(rpc::Status { code: 0, message: String::new(), details: Vec::new() }),
                http_response: Some(HttpResponse::OkResponse(OkHttpResponse {
                    headers: headers.clone(),
                    response_headers_to_add: headers,
                    ..OkHttpResponse::default()
                })),
                ..CheckResponse::default()
            }
        }
        Answer::Deny(body) => {
            let message = body.get("message").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
            CheckResponse {
                // google.rpc.Code PERMISSION_DENIED.
                status: Some(rpc::Status { code: 7, message, details: Vec::new() }),
                http_response: Some(HttpResponse::DeniedResponse(DeniedHttpResponse {
                    status: Some(HttpStatus { code: 403 }),
                    headers: vec![header("content-type", "application/json".to_owned())],
                    body: body.to_string(),
                })),
                ..CheckResponse::default()
            }
        }
    }
}

#[tonic::async_trait]
impl Authorization for EnvoyAuthorizer {
    async fn check(&self, request: Request<CheckRequest>) -> Result<Response<CheckResponse>, Status> {
        let peer = request.extensions().get::<Peer>().cloned();
        let request = request.into_inner();
        let attributes = request.attributes.unwrap_or_default();
        let client = attributes.source.and_then(|source| source.address).and_then(|address| address.address).and_then(
            |address| match address {
                Address::SocketAddress(socket) => Some(socket.address),
                _ => None,
            },
        );
        let Some(http) = attributes.request.and_then(|request| request.http) else {
            return Err(Status::invalid_argument("the check request carries no HTTP request"));
        };
        let routes = self.routes.load_full();
        let checked = check::check(&self.units, &routes, &http, client, peer.as_ref()).await;
        let answer = check::audited(checked, self.config.audit.as_deref()).await;
        Ok(Response::new(response(answer)))
    }
}
