//! The KEDA external scaler: KEDA's `externalscaler.proto` over gRPC (tonic), answering from the
//! decisions of the contracts of a unit registry. `scale-units serve --keda-listen ADDR` runs it
//! beside the HTTP service.
//!
//! | call | answer |
//! |---|---|
//! | `GetMetricSpec` | one metric, [`METRIC_NAME`], target size 1 (never fails) |
//! | `GetMetrics` | the replicas the decision asks for: `desired_replicas` for `scale_up` and `scale_down`, `current_replicas` for `hold` and `blocked`; an error when there is no decision |
//! | `IsActive` | `false` when the decision is `scale_down` or `hold` to zero replicas (the contract allows zero), or `blocked` at zero; `true` otherwise, errors included |
//! | `StreamIsActive` | the `IsActive` value at once, then each change, polled every [`KedaConfig::stream_interval`]; at most [`KedaConfig::max_streams`] open at once, past it `ResourceExhausted` |
//! | `StreamMetricSpec` | `Unimplemented` (optional in KEDA, which then uses `GetMetricSpec`) |
//!
//! The unit is the ScaledObject's namespace and the trigger's `unit` metadata
//! ([`UNIT_METADATA_KEY`]), or the ScaledObject's name when there is none. A trigger cannot
//! name another namespace.
//!
//! Why these values (docs/DECISIONS.md, "KEDA external scaler"): KEDA's external metrics are
//! `AverageValue` targets, for which the HPA asks `ceil(metric / target)` replicas; with a target
//! of 1 the HPA settles on the metric. A `hold` or `blocked` decision reports the current count,
//! so stale evidence holds the unit where it is; and when there is no decision at all
//! `GetMetrics` fails, which KEDA and the HPA answer by keeping the current count (the
//! ScaledObject must not configure `fallback`, which would apply a fixed count instead).
//!
//! The listener keeps the limits of `crate::listen` (a connection cap, the HTTP/2 preface and the
//! TLS handshake within the head deadline, a deadline per call) and may serve TLS
//! ([`KedaConfig::tls`]), with client certificates required when a client CA is given (KEDA's
//! external trigger sends `tlsClientCert`/`tlsClientKey` and checks the server with `caCert`).
//! Every answer that reads a decision is written to the audit log ([`KedaConfig::audit`]), a
//! repeated answer summarized.

pub mod proto;
mod units;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use proto::external_scaler_server::{ExternalScaler, ExternalScalerServer};
use proto::{
    GetMetricSpecResponse, GetMetricsRequest, GetMetricsResponse, IsActiveResponse, MetricSpec, MetricValue,
    ScaledObjectRef,
};
use scale_units_host::ActionKind;

use crate::audit::{AuditLog, AuditRecord, Caller, DecisionFacts, ErrorFacts};
use crate::listen::tls::TlsFiles;
use crate::listen::{Acceptor, Drain, Limits, Peer, Protocol, serve_grpc};

/// The one metric the scaler reports: the replica count the unit's decision settles on.
pub const METRIC_NAME: &str = "scale-units-replicas";

/// The trigger metadata key naming the unit (within the ScaledObject's namespace).
pub const UNIT_METADATA_KEY: &str = "unit";

/// What a [`DecisionSource`] knows about one unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitReading {
    /// No contract is registered under that namespace and name.
    NoContract,
    /// The decision of the unit's contract over its latest observations.
    Decided {
        /// What the decision does.
        action: ActionKind,
        /// Replicas it asks for.
        desired_replicas: u64,
        /// Replicas running when it was made.
        current_replicas: u64,
    },
}

/// Why a [`DecisionSource`] could not decide (no replica count known, the store unavailable, an
/// invalid contract or observation). The scaler answers `GetMetrics` with an error for it and
/// keeps `IsActive` true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    /// A stable code, such as `unknown_replicas` or `store_unavailable`.
    pub code: String,
    /// What went wrong, for the gRPC status message.
    pub message: String,
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for SourceError {}

/// Where the scaler gets decisions: the unit registry in the service, a double in tests.
pub trait DecisionSource: Send + Sync + 'static {
    /// The decision for unit `namespace`/`name`, at the replica count last reported for it.
    ///
    /// # Errors
    /// [`SourceError`] when no decision can be made.
    fn reading(&self, namespace: &str, name: &str) -> impl Future<Output = Result<UnitReading, SourceError>> + Send;

    /// [`Self::reading`], with what the audit log keeps of the decision: its facts and the digest
    /// of the component that made it. Default: the reading alone.
    fn audited_reading(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = (Result<UnitReading, SourceError>, Option<(DecisionFacts, String)>)> + Send {
        async move { (self.reading(namespace, name).await, None) }
    }
}

/// `StreamIsActive` streams open at once by default: KEDA opens one per ScaledObject with an
/// external-push trigger.
pub const DEFAULT_MAX_STREAMS: usize = 256;

/// How the scaler runs. [`Default`]: a 5 s `StreamIsActive` poll, at most
/// [`DEFAULT_MAX_STREAMS`] streams, the service's drain (5 s
/// delay, 20 s timeout), plaintext, the default [`Limits`], no audit log.
#[derive(Clone, Debug)]
pub struct KedaConfig {
    /// Serve TLS with these files (reloaded when they change; ALPN `h2`); with a client CA, every
    /// client must present a certificate it signed.
    pub tls: Option<TlsFiles>,
    /// The listener's connection cap and deadlines.
    pub limits: Limits,
    /// The decision audit log.
    pub audit: Option<Arc<AuditLog>>,
    /// How often an open `StreamIsActive` re-reads its unit.
    pub stream_interval: Duration,
    /// `StreamIsActive` streams open at once, over every connection; past it a new one is
    /// refused `ResourceExhausted` (each polls its unit every `stream_interval`: issue 19).
    pub max_streams: usize,
    /// After the shutdown signal: serve on for this long (the HTTP service's `shutdown_delay`).
    pub shutdown_delay: Duration,
    /// Then: stop accepting, end the streams, and wait at most this long for calls in flight.
    pub drain_timeout: Duration,
}

impl Default for KedaConfig {
    fn default() -> Self {
        Self {
            tls: None,
            limits: Limits::default(),
            audit: None,
            stream_interval: Duration::from_secs(5),
            max_streams: DEFAULT_MAX_STREAMS,
            shutdown_delay: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(20),
        }
    }
}

/// The replicas a reading makes the HPA settle on: the core's reading of the decision (SPEC
/// §12.2, `scale_units_core::gate::settle`): `desired_replicas` for a scale, the current count for
/// `hold` and `blocked`.
///
/// # Errors
/// `NotFound` for [`UnitReading::NoContract`].
pub fn metric_value(reading: &UnitReading) -> Result<u64, Status> {
    match *reading {
        UnitReading::NoContract => Err(Status::not_found("no contract is registered for this unit")),
        UnitReading::Decided { action, desired_replicas, current_replicas } => {
            Ok(scale_units_core::gate::settle(action, desired_replicas, current_replicas).0)
        }
    }
}

/// Whether KEDA should keep the unit active: the core's reading of the decision (SPEC §12.2) —
/// inactive only when the decision rests at or goes to zero — and `true` for everything else, no
/// contract and errors included, so that KEDA never scales a unit to zero on missing knowledge.
pub fn is_active(reading: &Result<UnitReading, SourceError>) -> bool {
    match *reading {
        Ok(UnitReading::Decided { action, desired_replicas, current_replicas }) => {
            scale_units_core::gate::settle(action, desired_replicas, current_replicas).1
        }
        Ok(UnitReading::NoContract) | Err(_) => true,
    }
}

/// The unit a ScaledObject names: its namespace and the `unit` metadata, or its own name.
///
/// # Errors
/// `InvalidArgument` when the namespace or the name is empty.
pub fn unit_of(reference: &ScaledObjectRef) -> Result<(String, String), Status> {
    let name = reference.scaler_metadata.get(UNIT_METADATA_KEY).map_or(reference.name.as_str(), String::as_str);
    if reference.namespace.is_empty() || name.is_empty() {
        return Err(Status::invalid_argument("the ScaledObject reference needs a namespace and a name"));
    }
    Ok((reference.namespace.clone(), name.to_owned()))
}

/// The gRPC service over a [`DecisionSource`].
pub struct KedaScaler<S> {
    source: Arc<S>,
    config: KedaConfig,
    stop: watch::Receiver<bool>,
    stop_sender: Arc<watch::Sender<bool>>,
    streams: Arc<tokio::sync::Semaphore>,
}

impl<S: DecisionSource> KedaScaler<S> {
    /// A scaler answering from `source`.
    pub fn new(source: Arc<S>, config: KedaConfig) -> Self {
        let (stop_sender, stop) = watch::channel(false);
        let streams = Arc::new(tokio::sync::Semaphore::new(config.max_streams.max(1)));
        Self { source, config, stop, stop_sender: Arc::new(stop_sender), streams }
    }

    /// Serves on `listener` until `shutdown` completes, then drains as the HTTP service does:
    /// serves on for [`KedaConfig::shutdown_delay`], then stops accepting, ends every open
    /// `StreamIsActive` and waits at most [`KedaConfig::drain_timeout`] for calls in flight.
    /// Returns whether every call finished in time.
    ///
    /// # Errors
    /// A transport error of the server.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<bool, tonic::transport::Error> {
        let stop_sender = Arc::clone(&self.stop_sender);
        let drain = Drain { shutdown_delay: self.config.shutdown_delay, drain_timeout: self.config.drain_timeout };
        let limits = self.config.limits;
        // The acceptor sets TCP_NODELAY (small replies must not wait for Nagle's algorithm), keeps
        // the connection cap and the preface deadline, and completes TLS handshakes.
        let acceptor = match Acceptor::start(listener, self.config.tls.clone(), Protocol::Grpc, limits, Arc::default())
        {
            Ok(acceptor) => acceptor,
            Err(error) => {
                tracing::error!("the KEDA external scaler cannot start: {error}");
                return Ok(false);
            }
        };
        let routes = tonic::service::Routes::new(ExternalScalerServer::new(self));
        // Open `StreamIsActive` streams end when the delay is over.
        serve_grpc(routes, acceptor, limits, drain, shutdown, move || {
            let _ = stop_sender.send(true);
        })
        .await
    }
}

/// The reading of the unit `reference` names (an unusable reference is a [`SourceError`] too),
/// with its audit facts.
async fn read_unit<S: DecisionSource>(
    source: &S,
    reference: &ScaledObjectRef,
) -> (Result<UnitReading, SourceError>, Option<(DecisionFacts, String)>) {
    match unit_of(reference) {
        Ok((namespace, name)) => source.audited_reading(&namespace, &name).await,
        Err(status) => (Err(SourceError { code: "invalid_argument".into(), message: status.message().into() }), None),
    }
}

/// Writes the audit line of a KEDA answer (summarized when it repeats the unit's previous one);
/// `Unavailable` when it could not be written in blocking-strict mode.
async fn audit_answer(
    audit: Option<&AuditLog>,
    call: &str,
    reference: &ScaledObjectRef,
    peer: Option<&Peer>,
    reading: &Result<UnitReading, SourceError>,
    facts: Option<(DecisionFacts, String)>,
    answer: serde_json::Value,
) -> Result<(), Status> {
    let Some(audit) = audit else { return Ok(()) };
    let mut record = AuditRecord::new("keda");
    record.unit = Some(match unit_of(reference) {
        Ok((namespace, name)) => format!("{namespace}/{name}"),
        Err(_) => format!("{}/{}", reference.namespace, reference.name),
    });
    record.caller = Caller::peer(peer);
    match facts {
        Some((decision, component)) => {
            record = record.decision(Some(decision));
            record.component_digest = Some(component);
        }
        None => {
            if let Ok(UnitReading::Decided { action, desired_replicas, current_replicas }) = reading {
                record.action = Some(action.as_str().to_owned());
                record.current = Some(*current_replicas);
                record.desired = Some(*desired_replicas);
            }
        }
    }
    if let Err(error) = reading {
        record.error = Some(ErrorFacts { code: error.code.clone(), message: error.message.clone() });
    } else if let Ok(UnitReading::NoContract) = reading {
        record.error =
            Some(ErrorFacts { code: "unknown_unit".to_owned(), message: "no contract is registered".to_owned() });
    }
    record.detail = serde_json::json!({"call": call, "answer": answer});
    audit.record_keda(record).await.map_err(|error| Status::unavailable(error.to_string()))
}

type ActiveStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<IsActiveResponse, Status>> + Send>>;
type SpecStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<GetMetricSpecResponse, Status>> + Send>>;

#[tonic::async_trait]
impl<S: DecisionSource> ExternalScaler for KedaScaler<S> {
    async fn is_active(&self, request: Request<ScaledObjectRef>) -> Result<Response<IsActiveResponse>, Status> {
        let (reading, facts) = read_unit(&*self.source, request.get_ref()).await;
        let result = is_active(&reading);
        let peer = request.extensions().get::<Peer>();
        let answer = serde_json::json!({"active": result});
        audit_answer(self.config.audit.as_deref(), "IsActive", request.get_ref(), peer, &reading, facts, answer)
            .await?;
        Ok(Response::new(IsActiveResponse { result }))
    }

    type StreamIsActiveStream = ActiveStream;

    async fn stream_is_active(
        &self,
        request: Request<ScaledObjectRef>,
    ) -> Result<Response<Self::StreamIsActiveStream>, Status> {
        // Held by the stream's task: released when the stream ends, whoever ends it.
        let slot = Arc::clone(&self.streams).try_acquire_owned().map_err(|_| {
            Status::resource_exhausted(format!(
                "{} StreamIsActive streams are open, the most this scaler serves: retry later",
                self.config.max_streams.max(1)
            ))
        })?;
        let peer = request.extensions().get::<Peer>().cloned();
        let reference = request.into_inner();
        let (sender, receiver) = mpsc::channel(1);
        let source = Arc::clone(&self.source);
        let audit = self.config.audit.clone();
        let mut stop = self.stop.clone();
        let interval = self.config.stream_interval.max(Duration::from_millis(10));
        tokio::spawn(async move {
            let _slot = slot;
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last = None;
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    () = sender.closed() => return,
                    _ = stop.wait_for(|stopped| *stopped) => return,
                }
                let (reading, facts) = read_unit(&*source, &reference).await;
                let active = is_active(&reading);
                let answer = serde_json::json!({"active": active});
                if let Err(status) =
                    audit_answer(audit.as_deref(), "StreamIsActive", &reference, peer.as_ref(), &reading, facts, answer)
                        .await
                {
                    // Blocking-strict: no unaudited answer; the stream ends and KEDA reconnects.
                    let _ = sender.send(Err(status)).await;
                    return;
                }
                if last != Some(active) {
                    if sender.send(Ok(IsActiveResponse { result: active })).await.is_err() {
                        return;
                    }
                    last = Some(active);
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
    }

    async fn get_metric_spec(
        &self,
        _request: Request<ScaledObjectRef>,
    ) -> Result<Response<GetMetricSpecResponse>, Status> {
        Ok(Response::new(GetMetricSpecResponse {
            metric_specs: vec![MetricSpec {
                metric_name: METRIC_NAME.to_owned(),
                target_size: 1,
                target_size_float: 1.0,
            }],
        }))
    }

    async fn get_metrics(&self, request: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        let peer = request.extensions().get::<Peer>().cloned();
        let request = request.into_inner();
        let reference =
            request.scaled_object_ref.ok_or_else(|| Status::invalid_argument("GetMetrics needs a scaledObjectRef"))?;
        let (namespace, name) = unit_of(&reference)?;
        let (reading, facts) = self.source.audited_reading(&namespace, &name).await;
        let metric = reading.as_ref().ok().map(metric_value);
        let answer = match &metric {
            Some(Ok(value)) => serde_json::json!({"metric": value}),
            Some(Err(status)) => serde_json::json!({"status": format!("{:?}", status.code())}),
            None => serde_json::json!({"status": "Unavailable"}),
        };
        audit_answer(self.config.audit.as_deref(), "GetMetrics", &reference, peer.as_ref(), &reading, facts, answer)
            .await?;
        let reading = reading
            .map_err(|error| Status::unavailable(format!("no decision for unit {namespace}/{name}: {error}")))?;
        let replicas = metric_value(&reading)?;
        let value = i64::try_from(replicas).map_err(|_| Status::out_of_range("replica count past i64"))?;
        let metric_name = if request.metric_name.is_empty() { METRIC_NAME.to_owned() } else { request.metric_name };
        Ok(Response::new(GetMetricsResponse {
            metric_values: vec![MetricValue {
                metric_name,
                metric_value: value,
                // Exact: contracts bound replicas to 10 000.
                metric_value_float: replicas as f64,
            }],
        }))
    }

    type StreamMetricSpecStream = SpecStream;

    async fn stream_metric_spec(
        &self,
        _request: Request<ScaledObjectRef>,
    ) -> Result<Response<Self::StreamMetricSpecStream>, Status> {
        Err(Status::unimplemented("the metric spec never changes: use GetMetricSpec"))
    }
}
