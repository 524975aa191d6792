//! The KEDA external scaler's path (`make bench-keda`): `GetMetrics` round trips over loopback
//! gRPC (tonic client and server, HTTP/2 plaintext) against the unit registry, each one a full
//! decision (observations read from the store, the request assembled, the component evaluating);
//! one client calling in a closed loop, then several clients on one shared connection, as KEDA's
//! connection pool does; `IsActive` for comparison, and the decision alone in-process. Prints the figures of BENCHMARKS.md.
//! Bounded: 127.0.0.1 only, a few seconds per phase (`SCALE_UNITS_BENCH_SECONDS`).
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    missing_docs,
    reason = "benchmark code"
)]

#[path = "../../host-rs/tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use scale_units_host::{Candidate, Policy, PolicyRegistry, default_cache_dir};
use scale_units_server::keda::proto::external_scaler_client::ExternalScalerClient;
use scale_units_server::keda::proto::{GetMetricsRequest, ScaledObjectRef};
use scale_units_server::keda::{KedaConfig, KedaScaler, METRIC_NAME};
use scale_units_server::units::{UnitKey, Units};
use serde_json::{Value, json};
use tonic::transport::Channel;

/// 2026-08-19T12:00:00Z, where the example's observations are fresh.
const NOON: u64 = 1_787_140_800;

fn main() {
    let seconds: u64 = std::env::var("SCALE_UNITS_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let clients: usize = std::env::var("SCALE_UNITS_BENCH_CLIENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run(Duration::from_secs(seconds), clients));
}

async fn run(phase: Duration, clients: usize) {
    let registry = tokio::task::spawn_blocking(|| {
        let mut builder = Policy::builder();
        if let Some(dir) = default_cache_dir() {
            builder = builder.cache_dir(dir);
        }
        let registry = PolicyRegistry::builder().policy_builder(builder).build();
        let digest = registry.stage(Candidate::new(common::component_bytes())).unwrap().digest;
        registry.activate(&digest).unwrap();
        Arc::new(registry)
    })
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("scale-units-bench-keda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("zentinelle.gateway.json"), common::example("api-gateway/contract.json")).unwrap();
    let units = Units::builder(registry)
        .contracts_dir(&dir)
        .no_prior_actions()
        .clock(Arc::new(|| SystemTime::UNIX_EPOCH + Duration::from_secs(NOON)))
        .build()
        .await
        .unwrap();
    let request: Value = serde_json::from_str(&common::example("api-gateway/request.json")).unwrap();
    let push = json!({
        "current_replicas": 3,
        "signal": request["signal"],
        "capacities": request["capacities"],
        "safety": request["safety"],
    });
    units.put_observations(&UnitKey::new("zentinelle", "gateway").unwrap(), &push.to_string()).await.unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let config = KedaConfig { shutdown_delay: Duration::ZERO, ..KedaConfig::default() };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(KedaScaler::new(Arc::clone(&units), config).run(listener, async move {
        let _ = stopped.await;
    }));
    let channel = Channel::from_shared(format!("http://{address}")).unwrap().connect().await.unwrap();
    let reference = ScaledObjectRef {
        name: "gateway".into(),
        namespace: "zentinelle".into(),
        scaler_metadata: HashMap::from([("scalerAddress".into(), format!("{address}"))]),
    };

    // Warm-up: the component's instances, the connection.
    let mut client = ExternalScalerClient::new(channel.clone());
    for _ in 0..200 {
        assert_eq!(get_metrics(&mut client, &reference).await, 5);
    }

    // The decision alone, in-process: what every call below pays before gRPC.
    let key = UnitKey::new("zentinelle", "gateway").unwrap();
    let started = Instant::now();
    let mut latencies = Vec::new();
    while started.elapsed() < phase {
        let call = Instant::now();
        units.evaluate(&key, None).await.unwrap();
        latencies.push(call.elapsed());
    }
    report("Units::evaluate in-process, 1 caller", &latencies, started.elapsed());

    let (latencies, elapsed) = closed_loop(1, phase, &channel, &reference, false).await;
    report("GetMetrics, 1 client", &latencies, elapsed);
    let (latencies, elapsed) = closed_loop(clients, phase, &channel, &reference, false).await;
    report(&format!("GetMetrics, {clients} clients on one connection"), &latencies, elapsed);
    let (latencies, elapsed) = closed_loop(1, phase, &channel, &reference, true).await;
    report("IsActive, 1 client", &latencies, elapsed);

    let _ = stop.send(());
    assert!(server.await.unwrap().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

async fn get_metrics(client: &mut ExternalScalerClient<Channel>, reference: &ScaledObjectRef) -> i64 {
    let request = GetMetricsRequest { scaled_object_ref: Some(reference.clone()), metric_name: METRIC_NAME.into() };
    client.get_metrics(request).await.unwrap().into_inner().metric_values[0].metric_value
}

/// `clients` tasks calling for `phase`; every latency, and the wall time.
async fn closed_loop(
    clients: usize,
    phase: Duration,
    channel: &Channel,
    reference: &ScaledObjectRef,
    is_active: bool,
) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let mut client = ExternalScalerClient::new(channel.clone());
            let reference = reference.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while started.elapsed() < phase {
                    let call = Instant::now();
                    if is_active {
                        assert!(client.is_active(reference.clone()).await.unwrap().into_inner().result);
                    } else {
                        assert_eq!(get_metrics(&mut client, &reference).await, 5);
                    }
                    latencies.push(call.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    (latencies, started.elapsed())
}

fn report(what: &str, latencies: &[Duration], elapsed: Duration) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let at = |quantile: f64| sorted[((sorted.len() as f64 * quantile) as usize).min(sorted.len() - 1)];
    println!(
        "{what}: {} calls, {:.0} calls/s, p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        sorted.len(),
        sorted.len() as f64 / elapsed.as_secs_f64(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        sorted[sorted.len() - 1].as_secs_f64() * 1e6
    );
}
