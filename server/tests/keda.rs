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

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;
mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use scale_units_host::{Candidate, Policy, PolicyRegistry};
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use scale_units_server::keda::proto::{GetMetricsRequest, ScaledObjectRef};
use scale_units_server::keda::{KedaConfig, KedaScaler, METRIC_NAME};
use scale_units_server::service::{Service, ServiceConfig};
use scale_units_server::units::{UnitKey, Units};
use serde_json::{Value, json};
use support::Running;
use support::keda::{NOON, contracts_dir, gateway, next, observations, push, scaled_object, transcode};
use tonic::transport::Channel;

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
            .no_prior_actions()
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
        scale_units_server::units::UnitVerdict::Decided { decision, .. } => {
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
    // Stale evidence at zero is blocked, which holds zero: inactive, so that KEDA does not wake
    // the unit to one replica the decision did not allow (issue 16; DECISIONS.md, KEDA).
    scaler.push("media", "transcode", &observations("media-pool", 0, 0)).await;
    scaler.clock.store(NOON + 120, Ordering::SeqCst);
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 0);
    assert!(!scaler.is_active(&transcode()).await);
    // Blocked above zero stays active: deactivating would let KEDA take the unit to zero.
    scaler.push("media", "transcode", &json!({"current_replicas": 2})).await;
    assert_eq!(scaler.metric(&transcode()).await.unwrap(), 2);
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
