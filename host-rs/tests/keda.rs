//! The KEDA external scaler through a real gRPC client calling the four methods as KEDA does
//! (`GetMetricSpec` when it builds the HPA, `GetMetrics` then `IsActive` on every poll,
//! `StreamIsActive` for a push scaler), over the unit registry of the decision service with the
//! two example units deployed by `deploy/kubernetes/` (`zentinelle/gateway` and `media/transcode`,
//! which may scale to zero). Observations are pushed over HTTP (`PUT
//! /v1/units/{namespace}/{name}/observations`), as a collector does. In-process, the registry's
//! clock is the test's, so that evidence expires on demand; the real binary (`serve
//! --keda-listen`) is checked end to end, drain included.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a failed expectation is a test failure"
)]

mod common;
mod support;

use std::collections::HashMap;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use scale_units_host::keda::proto::external_scaler_client::ExternalScalerClient;
use scale_units_host::keda::proto::{GetMetricsRequest, IsActiveResponse, ScaledObjectRef};
use scale_units_host::keda::{KedaConfig, KedaScaler, METRIC_NAME, UNIT_METADATA_KEY};
use scale_units_host::service::{Service, ServiceConfig};
use scale_units_host::units::{UnitKey, Units};
use scale_units_host::{Candidate, Policy, PolicyRegistry};
use serde_json::{Value, json};
use support::{Client, Running};
use tonic::transport::Channel;

/// 2026-08-19T12:00:00Z: the examples' observations are fresh from 11:59:30 to 12:01:30.
const NOON: i64 = 1_787_140_800;

/// The decision service with its unit registry, and the scaler over the same registry, each on
/// a loopback port.
struct Scaler {
    units: Arc<Units>,
    http: Option<Running>,
    client: ExternalScalerClient<Channel>,
    /// Seconds since the Unix epoch, as the registry's clock reads them.
    clock: Arc<AtomicI64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<bool>,
    dir: PathBuf,
}

impl Scaler {
    async fn start(stream_interval: Duration) -> Self {
        let dir = contracts_dir();

        let registry = tokio::task::spawn_blocking(|| {
            let registry = PolicyRegistry::builder()
                .policy_builder(Policy::builder().cache_dir(std::env::temp_dir().join("scale-units-test-cache")))
                .build();
            let digest = registry.stage(Candidate::new(common::component_bytes())).unwrap().digest;
            registry.activate(&digest).unwrap();
            Arc::new(registry)
        })
        .await
        .unwrap();
        let clock = Arc::new(AtomicI64::new(NOON));
        let reading = Arc::clone(&clock);
        let units = Units::builder(Arc::clone(&registry))
            .contracts_dir(&dir)
            .clock(Arc::new(move || {
                SystemTime::UNIX_EPOCH + Duration::from_secs(reading.load(Ordering::SeqCst).try_into().unwrap())
            }))
            .build()
            .await
            .unwrap();
        assert_eq!(units.keys().len(), 2, "both example contracts load");
        let config = ServiceConfig {
            units: Some(Arc::clone(&units)),
            shutdown_delay: Duration::ZERO,
            ..ServiceConfig::default()
        };
        let http = Running::start(Service::new(registry, config), 1);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let config = KedaConfig { stream_interval, shutdown_delay: Duration::ZERO, ..KedaConfig::default() };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let scaler = KedaScaler::new(Arc::clone(&units), config);
        let server = tokio::spawn(async move {
            scaler
                .run(listener, async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap()
        });
        let client = ExternalScalerClient::connect(format!("http://{address}")).await.unwrap();
        Self { units, http: Some(http), client, clock, stop: Some(stop), server, dir }
    }

    /// Pushes observations for a unit over HTTP, as a collector does.
    async fn push(&self, namespace: &str, name: &str, body: &Value) {
        push(self.http.as_ref().unwrap().address, namespace, name, body).await;
    }

    async fn is_active(&mut self, reference: &ScaledObjectRef) -> bool {
        self.client.is_active(reference.clone()).await.unwrap().into_inner().result
    }

    /// `GetMetrics` as KEDA calls it: the metric name of the spec, the ScaledObject's reference.
    async fn metric(&mut self, reference: &ScaledObjectRef) -> Result<i64, tonic::Status> {
        let request = GetMetricsRequest { scaled_object_ref: Some(reference.clone()), metric_name: METRIC_NAME.into() };
        let response = self.client.get_metrics(request).await?.into_inner();
        assert_eq!(response.metric_values.len(), 1);
        let value = &response.metric_values[0];
        assert_eq!(value.metric_name, METRIC_NAME);
        assert_eq!(value.metric_value_float, value.metric_value as f64, "both spellings agree");
        Ok(value.metric_value)
    }

    async fn stop(mut self) -> bool {
        let _ = self.stop.take().unwrap().send(());
        let drained = self.server.await.unwrap();
        let http = self.http.take().unwrap();
        tokio::task::spawn_blocking(move || http.stop()).await.unwrap();
        let _ = std::fs::remove_dir_all(&self.dir);
        drained
    }
}

/// `PUT /v1/units/{namespace}/{name}/observations` with `body`; the service answers 200.
async fn push(address: SocketAddr, namespace: &str, name: &str, body: &Value) {
    let path = format!("/v1/units/{namespace}/{name}/observations");
    let body = body.to_string();
    let reply = tokio::task::spawn_blocking(move || {
        Client::new(address).send("PUT", &path, &[("content-type", "application/json")], body.as_bytes()).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// A contracts folder as the ConfigMap of `deploy/kubernetes/` mounts it: the two example units.
fn contracts_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scale-units-keda-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("zentinelle.gateway.json"), common::example("api-gateway/contract.json")).unwrap();
    std::fs::write(dir.join("media.transcode.json"), common::example("media-pool/contract.json")).unwrap();
    dir
}

fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A ScaledObject's reference as KEDA sends it: its name and namespace, the trigger's metadata.
fn scaled_object(namespace: &str, name: &str, unit: Option<&str>) -> ScaledObjectRef {
    let mut metadata = HashMap::from([("scalerAddress".to_owned(), "scale-units.scale-units.svc:9090".to_owned())]);
    if let Some(unit) = unit {
        metadata.insert(UNIT_METADATA_KEY.to_owned(), unit.to_owned());
    }
    ScaledObjectRef { name: name.to_owned(), namespace: namespace.to_owned(), scaler_metadata: metadata }
}

/// The observations of an example request (fresh from 11:59:30 to 12:01:30), with the signal's
/// value and the replica count replaced.
fn observations(example: &str, current_replicas: u64, signal_value: i64) -> Value {
    let request: Value = serde_json::from_str(&common::example(&format!("{example}/request.json"))).unwrap();
    let mut signal = request["signal"].clone();
    signal["value"] = json!(signal_value);
    json!({
        "current_replicas": current_replicas,
        "signal": signal,
        "capacities": request["capacities"],
        "safety": request["safety"],
    })
}

fn gateway() -> ScaledObjectRef {
    scaled_object("zentinelle", "gateway-scaler", Some("gateway"))
}

fn transcode() -> ScaledObjectRef {
    scaled_object("media", "transcode", None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metric_spec_is_one_average_value_target_of_one_replica() {
    let mut scaler = Scaler::start(Duration::from_secs(5)).await;
    for reference in [gateway(), transcode(), scaled_object("nowhere", "nothing", None)] {
        let specs = scaler.client.get_metric_spec(reference).await.unwrap().into_inner().metric_specs;
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].metric_name, METRIC_NAME);
        assert_eq!((specs[0].target_size, specs[0].target_size_float), (1, 1.0));
    }
    assert!(scaler.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metric_is_the_desired_count_of_a_scale_and_the_current_count_of_a_hold() {
    let mut scaler = Scaler::start(Duration::from_secs(5)).await;
    // 640 in flight for a target of 100 at 3 replicas: scale_up, 3 -> 5 (a step of 2).
    scaler.push("zentinelle", "gateway", &observations("api-gateway", 3, 640)).await;
    assert_eq!(scaler.metric(&gateway()).await.unwrap(), 5);
    assert!(scaler.is_active(&gateway()).await);
    // 300 in flight at 3 replicas: hold at 3.
    scaler.push("zentinelle", "gateway", &observations("api-gateway", 3, 300)).await;
    assert_eq!(scaler.metric(&gateway()).await.unwrap(), 3);
    assert!(scaler.is_active(&gateway()).await);
    // 300 in flight at 5 replicas: scale_down, 5 -> 4 (a step of 1).
    scaler.push("zentinelle", "gateway", &observations("api-gateway", 5, 300)).await;
    assert_eq!(scaler.metric(&gateway()).await.unwrap(), 4);
    assert!(scaler.is_active(&gateway()).await);
    assert!(scaler.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_evidence_blocks_and_the_metric_stays_at_the_current_count() {
    let mut scaler = Scaler::start(Duration::from_secs(5)).await;
    // A scale-down is decided while the evidence is fresh...
    scaler.push("zentinelle", "gateway", &observations("api-gateway", 6, 100)).await;
    assert_eq!(scaler.metric(&gateway()).await.unwrap(), 5);
    // ...and once it expired (12:01:30) the decision is blocked: the metric is the current
    // count, never lower, and the unit stays active.
    scaler.clock.store(NOON + 120, Ordering::SeqCst);
    let key = UnitKey::new("zentinelle", "gateway").unwrap();
    match scaler.units.evaluate(&key, None).await.unwrap() {
        scale_units_host::units::UnitVerdict::Decided { decision, .. } => {
            assert_eq!(decision.action, scale_units_host::ActionKind::Blocked);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(scaler.metric(&gateway()).await.unwrap(), 6);
    assert!(scaler.is_active(&gateway()).await);
    assert!(scaler.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_that_allows_zero_deactivates_at_zero_and_only_then() {
    let mut scaler = Scaler::start(Duration::from_secs(5)).await;
    // media/transcode: min_replicas 0, allow_scale_to_zero. A queue of 75 at 1 replica: up to 3.
    scaler.push("media", "transcode", &observations("media-pool", 1, 75)).await;
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 3);
    assert!(scaler.is_active(&transcode()).await);
    // An empty queue at 1 replica: scale_down to 0; KEDA may deactivate the unit.
    scaler.push("media", "transcode", &observations("media-pool", 1, 0)).await;
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 0);
    assert!(!scaler.is_active(&transcode()).await);
    // At zero with an empty queue: hold at 0, still inactive.
    scaler.push("media", "transcode", &observations("media-pool", 0, 0)).await;
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 0);
    assert!(!scaler.is_active(&transcode()).await);
    // Work arrives at zero: active again, the metric asks for 2.
    scaler.push("media", "transcode", &observations("media-pool", 0, 75)).await;
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 2);
    assert!(scaler.is_active(&transcode()).await);
    // Stale evidence at zero is blocked, not a decision that allows zero: active.
    scaler.push("media", "transcode", &observations("media-pool", 0, 0)).await;
    scaler.clock.store(NOON + 120, Ordering::SeqCst);
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 0);
    assert!(scaler.is_active(&transcode()).await);
    assert!(scaler.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_decision_the_metric_fails_and_the_unit_stays_active() {
    let mut scaler = Scaler::start(Duration::from_secs(5)).await;
    // No contract for the unit.
    let unknown = scaled_object("zentinelle", "unknown", None);
    assert_eq!(scaler.metric(&unknown).await.unwrap_err().code(), tonic::Code::NotFound);
    assert!(scaler.is_active(&unknown).await);
    // A contract, but no replica count pushed yet.
    let status = scaler.metric(&gateway()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(status.message().contains("unknown_replicas"), "{}", status.message());
    assert!(scaler.is_active(&gateway()).await);
    // Not a Kubernetes name, or no name at all.
    for reference in [scaled_object("Zentinelle", "gateway", None), scaled_object("", "", None)] {
        assert!(scaler.metric(&reference).await.is_err());
        assert!(scaler.is_active(&reference).await);
    }
    // No ScaledObject reference in GetMetrics.
    let request = GetMetricsRequest { scaled_object_ref: None, metric_name: METRIC_NAME.into() };
    assert_eq!(scaler.client.get_metrics(request).await.unwrap_err().code(), tonic::Code::InvalidArgument);
    // The optional StreamMetricSpec is declined, as KEDA expects of a scaler without it.
    let status = scaler.client.stream_metric_spec(gateway()).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert!(scaler.stop().await);
}

/// The next message of an active stream, waiting at most 30 s for it.
async fn next(stream: &mut tonic::Streaming<IsActiveResponse>) -> Result<Option<IsActiveResponse>, tonic::Status> {
    tokio::time::timeout(Duration::from_secs(30), stream.message()).await.expect("a message in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_active_stream_sends_the_state_at_once_then_each_change() {
    let mut scaler = Scaler::start(Duration::from_millis(20)).await;
    scaler.push("media", "transcode", &observations("media-pool", 1, 75)).await;
    let mut stream = scaler.client.stream_is_active(transcode()).await.unwrap().into_inner();
    assert!(next(&mut stream).await.unwrap().unwrap().result);
    scaler.push("media", "transcode", &observations("media-pool", 1, 0)).await;
    assert!(!next(&mut stream).await.unwrap().unwrap().result);
    scaler.push("media", "transcode", &observations("media-pool", 0, 75)).await;
    assert!(next(&mut stream).await.unwrap().unwrap().result);
    // Shutting the scaler down ends the stream: no message, no error.
    let stopping = tokio::spawn(scaler.stop());
    assert!(next(&mut stream).await.unwrap().is_none());
    assert!(stopping.await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_state_is_sent_once() {
    let mut scaler = Scaler::start(Duration::from_millis(10)).await;
    scaler.push("zentinelle", "gateway", &observations("api-gateway", 3, 640)).await;
    let mut stream = scaler.client.stream_is_active(gateway()).await.unwrap().into_inner();
    assert!(stream.message().await.unwrap().unwrap().result);
    // Fifty polls later, still nothing new to say.
    let quiet = tokio::time::timeout(Duration::from_millis(500), stream.message()).await;
    assert!(quiet.is_err(), "no second message for an unchanged state: {quiet:?}");
    drop(stream);
    assert!(scaler.stop().await);
}

/// Observations fresh for two minutes from the real clock, for the real binary.
fn fresh_observations(example: &str, current_replicas: u64, signal_value: i64) -> Value {
    let mut body = observations(example, current_replicas, signal_value);
    let time = |seconds: i64| {
        let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds);
        at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    };
    let (observed_at, expires_at) = (time(-5), time(120));
    let stamp = |observation: &mut Value| {
        observation["observed_at"] = json!(observed_at);
        observation["expires_at"] = json!(expires_at);
    };
    stamp(&mut body["signal"]);
    stamp(&mut body["safety"]);
    for capacity in body["capacities"].as_array_mut().unwrap() {
        stamp(capacity);
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_the_scaler_beside_http_and_drains_both_on_sigterm() {
    let dir = contracts_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_scale-units"))
        .args(["serve", "--listen", "127.0.0.1:0", "--keda-listen", "127.0.0.1:0", "--keda-stream-interval-ms", "50"])
        .args(["--shutdown-delay-ms", "200", "--drain-timeout-ms", "10000", "--units"])
        .arg(&dir)
        .env("SCALE_UNITS_CACHE_DIR", std::env::temp_dir().join("scale-units-test-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = |prefix: &str| {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim().strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix}: {line}")).parse::<SocketAddr>().unwrap()
    };
    let keda = line("keda external scaler listening on ");
    let http = line("listening on ");

    push(http, "media", "transcode", &fresh_observations("media-pool", 1, 75)).await;
    let mut client = ExternalScalerClient::connect(format!("http://{keda}")).await.unwrap();
    let request = GetMetricsRequest { scaled_object_ref: Some(transcode()), metric_name: METRIC_NAME.into() };
    let metric = client.get_metrics(request.clone()).await.unwrap().into_inner().metric_values[0].metric_value;
    assert_eq!(metric, 3, "1 -> 3 replicas for a queue of 75 (target 20, step 2)");
    let mut stream = client.stream_is_active(transcode()).await.unwrap().into_inner();
    assert!(next(&mut stream).await.unwrap().unwrap().result);
    push(http, "media", "transcode", &fresh_observations("media-pool", 1, 0)).await;
    assert!(!next(&mut stream).await.unwrap().unwrap().result, "scale to zero allowed");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    // The open stream ends with the drain, and the process exits 0 (both servers drained).
    assert!(next(&mut stream).await.unwrap().is_none());
    let exit = tokio::task::spawn_blocking(move || {
        let exit = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (exit, stderr)
    })
    .await
    .unwrap();
    assert!(exit.0.success(), "{:?}\n{}", exit.0, exit.1);
    assert!(client.get_metrics(request).await.is_err(), "nothing listens after the drain");
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
